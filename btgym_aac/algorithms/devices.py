"""Where a trainer's graph lives: the global (parameter-server) and local copies' devices, and the step counters.

Between-graph replication: every worker builds the global policy under `replica_device_setter` (its variables on
the parameter servers) and its own local policy on its worker device; the learner (`learner.make_train_ops`)
applies the local gradients to the global variables and copies them back. Without a cluster spec both copies are
built on the process's default device (one process, one session).
"""
import collections
import contextlib

from btgym_aac.compat import tf

StepCounters = collections.namedtuple('StepCounters', ['global_step', 'reset_global_step', 'global_episode',
                                                       'inc_episode'])
"""int32 global step (env frames trained on) and its reset op, global episode count and its increment op."""


def worker_device(task):
    """Device string of worker `task`'s local graph."""
    return '/job:worker/task:{}/cpu:0'.format(task)


def on_device(cluster_spec, device):
    """`tf.device(device)` in a cluster, else a no-op context (the default device)."""
    return tf.device(device) if cluster_spec is not None else contextlib.nullcontext()


def global_device(cluster_spec, task):
    """Device function placing variables on the parameter servers round-robin and ops on worker `task`, or None
    without a cluster."""
    if cluster_spec is None:
        return None
    return tf.train.replica_device_setter(ps_tasks=len(cluster_spec['ps']), worker_device=worker_device(task))


def make_step_counters():
    """Makes the global step (in the GLOBAL_STEP collection) and episode counters in the current scope and device.

    Returns:
        StepCounters.
    """
    global_step = tf.get_variable('global_step', [], tf.int32, initializer=tf.constant_initializer(0),
                                  trainable=False)
    tf.add_to_collection(tf.GraphKeys.GLOBAL_STEP, global_step)
    global_episode = tf.get_variable('global_episode', [], tf.int32, initializer=tf.constant_initializer(0),
                                     trainable=False)
    return StepCounters(global_step, global_step.assign(0), global_episode, global_episode.assign_add(1))
