"""The learner: a worker's train step, built and run.

Built once (`make_train_ops`): the trainer's loss on the local policy → its gradients → clipped at global norm
`GRADIENT_CLIP_NORM` → replaced by zeros unless loss and gradients are finite → moved packed to the parameter
servers → Adam applies them to the global variables, and the global step advances by the frames trained on. Sync
ops copy the global weights back to the local policy.

Run every step (`Learner.step`), on one rollout from every runner:

    1. copy the local policy to the target policy pi' (PPO), every `pi_prime_update_period` steps;
    2. keep the train rollouts (a test episode's are not trained on);
    3. turn them into a feed (`feeds`, through the trainer's `process_data`);
    4. sync the local policy where the previous step did not end with it;
    5. run `num_epochs` updates, the last one fetching the new global step (and the model summary every
       `model_summary_freq` steps); each update's finiteness is checked.

Without a target policy the sync before an update is run at the end of the previous update, in the same session
run (`sync_pi_after_train`), which saves a parameter-server round trip per train step; the local policy then
holds the global weights from the end of its own last update, as in universe-starter-agent's A3C. A step that
writes the model summary (its ops read the local weights) and trainers with a target policy (the target copies
the local policy before the sync) sync before their update instead. With `num_epochs` > 1 every epoch but the
last ends with that sync too, so each takes its gradient at the weights the previous one made.

`train_until` is the loop around it, shared by a distributed worker and `train_in_process`.
"""
import collections

import numpy as np

from btgym_aac.algorithms.common.finite_guard import zeroed_unless
from btgym_aac.algorithms.common.placeholders import check_variable_pairing
from btgym_aac.algorithms.acting import RunnerStopped
from btgym_aac.algorithms.common.session_callables import CallableCache
from btgym_aac.algorithms.common.transfers import moved_to
from btgym_aac.compat import tf

GRADIENT_CLIP_NORM = 40.0

TrainOps = collections.namedtuple('TrainOps', [
    'train_op', 'inc_step', 'sync', 'sync_pi', 'sync_pi_after_train', 'sync_pi_prime', 'train_finite', 'grads',
    'grads_global_norm', 'finite_checked', 'train_learn_rate', 'optimizer'])
"""Ops of a train step (see `make_train_ops`); `finite_checked` lists (description, tensor) pairs to search for
the first non-finite value when `train_finite` is False."""


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

    `sync` copies every global variable to the local policy (`sync_pi` and the others); `sync_pi` skips the
    trainable variables the loss gives no gradient (nothing changes them, so their local copies stay equal);
    `sync_pi_after_train` is `sync_pi` run after the update (a train step can end with it, saving a
    parameter-server round trip). `sync_pi_prime` copies the local policy to `pi_prime` (None without one).
    Gradients of a step whose loss or gradients are not finite are replaced by zeros (`train_finite` False). The
    learn rate (times the fed train phase), Adam and the step increment run on the global step's device, the train
    phase and `frames` travelling packed with the gradients, so a step sends the gradients and gets the new global
    step back.

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
    sync_pi = copy_op(changing)
    changing_locals = {id(local) for local, _ in changing}
    unchanging = [pair for pair in pairs if id(pair[0]) not in changing_locals]
    return TrainOps(
        train_op=train_op, inc_step=inc_step, sync=tf.group(sync_pi, copy_op(unchanging)) if unchanging else sync_pi,
        sync_pi=sync_pi,
        sync_pi_after_train=sync_pi_after_train,
        sync_pi_prime=copy_op(list(zip(pi_prime.var_list, pi.var_list))) if pi_prime is not None else None,
        train_finite=train_finite, grads=grads,
        grads_global_norm=tf.global_norm([grad for grad in grads if grad is not None]),
        finite_checked=finite_checked, train_learn_rate=train_learn_rate, optimizer=optimizer)


class Learner:
    """Runs a worker's train steps (see the module docstring for the order).

    Args:
        ops: TrainOps.
        config: the trainer's resolved `AacConfig` (`num_epochs`, `pi_prime_update_period`, `model_summary_freq`).
        feed_fn: fn(sess, data, is_train) -> feed dict of a step (the trainer's `process_data` on its policies).
        is_train_fn: fn(rollout) -> whether the rollout is trained on.
        frames_mask: the on-policy mask placeholder; a step's frames are the sum of its fed value.
        summary_op: model summary op, or None.
        check_finite: fn(sess, finite, feed_dict) called after each update with its `train_finite` value.

    Attributes:
        steps: train steps run (the original's `local_steps`).
        last_global_step: the global step after the latest train step (None before the first).
    """

    def __init__(self, ops, config, feed_fn, is_train_fn, frames_mask, summary_op=None, check_finite=None):
        self.ops, self.config = ops, config
        self.feed_fn, self.is_train_fn, self.frames_mask = feed_fn, is_train_fn, frames_mask
        self.summary_op, self.check_finite = summary_op, check_finite
        self.use_target_policy = ops.sync_pi_prime is not None
        self.steps = 0
        self.last_global_step = None
        self.local_synced = False
        self._callables = CallableCache()

    def start(self, sess):
        """Copies every global variable to the local policy."""
        sess.run(self.ops.sync)
        self.local_synced = True

    def step(self, sess, data):
        """One train step on merged runner `data` (one rollout from every runner).

        Returns:
            (env frames trained on: 0 when every rollout came from a test episode, serialized model summary or
            None).
        """
        if self.use_target_policy and self.steps % self.config.pi_prime_update_period == 0:
            self._callables.run(sess, 'sync_pi_prime', None, {}, targets=[self.ops.sync_pi_prime])
        is_train = [self.is_train_fn(rollout) for rollout in data['on_policy']]
        if not any(is_train):
            return 0, None
        feed_dict = self.feed_fn(sess, data, is_train)
        write_summary = self.summary_op is not None and self.steps % self.config.model_summary_freq == 0
        self.last_global_step, summary = self._update(sess, feed_dict, self.summary_op if write_summary else None)
        self.steps += 1
        return int(np.sum(feed_dict[self.frames_mask])), summary

    def _update(self, sess, feed_dict, summary_op):
        """Syncs the local policy if needed and runs the `num_epochs` updates.

        Returns:
            (global step after the update, serialized summary or None).
        """
        ops = self.ops
        if self.use_target_policy or not self.local_synced:
            self._callables.run(sess, 'sync_pi', None, {}, targets=[ops.sync_pi])
        for _ in range(self.config.num_epochs - 1):
            finite = self._callables.run(sess, 'train_epoch', [ops.train_finite], feed_dict,
                                         targets=[ops.sync_pi_after_train])
            self._check(sess, finite[0], feed_dict)
        write_summary = summary_op is not None
        sync_after = not (write_summary or self.use_target_policy)
        fetches = [ops.inc_step, ops.train_finite] + ([summary_op] if write_summary else [])
        fetched = self._callables.run(sess, ('train_last', write_summary, sync_after), fetches, feed_dict,
                                      targets=[ops.train_op] + ([ops.sync_pi_after_train] if sync_after else []))
        self.local_synced = sync_after
        self._check(sess, fetched[1], feed_dict)
        return int(fetched[0]), fetched[2] if write_summary else None

    def _check(self, sess, finite, feed_dict):
        if self.check_finite is not None:
            self.check_finite(sess, finite, feed_dict)


def train_until(trainer, sess, max_env_steps, stop_event=None, after_step=None):
    """Runs `trainer.process(sess)` until the global step reaches `max_env_steps`.

    The trainer must be started (`trainer.start(sess, writer)`); the caller stops it.

    Args:
        trainer: a started trainer (`BaseAAC` or subclass).
        sess: its session.
        max_env_steps: global step to train to.
        stop_event: threading.Event whose setting ends the loop before the next step (None: none); the loop also
            ends when the runners raise RunnerStopped (stopped on request while a step waits for data).
        after_step: fn(global_step) called after every train step; returning True ends the loop.

    Returns:
        (global step at the end, train steps run).
    """
    step = int(sess.run(trainer.global_step))
    train_steps = 0
    while step < max_env_steps and not (stop_event is not None and stop_event.is_set()):
        try:
            frames = trainer.process(sess)
        except RunnerStopped:
            break
        train_steps += 1
        step = trainer.last_global_step if frames else int(sess.run(trainer.global_step))
        if after_step is not None and after_step(step):
            break
    return step, train_steps
