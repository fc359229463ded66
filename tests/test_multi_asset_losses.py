"""Trainer losses on several assets against numpy: the joint categorical of MultiDiscreteEnv (one-hot over every
combination of the assets' actions, binary last-action codes) and PortfolioEnv's continuous weights (the soft-label
log-probability sum_k w_k log softmax(logits)_k and the categorical entropy of softmax(logits))."""
import numpy as np
import pytest

from btgym_aac.algorithms import A3C
from btgym_aac.algorithms.policy import AacStackedRL2Policy
from btgym_aac.data import make_cointegrated_pair
from btgym_aac.env import MultiDiscreteEnv
from btgym_aac.distributed.run_config import multi_asset_env_config
from test_trainer_losses import summary_tensors
from trainer_helpers import log_softmax, loop_returns_and_advantages, started_trainer

GAMMA, GAE_LAMBDA, BETA, ROLLOUT = 0.9, 0.8, 0.05, 10


def pair_env(portfolio, **kwargs):
    config = multi_asset_env_config(make_cointegrated_pair(num_bars=3000, seed=3), portfolio=portfolio)
    return config['class_ref'](**dict(config['kwargs'], render_enabled=False, random_seed=0, **kwargs))


def a3c_on(portfolio, **env_kwargs):
    return started_trainer(A3C, [pair_env(portfolio, **env_kwargs)], AacStackedRL2Policy, {'lstm_layers': (16, 16)},
                           rollout_length=ROLLOUT, time_flat=True, model_gamma=GAMMA, model_gae_lambda=GAE_LAMBDA,
                           model_beta=BETA)


def fed_batch(trainer, sess):
    """(rollout, logits, policy loss, entropy) of one fed on-policy rollout."""
    data = trainer.get_data()
    pi = trainer.local_network
    feed = trainer.process_data(sess, data, [True], pi)
    parts = summary_tensors(trainer)
    logits, pi_loss, entropy = sess.run([pi.on_logits, parts['policy_loss'], parts['entropy']], feed)
    return data['on_policy'][0], logits.astype(np.float64), pi_loss, entropy


def numpy_policy_loss_and_entropy(rollout, logits, groups=1):
    """Numpy's A3C policy loss and entropy of a rollout; `groups` categoricals side by side are summed."""
    rewards = np.array(rollout['reward'], dtype=np.float64)
    values = np.array(rollout['value'], dtype=np.float64).reshape(-1)
    bootstrap = float(np.asarray(rollout['r'][-1]).reshape(-1)[0])
    _, advantages = loop_returns_and_advantages(rewards, values, bootstrap, GAMMA, GAE_LAMBDA)
    actions = np.array(rollout['action'], dtype=np.float64)
    neg_log_p = entropy = 0.0
    for group_logits, group_actions in zip(np.split(logits, groups, axis=1), np.split(actions, groups, axis=1)):
        log_p = log_softmax(group_logits)
        neg_log_p = neg_log_p - (group_actions * log_p).sum(axis=1)
        entropy = entropy - (np.exp(log_p) * log_p).sum(axis=1)
    return np.mean(neg_log_p * advantages), np.mean(entropy)


@pytest.mark.parametrize('portfolio', [False, True], ids=['multi-discrete', 'portfolio'])
def test_a3c_policy_loss_and_entropy_match_numpy(portfolio):
    with a3c_on(portfolio) as (trainer, sess, _):
        rollout, logits, pi_loss, entropy = fed_batch(trainer, sess)
        ac_space = trainer.env_list[0].action_space
    assert logits.shape == (rollout.size, ac_space.one_hot_depth)
    actions = np.array(rollout['action'])
    if portfolio:
        assert ac_space.one_hot_depth == 3, 'weights of X, Y and cash'
        np.testing.assert_allclose(actions.sum(axis=1), 1.0, rtol=1e-5)
        assert np.all(actions > 0) and len({tuple(row) for row in actions.round(6)}) == len(actions), \
            'sampled points inside the simplex, a new one each step'
    else:
        assert ac_space.one_hot_depth == 16 and ac_space.encoded_depth == 4
        np.testing.assert_array_equal(actions.sum(axis=1), 1.0)
        assert_last_actions_code_the_previous_categories(rollout, ac_space)
    expected_pi, expected_entropy = numpy_policy_loss_and_entropy(rollout, logits)
    np.testing.assert_allclose([pi_loss, entropy], [expected_pi, expected_entropy], rtol=1e-5, atol=1e-6)


def assert_last_actions_code_the_previous_categories(rollout, ac_space):
    """Each step's last action is the binary code of the previous step's joint category (first sorted asset most
    significant)."""
    categories = np.argmax(np.array(rollout['action']), axis=1)
    codes = np.array(rollout['last_action'])
    for category, next_code in zip(categories[:-1], codes[1:]):
        bits = [float(bit) for bit in np.binary_repr(category, width=ac_space.encoded_depth)]
        np.testing.assert_array_equal(next_code, bits)
        x, y = ac_space._cat_to_vec(category)
        assert category == 4 * x + y


def test_joint_category_of_the_reference_example():
    """The reference's example over ('CHF', 'USD'): {CHF: buy, USD: close} is category 7, code [0, 1, 1, 1]."""
    frames = make_cointegrated_pair(num_bars=3000, names=('USD', 'CHF'), seed=0)
    config = multi_asset_env_config(frames)
    env = MultiDiscreteEnv(**dict(config['kwargs'], render_enabled=False))
    try:
        space = env.action_space
        action = {'CHF': 1, 'USD': 3}
        assert space.assets == ('CHF', 'USD')
        assert int(np.argmax(space.one_hot_encode(action))) == 7
        np.testing.assert_array_equal(space.encode(action), [0, 1, 1, 1])
    finally:
        env.close()


def test_per_asset_heads_choose_each_asset_from_its_own_logits_and_match_numpy():
    """MultiDiscreteEnv(action_encoding='per_asset'): 2 x 4 logits, each asset's action one-hot in its own 4
    columns, last actions are those one-hots, and the loss sums the two assets' log-probabilities and entropies."""
    with a3c_on(False, action_encoding='per_asset') as (trainer, sess, _):
        rollout, logits, pi_loss, entropy = fed_batch(trainer, sess)
        ac_space = trainer.env_list[0].action_space
    assert ac_space.action_groups == 2 and logits.shape == (rollout.size, 8)
    actions = np.array(rollout['action'])
    np.testing.assert_array_equal(actions.reshape(-1, 2, 4).sum(axis=2), 1.0)
    np.testing.assert_array_equal(np.array(rollout['last_action'])[1:], actions[:-1])
    expected_pi, expected_entropy = numpy_policy_loss_and_entropy(rollout, logits, groups=2)
    np.testing.assert_allclose([pi_loss, entropy], [expected_pi, expected_entropy], rtol=1e-5, atol=1e-6)
