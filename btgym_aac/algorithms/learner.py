"""The learner: a worker's train step, built and run.

Built once (`make_train_ops`): the trainer's loss on the local policy -> its gradients -> clipped at global norm
`GRADIENT_CLIP_NORM` -> replaced by zeros unless loss and gradients are finite -> moved packed to the parameter
servers -> Adam applies them to the global variables, and the global step advances by the frames trained on. Sync
ops copy the global weights back to the local policy.

Run every step (`Learner.train_step`, one method from the rollouts to the summaries): the rollouts of train
episodes are processed (returns, GAE advantages) into batches (`train_batches`) and fed to the local policy's
inputs and the loss's targets (`train_feed`); one session run updates the global weights and, in the common case,
syncs the local policy for the next step. With `num_epochs` passes of `num_minibatches` minibatches (shuffled
frames of a `time_flat` batch, `update_batches`) there is an update per minibatch, the last one advancing the global
step by all the frames of the batch.

Without a target policy the sync before an update is run at the end of the previous update, in the same session
run (`SessionCalls.update_then_sync`), which saves a parameter-server round trip per train step; the local policy
then holds the global weights from the end of its own last update, as in universe-starter-agent's A3C. A step that
writes the model summary (its ops read the local weights) and trainers with a target policy (the target copies
the local policy before the sync) sync before their update instead. Every update but the last of a step ends with
that sync too, so each takes its gradient at the weights the previous one made.

`train_until` is the loop around it, shared by a distributed worker and `train_in_process`.
"""
import collections

import numpy as np

from btgym_aac.algorithms.acting import RunnerStopped
from btgym_aac.algorithms.common.batches import MASK_KEY, batch_rows, batch_stack
from btgym_aac.algorithms.common.finite_guard import first_non_finite, zeroed_unless
from btgym_aac.algorithms.common.rollout import pixel_control_targets
from btgym_aac.algorithms.common.placeholders import (check_variable_pairing, feed_dict_from_nested,
                                                      feed_dict_rnn_context)
from btgym_aac.algorithms.common.sessions import CallableCache
from btgym_aac.algorithms.common.transfers import moved_to
from btgym_aac.compat import tf
from btgym_aac.nonfinite import NonFiniteTrainingError, data_explanation

GRADIENT_CLIP_NORM = 40.0

TrainOps = collections.namedtuple('TrainOps', [
    'train_op', 'inc_step', 'sync', 'sync_pi', 'sync_pi_after_train', 'sync_pi_prime', 'train_finite', 'grads',
    'grads_global_norm', 'finite_checked', 'train_learn_rate', 'optimizer', 'frames', 'last_train_op',
    'sync_pi_after_last', 'policy_kl', 'advance_step', 'statistics_update', 'updates_in_step'])
"""Ops of a train step (see `make_train_ops`); `finite_checked` lists (description, tensor) pairs to search for
the first non-finite value when `train_finite` is False; `frames` is the tensor of env frames the global step
advances by (fed by a minibatch update); `last_train_op` is the step's last update (`train_op` with the update of
the observation statistics, where the policy keeps them) and `sync_pi_after_last` the sync after it; `policy_kl` is
the fed frames' mean KL divergence of the policy from the old one (None unless `target_kl` asks for it), and
`advance_step` advances the global step by `frames` with no update, for a step whose updates ended early (with
`statistics_update`, None where the policy keeps no observation statistics); `updates_in_step` is a placeholder
(default 0) the learner feeds a step's count of updates with when it fetches the model summary."""


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


def decayed_learn_rate(global_step, start, end, decay_steps):
    """`start` decayed linearly to `end` over `decay_steps` global steps: float64 tensor."""
    return tf.train.polynomial_decay(np.float64(start), tf.cast(global_step, tf.float64) + 1.0, float(decay_steps),
                                     np.float64(end), power=1.0, cycle=False)


def make_train_ops(loss, pi, pi_prime, pi_global, global_step, frames, config, statistics_update=None,
                   policy_kl=None):
    """Adam on the global variables with the local gradients clipped at global norm 40, and the sync ops.

    `sync` copies every global variable to the local policy (`sync_pi` and the others); `sync_pi` skips the
    trainable variables the loss gives no gradient (nothing changes them, so their local copies stay equal);
    `sync_pi_after_train` is `sync_pi` run after the update (a train step can end with it, saving a
    parameter-server round trip). `sync_pi_prime` copies the local policy to `pi_prime` (None without one).
    Gradients of a step whose loss or gradients are not finite are replaced by zeros (`train_finite` False). The
    learn rate (`config.opt_learn_rate` decayed linearly to `opt_end_learn_rate` over `opt_decay_steps`, times the
    fed train phase), Adam and the step increment run on the global step's device, the train phase and `frames`
    travelling packed with the gradients, so a step sends the gradients and gets the new global step back.
    `last_train_op` also runs `statistics_update` (once per train step, with its last update), and
    `sync_pi_after_last` syncs after both.

    Args:
        loss: scalar loss of the local policy `pi`.
        pi, pi_prime, pi_global: local, target (or None) and global policies.
        global_step: the global step variable (incremented by `frames`).
        frames: float32 scalar tensor, env frames of the fed batch (a placeholder with a default, so that the last
            minibatch of a step can advance the global step by the frames of the whole batch).
        config: the trainer's resolved `AacConfig` (its learn rate settings and `opt_epsilon`).
        statistics_update: op updating the global policy's observation statistics, or None.
        policy_kl: scalar tensor, the fed frames' mean KL divergence of `pi` from the old policy (`target_kl`), or
            None.

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
        learn_rate = decayed_learn_rate(global_step, config.opt_learn_rate, config.opt_end_learn_rate,
                                        config.opt_decay_steps)
        train_learn_rate = learn_rate * tf.cast(train_phase, tf.float64)
        optimizer = tf.train.AdamOptimizer(tf.cast(train_learn_rate, tf.float32), epsilon=config.opt_epsilon)
        train_op = optimizer.apply_gradients(list(zip(moved[:-1], [glob for _, glob in pushed])))
        inc_step = global_step.assign_add(tf.cast(moved_frames, tf.int32))
        advance_step = global_step.assign_add(tf.cast(frames, tf.int32))
    with tf.control_dependencies([train_op]):
        sync_pi_after_train = copy_op(changing)
    last_train_op, sync_pi_after_last = train_op, sync_pi_after_train
    if statistics_update is not None:
        last_train_op = tf.group(train_op, statistics_update)
        with tf.control_dependencies([last_train_op]):
            sync_pi_after_last = copy_op(changing)
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
        finite_checked=finite_checked, train_learn_rate=train_learn_rate, optimizer=optimizer, frames=frames,
        last_train_op=last_train_op, sync_pi_after_last=sync_pi_after_last, policy_kl=policy_kl,
        advance_step=advance_step, statistics_update=statistics_update,
        updates_in_step=tf.placeholder_with_default(0.0, [], name='updates_in_step'))


# ------------------------------------------------------------------------------------------- feeding

TrainBatches = collections.namedtuple('TrainBatches', ['on_policy', 'off_policy', 'reward_prediction'])
"""Processed, stacked batches of one train step (see `Rollout.process`); the replayed ones are None when the
runners gave none or the trainer uses no replay memory."""


def rollout_is_train(rollout):
    """True unless any frame of the rollout comes from a test episode (metadata type != 0)."""
    try:
        return not np.any(np.asarray(rollout['state']['metadata']['type']))
    except KeyError:
        return True


def process_rollouts(rollouts, gamma, gae_lambda, size, time_flat, gamma_pc=None):
    """Stacked processed rollouts (see `Rollout.process`), with the pixel-control target parts when `gamma_pc` is
    given."""
    batches = [rollout.process(gamma=gamma, gae_lambda=gae_lambda, size=size, time_flat=time_flat)
               for rollout in rollouts]
    stacked = batch_stack(batches)
    if gamma_pc is not None:
        stacked.update(pixel_control_targets(batches, gamma_pc))
    return stacked


def train_batches(config, data, is_train):
    """The TrainBatches of merged runner `data`: its train rollouts on-policy, its replayed sequences off-policy
    and for reward prediction (as the settings ask).

    Args:
        config: the trainer's resolved `AacConfig`.
        data: merged runner data (see `BaseAAC.get_data`).
        is_train: list of bools, one per on-policy rollout.
    """
    def process(rollouts, size, gamma_pc=None):
        return process_rollouts(rollouts, config.model_gamma, config.model_gae_lambda, size, config.time_flat,
                                gamma_pc)

    on_policy = process([rollout for rollout, train in zip(data['on_policy'], is_train) if train],
                        config.rollout_length)
    off_policy = reward_prediction = None
    if config.use_memory:
        replayed = [rollout for rollout in data['off_policy'] if rollout is not None and rollout.size]
        if replayed:
            off_policy = process(replayed, config.replay_rollout_length,
                                 config.gamma_pc if config.use_pixel_control else None)
        if config.use_reward_prediction:
            rp_rollouts = [rollout for rollout in data['off_policy_rp'] if rollout is not None]
            if rp_rollouts:
                reward_prediction = batch_stack([rollout.process_rp(config.rp_reward_threshold)
                                                 for rollout in rp_rollouts])
    return TrainBatches(on_policy, off_policy, reward_prediction)


def policy_inputs_feed(pi, prefix, batch):
    """Feed of a policy's on- or off-policy inputs (`prefix` 'on' or 'off') from a processed batch."""
    def inputs(name):
        return getattr(pi, '{}_{}'.format(prefix, name))

    feed = feed_dict_from_nested(inputs('state_in'), batch['state'])
    feed.update(feed_dict_rnn_context(inputs('lstm_state_pl_flatten'), batch['context']))
    feed.update({
        inputs('last_a_in'): batch['last_action'],
        inputs('last_reward_in'): batch['last_reward'],
        inputs('batch_size'): batch['batch_size'],
        inputs('time_length'): batch['time_steps'],
    })
    return feed


def policy_targets_feed(targets, batch, normalize_advantages=False, behaviour_logits=False):
    """Feed of PolicyTargets `targets` from a processed batch.

    Args:
        targets: PolicyTargets.
        batch: processed batch.
        normalize_advantages: feed its advantages normalised (`normalized_advantages`).
        behaviour_logits: feed the acting policy's logits its frames hold (`'logits'`).

    Raises:
        KeyError: `behaviour_logits` asked of frames that hold no logits.
    """
    advantage = normalized_advantages(batch['advantage'], batch[MASK_KEY]) if normalize_advantages \
        else batch['advantage']
    feed = {targets.action: batch['action'], targets.advantage: advantage, targets.r: batch['r'],
            targets.mask: batch[MASK_KEY]}
    if behaviour_logits:
        if 'logits' not in batch:
            raise KeyError('behaviour_logits is set but the frames hold no acting logits (a runner that does not '
                           'record them)')
        feed[targets.behaviour_logits] = batch['logits']
    return feed


def normalized_advantages(advantage, mask):
    """`advantage` less the mean over the real rows (`mask` 1), over their standard deviation plus 1e-8; padding
    rows 0.

    Args:
        advantage: float [N].
        mask: float [N] of 0/1.

    Returns:
        float64 [N].
    """
    advantage, real = np.asarray(advantage, dtype=np.float64), np.asarray(mask) > 0
    if not real.any():
        return np.zeros_like(advantage)
    values = advantage[real]
    return np.where(real, (advantage - values.mean()) / (values.std() + 1e-8), 0.0)


def pixel_control_feed(targets, batch):
    """Feed of PixelControlTargets `targets` from a processed off-policy batch with the pixel-control parts."""
    return {targets.action: batch['action'], targets.returns: batch['pc_return'],
            targets.bootstrap_weight: batch['pc_bootstrap_weight'],
            targets.bootstrap_row: batch['pc_bootstrap_row'], targets.mask: batch['pc_mask']}


def train_feed(config, targets, batches, pi, pi_prime=None):
    """Feed dict of one update (`pi.train_phase` fed True).

    Args:
        config: the trainer's resolved `AacConfig`: its on-policy advantages normalised with
            `normalize_advantages`, the acting logits fed with `behaviour_logits`, `pi_prime`'s off-policy inputs
            too with `use_off_policy_aac` (the off-policy actor-critic loss reads them).
        targets: the trainer's TrainTargets.
        batches: TrainBatches.
        pi, pi_prime: local policy and target policy (or None).

    Returns:
        dict placeholder -> value.
    """
    feed = policy_inputs_feed(pi, 'on', batches.on_policy)
    feed.update(policy_targets_feed(targets.on_policy, batches.on_policy, config.normalize_advantages,
                                    config.behaviour_logits))
    feed[pi.train_phase] = True
    if pi_prime is not None:
        feed.update(policy_inputs_feed(pi_prime, 'on', batches.on_policy))
    off = batches.off_policy
    if off is not None and pi.off_lstm_state_pl_flatten is not None:  # (no off-policy pass: no loss reads it)
        feed.update(policy_inputs_feed(pi, 'off', off))
        feed.update(policy_targets_feed(targets.off_policy, off, behaviour_logits=config.behaviour_logits))
        if pi_prime is not None and config.use_off_policy_aac:
            feed.update(policy_inputs_feed(pi_prime, 'off', off))
        if targets.pixel_control is not None:
            feed.update(pixel_control_feed(targets.pixel_control, off))
        if targets.value_replay is not None:
            feed[targets.value_replay] = off['r']
    rp = batches.reward_prediction
    if rp is not None:
        feed.update(feed_dict_from_nested(pi.rp_state_in, rp['state']))
        feed.update({targets.reward_prediction: rp['rp_target'], pi.rp_batch_size: rp['batch_size']})
    return feed


def batches_feed(config, targets, batches, pi, pi_prime=None, extra_feed=None):
    """The feed dict of an update on TrainBatches `batches` (`train_feed`), plus `extra_feed(batches)`.

    Args:
        config: the trainer's resolved `AacConfig`.
        targets: the trainer's TrainTargets.
        batches: TrainBatches.
        pi, pi_prime: local policy and target policy (or None).
        extra_feed: None, or fn(TrainBatches) -> dict of more placeholder values.

    Returns:
        dict placeholder -> value.
    """
    feed = train_feed(config, targets, batches, pi, pi_prime)
    if extra_feed is not None:
        feed.update(extra_feed(batches))
    return feed


def step_feed(config, targets, data, is_train, pi, pi_prime=None, extra_feed=None):
    """The feed dict of a train step's update on the whole of merged runner `data`: its train rollouts processed
    (`train_batches`) and fed (`batches_feed`).

    Args:
        config: the trainer's resolved `AacConfig`.
        targets: the trainer's TrainTargets.
        data: merged runner data (see `BaseAAC.get_data`).
        is_train: list of bools, one per on-policy rollout.
        pi, pi_prime: local policy and target policy (or None).
        extra_feed: None, or fn(TrainBatches) -> dict of more placeholder values.

    Returns:
        dict placeholder -> value.
    """
    return batches_feed(config, targets, train_batches(config, data, is_train), pi, pi_prime, extra_feed)


def update_batches(batches, num_epochs, num_minibatches, rng):
    """The TrainBatches of every update of a train step, in order: `num_epochs` passes over `batches`, each (with
    `num_minibatches` > 1) over its on-policy frames shuffled by `rng` and split into `num_minibatches` nearly
    equal minibatches (a `time_flat` batch: every row a frame with its own context; see `batches.batch_rows`).

    Args:
        batches: TrainBatches of the step.
        num_epochs, num_minibatches: passes, and updates per pass.
        rng: np.random.Generator.

    Returns:
        list of TrainBatches (`batches` itself, repeated, when `num_minibatches` is 1).
    """
    if num_minibatches == 1:
        return [batches] * num_epochs
    rows = batches.on_policy['batch_size']
    updates = []
    for _ in range(num_epochs):
        for minibatch in np.array_split(rng.permutation(rows), min(num_minibatches, rows)):
            updates.append(batches._replace(on_policy=batch_rows(batches.on_policy, minibatch)))
    return updates


# ---------------------------------------------------------------------------------------------- running

SessionCall = collections.namedtuple('SessionCall', ['name', 'fetches', 'targets'])
"""One kind of session run of the train step: what it fetches and which ops it runs besides."""

SessionCalls = collections.namedtuple('SessionCalls', [
    'copy_to_target', 'sync', 'update_epoch', 'update', 'update_then_sync', 'update_with_summary', 'end_early',
    'end_early_with_summary'])
"""The train step's session runs (see `session_calls`)."""

KL_STOP_FACTOR = 1.5
"""A step's updates end once an update's minibatch had drifted more than this times `target_kl` (Stable-Baselines3's
factor)."""


def session_calls(ops, summary_op):
    """The named session runs of a train step on TrainOps `ops`.

    `copy_to_target`: the local policy to the target policy pi' (None without one); `sync`: the global weights
    to the local policy; `update_epoch`: an update that does not advance the global step, then the sync (every
    epoch but the last), fetching whether it was finite and, where `ops.policy_kl` is set, the drift before it;
    `update`: the update, fetching the new global step and whether it was finite; `update_then_sync`: the same, then
    the sync in the same run; `update_with_summary`: `update` fetching the model summary too (None without a summary
    op). The last three are a step's last update (`last_train_op`). `end_early` ends a step whose updates stopped
    early: it advances the global step (fetched) with no update and updates the observation statistics;
    `end_early_with_summary` fetches the model summary too (None without one).
    """
    step = [ops.inc_step, ops.train_finite]
    epoch = [ops.train_finite] + ([ops.policy_kl] if ops.policy_kl is not None else [])
    statistics = [ops.statistics_update] if ops.statistics_update is not None else []
    with_summary = summary_op is not None
    return SessionCalls(
        copy_to_target=SessionCall('copy_to_target', None, [ops.sync_pi_prime]) if ops.sync_pi_prime is not None
        else None,
        sync=SessionCall('sync', None, [ops.sync_pi]),
        update_epoch=SessionCall('update_epoch', epoch, [ops.sync_pi_after_train]),
        update=SessionCall('update', step, [ops.last_train_op]),
        update_then_sync=SessionCall('update_then_sync', step, [ops.last_train_op, ops.sync_pi_after_last]),
        update_with_summary=SessionCall('update_with_summary', step + [summary_op], [ops.last_train_op])
        if with_summary else None,
        end_early=SessionCall('end_early', [ops.advance_step], statistics),
        end_early_with_summary=SessionCall('end_early_with_summary', [ops.advance_step, summary_op], statistics)
        if with_summary else None)


class Learner:
    """Runs a worker's train steps (`train_step`).

    Args:
        ops: TrainOps.
        config: the trainer's resolved `AacConfig`.
        targets: the trainer's TrainTargets.
        pi, pi_prime: the local policy and the target policy (None without one).
        summary_op: model summary op, or None.
        extra_feed: fn(TrainBatches) -> dict of more placeholder values (the trainer's `extra_feed`).
        task: the worker's index (named in errors).
        datasets: the envs' datasets (or None), whose data checks explain a non-finite step.
        global_step: the global step variable, read with the sync of `start` (None: `synced_global_step` is known
            from the first update that ends with the sync).
        rng: np.random.Generator shuffling the frames into minibatches (None: an unseeded one).

    Attributes:
        steps: train steps run (the original's `local_steps`).
        last_global_step: the global step after the latest train step (None before the first).
        local_policy_synced: whether the local policy holds the global weights of the end of the last update
            (the previous step ended with the sync).
        synced_global_step: the global step of the local policy's latest sync, the step of the global weights it
            holds (None before one is known). A sync that is not part of an update takes the step of the update
            before it, a lower bound: other workers may have moved the step meanwhile.
        summaries: the `summaries.RunnerSummaryWriter` the step writes with (None: no summaries).
        updates_in_step: the updates the latest train step ran (fewer than its feeds where `target_kl` ended them).
    """

    def __init__(self, ops, config, targets, pi, pi_prime=None, summary_op=None, extra_feed=None, task=0,
                 datasets=(), global_step=None, rng=None):
        self.ops, self.config, self.targets = ops, config, targets
        self.pi, self.pi_prime = pi, pi_prime
        self.summary_op, self.extra_feed = summary_op, extra_feed
        self.task, self.datasets = task, list(datasets)
        self.global_step = global_step
        self.rng = rng if rng is not None else np.random.default_rng()
        self.calls = session_calls(ops, summary_op)
        self.steps = 0
        self.last_global_step = None
        self.local_policy_synced = False
        self.synced_global_step = None
        self.summaries = None
        self.updates_in_step = 0
        self._callables = CallableCache()

    def start(self, sess, summaries=None):
        """Copies every global variable to the local policy (reading the global step with them); the steps write
        with `summaries` (or write none)."""
        if self.global_step is None:
            sess.run(self.ops.sync)
        else:
            self.synced_global_step = int(sess.run([self.ops.sync, self.global_step])[1])
        self.local_policy_synced = True
        self.summaries = summaries

    def update_feeds(self, data, is_train):
        """The feed dicts of a train step's updates on merged runner `data` (see `update_batches`), and the env
        frames it trains on.

        Returns:
            (list of feed dicts, frames): without minibatches one feed of the whole batch, repeated for every pass;
            with them a feed per minibatch, each giving the frames of the whole batch (`TrainOps.frames`), which the
            last update advances the global step by.
        """
        config = self.config
        batches = train_batches(config, data, is_train)
        frames = int(np.sum(batches.on_policy[MASK_KEY]))
        if config.num_minibatches == 1:
            return [self._feed(batches)] * config.num_epochs, frames
        feeds = []
        for update in update_batches(batches, config.num_epochs, config.num_minibatches, self.rng):
            feed = self._feed(update)
            feed[self.ops.frames] = frames
            feeds.append(feed)
        return feeds, frames

    def _feed(self, batches):
        """The feed dict of an update of the learner's policies on TrainBatches `batches` (`batches_feed`)."""
        return batches_feed(self.config, self.targets, batches, self.pi, self.pi_prime, self.extra_feed)

    def train_step(self, sess, data):
        """One train step on merged runner `data` (one rollout from every runner, see `BaseAAC.get_data`):

        1. every `pi_prime_update_period` steps, copy the local policy to the target policy pi' (PPO);
        2. keep the rollouts of train episodes; process them into the batches and feeds of the step's updates
           (`update_feeds`: `num_epochs` passes of `num_minibatches`);
        3. sync the local policy from the global one, unless the previous step ended with that sync (with a target
           policy always, after pi' took the local weights);
        4. every update but the last, each followed by the sync; with `target_kl` they end after the first whose
           minibatch had drifted past `KL_STOP_FACTOR` x `target_kl` from the old policy, and the step ends without
           its last update (`end_early`);
        5. otherwise one session run of the last update, which advances the global step and, every
           `model_summary_freq` steps, fetches the model summary (and then leaves the sync to the next step);
           without a target policy and summary it ends with the sync;
        6. write the episode statistics and the model summary.

        Raises:
            NonFiniteTrainingError: an update's loss or gradients were not finite (it changed no weight).

        Returns:
            env frames trained on (0 when every rollout came from a test episode).
        """
        calls, config = self.calls, self.config
        if calls.copy_to_target is not None and self.steps % config.pi_prime_update_period == 0:
            self._run(sess, calls.copy_to_target)
        is_train = [rollout_is_train(rollout) for rollout in data['on_policy']]
        frames, model_summary = 0, None
        if any(is_train):
            feeds, frames = self.update_feeds(data, is_train)
            if calls.copy_to_target is not None or not self.local_policy_synced:
                self._run(sess, calls.sync)
                self._synced_after(self.last_global_step)
            ended_early = self._updates_but_last(sess, feeds[:-1])
            summary_due = calls.update_with_summary is not None and self.steps % config.model_summary_freq == 0
            if not ended_early:
                self.updates_in_step += 1  # (the last update, run below)
            if summary_due:
                feeds[-1] = {**feeds[-1], self.ops.updates_in_step: self.updates_in_step}
            if ended_early:
                fetched = self._run(sess, calls.end_early_with_summary if summary_due else calls.end_early, feeds[-1])
                self.last_global_step = int(fetched[0])
                self.local_policy_synced = True  # (the sync after the update that ended them)
                model_summary = fetched[1] if summary_due else None
            else:
                model_summary = self._last_update(sess, feeds[-1], summary_due)
            self.steps += 1
        if self.summaries is not None:
            self.summaries.write(sess, data, model_summary, step=self.last_global_step)
        return frames

    def _updates_but_last(self, sess, feeds):
        """Runs the updates of `feeds` (all of a step's but its last), each followed by the sync, until one whose
        minibatch had drifted past `KL_STOP_FACTOR` x `target_kl` from the old policy before it.

        Returns:
            True where the updates ended early (the step's last update is not to run).
        """
        self.updates_in_step = 0
        for feed in feeds:
            fetched = self._run(sess, self.calls.update_epoch, feed)
            self._check_finite(sess, fetched[0], feed)
            self._synced_after(self.last_global_step)
            self.updates_in_step += 1
            if self.config.target_kl is not None and fetched[1] > KL_STOP_FACTOR * self.config.target_kl:
                return True
        return False

    def _last_update(self, sess, feed, summary_due):
        """Runs a step's last update on `feed` (with the sync, unless there is a target policy or `summary_due`)
        and advances the global step.

        Returns:
            the serialized model summary where `summary_due`, else None.
        """
        calls = self.calls
        if summary_due:
            last = calls.update_with_summary
        else:
            last = calls.update if calls.copy_to_target is not None else calls.update_then_sync
        fetched = self._run(sess, last, feed)
        self.local_policy_synced = last is calls.update_then_sync
        self._check_finite(sess, fetched[1], feed)
        self.last_global_step = int(fetched[0])
        if self.local_policy_synced:
            self.synced_global_step = self.last_global_step
        return fetched[2] if summary_due else None

    def _synced_after(self, step):
        """Records a sync run after the update that left the global step at `step` (None: none known yet, the
        step of the previous sync stays)."""
        if step is not None:
            self.synced_global_step = step

    def _run(self, sess, call, feed=None):
        return self._callables.run(sess, call.name, call.fetches, feed or {}, targets=call.targets)

    def _check_finite(self, sess, finite, feed):
        """Raises NonFiniteTrainingError after an update whose `train_finite` was False, naming the first
        non-finite input or tensor and what the data checks find in the envs' data."""
        if finite:
            return
        first = first_non_finite(sess, self.ops.finite_checked, feed) or 'a tensor of the train step'
        explanation = ''.join(dict.fromkeys(data_explanation(dataset) for dataset in self.datasets))
        raise NonFiniteTrainingError('train step {} of task {}: the loss or its gradients are not finite, first {}; '
                                     'the step changed no weight and training stops{}'.format(
                                         self.steps, self.task, first, explanation))


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
