"""The options of every session the package makes."""
from btgym_aac.compat import tf


def session_config(**kwargs):
    """`tf.ConfigProto(**kwargs)` with TensorFlow's graph optimiser (grappler) turned off.

    Grappler rewrites the graph of every new set of fetches and feeds before its first run. On a worker this
    delays the first train step and again the second (fetched without the model summary), on the critical path of
    start-up (`benchmarks/startup.py` measures start-up), and training ran no faster with it. The graphs here are
    small ops on small tensors, which grappler's rewrites do not speed up.

    Returns:
        the ConfigProto.
    """
    config = tf.ConfigProto(**kwargs)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return config
