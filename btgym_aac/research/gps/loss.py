"""Imitation losses on expert action distributions, added to the actor-critic loss by guided trainers.

Every builder opens `tf.name_scope(name + '/guided_loss')`, scales its loss by `guided_lambda` (float or scalar
tensor, e.g. a decayed schedule) and returns `(loss, summaries)`; the one summary (tag `actions_ce` or
`actions_mse`, of the scaled loss) is made only when `verbose`. `mask` is an optional float [B] of 0/1 row
weights: the batch mean then runs over the rows with mask 1, as in `btgym_aac.algorithms.nn.losses`.
Arguments: `pi_actions` policy logits [B, A]; `expert_actions` expert action distributions [B, A].
"""
from btgym_aac.algorithms.nn.losses import batch_mean, check_compatible, loss_scope
from btgym_aac.compat import tf

BUY_SELL = slice(1, 3)
"""Action columns of buy and sell."""


def _guided_loss(pi_actions, expert_actions, name, verbose, guided_lambda, mask, tag, per_row):
    """Opens the scope, checks shapes, averages `per_row(logits, expert)` [B] over the batch and scales it."""
    with loss_scope(name, 'guided_loss'):
        pi_actions = tf.convert_to_tensor(pi_actions)
        expert_actions = tf.cast(expert_actions, pi_actions.dtype)
        check_compatible(pi_actions, expert_actions, '{} policy logits vs expert actions'.format(tag))
        loss = batch_mean(per_row(pi_actions, expert_actions), mask) * guided_lambda
        summaries = [tf.summary.scalar(tag, loss)] if verbose else []
    return loss, summaries


def guided_aac_loss_def_0_0(pi_actions, expert_actions, name='on_policy/aac', verbose=False, guided_lambda=1.0,
                            mask=None, **kwargs):
    """`guided_lambda * mean(CE(expert, logits))`: cross-entropy of the policy against the expert distribution
    (soft labels: the expert's whole distribution, not its argmax).

    Args:
        pi_actions, expert_actions, name, verbose, guided_lambda, mask: see the module docstring.
        **kwargs: other trainer arguments, ignored.

    Returns:
        loss scalar; summaries [`actions_ce`] when verbose.
    """
    def cross_entropy(logits, expert):
        return tf.nn.softmax_cross_entropy_with_logits(labels=expert, logits=logits)

    return _guided_loss(pi_actions, expert_actions, name, verbose, guided_lambda, mask, 'actions_ce', cross_entropy)


def guided_aac_loss_def_0_1(pi_actions, expert_actions, name='on_policy/aac', verbose=False, guided_lambda=1.0,
                            mask=None, **kwargs):
    """`guided_lambda * mean(CE(expert[:, 1:3], logits[:, 1:3]))`: cross-entropy on the buy / sell columns only
    (the labels are not renormalised).

    Args:
        pi_actions, expert_actions, name, verbose, guided_lambda, mask: see the module docstring.
        **kwargs: other trainer arguments, ignored.

    Returns:
        loss scalar; summaries [`actions_ce`] when verbose.
    """
    def buy_sell_cross_entropy(logits, expert):
        return tf.nn.softmax_cross_entropy_with_logits(labels=expert[..., BUY_SELL], logits=logits[..., BUY_SELL])

    return _guided_loss(pi_actions, expert_actions, name, verbose, guided_lambda, mask, 'actions_ce',
                        buy_sell_cross_entropy)


def guided_aac_loss_def_0_3(pi_actions, expert_actions, name='on_policy/aac', verbose=False, guided_lambda=1.0,
                            mask=None, **kwargs):
    """`guided_lambda * MSE(expert[:, 1:3], softmax(logits)[:, 1:3])`, the mean over all B·2 elements.

    Args:
        pi_actions, expert_actions, name, verbose, guided_lambda, mask: see the module docstring.
        **kwargs: other trainer arguments, ignored.

    Returns:
        loss scalar; summaries [`actions_mse`] when verbose.
    """
    def buy_sell_squared_error(logits, expert):
        error = tf.nn.softmax(logits)[..., BUY_SELL] - expert[..., BUY_SELL]
        return tf.reduce_mean(tf.square(error), axis=-1)

    return _guided_loss(pi_actions, expert_actions, name, verbose, guided_lambda, mask, 'actions_mse',
                        buy_sell_squared_error)
