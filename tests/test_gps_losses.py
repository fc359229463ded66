"""Imitation losses of guided policy search against numpy formulas on fed arrays: scaling by guided_lambda,
padding mask, summaries, name scope and shape checks."""
import numpy as np
import pytest

from btgym_aac.compat import tf
from btgym_aac.research.gps import guided_aac_loss_def_0_0, guided_aac_loss_def_0_1, guided_aac_loss_def_0_3

BATCH, ACTIONS = 7, 4
MASK = np.array([1, 0, 1, 1, 0, 1, 1], np.float32)


def _log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _ce_all(logits, expert):
    return -(expert * _log_softmax(logits)).sum(axis=-1)


def _ce_buy_sell(logits, expert):
    return _ce_all(logits[:, 1:3], expert[:, 1:3])


def _mse_buy_sell(logits, expert):
    return ((np.exp(_log_softmax(logits))[:, 1:3] - expert[:, 1:3]) ** 2).mean(axis=-1)


CASES = {
    '0_0': (guided_aac_loss_def_0_0, _ce_all, 'actions_ce'),
    '0_1': (guided_aac_loss_def_0_1, _ce_buy_sell, 'actions_ce'),
    '0_3': (guided_aac_loss_def_0_3, _mse_buy_sell, 'actions_mse'),
}


def _batch(seed):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.0, size=(BATCH, ACTIONS)).astype(np.float32)
    expert = rng.uniform(size=(BATCH, ACTIONS)).astype(np.float32)
    return logits, expert / expert.sum(axis=-1, keepdims=True)


def _run(loss_def, logits, expert, fed_lambda=None, **kwargs):
    """Builds `loss_def` on placeholders in a fresh graph and runs it on the arrays.

    Args:
        fed_lambda: value fed to a scalar placeholder passed as `guided_lambda` (None: the default).

    Returns:
        (loss value, {summary tag: value}, loss tensor name).
    """
    with tf.Graph().as_default(), tf.Session() as sess:
        pi_pl = tf.placeholder(tf.float32, [None, ACTIONS])
        expert_pl = tf.placeholder(tf.float32, [None, ACTIONS])
        feed = {pi_pl: logits, expert_pl: expert}
        if fed_lambda is not None:
            kwargs['guided_lambda'] = tf.placeholder(tf.float32, [])
            feed[kwargs['guided_lambda']] = fed_lambda
        loss, summaries = loss_def(pi_actions=pi_pl, expert_actions=expert_pl, verbose=True, **kwargs)
        value, merged = sess.run([loss, tf.summary.merge(summaries)], feed)
        tags = {item.tag: item.simple_value for item in tf.Summary.FromString(merged).value}
        return value, tags, loss.name


@pytest.mark.parametrize('case', sorted(CASES))
def test_loss_equals_numpy_mean(case):
    loss_def, per_row, tag = CASES[case]
    logits, expert = _batch(seed=1)
    value, tags, name = _run(loss_def, logits, expert)
    expected = per_row(logits, expert).mean()
    np.testing.assert_allclose(value, expected, rtol=1e-5)
    assert name.startswith('on_policy/aac/guided_loss/')
    assert list(tags) == ['on_policy/aac/guided_loss/' + tag]
    np.testing.assert_allclose(tags['on_policy/aac/guided_loss/' + tag], expected, rtol=1e-5)


@pytest.mark.parametrize('case', sorted(CASES))
def test_guided_lambda_tensor_scales_the_loss_and_its_summary(case):
    loss_def, per_row, tag = CASES[case]
    logits, expert = _batch(seed=2)
    value, tags, _ = _run(loss_def, logits, expert, fed_lambda=0.25)
    np.testing.assert_allclose(value, 0.25 * per_row(logits, expert).mean(), rtol=1e-5)
    np.testing.assert_allclose(list(tags.values()), [value], rtol=1e-6)


@pytest.mark.parametrize('case', sorted(CASES))
def test_mask_averages_over_unmasked_rows(case):
    loss_def, per_row, _ = CASES[case]
    logits, expert = _batch(seed=3)
    value, _, _ = _run(loss_def, logits, expert, mask=MASK, name='guide')
    rows = per_row(logits, expert)
    np.testing.assert_allclose(value, (rows * MASK).sum() / MASK.sum(), rtol=1e-5)


def test_mse_is_the_mean_over_all_buy_sell_elements():
    logits = np.zeros((2, ACTIONS), np.float32)  # softmax 0.25 everywhere
    expert = np.array([[0.1, 0.6, 0.2, 0.1], [0.4, 0.25, 0.25, 0.1]], np.float32)
    value, _, _ = _run(guided_aac_loss_def_0_3, logits, expert, fed_lambda=0.25)
    # squared errors (0.35^2, 0.05^2, 0, 0) averaged over the 4 elements, times 0.25
    np.testing.assert_allclose(value, 0.25 * (0.35 ** 2 + 0.05 ** 2) / 4, rtol=1e-5)


def test_cross_entropy_uses_the_expert_distribution_not_its_argmax():
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4]], np.float32))
    expert = np.array([[0.0, 0.5, 0.5, 0.0]], np.float32)
    value, _, _ = _run(guided_aac_loss_def_0_0, logits, expert)
    np.testing.assert_allclose(value, -0.5 * (np.log(0.2) + np.log(0.3)), rtol=1e-5)


def test_quiet_loss_has_no_summaries_and_mismatched_shapes_raise():
    with tf.Graph().as_default():
        logits = tf.zeros([3, ACTIONS])
        loss, summaries = guided_aac_loss_def_0_3(logits, tf.zeros([3, ACTIONS]))
        assert summaries == [] and loss.get_shape().as_list() == []
        for loss_def in (guided_aac_loss_def_0_0, guided_aac_loss_def_0_1, guided_aac_loss_def_0_3):
            with pytest.raises(ValueError, match='expert actions'):
                loss_def(logits, tf.zeros([3, ACTIONS + 1]))
