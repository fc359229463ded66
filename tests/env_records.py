"""Recordings of what the trading envs produce, kept in `tests/data/env_records/` and compared by
`test_env_records.py`: the safety net of changes that must not change one observation (caching, lazy infos,
fewer observers).

A setup (`SETUPS`) is an env built with fixed seeds (`random_seed=SEED`, the first `reset(seed=SEED)`, later
resets unseeded so that episode sampling continues) and driven by a fixed action sequence (a
`numpy.random.Generator(ACTION_SEED)` choosing among the action space's actions). Each of its episodes is recorded
until it ends by itself or is cut after the setup's `max_steps` agent steps (a cut episode is simply not stepped
further). A record holds, for the reset and every step: every observation entry (nested keys flattened,
'external/X', 'metadata/timestamp'), at its own dtype; the action, reward, terminated, truncated and the info
dict, made JSON-able by `jsonable`. The reference setup also keeps the SHA-256 digest, shape and dtype of its
renderings after the last step of its first episode (as `btgym-aac demo` draws them), drawn with matplotlib's own
fonts only (`matplotlib_fonts_only`): the renderer's style asks for Arial or Liberation Sans first, which a machine
may or may not have installed.

Regenerate (only for a deliberate, reviewed change of the env's outputs; it checks first that two recordings in
this process are identical):

    .venv/bin/python tests/env_records.py [--out FOLDER]
"""
import argparse
import contextlib
import datetime
import hashlib
import json
import math
import os
import platform
import subprocess
from collections.abc import Sequence

import numpy as np

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'env_records')
SEED = 7
ACTION_SEED = 11
FLOAT_ATOL = 1e-12
RENDER_MODES = ('human', 'external', 'internal')
COMMAND = '.venv/bin/python tests/env_records.py'
CAUSAL_SCALE = np.linspace(1, 2, 16)


def _dev_env(strategy_name):
    """BTgymEnv of REFERENCE_ENV_KWARGS with strategy `strategy_name` at its own default `state_ext_scale`."""
    from btgym_aac import strategy
    from btgym_aac.env import BTgymEnv
    from btgym_aac.env.registration import REFERENCE_ENV_KWARGS

    kwargs = dict(REFERENCE_ENV_KWARGS, strategy=getattr(strategy, strategy_name), random_seed=SEED)
    del kwargs['state_ext_scale']
    return BTgymEnv(**kwargs)


def _reference_env():
    """The reference configuration's env (`run_config.default_configs(preset='reference')`)."""
    from btgym_aac.distributed.run_config import default_configs

    config = default_configs(preset='reference')['env_config']
    return config['class_ref'](random_seed=SEED, **config['kwargs'])


def _multi_asset_env(portfolio=False, causal_conv=False):
    """`multi_asset_env_config`'s env on the cointegrated pair X, Y; CausalConvStrategyMulti if `causal_conv`."""
    from btgym_aac.distributed.run_config import multi_asset_env_config

    config = multi_asset_env_config(portfolio=portfolio)
    if causal_conv:
        from btgym_aac.research.causal_conv import CausalConvStrategyMulti

        config['kwargs'].update(strategy=CausalConvStrategyMulti,
                                state_ext_scale={'X': CAUSAL_SCALE, 'Y': CAUSAL_SCALE})
    return config['class_ref'](random_seed=SEED, **config['kwargs'])


def _setup(make_env, episodes, max_steps, render=False):
    return {'make_env': make_env, 'episodes': episodes, 'max_steps': max_steps, 'render': render}


SETUPS = {
    'reference_4_11': _setup(_reference_env, 2, 300, render=True),
    **{'dev_' + version: _setup(lambda name='DevStrat_' + version: _dev_env(name), 2, 120)
       for version in ('4_6', '4_7', '4_8', '4_9', '4_10', '4_11_1', '4_12')},
    'multi_discrete': _setup(_multi_asset_env, 2, 120),
    'causal_conv_multi_discrete': _setup(lambda: _multi_asset_env(causal_conv=True), 2, 45),
    'portfolio': _setup(lambda: _multi_asset_env(portfolio=True), 2, 120),
}
"""name -> make_env (no arguments), episodes, max_steps (agent steps an episode is cut at), render. The reference
setup's episodes end by themselves (at the end of their data); the others' are cut at `max_steps`. The dev setups
are the reference env kwargs with another strategy (at its default `state_ext_scale`); the multi-asset ones trade
the cointegrated pair X, Y (`make_cointegrated_pair(seed=0)`), CausalConvStrategyMulti's with fewer steps since
its observations are large (19 kB a step)."""


def jsonable(value):
    """A JSON-able copy of `value` (an info, an action), made the same way every time.

    Dicts get string keys, sequences (tuples, the step's bar infos) become lists, numpy scalars Python scalars,
    arrays {'__ndarray__': dtype, 'shape', 'data'}, datetimes, dates and timedeltas {'__<type name>__': str(value)}.

    Raises:
        TypeError: a value of another type (so that no repr with an address slips in).
    """
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [jsonable(item) for item in value]
    if isinstance(value, np.ndarray):
        return {'__ndarray__': value.dtype.str, 'shape': list(value.shape), 'data': value.ravel().tolist()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (datetime.datetime, datetime.date, datetime.timedelta)):
        return {'__{}__'.format(type(value).__name__): str(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError('no JSON form for {!r} of type {}'.format(value, type(value).__name__))


def flat_observation(observation, prefix=''):
    """Dict 'key/subkey' -> array of a (nested) observation dict, keys sorted."""
    flat = {}
    for key in sorted(observation):
        value = observation[key]
        if isinstance(value, dict):
            flat.update(flat_observation(value, prefix + key + '/'))
        else:
            flat[prefix + key] = np.asarray(value)
    return flat


def choose_action(space, rng):
    """An action of `space` (a Dict of Discrete or Box spaces) chosen by `rng`, keys in sorted order."""
    from gymnasium import spaces

    action = {}
    for key in sorted(space.spaces):
        sub = space.spaces[key]
        if isinstance(sub, spaces.Discrete):
            action[key] = int(sub.start + rng.integers(sub.n))
        else:
            action[key] = (sub.low + (sub.high - sub.low) * rng.random(sub.shape)).astype(sub.dtype)
    return action


def image_digest(image):
    """{'sha256', 'shape', 'dtype'} of an image array's bytes."""
    array = np.ascontiguousarray(image)
    return {'sha256': hashlib.sha256(array.tobytes()).hexdigest(), 'shape': list(array.shape),
            'dtype': array.dtype.str}


def _entry(episode, step, observation, info, action=None, reward=None, terminated=None, truncated=None):
    return {'episode': episode, 'step': step, 'action': jsonable(action), 'reward': reward,
            'terminated': terminated, 'truncated': truncated, 'info': jsonable(info),
            'observation': flat_observation(observation)}


def record_episode(env, rng, episode, max_steps):
    """Entries of one episode: its reset (step 0), then up to `max_steps` steps.

    Args:
        env: the env (reset here: with `seed=SEED` for episode 0).
        rng: the action generator.
        episode: episode number in the setup.
        max_steps: the step the episode is cut at.

    Returns:
        list of entry dicts (see `_entry`).
    """
    observation, info = env.reset(seed=SEED if episode == 0 else None)
    entries = [_entry(episode, 0, observation, info)]
    terminated = truncated = False
    while not (terminated or truncated) and len(entries) <= max_steps:
        action = choose_action(env.action_space, rng)
        observation, reward, terminated, truncated, info = env.step(action)
        entries.append(_entry(episode, len(entries), observation, info, action, reward, terminated, truncated))
    return entries


@contextlib.contextmanager
def matplotlib_fonts_only():
    """Within: matplotlib finds only the fonts it ships (DejaVu), not the machine's, so that a rendering's pixels
    do not depend on which fonts are installed."""
    import matplotlib
    from matplotlib import font_manager

    manager = font_manager.fontManager
    installed = manager.ttflist
    manager.ttflist = [font for font in installed if font.fname.startswith(matplotlib.get_data_path())]
    manager._findfont_cached.cache_clear()
    try:
        yield
    finally:
        manager.ttflist = installed
        manager._findfont_cached.cache_clear()


def record_setup(name):
    """Records setup `name` of `SETUPS` in a fresh env.

    Returns:
        record dict: 'setup', 'steps' (entries without observations, JSON-able), 'observations' (flat key ->
        array stacked over the entries) and 'images' (mode -> `image_digest`; empty unless the setup renders).
    """
    setup = SETUPS[name]
    env = setup['make_env']()
    rng = np.random.default_rng(ACTION_SEED)
    entries, images = [], {}
    try:
        for episode in range(setup['episodes']):
            entries += record_episode(env, rng, episode, setup['max_steps'])
            if setup['render'] and episode == 0:
                with matplotlib_fonts_only():
                    images = {mode: image_digest(env.render(mode)) for mode in RENDER_MODES}
                    images['episode'] = image_digest(env.render('episode'))
    finally:
        env.close()
    flat = [entry.pop('observation') for entry in entries]
    observations = {key: np.stack([entry[key] for entry in flat]) for key in flat[0]}
    steps = json.loads(json.dumps(entries, sort_keys=True))
    return {'setup': name, 'steps': steps, 'observations': observations, 'images': images}


def save_record(record, folder):
    """Writes `record` to `<folder>/<setup>.npz`: observations 'obs_<i>' at their dtype, the rest JSON in 'json'."""
    keys = sorted(record['observations'])
    text = json.dumps({'setup': record['setup'], 'keys': keys, 'steps': record['steps'],
                       'images': record['images']}, sort_keys=True, separators=(',', ':'))
    arrays = {'obs_{}'.format(index): record['observations'][key] for index, key in enumerate(keys)}
    np.savez_compressed(os.path.join(folder, record['setup'] + '.npz'),
                        json=np.frombuffer(text.encode('utf-8'), dtype=np.uint8), **arrays)


def load_record(name, folder=FIXTURE_DIR):
    """The record of setup `name` saved in `folder` (see `save_record`)."""
    with np.load(os.path.join(folder, name + '.npz')) as data:
        record = json.loads(data['json'].tobytes().decode('utf-8'))
        record['observations'] = {key: data['obs_{}'.format(index)] for index, key in enumerate(record.pop('keys'))}
    return record


def _where(record, index):
    step = record['steps'][index]
    return '{} episode {} step {}'.format(record['setup'], step['episode'], step['step'])


def episode_lengths(record):
    """Agent steps of each episode of a record (its reset entries not counted)."""
    lengths = {}
    for step in record['steps']:
        lengths[step['episode']] = step['step']
    return [lengths[episode] for episode in sorted(lengths)]


def value_difference(expected, actual, path):
    """The first difference of two JSON values, floats to `FLOAT_ATOL`; None when they match.

    Types must match (an int is not a float); NaN matches NaN.
    """
    if type(expected) is not type(actual):
        return '{}: {!r} ({}) became {!r} ({})'.format(path, expected, type(expected).__name__, actual,
                                                         type(actual).__name__)
    if isinstance(expected, dict):
        if sorted(expected) != sorted(actual):
            return '{}: keys {} became {}'.format(path, sorted(expected), sorted(actual))
        found = (value_difference(expected[key], actual[key], '{}[{!r}]'.format(path, key)) for key in sorted(expected))
        return next((message for message in found if message), None)
    if isinstance(expected, list):
        if len(expected) != len(actual):
            return '{}: length {} became {}'.format(path, len(expected), len(actual))
        found = (value_difference(a, b, '{}[{}]'.format(path, i)) for i, (a, b) in enumerate(zip(expected, actual)))
        return next((message for message in found if message), None)
    if isinstance(expected, float):
        same = expected == actual or abs(expected - actual) <= FLOAT_ATOL or math.isnan(expected) and math.isnan(actual)
        return None if same else '{}: {!r} became {!r}'.format(path, expected, actual)
    return None if expected == actual else '{}: {!r} became {!r}'.format(path, expected, actual)


def observation_difference(expected, actual, key):
    """How observation `key` of one entry differs: None when bit for bit equal or within `FLOAT_ATOL`, else a
    message with numpy's report."""
    if np.array_equal(expected, actual, equal_nan=expected.dtype.kind in 'fc'):
        return None
    try:
        np.testing.assert_allclose(actual, expected, rtol=0, atol=FLOAT_ATOL)
    except AssertionError as error:
        return 'observation {!r} differs:{}'.format(key, error)
    return None


def first_difference(expected, actual):
    """The first difference between two records of one setup, as a message naming the setup, episode, step and
    key; None when they match (observations bit for bit or to `FLOAT_ATOL`, rewards and info floats to
    `FLOAT_ATOL`, everything else exactly)."""
    setup, old_obs, new_obs = expected['setup'], expected['observations'], actual['observations']
    if episode_lengths(expected) != episode_lengths(actual):
        return '{}: episodes of {} steps became {}'.format(setup, episode_lengths(expected), episode_lengths(actual))
    if sorted(old_obs) != sorted(new_obs):
        return '{}: observation keys {} became {}'.format(setup, sorted(old_obs), sorted(new_obs))
    for key in sorted(old_obs):
        if old_obs[key].dtype != new_obs[key].dtype or old_obs[key].shape != new_obs[key].shape:
            return '{}: observation {!r} was {} {}, is {} {}'.format(setup, key, old_obs[key].dtype, old_obs[key].shape,
                                                                     new_obs[key].dtype, new_obs[key].shape)
    for index, (old, new) in enumerate(zip(expected['steps'], actual['steps'])):
        message = value_difference(old, new, 'entry') or next(
            filter(None, (observation_difference(old_obs[key][index], new_obs[key][index], key)
                          for key in sorted(old_obs))), None)
        if message:
            return '{}: {}'.format(_where(expected, index), message)
    return value_difference(expected['images'], actual['images'], '{}: images'.format(setup))


def provenance():
    """The generating command, versions, git commit and uncommitted package files of this checkout."""
    import backtrader
    import gymnasium
    import matplotlib
    import pandas

    import btgym_aac

    def git(*args):
        return subprocess.run(('git',) + args, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              capture_output=True, text=True).stdout.strip()

    return {'command': COMMAND, 'btgym_aac': btgym_aac.__version__, 'git_commit': git('rev-parse', 'HEAD'),
            'uncommitted_package_files': git('status', '--porcelain', '--', 'btgym_aac').splitlines(),
            'python': platform.python_version(), 'machine': platform.machine(), 'numpy': np.__version__,
            'pandas': pandas.__version__, 'backtrader': backtrader.__version__, 'gymnasium': gymnasium.__version__,
            'matplotlib': matplotlib.__version__}


def generate(folder):
    """Records every setup twice, checks that the two recordings match, and writes the first one and
    `manifest.json` to `folder`.

    Raises:
        SystemExit: a setup recorded differently the second time.
    """
    os.makedirs(folder, exist_ok=True)
    setups = {}
    for name in SETUPS:
        record = record_setup(name)
        difference = first_difference(record, record_setup(name))
        if difference:
            raise SystemExit('two recordings in one process differ: ' + difference)
        save_record(record, folder)
        ends = [step for index, step in enumerate(record['steps'])
                if index + 1 == len(record['steps']) or record['steps'][index + 1]['step'] == 0]
        setups[name] = {'episode_steps': episode_lengths(record),
                        'ended_by_itself': [bool(step['terminated'] or step['truncated']) for step in ends],
                        'observation_keys': sorted(record['observations']), 'rendered': sorted(record['images'])}
        print('{}: episodes of {} steps'.format(name, setups[name]['episode_steps']), flush=True)
    with open(os.path.join(folder, 'manifest.json'), 'w') as file:
        json.dump(dict(provenance(), setups=setups), file, indent=1, sort_keys=True)
        file.write('\n')


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='Regenerates the env records (see the module docstring).')
    parser.add_argument('--out', default=FIXTURE_DIR, help='folder to write (default: %(default)s)')
    generate(parser.parse_args().out)
