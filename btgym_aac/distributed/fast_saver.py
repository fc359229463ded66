"""The saver of a run's checkpoints."""
from btgym_aac.compat import tf


class FastSaver(tf.train.Saver):
    """Saver that never writes the meta-graph (`save` ignores `write_meta_graph`): writing it stalls the saving
    worker, and restoring needs only the variables, since every process builds its graph in code.

    Attributes:
        variables: {checkpoint name: variable} of what it saves and restores.
    """

    def __init__(self, var_list=None, **kwargs):
        super().__init__(var_list=var_list, **kwargs)
        variables = tf.global_variables() if var_list is None else var_list
        self.variables = dict(variables) if isinstance(variables, dict) else {v.op.name: v for v in variables}

    def save(self, sess, save_path, global_step=None, latest_filename=None, meta_graph_suffix='meta',
             write_meta_graph=True, write_state=True, strip_default_attrs=False, save_debug_info=False):
        return super().save(sess, save_path, global_step=global_step, latest_filename=latest_filename,
                            meta_graph_suffix=meta_graph_suffix, write_meta_graph=False, write_state=write_state,
                            strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info)
