"""Test-mode envs: CartPole and Atari Pong behind DictSpace / ActionDictSpace, and the 42x42 Atari rescale."""
import sys

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from PIL import Image

from btgym_aac import ActionDictSpace, DictSpace
from btgym_aac.env import gym_wrappers
from btgym_aac.env.gym_wrappers import AtariRescale42x42, is_atari_id, make_test_env, rescale_frame_42x42

PONG_ACTIONS = ('NOOP', 'FIRE', 'RIGHT', 'LEFT', 'RIGHTFIRE', 'LEFTFIRE')
SAMPLE_CONFIG = dict(episode_config=dict(get_new=True, sample_type=0, b_alpha=1.0, b_beta=1.0),
                     trial_config=dict(get_new=True, sample_type=0, b_alpha=1.0, b_beta=1.0))


def pil_bilinear(channel, size):
    """Resizes a float image with PIL's affine bilinear sampling (pixel centres aligned, no antialiasing)."""
    scale = channel.shape[0] / size
    image = Image.fromarray(channel.astype(np.float32))
    return np.asarray(image.transform((size, size), Image.Transform.AFFINE, (scale, 0, 0, 0, scale, 0),
                                      resample=Image.Resampling.BILINEAR))


def reference_frame42(frame):
    """universe-starter-agent's 42x42 preprocessing, resized per channel with PIL."""
    crop = np.asarray(frame, dtype=np.float64)[34:194, :160]
    channels = [pil_bilinear(pil_bilinear(crop[:, :, c], 80), 42) for c in range(3)]
    return (np.mean(channels, axis=0) / 255.0)[:, :, None]


class RecordingEnv(gymnasium.Env):
    """Float64 observations [last env action, steps], actions Discrete(3, start=1); keeps the reset options."""

    observation_space = gymnasium.spaces.Box(0.0, 10.0, shape=(2,), dtype=np.float64)
    action_space = gymnasium.spaces.Discrete(3, start=1)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.options, self.steps = options, 0
        return np.zeros(2), {}

    def step(self, action):
        self.steps += 1
        return np.array([action, self.steps], dtype=np.float64), 0.5, self.steps == 3, False, {'steps': self.steps}


def cartpole_pair(seed, **make_kwargs):
    """A wrapped CartPole and a plain one, both reset with `seed`; returns (wrapped, plain, obs, plain_obs)."""
    wrapped = make_test_env('CartPole-v1', **make_kwargs)
    plain = gymnasium.make('CartPole-v1', **make_kwargs)
    observation, _ = wrapped.reset(seed=seed)
    plain_observation, _ = plain.reset(seed=seed)
    return wrapped, plain, observation, plain_observation


# ------------------------------------------------------------------------------------------------ CartPole


def test_cartpole_spaces():
    env = make_test_env('CartPole-v1')
    plain = gymnasium.make('CartPole-v1').observation_space
    assert isinstance(env.observation_space, DictSpace)
    assert list(env.observation_space.spaces) == ['external']
    box = env.observation_space['external']
    assert box.shape == (4,) and box.dtype == np.float32
    np.testing.assert_array_equal(box.low, plain.low)
    np.testing.assert_array_equal(box.high, plain.high)
    assert isinstance(env.action_space, ActionDictSpace)
    assert env.action_space.assets == ('default_asset',)
    assert env.action_space.base_actions == ('0', '1')
    assert env.action_space.one_hot_depth == 2 and env.action_space.encoded_depth == 1
    assert env.render_modes == [] and env.render_enabled is False
    assert env.get_initial_action() == {'default_asset': 0}
    np.testing.assert_array_equal(env.action_space.encode(env.get_initial_action()), [0.0])


def test_cartpole_trajectory_matches_plain_env_until_termination():
    env, plain, observation, plain_observation = cartpole_pair(seed=3)
    assert set(observation) == {'external'}
    steps, terminated = 0, False
    while True:
        assert observation['external'].dtype == np.float32 and observation['external'].shape == (4,)
        assert observation in env.observation_space
        np.testing.assert_array_equal(observation['external'], plain_observation)
        if terminated:
            break
        observation, reward, terminated, truncated, info = env.step({'default_asset': 1})
        plain_observation, plain_reward, plain_terminated, _, _ = plain.step(1)
        steps += 1
        assert type(reward) is float and reward == plain_reward == 1.0
        assert type(terminated) is bool and terminated == plain_terminated
        assert truncated is False and isinstance(info, dict)
        assert env.done is terminated
    # always pushing right topples the pole in a few steps, long before CartPole-v1's 500-step limit
    assert 5 <= steps < 50
    with pytest.raises(RuntimeError, match='has ended'):
        env.step(0)
    observation, info = env.reset()
    assert env.done is False and observation in env.observation_space and isinstance(info, dict)
    env.step(0)


def test_truncated_episode_ends_and_resets():
    env, _, _, _ = cartpole_pair(seed=0, max_episode_steps=3)
    results = [env.step(step % 2)[2:4] for step in range(3)]
    assert results == [(False, False), (False, False), (False, True)]
    assert env.done is True
    with pytest.raises(RuntimeError):
        env.step(0)
    env.reset()
    assert env.done is False
    assert env.step(0)[2:4] == (False, False)


def test_int_and_dict_actions_give_the_same_trajectory():
    actions = [0, 1, 1, 0, 1, 0, 0, 1]
    by_int, _, first_int, _ = cartpole_pair(seed=11)
    by_dict, _, first_dict, _ = cartpole_pair(seed=11)
    np.testing.assert_array_equal(first_int['external'], first_dict['external'])
    for action in actions:
        int_result = by_int.step(np.int64(action) if action else action)
        dict_result = by_dict.step({'default_asset': action})
        np.testing.assert_array_equal(int_result[0]['external'], dict_result[0]['external'])
        assert int_result[1:4] == dict_result[1:4]


@pytest.mark.parametrize('action', [2, -1, 1.0, True, 'buy', np.array([1]), {'default_asset': 5},
                                    {'other_asset': 0}, {'default_asset': 0, 'other_asset': 0}])
def test_bad_action_raises_value_error(action):
    env, _, _, _ = cartpole_pair(seed=0)
    with pytest.raises(ValueError, match='action'):
        env.step(action)


def test_step_before_reset_raises():
    env = make_test_env('CartPole-v1')
    with pytest.raises(RuntimeError, match='none was started'):
        env.step(0)


def test_sample_configs_are_ignored():
    env = make_test_env('CartPole-v1')
    with_configs, _ = env.reset(seed=7, **SAMPLE_CONFIG)
    with_options, _ = env.reset(seed=7, options=dict(SAMPLE_CONFIG))
    plain, _ = gymnasium.make('CartPole-v1').reset(seed=7)
    np.testing.assert_array_equal(with_configs['external'], plain)
    np.testing.assert_array_equal(with_options['external'], plain)
    with pytest.raises(TypeError, match='episode_confg'):
        env.reset(episode_confg={})


def test_options_reach_the_env_without_sample_configs():
    env = gym_wrappers.TestModeEnv(env=RecordingEnv())
    env.reset(options=dict(SAMPLE_CONFIG, level=2))
    assert env.unwrapped.options == {'level': 2}
    env.reset(options=dict(SAMPLE_CONFIG))
    assert env.unwrapped.options is None


def test_discrete_start_and_float32_cast():
    env = gym_wrappers.TestModeEnv(env=RecordingEnv())
    assert env.action_space.base_actions == ('0', '1', '2')
    env.reset()
    observation = env.step(0)[0]
    assert observation['external'].dtype == np.float32 and observation in env.observation_space
    np.testing.assert_array_equal(observation['external'], [1.0, 1.0])
    np.testing.assert_array_equal(env.step({'default_asset': 2})[0]['external'], [3.0, 2.0])
    assert env.step(1)[2] is True and env.done


def test_constructor_seed_seeds_the_first_reset_only():
    env = make_test_env('CartPole-v1', seed=5)
    plain = gymnasium.make('CartPole-v1')
    first, _ = env.reset(**SAMPLE_CONFIG)
    np.testing.assert_array_equal(first['external'], plain.reset(seed=5)[0])
    second, _ = env.reset()
    np.testing.assert_array_equal(second['external'], plain.reset()[0])


def test_config_dict_construction_passes_make_kwargs():
    config = {'class_ref': gym_wrappers.TestModeEnv,
              'kwargs': {'env_id': 'CartPole-v1', 'max_episode_steps': 2, 'task': 1, 'render_enabled': True}}
    env = config['class_ref'](**config['kwargs'])
    assert env.render_enabled is True and env.task == 1
    env.reset(seed=0)
    assert env.step(0)[3] is False and env.step(0)[3] is True


def test_wrapping_an_existing_env():
    env = gym_wrappers.TestModeEnv(env=gymnasium.make('CartPole-v1'))
    observation, _ = env.reset(seed=1)
    np.testing.assert_array_equal(observation['external'], gymnasium.make('CartPole-v1').reset(seed=1)[0])


@pytest.mark.filterwarnings('ignore::UserWarning')  # check_env's notes on wrappers and infinite Box bounds
def test_check_env_passes():
    check_env(make_test_env('CartPole-v1'), skip_render_check=True)


@pytest.mark.parametrize('env_id', ['CartPole-v1', 'ALE/Pong-v5'])
def test_spec_rebuilds_an_equal_env(env_id):
    env = make_test_env(env_id, seed=4, task=2)
    rebuilt = gymnasium.make(env.spec)
    assert isinstance(rebuilt, gym_wrappers.TestModeEnv) and rebuilt.task == 2
    assert rebuilt.observation_space == env.observation_space
    assert rebuilt.action_space.base_actions == env.action_space.base_actions
    first, rebuilt_first = env.reset()[0], rebuilt.reset()[0]
    np.testing.assert_array_equal(first['external'], rebuilt_first['external'])
    for action in (1, 0, 1, 1):
        np.testing.assert_array_equal(env.step(action)[0]['external'], rebuilt.step(action)[0]['external'])


@pytest.mark.parametrize('kwargs, error, message', [
    (dict(), TypeError, 'exactly one'),
    (dict(env=gymnasium.make('CartPole-v1'), env_id='CartPole-v1'), TypeError, 'exactly one'),
    (dict(env=gymnasium.make('CartPole-v1'), max_episode_steps=3), TypeError, 'without env_id'),
    (dict(env_id=42), TypeError, 'id string'),
    (dict(env_id='FrozenLake-v1'), ValueError, 'Box observation'),
    (dict(env_id='Pendulum-v1'), ValueError, 'Discrete action'),
])
def test_bad_construction_raises(kwargs, error, message):
    with pytest.raises(error, match=message):
        gym_wrappers.TestModeEnv(**kwargs)


# --------------------------------------------------------------------------------------------------- Atari


def test_rescale_matches_pil_reference_on_synthetic_frame():
    frame = np.random.default_rng(0).integers(0, 256, size=(210, 160, 3), dtype=np.uint8)
    result = rescale_frame_42x42(frame)
    assert result.shape == (42, 42, 1) and result.dtype == np.float32
    np.testing.assert_allclose(result, reference_frame42(frame), atol=1e-6)


def test_rescale_first_halving_is_a_2x2_block_mean():
    # 160 -> 80 bilinear with aligned pixel centres samples exactly between two pixels: a 2x2 block mean
    frame = np.random.default_rng(1).integers(0, 256, size=(210, 160, 3), dtype=np.uint8)
    halved = frame[34:194].astype(np.float64).reshape(80, 2, 80, 2, 3).mean(axis=(1, 3))
    expected = np.mean([pil_bilinear(halved[:, :, c], 42) for c in range(3)], axis=0) / 255.0
    np.testing.assert_allclose(rescale_frame_42x42(frame)[:, :, 0], expected, atol=1e-6)


def test_rescale_uniform_colour_and_crop():
    frame = np.empty((210, 160, 3), dtype=np.uint8)
    frame[:] = (30, 60, 240)
    frame[:34] = 255
    frame[194:] = 0
    np.testing.assert_allclose(rescale_frame_42x42(frame), np.full((42, 42, 1), 110.0 / 255.0), atol=1e-6)
    frame[100, 80] = 0
    assert rescale_frame_42x42(frame).min() < 110.0 / 255.0 - 1e-3


def test_rescale_rejects_other_shapes():
    with pytest.raises(ValueError, match=r'\(210, 160, 3\)'):
        rescale_frame_42x42(np.zeros((210, 160), dtype=np.uint8))
    with pytest.raises(ValueError, match='RGB Atari'):
        AtariRescale42x42(gymnasium.make('CartPole-v1'))


def test_atari_ids_are_recognised():
    assert is_atari_id('ALE/Pong-v5') and is_atari_id('PongNoFrameskip-v4')
    assert not is_atari_id('CartPole-v1')


def test_pong_matches_plain_ale_env_through_the_rescale():
    env = make_test_env('ALE/Pong-v5', seed=0)
    plain = gymnasium.make('ALE/Pong-v5', repeat_action_probability=0.0)
    assert plain.unwrapped.get_action_meanings() == list(PONG_ACTIONS)
    assert env.action_space.base_actions == PONG_ACTIONS
    assert env.observation_space['external'] == gymnasium.spaces.Box(0.0, 1.0, (42, 42, 1), np.float32)
    assert env.get_initial_action() == {'default_asset': 0}

    observation, _ = env.reset(**SAMPLE_CONFIG)
    frame, _ = plain.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, len(PONG_ACTIONS), size=300)
    rewards = []
    for action in actions:
        external = observation['external']
        assert external.dtype == np.float32 and external.shape == (42, 42, 1)
        assert 0.0 <= external.min() and external.max() <= 1.0 and observation in env.observation_space
        np.testing.assert_allclose(external, reference_frame42(frame), atol=1e-6)
        observation, reward, terminated, truncated, info = env.step({'default_asset': int(action)})
        frame, plain_reward, _, _, plain_info = plain.step(int(action))
        assert reward == plain_reward and not (terminated or truncated)
        assert info['frame_number'] == plain_info['frame_number']
        rewards.append(reward)
    # frameskip 4: 300 agent steps are 1200 emulator frames, enough for Pong's computer player to score
    assert info['frame_number'] == 4 * 300
    assert min(rewards) == -1.0


@pytest.mark.parametrize('env_id', ['ALE/Pong-v5', 'NoSuchGame-v0'])
def test_missing_ale_py_names_the_extra(monkeypatch, env_id):
    monkeypatch.setitem(sys.modules, 'ale_py', None)
    with pytest.raises(ImportError, match=r"pip install 'btgym-aac\[atari\]'"):
        make_test_env(env_id)
