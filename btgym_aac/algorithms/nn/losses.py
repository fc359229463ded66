"""Loss builders for actor-critic training and the UNREAL auxiliary tasks.

Every builder opens `tf.name_scope(name + '/<kind>')` and returns `(scalar loss tensor, list of summary ops)`.
TF rejects a leading underscore in a root name scope, so when a builder is called outside any name scope the
leading underscores of `name` are dropped (the default `_aac_` becomes `aac_/aac`); inside a scope the name is
kept as given.
Notation: `CE(a, l) = -sum_k a_k log softmax(l)_k`.

Padding mask: `aac_loss_def`, `ppo_loss_def`, `value_fn_loss_def` and `pc_loss_def` take an optional float
`mask` [B] of 0/1 row weights. When given, every batch mean of these losses (policy loss, value loss, entropy,
pixel-control loss, and the reported mean value / ratio / KL) becomes a mean over the rows with mask 1:
`sum(mask * x) / max(sum(mask), 1)`, so zero-padded rows contribute nothing (an all-zero mask gives 0).
"""
from btgym_aac.algorithms.common.math_utils import cat_entropy, kl_divergence
from btgym_aac.compat import tf


def loss_scope(name, kind):
    """Opens the name scope `<name>/<kind>`, valid also at the graph root (see the module docstring)."""
    if not tf.get_default_graph().get_name_scope():
        name = name.lstrip('_')
    return tf.name_scope('{}/{}'.format(name, kind))


def _scalar_summaries(always, verbose_only, verbose):
    """Scalar summaries of the (tag, tensor) pairs in `always`, plus those in `verbose_only` when `verbose`."""
    pairs = list(always) + (list(verbose_only) if verbose else [])
    return [tf.summary.scalar(tag, tensor) for tag, tensor in pairs]


def batch_mean(x, mask):
    """Mean of `x` [B] over all rows (`mask` None) or over the rows weighted by `mask` [B]."""
    if mask is None:
        return tf.reduce_mean(x)
    mask = tf.cast(mask, x.dtype)
    return tf.reduce_sum(x * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


def check_compatible(first, second, what):
    """Raises ValueError when the static shapes of `first` and `second` cannot match."""
    if not first.get_shape().is_compatible_with(second.get_shape()):
        raise ValueError('{}: shapes {} and {} do not match'.format(what, first.get_shape(), second.get_shape()))


def _squared_error(r_target, pi_vf, what):
    """Returns `(R - V)^2` [B] after checking that the two shapes agree (no silent broadcasting)."""
    r_target = tf.convert_to_tensor(r_target)
    pi_vf = tf.convert_to_tensor(pi_vf)
    check_compatible(r_target, pi_vf, what + ' value target vs value function')
    return tf.square(r_target - pi_vf)


def _by_group(x, groups):
    """[B, G * N] -> [B, G, N]."""
    return tf.reshape(x, [-1, groups, x.get_shape().as_list()[-1] // groups])


def neg_log_prob(act_target, logits, action_groups=1):
    """`CE(a, logits)` [B]; with `action_groups` G > 1 the actions and logits are G categoricals of N values side
    by side ([B, G * N]) and the result is the sum of their G cross-entropies (a factorised distribution)."""
    if action_groups == 1:
        return tf.nn.softmax_cross_entropy_with_logits_v2(labels=act_target, logits=logits)
    return tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=_by_group(act_target, action_groups), logits=_by_group(logits, action_groups)), axis=-1)


def entropy_of(logits, action_groups=1):
    """Entropy [B] of `softmax(logits)`, summed over the `action_groups` categoricals (see `neg_log_prob`)."""
    if action_groups == 1:
        return cat_entropy(logits)
    groups = _by_group(logits, action_groups)
    per_group = cat_entropy(tf.reshape(groups, [-1, groups.get_shape().as_list()[-1]]))
    return tf.reduce_sum(tf.reshape(per_group, [-1, action_groups]), axis=-1)


def policy_divergence(old_logits, logits, action_groups=1):
    """`KL(softmax(old_logits) || softmax(logits))` [B], summed over the `action_groups` categoricals (see
    `neg_log_prob`)."""
    if action_groups == 1:
        return kl_divergence(old_logits, logits)
    return tf.reduce_sum(kl_divergence(_by_group(old_logits, action_groups), _by_group(logits, action_groups)),
                         axis=-1)


def aac_loss_def(act_target, adv_target, r_target, pi_logits, pi_vf, pi_prime_logits, entropy_beta, epsilon=None,
                 name='_aac_', verbose=False, mask=None, action_groups=1):
    """A3C loss (https://arxiv.org/abs/1602.01783): `mean(CE(a, logits)·Adv) + 0.5·mean((R - V)^2) - beta·H`.

    Args:
        act_target: one-hot actions [B, A].
        adv_target: advantages [B].
        r_target: empirical returns [B].
        pi_logits: policy logits [B, A].
        pi_vf: value function [B].
        pi_prime_logits: unused (common loss signature).
        entropy_beta: entropy regularisation weight (float or scalar tensor).
        epsilon: unused (common loss signature).
        name: name scope prefix.
        verbose: add the `entropy` and `value_fn` (mean V) summaries.
        mask: optional float [B] of 0/1 row weights (see the module docstring).
        action_groups: G > 1: actions and logits hold G categoricals side by side (see `neg_log_prob`).

    Returns:
        loss scalar; summaries `policy_loss`, `value_loss` (+ `entropy`, `value_fn`).
    """
    with loss_scope(name, 'aac'):
        pi_loss = batch_mean(neg_log_prob(act_target, pi_logits, action_groups) * adv_target, mask)
        vf_loss = 0.5 * batch_mean(_squared_error(r_target, pi_vf, 'aac_loss_def'), mask)
        entropy = batch_mean(entropy_of(pi_logits, action_groups), mask)
        loss = pi_loss + vf_loss - entropy * entropy_beta

        summaries = _scalar_summaries(
            [('policy_loss', pi_loss), ('value_loss', vf_loss)],
            [('entropy', entropy), ('value_fn', batch_mean(pi_vf, mask))],
            verbose,
        )
    return loss, summaries


def ppo_loss_def(act_target, adv_target, r_target, pi_logits, pi_vf, pi_prime_logits, entropy_beta, epsilon,
                 name='_ppo_', verbose=False, mask=None, action_groups=1):
    """PPO clipped surrogate loss, (7) of https://arxiv.org/abs/1707.06347.

    `rho = exp(log pi(a) - stop_gradient(log pi_old(a)))`;
    `L = -mean(min(rho·Adv, clip(rho, 1 - eps, 1 + eps)·Adv)) + mean((R - V)^2) - beta·H` (the value term has no
    0.5 factor).

    Args:
        act_target: one-hot actions [B, A].
        adv_target: advantages [B].
        r_target: empirical returns [B].
        pi_logits: policy logits [B, A].
        pi_vf: value function [B].
        pi_prime_logits: old-policy logits [B, A] (no gradient flows into them).
        entropy_beta: entropy regularisation weight.
        epsilon: clipping epsilon (float or scalar tensor).
        name: name scope prefix.
        verbose: add `entropy`, `Dkl_old_new` (mean KL(pi_old || pi)), `pi_ratio` (mean rho), `value_fn`.
        mask: optional float [B] of 0/1 row weights (see the module docstring).
        action_groups: G > 1: actions and logits hold G categoricals side by side (see `neg_log_prob`).

    Returns:
        loss scalar; summaries `l_clip_loss`, `value_loss` (+ verbose ones).
    """
    with loss_scope(name, 'ppo'):
        log_prob = -neg_log_prob(act_target, pi_logits, action_groups)
        old_log_prob = tf.stop_gradient(-neg_log_prob(act_target, pi_prime_logits, action_groups))
        ratio = tf.exp(log_prob - old_log_prob)
        surrogate = ratio * adv_target
        clipped_surrogate = tf.clip_by_value(ratio, 1.0 - epsilon, 1.0 + epsilon) * adv_target
        clip_loss = -batch_mean(tf.minimum(surrogate, clipped_surrogate), mask)
        vf_loss = batch_mean(_squared_error(r_target, pi_vf, 'ppo_loss_def'), mask)
        entropy = batch_mean(entropy_of(pi_logits, action_groups), mask)
        loss = clip_loss + vf_loss - entropy * entropy_beta
        kl = policy_divergence(pi_prime_logits, pi_logits, action_groups)

        summaries = _scalar_summaries(
            [('l_clip_loss', clip_loss), ('value_loss', vf_loss)],
            [
                ('entropy', entropy),
                ('Dkl_old_new', batch_mean(kl, mask)),
                ('pi_ratio', batch_mean(ratio, mask)),
                ('value_fn', batch_mean(pi_vf, mask)),
            ],
            verbose,
        )
    return loss, summaries


def value_fn_loss_def(r_target, pi_vf, name='_vr_', verbose=False, mask=None):
    """Value-replay loss `mean((R - V)^2)`.

    Args:
        r_target: returns [B].
        pi_vf: value function [B].
        name: name scope prefix.
        verbose: add the `v_loss` summary.
        mask: optional float [B] of 0/1 row weights (see the module docstring).

    Returns:
        loss scalar; summaries (`v_loss` if verbose, else empty).
    """
    with loss_scope(name, 'value_replay'):
        loss = batch_mean(_squared_error(r_target, pi_vf, 'value_fn_loss_def'), mask)
        summaries = _scalar_summaries([], [('v_loss', loss)], verbose)
    return loss, summaries


def pc_loss_def(actions, targets, pi_pc_q, name='_pc_', verbose=False, mask=None):
    """Pixel-control loss (https://arxiv.org/abs/1611.05397): `sum((targets - Q_a)^2) / B`, the sum over the
    batch and the map.

    `Q_a = sum_k Q[..., k] · actions[:, k]`. The actions must be one-hot of width A, the depth of `pi_pc_q`; a
    static width mismatch raises ValueError.

    Args:
        actions: one-hot actions [B, A].
        targets: pixel-control Q targets [B, H, W].
        pi_pc_q: Q-value maps [B, H, W, A].
        name: name scope prefix.
        verbose: add the `q_loss` summary.
        mask: optional float [B] of 0/1 row weights: B becomes `max(sum(mask), 1)` and rows with mask 0 count
            nothing (see the module docstring).

    Returns:
        loss scalar; summaries (`q_loss` if verbose, else empty).
    """
    actions = tf.convert_to_tensor(actions)
    pi_pc_q = tf.convert_to_tensor(pi_pc_q)
    action_width = actions.get_shape()[-1]
    q_depth = pi_pc_q.get_shape()[-1]
    if action_width is not None and q_depth is not None and action_width != q_depth:
        raise ValueError('pc_loss_def: actions width {} differs from the Q depth {}; feed one-hot actions of the '
                         'full action depth'.format(action_width, q_depth))
    with loss_scope(name, 'pixel_control'):
        q_action = tf.reduce_sum(pi_pc_q * tf.reshape(actions, [-1, 1, 1, tf.shape(actions)[-1]]), axis=-1)
        loss = batch_mean(tf.reduce_sum(tf.square(targets - q_action), axis=[1, 2]), mask)
        summaries = _scalar_summaries([], [('q_loss', loss)], verbose)
    return loss, summaries


def rp_loss_def(rp_targets, pi_rp_logits, name='_rp_', verbose=False):
    """Reward-prediction loss: softmax cross-entropy averaged over every sample of the batch.

    Args:
        rp_targets: one-hot reward classes [B, 3].
        pi_rp_logits: class logits [B, 3].
        name: name scope prefix.
        verbose: add the `class_loss` summary.

    Returns:
        loss scalar; summaries (`class_loss` if verbose, else empty).
    """
    with loss_scope(name, 'reward_prediction'):
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=rp_targets, logits=pi_rp_logits))
        summaries = _scalar_summaries([], [('class_loss', loss)], verbose)
    return loss, summaries
