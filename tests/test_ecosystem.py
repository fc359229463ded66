"""The trading env among gymnasium's tools and SB3-style libraries: registered ids, wrappers, vector envs, render
modes, pickling, and the SimpleSpaces wrapper."""
import copy
import os
import pickle
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from btgym_aac import BTgymDataset, BTgymEnv, BTgymMultiData
from btgym_aac.data import make_correlated_walks, make_random_walk_data
from btgym_aac.legacy import data_master
from btgym_aac.env.registration import ENV_IDS, LEGACY_IDS, REFERENCE_ENV_KWARGS
from btgym_aac.env.wrappers import SimpleSpaces
from btgym_aac.strategy import DevStrat_4_11

SHORT = dict(render_enabled=False, episode_duration={'days': 0, 'hours': 8, 'minutes': 0},
             time_gap={'hours': 1})


def walk_env(**kwargs):
    dataset = BTgymDataset(dataframe=make_random_walk_data(num_bars=6000, seed=0),
                           episode_duration={'days': 0, 'hours': 8, 'minutes': 0})
    return BTgymEnv(dataset=dataset, strategy=DevStrat_4_11, **kwargs)


def multi_asset_dataset():
    frames = make_correlated_walks(num_bars=1500, names=('A', 'B'), correlation=0.3, seed=0)
    return BTgymMultiData(data_class_ref=BTgymDataset, data_config={
        name: {'filename': None, 'dataframe': frame} for name, frame in frames.items()},
        episode_duration={'days': 0, 'hours': 5, 'minutes': 0}, time_gap={'hours': 1})


@pytest.mark.parametrize('env_id', sorted(ENV_IDS))
def test_each_registered_id_makes_an_env_that_passes_gymnasiums_checks_with_rendering(env_id):
    # The multi-asset ids take their data as `dataset=`; everything else is the envs' defaults.
    kwargs = {'dataset': multi_asset_dataset()} if ENV_IDS[env_id][0].startswith('btgym_aac.env.multi_asset:') \
        else {}
    env = gymnasium.make(env_id, render_mode='rgb_array', **kwargs)
    assert env_id.startswith('btgym_aac/') and env.spec.namespace == 'btgym_aac'
    assert env.spec.id == env_id and env.unwrapped.spec.id == env_id
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        check_env(env.unwrapped, skip_render_check=False)
    assert not [w for w in caught if 'render' in str(w.message)], [str(w.message) for w in caught]
    env.close()


def test_the_ids_of_earlier_versions_make_the_same_envs():
    assert sorted(LEGACY_IDS) == ['BTgym-v0', 'BTgymDevStrat_4_11-v0']
    for legacy, current in LEGACY_IDS.items():
        old, new = gymnasium.spec(legacy), gymnasium.spec(current)
        assert old.namespace is None and (old.entry_point, old.kwargs) == (new.entry_point, new.kwargs), legacy


@pytest.mark.parametrize('env_id', ['BTgymDevStrat_4_11-v0', 'btgym_aac/BTgymDevStrat_4_11-v0'])
def test_the_reference_id_is_the_reference_configurations_env(env_id):
    env = gymnasium.make(env_id, render_enabled=False).unwrapped
    assert env.strategy is DevStrat_4_11 and env.spec.kwargs == dict(REFERENCE_ENV_KWARGS, render_enabled=False)
    assert env.params['engine']['start_cash'] == REFERENCE_ENV_KWARGS['start_cash']
    for key in ('order_size', 'drawdown_call', 'reward_scale', 'skip_frame', 'leverage'):
        assert env.strategy_params[key] == REFERENCE_ENV_KWARGS[key], key
    np.testing.assert_allclose(env.strategy_params['state_ext_scale'], np.linspace(3e3, 1e3, 5))


def test_time_limit_and_episode_statistics_wrappers_over_a_registered_id():
    env = gymnasium.wrappers.RecordEpisodeStatistics(gymnasium.make('BTgym-v0', max_episode_steps=25, **SHORT))
    env.reset(seed=0)
    steps, done = 0, False
    while not done:
        _, _, terminated, truncated, info = env.step(0)
        steps += 1
        done = terminated or truncated
    assert steps == 25 and truncated and not terminated
    assert info['episode']['l'] == 25 and np.isfinite(info['episode']['r'])


@pytest.mark.parametrize('mode', ['sync', 'async'])
def test_vector_envs_of_a_registered_id(mode):
    envs = gymnasium.make_vec('BTgymDevStrat_4_11-v0', num_envs=2, vectorization_mode=mode, wrappers=[SimpleSpaces],
                              **SHORT)
    try:
        observations, _ = envs.reset(seed=[1, 2])
        assert observations['external'].shape == (2, 150) and observations['internal'].shape == (2, 120)
        assert not np.array_equal(observations['external'][0], observations['external'][1])  # two seeds, two windows
        for _ in range(3):
            observations, rewards, terminated, truncated, _ = envs.step(np.array([1, 2]))
        assert rewards.shape == (2,) and np.isfinite(rewards).all() and observations in envs.observation_space
    finally:
        envs.close()


def test_render_modes_follow_gymnasium_and_the_originals_call_still_works():
    for render_mode, expected in ((None, None), ('human', None)):
        env = walk_env(render_mode=render_mode)
        env.reset(seed=0)
        assert env.render() is expected
        image = env.render('human')  # the original's call
        assert image.dtype == np.uint8 and image.ndim == 3
    env = walk_env(render_mode='rgb_array')
    env.reset(seed=0)
    np.testing.assert_array_equal(env.render(), env.render('human'))
    with pytest.raises(ValueError, match="render_mode must be None, 'rgb_array' or 'human'"):
        walk_env(render_mode='episode')


def test_envs_pickle_and_copy_between_episodes_but_not_during_one():
    env = walk_env(render_enabled=False)
    first = env.reset(seed=3)[0]
    with pytest.raises(TypeError, match='during an episode'):
        pickle.dumps(env)
    with pytest.raises(TypeError, match='during an episode'):
        copy.deepcopy(env)
    env.close()
    for clone in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
        again = clone.reset(seed=3)[0]
        for key in ('external', 'internal'):
            np.testing.assert_array_equal(again[key], first[key])
        clone.step(1)
        clone.close()


def itertools_objects(obj, path='engine', seen=None):
    """Paths of the itertools objects reachable from `obj` through dicts, lists, tuples and instance dicts."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if type(obj).__module__ == 'itertools':
        return [path]
    if isinstance(obj, dict):
        children = obj.items()
    elif isinstance(obj, (list, tuple)):
        children = enumerate(obj)
    elif hasattr(obj, '__dict__') and not isinstance(obj, type):
        children = vars(obj).items()
    else:
        return []
    return [found for key, child in children for found in itertools_objects(child, '{}.{}'.format(path, key), seen)]


def test_the_engine_copies_without_itertools_which_python_3_14_cannot_copy():
    # Cerebro keeps an itertools.count; deep-copying or pickling one warns on 3.12-3.13 and fails from 3.14.
    env = walk_env(render_enabled=False)
    assert itertools_objects(env.engine) == []
    data_ids = []
    for seed in (0, 1):
        env.reset(seed=seed)
        env.close()
        data_ids.append([data._id for data in env._finished_strategy.datas])
    assert data_ids == [[1], [1]]  # every episode's copy numbers its data from the template's next id
    assert next(env.engine._dataid) == 1 and next(env.engine._dataid) == 2


def test_a_copy_of_a_data_master_env_serves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(tmp_path))
    master = walk_env(render_enabled=False, data_master=True, data_port=5101)
    path = os.path.join(data_master.registry_folder(), 'data_master_5101.pkl')
    clone = copy.deepcopy(master)
    clone.close()
    assert os.path.exists(path)  # the copy's close leaves the original's file
    master.close()
    assert not os.path.exists(path)


def test_simple_spaces_keep_the_box_observations_as_vectors_and_act_by_index():
    env = SimpleSpaces(walk_env(render_enabled=False))
    assert env.keys == ['external', 'internal'] and env.action_space == gymnasium.spaces.Discrete(4)
    observation, _ = env.reset(seed=0)
    raw = env.unwrapped._last_step['state']
    np.testing.assert_allclose(observation['external'], np.reshape(raw['external'], -1), rtol=1e-6)
    assert observation in env.observation_space
    observation, reward, _, _, info = env.step(np.int64(1))
    assert observation in env.observation_space and info['bars'][0]['action'] == {'default_asset': 'buy'}
    flat = SimpleSpaces(walk_env(render_enabled=False), keys=['internal'], flatten=True)
    vector, _ = flat.reset(seed=0)
    assert vector.shape == (120,) and vector.dtype == np.float32 and vector in flat.observation_space
    raw = flat.unwrapped._last_step['state']
    np.testing.assert_allclose(flat.observation(raw), vector, rtol=1e-6)  # the transform, for the raw states
    with pytest.raises(ValueError, match=r"keys must name Box observations.*\['metadata'\]"):
        SimpleSpaces(walk_env(render_enabled=False), keys=['metadata'])


def test_simple_spaces_passes_gymnasiums_checks_with_rendering_and_is_made_again_from_its_spec():
    env = SimpleSpaces(gymnasium.make('btgym_aac/BTgymDevStrat_4_11-v0', render_mode='rgb_array'), keys=['internal'],
                       flatten=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        check_env(env, skip_render_check=False)  # makes the env again from env.spec in every render mode
    assert not [w for w in caught if 'render' in str(w.message)], [str(w.message) for w in caught]
    wrapper = env.spec.additional_wrappers[-1]
    assert (wrapper.name, wrapper.entry_point) == ('SimpleSpaces', 'btgym_aac.env.wrappers:SimpleSpaces')
    assert wrapper.kwargs == {'keys': ['internal'], 'flatten': True}
    again = gymnasium.make(env.spec)
    assert isinstance(again, SimpleSpaces) and again.unwrapped.render_mode == 'rgb_array'
    assert again.keys == ['internal'] and again.flatten and again.observation_space == env.observation_space
    np.testing.assert_array_equal(again.reset(seed=4)[0], env.reset(seed=4)[0])
    env.close()
    again.close()


def test_stable_baselines3_accepts_the_wrapped_env():
    sb3_checker = pytest.importorskip('stable_baselines3.common.env_checker',
                                      reason='stable-baselines3 is an optional dependency, not installed here')
    for flatten in (False, True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            sb3_checker.check_env(SimpleSpaces(walk_env(render_enabled=False), flatten=flatten), warn=True)
        assert not caught, [str(w.message) for w in caught]


@pytest.mark.parametrize('kind', ['discrete', 'portfolio'])
def test_simple_spaces_of_several_assets_observe_each_asset_and_act_on_all(kind):
    from test_evaluation_multi_asset import env_config

    config = env_config(kind)
    env = SimpleSpaces(config['class_ref'](**config['kwargs']))
    assert env.keys == ['datetime', 'external/A', 'external/B', 'internal']
    observation, _ = env.reset(seed=0)
    raw = env.unwrapped._last_step['state']
    np.testing.assert_allclose(observation['external/B'], np.reshape(raw['external']['B'], -1), rtol=1e-6)
    if kind == 'discrete':
        assert env.action_space == gymnasium.spaces.MultiDiscrete([4, 4])
        _, _, _, _, info = env.step(np.array([1, 2]))
        assert info['bars'][0]['action'] == {'A': 'buy', 'B': 'sell'}
    else:
        assert env.action_space == gymnasium.spaces.Box(-1.0, 1.0, (3,), dtype=np.float32)
        action = env.env_action(np.array([0.4, -0.4, -1.0], dtype=np.float32))
        assert list(action) == ['A', 'B', 'default_cash'] and action['A'].shape == (1,)
        assert [float(weight[0]) for weight in action.values()] == pytest.approx([0.7, 0.3, 0.0])
        for _ in range(3):
            observation, _, _, _, info = env.step(np.array([0.4, -0.4, -1.0], dtype=np.float32))
        assert info['bars'][-1]['positions']['A'] > info['bars'][-1]['positions']['B'] > 0
    assert observation in env.observation_space
    sb3_checker = pytest.importorskip('stable_baselines3.common.env_checker',
                                      reason='stable-baselines3 is an optional dependency, not installed here')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        sb3_checker.check_env(env, warn=True)
    assert not caught, [str(w.message) for w in caught]
    env.close()
