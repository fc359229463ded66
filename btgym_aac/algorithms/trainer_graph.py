"""The trainer's distributed graph: where the global and local copies live, the step counters, the learn rate, and
the train and sync ops. The only trainer code that knows about parameter servers.

Between-graph replication: every worker builds the global (parameter-server) policy under
`replica_device_setter` and its own local policy on its worker device. A train step computes gradients on the
local policy and applies them to the global variables with Adam; sync ops copy global weights to the local policy.
Without a cluster spec both copies are built on the process's default device (one process, one session).
"""
import collections
import contextlib

import numpy as np

from btgym_aac.algorithms.finite_guard import zeroed_unless
from btgym_aac.algorithms.transfers import moved_to
from btgym_aac.algorithms.placeholders import check_variable_pairing
from btgym_aac.compat import tf

GRADIENT_CLIP_NORM = 40.0

StepCounters = collections.namedtuple('StepCounters', ['global_step', 'reset_global_step', 'global_episode',
                                                       'inc_episode'])
"""int32 global step (env frames trained on) and its reset op, global episode count and its increment op."""

TrainOps = collections.namedtuple('TrainOps', [
    'train_op', 'inc_step', 'sync', 'sync_pi', 'sync_pi_after_train', 'sync_pi_prime', 'train_finite', 'grads',
    'grads_global_norm', 'finite_checked', 'train_learn_rate', 'optimizer'])
"""Ops of a train step (see `make_train_ops`); `finite_checked` lists (description, tensor) pairs to search for
the first non-finite value when `train_finite` is False."""


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


def decayed_learn_rate(global_step, start, end, decay_steps):
    """`start` decayed linearly to `end` over `decay_steps` global steps: float64 tensor."""
    return tf.train.polynomial_decay(np.float64(start), tf.cast(global_step, tf.float64) + 1.0, float(decay_steps),
                                     np.float64(end), power=1.0, cycle=False)


def copy_op(pairs):
    """Op assigning every `(target, source)` variable pair, small sources moved packed (see `transfers`).

    The sources are read by ops made here, so control dependencies around the call order the reads too.
    """
    sources = []
    for _, source in pairs:
        with tf.device(source.device):
            sources.append(source.read_value())
    values = moved_to(sources, [target.device for target, _ in pairs])
    return tf.group(*[target.assign(value) for (target, _), value in zip(pairs, values)])


def make_train_ops(loss, pi, pi_prime, pi_global, global_step, learn_rate_fn, frames, epsilon):
    """Adam on the global variables with the local gradients clipped at global norm 40, and the sync ops.

    `sync` copies every global variable to the local policy; `sync_pi` skips the trainable variables the loss
    gives no gradient (nothing changes them, so their local copies stay equal); `sync_pi_after_train` is `sync_pi`
    run after the update (a train step can end with it, saving a parameter-server round trip). `sync_pi_prime`
    copies the local policy to `pi_prime` (None without one). Gradients of a step whose loss or gradients are not
    finite are replaced by zeros (`train_finite` False). The learn rate (times the fed train phase), Adam and the
    step increment run on the global step's device, the train phase and `frames` travelling packed with the
    gradients, so a step sends the gradients and gets the new global step back.

    Args:
        loss: scalar loss of the local policy `pi`.
        pi, pi_prime, pi_global: local, target (or None) and global policies.
        global_step: the global step variable (incremented by `frames`).
        learn_rate_fn: fn() -> float64 learn-rate tensor (see `decayed_learn_rate`), called on the global step's
            device so the rate is computed where the step is.
        frames: float32 scalar tensor, env frames of the fed batch.
        epsilon: Adam's epsilon.

    Returns:
        TrainOps.
    """
    check_variable_pairing(pi.var_list, pi_global.var_list, 'local and global policies do not pair variable by '
                                                            'variable')
    pairs = list(zip(pi.var_list, pi_global.var_list))
    raw_grads = tf.gradients(loss, pi.var_list)
    clipped, grads_norm = tf.clip_by_global_norm(raw_grads, GRADIENT_CLIP_NORM)
    train_finite = tf.logical_and(tf.reduce_all(tf.is_finite(loss)), tf.is_finite(grads_norm))
    grads = zeroed_unless(train_finite, clipped)
    finite_checked = [('the loss', loss)] + [
        ('the gradient of {}'.format(variable.op.name), grad) for variable, grad in zip(pi.var_list, raw_grads)] + [
        ('the global norm of the gradients (finite gradients whose squares overflow)', grads_norm)]
    changing = [(local, glob) for grad, (local, glob) in zip(grads, pairs) if grad is not None or not local.trainable]
    pushed = [(grad, glob) for grad, (_, glob) in zip(grads, pairs) if grad is not None]
    step_inputs = tf.stack([tf.cast(pi.train_phase, tf.float32), frames])
    moved = moved_to([grad for grad, _ in pushed] + [step_inputs],
                     [glob.device for _, glob in pushed] + [global_step.device])
    with tf.device(global_step.device):
        train_phase, moved_frames = tf.unstack(moved[-1])
        train_learn_rate = learn_rate_fn() * tf.cast(train_phase, tf.float64)
        optimizer = tf.train.AdamOptimizer(tf.cast(train_learn_rate, tf.float32), epsilon=epsilon)
        train_op = optimizer.apply_gradients(list(zip(moved[:-1], [glob for _, glob in pushed])))
        inc_step = global_step.assign_add(tf.cast(moved_frames, tf.int32))
    with tf.control_dependencies([train_op]):
        sync_pi_after_train = copy_op(changing)
    return TrainOps(
        train_op=train_op, inc_step=inc_step, sync=copy_op(pairs), sync_pi=copy_op(changing),
        sync_pi_after_train=sync_pi_after_train,
        sync_pi_prime=copy_op(list(zip(pi_prime.var_list, pi.var_list))) if pi_prime is not None else None,
        train_finite=train_finite, grads=grads,
        grads_global_norm=tf.global_norm([grad for grad in grads if grad is not None]),
        finite_checked=finite_checked, train_learn_rate=train_learn_rate, optimizer=optimizer)
