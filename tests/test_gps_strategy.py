"""GuidedStrategy_0_0 in a BTgymEnv on generated data: the `expert` observation is the Oracle's advice for the
episode at the observation's index; ExpertObserver marks; bad settings; GuidedPolicy_0_0 on the env's spaces."""
import numpy as np
import pandas as pd
import pytest

from btgym_aac import BTgymDataset, BTgymEnv
from btgym_aac.compat import tf
from btgym_aac.data import make_sine_data
from btgym_aac.research.gps import ExpertObserver, GuidedPolicy_0_0, GuidedStrategy_0_0, Oracle
from btgym_aac.spaces import DictSpace
from test_strategy import run

pytestmark = pytest.mark.xdist_group('gps_strategy')  # one xdist worker builds the module's fixtures

WARMUP, SKIP = 286, 10
EXPERT_CONFIG = dict(time_threshold=5, pips_threshold=5, pips_scale=1e-4, kernel_size=5, kernel_stddev=1)


def _expert(episode_data):
    """The advice the strategy must send, recomputed from the episode's raw bars."""
    return Oracle(action_space=np.arange(4), **EXPERT_CONFIG).fit(episode_data[WARMUP:], resampling_factor=SKIP)


@pytest.fixture(scope='module')
def guided_episode():
    """One full hold-only episode: (env, observations, episode data frame)."""
    dataset = BTgymDataset(dataframe=make_sine_data(num_bars=2000),
                           episode_duration={'days': 0, 'hours': 10, 'minutes': 0})
    env = BTgymEnv(dataset=dataset, strategy=GuidedStrategy_0_0, render_enabled=False, random_seed=1)
    observation, _ = env.reset()
    observations, terminated = [observation], False
    while not terminated:
        observation, _, terminated, _, _ = env.step(0)
        observations.append(observation)
    yield env, observations, env._trial.data  # the episode of a BTgymDataset is its whole trial window
    env.close()


def test_expert_observation_is_the_oracle_advice_at_the_step_index(guided_episode):
    env, observations, episode = guided_episode
    assert env.observation_space['expert'].shape == (4,)
    expected = _expert(episode.to_numpy())
    assert len(observations) > 20
    for k, observation in enumerate(observations):
        expert = observation['expert']
        assert observation in env.observation_space
        assert expert.shape == (4,) and expert.dtype == np.float32
        np.testing.assert_allclose(expert.sum(), 1.0, rtol=1e-6)
        np.testing.assert_allclose(expert, expected[k], rtol=1e-6)
        if k < len(observations) - 1:  # the final observation comes when the episode ends, between steps
            bar = pd.Timestamp(float(observation['metadata']['timestamp']), unit='s')
            assert episode.index.get_loc(bar) == WARMUP - 1 + (k + 1) * SKIP
    advised = {int(np.argmax(observation['expert'])) for observation in observations}
    assert advised >= {0, 1, 2}


def test_expert_observer_marks_the_advice_of_every_bar():
    frame = make_sine_data(num_bars=700, period=200, noise=1e-4, seed=3)
    episode = run(GuidedStrategy_0_0, frame, observers=(ExpertObserver,))
    strategy = episode.strategy
    np.testing.assert_allclose(strategy.expert_actions, _expert(frame.to_numpy()))
    observer = next(item for item in strategy.observers if isinstance(item, ExpertObserver))
    lines = {name: np.array(getattr(observer.lines, name).array[:len(observer)])
             for name in ('buy', 'sell', 'hold', 'close')}
    marks = {0: ('hold', 0.0), 1: ('buy', 1.0), 2: ('sell', -1.0)}
    first = episode.records[0].row
    assert all(np.all(np.isnan(line[:first])) for line in lines.values())
    for record, following in zip(episode.records, episode.records[1:] + [None]):
        stop = following.row if following is not None else len(lines['hold'])
        name, value = marks[int(np.argmax(record.response.state['expert']))]
        np.testing.assert_array_equal(lines[name][record.row:stop], value)
        for other in set(lines) - {name}:
            assert np.all(np.isnan(lines[other][record.row:stop]))
    assert {int(np.argmax(record.response.state['expert'])) for record in episode.records} >= {1, 2}


@pytest.mark.parametrize('changes, message', [
    (dict(portfolio_actions=None), 'discrete portfolio_actions'),
    (dict(expert_config=dict(EXPERT_CONFIG, horizon=3)), 'expert_config'),
    (dict(expert_config=dict(EXPERT_CONFIG, kernel_size=0)), 'kernel_size'),
    (dict(portfolio_actions=('hold', 'buy', 'sell')), r'shape \(3,\)'),
])
def test_bad_guided_settings_are_rejected(changes, message):
    params = dict(GuidedStrategy_0_0.params._getitems(), **changes)
    with pytest.raises(ValueError, match=message):
        GuidedStrategy_0_0.check_params(params)


def test_guided_policy_reads_no_expert_input(guided_episode):
    env, observations, _ = guided_episode
    with tf.Graph().as_default():
        policy = GuidedPolicy_0_0(ob_space=env.observation_space, ac_space=env.action_space, rp_sequence_size=4,
                                  conv_2d_layer_config=((8, (3, 1), (2, 1)), (16, (3, 1), (2, 1))))
        assert policy.expert_actions is policy.on_state_in['expert']
        assert policy.expert_actions.get_shape().as_list() == [None, 4]
        assert tf.gradients([policy.on_logits, policy.on_vf], policy.expert_actions) == [None]
        assert tf.gradients(policy.on_logits, policy.on_state_in['external'])[0] is not None
        kernels = {v.name: v.get_shape().as_list() for v in policy.var_list if 'encoded_external' in v.name}
        assert kernels['encoded_external/_layer_2/W:0'] == [3, 1, 8, 16]
        assert policy.lstm_layers == (256, 256) and policy.lstm_2_init_period == 50
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            context = policy.get_initial_features(state=observations[0], sess=sess)
            action, logits, _, _ = policy.act(observations[0], context, np.zeros((1, 2)), np.zeros(1), sess=sess)
            assert logits.shape == (4,) and np.all(np.isfinite(logits))


def test_guided_policy_needs_an_expert_key_and_a_uniform_conv_config(guided_episode):
    env = guided_episode[0]
    without_expert = DictSpace({key: space for key, space in env.observation_space.spaces.items() if key != 'expert'})
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"`expert` key .*'datetime', 'external'"):
            GuidedPolicy_0_0(ob_space=without_expert, ac_space=env.action_space, rp_sequence_size=4)
        with pytest.raises(ValueError, match='same kernel size and stride'):
            GuidedPolicy_0_0(ob_space=env.observation_space, ac_space=env.action_space, rp_sequence_size=4,
                             conv_2d_layer_config=((8, (3, 1), (2, 1)), (8, (5, 1), (2, 1))))
