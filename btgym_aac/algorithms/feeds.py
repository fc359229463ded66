"""From runner data to a train step's feed dict: rollouts processed into batches, batches fed to the policy's
inputs and the trainer's targets (see `objective.TrainTargets`)."""
import collections

import numpy as np

from btgym_aac.algorithms.common.pixel_control import pixel_control_targets
from btgym_aac.algorithms.common.batches import batch_stack
from btgym_aac.algorithms.common.placeholders import feed_dict_from_nested, feed_dict_rnn_context

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


def policy_targets_feed(targets, batch):
    """Feed of PolicyTargets `targets` from a processed batch."""
    return {targets.action: batch['action'], targets.advantage: batch['advantage'], targets.r: batch['r'],
            targets.mask: batch['mask']}


def pixel_control_feed(targets, batch):
    """Feed of PixelControlTargets `targets` from a processed off-policy batch with the pixel-control parts."""
    return {targets.action: batch['action'], targets.returns: batch['pc_return'],
            targets.bootstrap_weight: batch['pc_bootstrap_weight'],
            targets.bootstrap_row: batch['pc_bootstrap_row'], targets.mask: batch['pc_mask']}


def train_feed(targets, batches, pi, pi_prime=None, off_policy_prime=False):
    """Feed dict of one train step (`pi.train_phase` fed True).

    Args:
        targets: the trainer's TrainTargets.
        batches: TrainBatches.
        pi, pi_prime: local policy and target policy (or None).
        off_policy_prime: feed `pi_prime`'s off-policy inputs too (the off-policy actor-critic loss reads them).

    Returns:
        dict placeholder -> value.
    """
    feed = policy_inputs_feed(pi, 'on', batches.on_policy)
    feed.update(policy_targets_feed(targets.on_policy, batches.on_policy))
    feed[pi.train_phase] = True
    if pi_prime is not None:
        feed.update(policy_inputs_feed(pi_prime, 'on', batches.on_policy))
    off = batches.off_policy
    if off is not None and pi.off_lstm_state_pl_flatten is not None:  # (no off-policy pass: no loss reads it)
        feed.update(policy_inputs_feed(pi, 'off', off))
        feed.update(policy_targets_feed(targets.off_policy, off))
        if pi_prime is not None and off_policy_prime:
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
