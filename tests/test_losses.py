"""Loss builders against numpy formulas (with and without the padding mask) and PPO gradient sanity."""
import numpy as np
import pytest

from btgym_aac.algorithms.nn.losses import aac_loss_def, pc_loss_def, ppo_loss_def, rp_loss_def, value_fn_loss_def
from btgym_aac.compat import tf

BATCH, ACTIONS = 6, 4
MASK = np.array([1, 1, 0, 1, 0, 1], np.float32)


def _log_softmax(logits):
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _cross_entropy(labels, logits):
    return -(labels * _log_softmax(logits)).sum(axis=1)


def _entropy(logits):
    log_p = _log_softmax(logits)
    return -(np.exp(log_p) * log_p).sum(axis=1)


def _kl(logits_1, logits_2):
    log_p1, log_p2 = _log_softmax(logits_1), _log_softmax(logits_2)
    return (np.exp(log_p1) * (log_p1 - log_p2)).sum(axis=1)


def _mean(x, mask):
    return x.mean() if mask is None else (x * mask).sum() / mask.sum()


def _random_batch(seed):
    rng = np.random.default_rng(seed)
    return {
        'act': np.eye(ACTIONS, dtype=np.float32)[rng.integers(0, ACTIONS, BATCH)],
        'adv': rng.normal(size=BATCH).astype(np.float32),
        'r': rng.normal(size=BATCH).astype(np.float32),
        'logits': rng.normal(size=(BATCH, ACTIONS)).astype(np.float32),
        'vf': rng.normal(size=BATCH).astype(np.float32),
        'prime_logits': rng.normal(size=(BATCH, ACTIONS)).astype(np.float32),
    }


def _summary_values(sess, summaries, feed=None):
    """Runs the summaries and returns {last tag component: value}."""
    proto = tf.Summary.FromString(sess.run(tf.summary.merge(summaries), feed))
    return {value.tag.split('/')[-1]: value.simple_value for value in proto.value}


def _build_policy_loss(loss_def, batch, mask, **kwargs):
    """Builds `loss_def` on constants of `batch`; returns (loss, summaries)."""
    mask_tensor = None if mask is None else tf.constant(mask)
    return loss_def(tf.constant(batch['act']), tf.constant(batch['adv']), tf.constant(batch['r']),
                    tf.constant(batch['logits']), tf.constant(batch['vf']), tf.constant(batch['prime_logits']),
                    entropy_beta=0.05, verbose=True, mask=mask_tensor, **kwargs)


@pytest.mark.parametrize('mask', [None, MASK])
def test_aac_loss_matches_numpy(mask):
    batch = _random_batch(0)
    with tf.Graph().as_default(), tf.Session() as sess:
        loss, summaries = _build_policy_loss(aac_loss_def, batch, mask)
        loss_value = sess.run(loss)
        values = _summary_values(sess, summaries)
    pi_loss = _mean(_cross_entropy(batch['act'], batch['logits']) * batch['adv'], mask)
    vf_loss = 0.5 * _mean((batch['r'] - batch['vf']) ** 2, mask)
    entropy = _mean(_entropy(batch['logits']), mask)
    np.testing.assert_allclose(loss_value, pi_loss + vf_loss - 0.05 * entropy, rtol=1e-5, atol=1e-5)
    assert sorted(values) == ['entropy', 'policy_loss', 'value_fn', 'value_loss']
    np.testing.assert_allclose(
        [values['policy_loss'], values['value_loss'], values['entropy'], values['value_fn']],
        [pi_loss, vf_loss, entropy, _mean(batch['vf'], mask)], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('mask', [None, MASK])
def test_ppo_loss_matches_numpy(mask):
    batch = _random_batch(1)
    epsilon = 0.2
    with tf.Graph().as_default(), tf.Session() as sess:
        loss, summaries = _build_policy_loss(ppo_loss_def, batch, mask, epsilon=tf.constant(epsilon))
        loss_value = sess.run(loss)
        values = _summary_values(sess, summaries)
    ratio = np.exp(_cross_entropy(batch['act'], batch['prime_logits']) - _cross_entropy(batch['act'],
                                                                                         batch['logits']))
    clip_loss = -_mean(np.minimum(ratio * batch['adv'], np.clip(ratio, 1 - epsilon, 1 + epsilon) * batch['adv']),
                       mask)
    vf_loss = _mean((batch['r'] - batch['vf']) ** 2, mask)
    entropy = _mean(_entropy(batch['logits']), mask)
    np.testing.assert_allclose(loss_value, clip_loss + vf_loss - 0.05 * entropy, rtol=1e-5, atol=1e-5)
    assert sorted(values) == ['Dkl_old_new', 'entropy', 'l_clip_loss', 'pi_ratio', 'value_fn', 'value_loss']
    np.testing.assert_allclose(
        [values['l_clip_loss'], values['value_loss'], values['entropy'], values['pi_ratio'], values['Dkl_old_new']],
        [clip_loss, vf_loss, entropy, _mean(ratio, mask), _mean(_kl(batch['prime_logits'], batch['logits']), mask)],
        rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('loss_def', [aac_loss_def, ppo_loss_def])
def test_masked_loss_equals_loss_of_the_kept_rows(loss_def):
    batch = _random_batch(2)
    kept = {key: value[MASK == 1] for key, value in batch.items()}
    with tf.Graph().as_default(), tf.Session() as sess:
        masked, _ = _build_policy_loss(loss_def, batch, MASK, epsilon=0.1)
        unmasked_kept, _ = _build_policy_loss(loss_def, kept, None, epsilon=0.1)
        padded_unmasked, _ = _build_policy_loss(loss_def, batch, None, epsilon=0.1)
        masked_value, kept_value, padded_value = sess.run([masked, unmasked_kept, padded_unmasked])
    np.testing.assert_allclose(masked_value, kept_value, rtol=1e-5, atol=1e-6)
    assert not np.isclose(masked_value, padded_value)


@pytest.mark.parametrize('mask', [None, MASK])
def test_value_fn_loss_matches_numpy(mask):
    batch = _random_batch(3)
    with tf.Graph().as_default(), tf.Session() as sess:
        mask_tensor = None if mask is None else tf.constant(mask)
        loss, summaries = value_fn_loss_def(tf.constant(batch['r']), tf.constant(batch['vf']), verbose=True,
                                            mask=mask_tensor)
        _, quiet_summaries = value_fn_loss_def(tf.constant(batch['r']), tf.constant(batch['vf']))
        loss_value = sess.run(loss)
        values = _summary_values(sess, summaries)
    expected = _mean((batch['r'] - batch['vf']) ** 2, mask)
    np.testing.assert_allclose(loss_value, expected, rtol=1e-5)
    np.testing.assert_allclose(values['v_loss'], expected, rtol=1e-5)
    assert quiet_summaries == []


def test_value_loss_rejects_mismatched_shapes():
    with tf.Graph().as_default(), pytest.raises(ValueError, match='do not match'):
        value_fn_loss_def(tf.zeros([5, 1]), tf.zeros([5]))


def test_all_zero_mask_gives_zero_value_loss():
    with tf.Graph().as_default(), tf.Session() as sess:
        loss, _ = value_fn_loss_def(tf.ones([3]), tf.zeros([3]), mask=tf.zeros([3]))
        assert sess.run(loss) == 0.0


def test_pc_loss_matches_numpy():
    rng = np.random.default_rng(4)
    actions = np.eye(ACTIONS, dtype=np.float32)[rng.integers(0, ACTIONS, 3)]
    targets = rng.normal(size=(3, 5, 2)).astype(np.float32)
    q = rng.normal(size=(3, 5, 2, ACTIONS)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        actions_pl = tf.placeholder(tf.float32, [None, ACTIONS])
        targets_pl = tf.placeholder(tf.float32, [None, None, None])
        loss, summaries = pc_loss_def(actions_pl, targets_pl, tf.constant(q), verbose=True)
        feed = {actions_pl: actions, targets_pl: targets}
        loss_value = sess.run(loss, feed)
        values = _summary_values(sess, summaries, feed)
    q_taken = np.take_along_axis(q, actions.argmax(axis=1)[:, None, None, None], axis=-1)[..., 0]
    expected = ((targets - q_taken) ** 2).sum() / 3
    np.testing.assert_allclose(loss_value, expected, rtol=1e-5)
    np.testing.assert_allclose(values['q_loss'], expected, rtol=1e-5)


def test_masked_pc_loss_counts_only_the_rows_with_mask_one():
    rng = np.random.default_rng(6)
    actions = np.eye(ACTIONS, dtype=np.float32)[rng.integers(0, ACTIONS, 4)]
    targets = rng.normal(size=(4, 3, 2)).astype(np.float32)
    q = rng.normal(size=(4, 3, 2, ACTIONS)).astype(np.float32)
    mask = np.array([1, 0, 1, 0], dtype=np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        loss, _ = pc_loss_def(tf.constant(actions), tf.constant(targets), tf.constant(q), mask=tf.constant(mask))
        loss_value = sess.run(loss)
    q_taken = np.take_along_axis(q, actions.argmax(axis=1)[:, None, None, None], axis=-1)[..., 0]
    expected = ((targets - q_taken) ** 2)[[0, 2]].sum() / 2
    np.testing.assert_allclose(loss_value, expected, rtol=1e-5)


def test_pc_loss_rejects_action_width_other_than_q_depth():
    with tf.Graph().as_default(), pytest.raises(ValueError, match='one-hot actions'):
        pc_loss_def(tf.zeros([2, 1]), tf.zeros([2, 3, 3]), tf.zeros([2, 3, 3, ACTIONS]))


def test_rp_loss_is_mean_over_the_whole_batch():
    rng = np.random.default_rng(5)
    targets = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 5)]
    logits = rng.normal(size=(5, 3)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        loss, summaries = rp_loss_def(tf.constant(targets), tf.constant(logits), verbose=True)
        loss_value = sess.run(loss)
        values = _summary_values(sess, summaries)
    expected = _cross_entropy(targets, logits).mean()
    np.testing.assert_allclose(loss_value, expected, rtol=1e-5)
    np.testing.assert_allclose(values['class_loss'], expected, rtol=1e-5)
    assert not np.isclose(loss_value, _cross_entropy(targets, logits)[0])


@pytest.mark.parametrize('advantage, old_shift, clipped', [
    (1.0, -2.0, True),    # ratio > 1 + eps, positive advantage: clipped, no gradient
    (-1.0, 2.0, True),    # ratio < 1 - eps, negative advantage: clipped, no gradient
    (1.0, 0.0, False),    # ratio = 1, positive advantage: push the taken action up
    (-1.0, -2.0, False),  # ratio > 1 + eps, negative advantage: unclipped, push the taken action down
])
def test_ppo_gradient_in_and_out_of_the_clip_region(advantage, old_shift, clipped):
    logits = np.array([[0.5, -0.3, 0.1]], np.float32)
    old_logits = logits.copy()
    old_logits[0, 0] += old_shift
    with tf.Graph().as_default(), tf.Session() as sess:
        logits_var = tf.Variable(logits)
        loss, _ = ppo_loss_def(tf.constant([[1.0, 0.0, 0.0]]), tf.constant([advantage]), tf.zeros([1]),
                               logits_var, tf.zeros([1]), tf.constant(old_logits), entropy_beta=0.0, epsilon=0.2)
        gradient = tf.gradients(loss, logits_var)[0]
        sess.run(tf.global_variables_initializer())
        gradient_value = sess.run(gradient)
    if clipped:
        np.testing.assert_array_equal(gradient_value, np.zeros_like(logits))
    else:
        assert np.sign(gradient_value[0, 0]) == -np.sign(advantage)


def test_summary_tags_follow_the_name_scope():
    with tf.Graph().as_default(), tf.Session() as sess:
        with tf.name_scope('unreal'):
            _, nested = aac_loss_def(tf.zeros([2, 3]), tf.zeros([2]), tf.zeros([2]), tf.zeros([2, 3]), tf.zeros([2]),
                                     None, 0.01, name='on_policy')
        _, root = rp_loss_def(tf.zeros([2, 3]), tf.zeros([2, 3]), verbose=True)
        tags = [value.tag for value in tf.Summary.FromString(sess.run(tf.summary.merge(nested + root))).value]
    assert tags == ['unreal/on_policy/aac/policy_loss', 'unreal/on_policy/aac/value_loss',
                    'rp_/reward_prediction/class_loss']


def _grouped_batch(seed, groups=3, per_group=4):
    """A batch of `groups` categoricals of `per_group` actions side by side ([B, groups * per_group])."""
    rng = np.random.default_rng(seed)
    width = groups * per_group
    eye = np.eye(per_group, dtype=np.float32)
    return {
        'act': np.concatenate([eye[rng.integers(0, per_group, BATCH)] for _ in range(groups)], axis=1),
        'adv': rng.normal(size=BATCH).astype(np.float32),
        'r': rng.normal(size=BATCH).astype(np.float32),
        'logits': rng.normal(size=(BATCH, width)).astype(np.float32),
        'vf': rng.normal(size=BATCH).astype(np.float32),
        'prime_logits': rng.normal(size=(BATCH, width)).astype(np.float32),
    }


def _per_group(function, groups, *arrays):
    """Sum over the groups of `function` applied to each group's columns."""
    return sum(function(*[np.split(array, groups, axis=1)[k] for array in arrays]) for k in range(groups))


@pytest.mark.parametrize('mask', [None, MASK])
def test_per_asset_heads_sum_the_log_probabilities_and_entropies_of_each_asset(mask):
    """With action_groups=3 the A3C log-probability is the sum of the three assets' log-probabilities (a factorised
    policy), the entropy the sum of their entropies; PPO's ratio and KL follow."""
    batch = _grouped_batch(2)
    epsilon = 0.2
    with tf.Graph().as_default(), tf.Session() as sess:
        aac_loss, aac_summaries = _build_policy_loss(aac_loss_def, batch, mask, action_groups=3)
        ppo_loss, ppo_summaries = _build_policy_loss(ppo_loss_def, batch, mask, action_groups=3,
                                                     epsilon=tf.constant(epsilon))
        aac_value, ppo_value = sess.run([aac_loss, ppo_loss])
        aac_parts, ppo_parts = _summary_values(sess, aac_summaries), _summary_values(sess, ppo_summaries)
    neg_log_p = _per_group(_cross_entropy, 3, batch['act'], batch['logits'])
    entropy = _mean(_per_group(_entropy, 3, batch['logits']), mask)
    pi_loss = _mean(neg_log_p * batch['adv'], mask)
    vf = _mean((batch['r'] - batch['vf']) ** 2, mask)
    np.testing.assert_allclose([aac_parts['policy_loss'], aac_parts['entropy']], [pi_loss, entropy], rtol=1e-5)
    np.testing.assert_allclose(aac_value, pi_loss + 0.5 * vf - 0.05 * entropy, rtol=1e-5, atol=1e-5)
    ratio = np.exp(_per_group(_cross_entropy, 3, batch['act'], batch['prime_logits']) - neg_log_p)
    clip_loss = -_mean(np.minimum(ratio * batch['adv'], np.clip(ratio, 1 - epsilon, 1 + epsilon) * batch['adv']),
                       mask)
    kl = _mean(_per_group(_kl, 3, batch['prime_logits'], batch['logits']), mask)
    np.testing.assert_allclose([ppo_parts['l_clip_loss'], ppo_parts['pi_ratio'], ppo_parts['Dkl_old_new']],
                               [clip_loss, _mean(ratio, mask), kl], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ppo_value, clip_loss + vf - 0.05 * entropy, rtol=1e-5, atol=1e-5)
