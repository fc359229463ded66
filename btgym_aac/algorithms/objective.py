"""The trainer's target placeholders and the assembly of its total loss.

The trainer owns the placeholders of what the losses regress on (actions, advantages, returns, masks, auxiliary
targets); the policy owns its inputs and outputs (see `policy.interface`). `base_loss` adds up

    L = L_on + off_aac_lambda * L_off + pc_lambda * L_pc + vr_lambda * L_vr + rp_lambda * L_rp

with the terms of disabled tasks left out.
"""
import collections

from btgym_aac.algorithms.nn.losses import batch_mean, policy_divergence
from btgym_aac.compat import tf

PolicyTargets = collections.namedtuple('PolicyTargets', ['action', 'advantage', 'r', 'mask', 'behaviour_logits'])
"""Placeholders of an actor-critic loss: one-hot actions [N, A], advantages [N], returns [N], row mask [N] (1 for
real frames, 0 for padding), the acting policy's logits [N, A] (fed with `AacConfig.behaviour_logits` only)."""

PixelControlTargets = collections.namedtuple('PixelControlTargets', [
    'action', 'returns', 'bootstrap_weight', 'bootstrap_row', 'mask'])
"""Placeholders of the pixel-control loss (see `rollout.pixel_control_targets`): one-hot actions [N, A],
discounted pixel changes [N, H, W], bootstrap weights [N] and rows [N], row mask [N]."""

LossBuilders = collections.namedtuple('LossBuilders', ['on_policy', 'off_policy', 'pixel_control', 'value_replay',
                                                       'reward_prediction'])
"""A trainer's loss builders (`nn.losses` functions or your own with their arguments)."""

TrainTargets = collections.namedtuple('TrainTargets', ['on_policy', 'off_policy', 'pixel_control', 'value_replay',
                                                       'reward_prediction'])
"""All target placeholders of a trainer: PolicyTargets of the on- and off-policy passes, PixelControlTargets,
the value-replay return placeholder [N] and the reward-prediction class placeholder [B, 3] (None where the task
is disabled)."""


def make_policy_targets(prefix, depth):
    """PolicyTargets named `<prefix>_policy_*`, for actions of one-hot width `depth`."""
    return PolicyTargets(
        action=tf.placeholder(tf.float32, [None, depth], name=prefix + '_policy_action_pl'),
        advantage=tf.placeholder(tf.float32, [None], name=prefix + '_policy_advantage_pl'),
        r=tf.placeholder(tf.float32, [None], name=prefix + '_policy_return_pl'),
        mask=tf.placeholder(tf.float32, [None], name=prefix + '_policy_mask_pl'),
        behaviour_logits=tf.placeholder(tf.float32, [None, depth], name=prefix + '_policy_behaviour_logits_pl'))


def make_train_targets(depth, use_pixel_control=False, use_value_replay=False, use_reward_prediction=False):
    """Makes the TrainTargets of a trainer with the given auxiliary tasks, in the current graph and name scope."""
    pixel_control = PixelControlTargets(
        action=tf.placeholder(tf.float32, [None, depth], name='pc_action'),
        returns=tf.placeholder(tf.float32, [None, None, None], name='pc_return'),
        bootstrap_weight=tf.placeholder(tf.float32, [None], name='pc_bootstrap_weight'),
        bootstrap_row=tf.placeholder(tf.int32, [None], name='pc_bootstrap_row'),
        mask=tf.placeholder(tf.float32, [None], name='pc_mask')) if use_pixel_control else None
    return TrainTargets(
        on_policy=make_policy_targets('on', depth), off_policy=make_policy_targets('off', depth),
        pixel_control=pixel_control,
        value_replay=tf.placeholder(tf.float32, [None], name='vr_target') if use_value_replay else None,
        reward_prediction=tf.placeholder(tf.float32, [None, 3], name='rp_target') if use_reward_prediction else None)


def pixel_control_q_target(pc_q, targets):
    """N-step Q target [N, H, W] of pixel control: the fed discounted pixel changes plus the bootstrap
    `gamma_pc^(L-t) max_a Q(s_L, a)`, read from the Q head's own (gradient-stopped) output at the fed bootstrap
    rows (see `rollout.pixel_control_targets`).

    Args:
        pc_q: the policy's pixel-control Q head [N, H, W, A].
        targets: PixelControlTargets.
    """
    q_max = tf.stop_gradient(tf.reduce_max(pc_q, axis=-1))
    bootstrap = tf.gather(q_max, targets.bootstrap_row) * targets.bootstrap_weight[:, None, None]
    return tf.add(targets.returns, bootstrap, name='pc_q_target')


def actor_critic_loss(loss_fn, targets, logits, vf, prime_logits, entropy_beta, epsilon, name, verbose,
                      action_groups=1):
    """`loss_fn` (an `nn.losses` actor-critic builder) on PolicyTargets `targets`; returns (loss, summaries).

    `action_groups` (the action space's, > 1 for per-asset heads) is passed only when it is > 1, so loss builders
    without the argument keep working for joint and single actions.
    """
    groups = {'action_groups': action_groups} if action_groups > 1 else {}
    return loss_fn(act_target=targets.action, adv_target=targets.advantage, r_target=targets.r, pi_logits=logits,
                   pi_vf=vf, pi_prime_logits=prime_logits, entropy_beta=entropy_beta, epsilon=epsilon, name=name,
                   verbose=verbose, mask=targets.mask, **groups)


def old_policy_logits(config, targets, pi_prime, prefix='on'):
    """The old-policy logits of PPO's ratio in the `prefix` ('on' or 'off') pass: with `config.behaviour_logits` the
    fed logits the acting policy gave, else the target policy `pi_prime`'s (None without one)."""
    if config.behaviour_logits:
        return getattr(targets, prefix + '_policy').behaviour_logits
    return getattr(pi_prime, prefix + '_logits') if pi_prime is not None else None


def action_groups_of(pi):
    """The categoricals side by side in policy `pi`'s logits (1 but for per-asset heads)."""
    return getattr(pi.ac_space, 'action_groups', 1)


def on_policy_divergence(config, targets, pi, pi_prime):
    """The mean `KL(pi_old || pi)` over the fed on-policy frames (`losses.policy_divergence`; pi_old as in
    `old_policy_logits`), or None where the trainer has no old policy."""
    old = old_policy_logits(config, targets, pi_prime)
    if old is None:
        return None
    return batch_mean(policy_divergence(old, pi.on_logits, action_groups_of(pi)), targets.on_policy.mask)


def base_loss(config, losses, targets, pc_q_target, pi, pi_prime, clip_epsilon, verbose=True):
    """The on-policy loss plus the enabled off-policy and auxiliary terms, each weighted by its lambda.

    The losses' old-policy logits (PPO's ratio) are `pi_prime`'s, or with `config.behaviour_logits` the fed logits
    the acting policy gave.

    Args:
        config: the trainer's resolved `AacConfig` (task flags, weights, `model_beta`).
        losses: LossBuilders.
        targets: TrainTargets.
        pc_q_target: pixel-control Q target (see `pixel_control_q_target`), or None without pixel control.
        pi, pi_prime: local policy and target policy (or None).
        clip_epsilon: PPO clip range tensor.
        verbose: on-policy loss writes its verbose summaries.

    Returns:
        (loss tensor, list of summaries).
    """
    groups = action_groups_of(pi)
    loss, summaries = actor_critic_loss(losses.on_policy, targets.on_policy, pi.on_logits, pi.on_vf,
                                        old_policy_logits(config, targets, pi_prime, 'on'), config.model_beta,
                                        clip_epsilon, 'on_policy', verbose, groups)
    terms = []
    if config.use_off_policy_aac:
        terms.append((config.off_aac_lambda, actor_critic_loss(
            losses.off_policy, targets.off_policy, pi.off_logits, pi.off_vf,
            old_policy_logits(config, targets, pi_prime, 'off'), config.model_beta, clip_epsilon, 'off_policy', False,
            groups)))
    if config.use_pixel_control:
        pc = targets.pixel_control
        terms.append((config.pc_lambda, losses.pixel_control(
            actions=pc.action, targets=pc_q_target, pi_pc_q=pi.pc_q, name='aux', verbose=True, mask=pc.mask)))
    if config.use_value_replay:
        terms.append((config.vr_lambda, losses.value_replay(
            r_target=targets.value_replay, pi_vf=pi.vr_value, name='aux', verbose=True,
            mask=targets.off_policy.mask)))
    if config.use_reward_prediction:
        terms.append((config.rp_lambda, losses.reward_prediction(
            rp_targets=targets.reward_prediction, pi_rp_logits=pi.rp_logits, name='aux', verbose=True)))
    for weight, (term, term_summaries) in terms:
        loss = loss + weight * term
        summaries = summaries + term_summaries
    return loss, summaries
