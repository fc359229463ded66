"""The options of every session the package makes."""
from btgym_aac.compat import tf


def session_config(**kwargs):
    """`tf.ConfigProto(**kwargs)` with TensorFlow's graph optimiser (grappler) turned off.

    Grappler rewrites the graph of every new set of fetches and feeds before its first run. On a worker of the
    reference configuration that took 1.5-2 s for the first train step and again for the second (fetched without
    the model summary), on the critical path of start-up; with it off, the first trained step came 1.5-1.7 s
    sooner after the graph was built, and training ran as fast (A/B runs of `btgym-aac train`, 2 workers, 8,000
    env steps: 279, 267 env steps/s against 268, 238). The graphs here are small ops on small tensors, which
    grappler's rewrites do not speed up.

    Returns:
        the ConfigProto.
    """
    config = tf.ConfigProto(**kwargs)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return config
