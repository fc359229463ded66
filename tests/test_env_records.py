"""The envs produce exactly what `tests/data/env_records/` recorded (see `env_records`): every observation, reward,
flag, info and the reference setup's renderings, setup by setup; and the comparison finds a changed value."""
import copy
import json
import os

import numpy as np
import pytest

from env_records import FIXTURE_DIR, SETUPS, episode_lengths, first_difference, load_record, record_setup


@pytest.fixture(scope='module')
def manifest():
    with open(os.path.join(FIXTURE_DIR, 'manifest.json')) as file:
        return json.load(file)


def test_every_setup_has_a_record(manifest):
    files = sorted(name[:-len('.npz')] for name in os.listdir(FIXTURE_DIR) if name.endswith('.npz'))
    assert files == sorted(SETUPS) == sorted(manifest['setups'])


@pytest.mark.parametrize('name', list(SETUPS))
def test_env_reproduces_its_record(name, manifest):
    expected = load_record(name)
    difference = first_difference(expected, record_setup(name))
    assert difference is None, '{}\n(recorded with {}; regenerate only for a deliberate, reviewed change: {})'.format(
        difference, {key: value for key, value in manifest.items() if key != 'setups'}, manifest['command'])


@pytest.fixture(scope='module')
def reference():
    return load_record('reference_4_11')


def _nudge_observation(record):
    """One ulp of the largest external value of entry 300 (episode 1 step 43)."""
    entry = record['observations']['external'][300]
    index = np.unravel_index(np.argmax(np.abs(entry)), entry.shape)
    entry[index] = np.nextafter(entry[index], np.float32(2))


def _shift_timestamp(record):
    record['observations']['metadata/timestamp'][5] += 1


def _nudge_reward(record):
    record['steps'][7]['reward'] += 1e-9


def _unterminate(record):
    record['steps'][episode_lengths(record)[0]]['terminated'] = False


def _nudge_info(record):
    record['steps'][9]['info']['bars'][2]['broker_value'] += 1e-9


def _retype_info(record):
    bar = record['steps'][10]['info']['bars'][3]
    bar['position'] = float(bar['position'])


def _drop_info(record):
    del record['steps'][3]['info']['drawdown']


def _drop_step(record):
    record['steps'].pop()


def _change_image(record):
    record['images']['episode']['sha256'] = '0' * 64


@pytest.mark.parametrize('change, expected', [
    (_nudge_observation, ["reference_4_11 episode 1 step 43: observation 'external' differs",
                          'Mismatched elements: 1 ']),
    (_shift_timestamp, ["reference_4_11 episode 0 step 5: observation 'metadata/timestamp' differs"]),
    (_nudge_reward, ["reference_4_11 episode 0 step 7: entry['reward']: "]),
    (_unterminate, ["reference_4_11 episode 0 step ", ": entry['terminated']: True became False"]),
    (_nudge_info, ["reference_4_11 episode 0 step 9: entry['info']['bars'][2]['broker_value']: "]),
    (_retype_info, ["reference_4_11 episode 0 step 10: entry['info']['bars'][3]['position']: ", '(int) became',
                    '(float)']),
    (_drop_info, ["reference_4_11 episode 0 step 3: entry['info']: keys"]),
    (_drop_step, ['reference_4_11: episodes of [', 'steps became [']),
    (_change_image, ["reference_4_11: images['episode']['sha256']: "]),
], ids=lambda value: getattr(value, '__name__', ''))
def test_a_changed_value_is_found_and_named(reference, change, expected):
    changed = copy.deepcopy(reference)
    change(changed)
    message = first_difference(reference, changed)
    assert message is not None and message.startswith(expected[0]), message
    assert all(part in message for part in expected[1:]), message
    assert first_difference(reference, copy.deepcopy(reference)) is None


def test_a_changed_dtype_and_differences_within_the_tolerance():
    record = {'setup': 's', 'images': {}, 'observations': {'x': np.zeros((2, 3), np.float32)},
              'steps': [{'episode': 0, 'step': 0, 'reward': None, 'info': {'value': 1.0}},
                        {'episode': 0, 'step': 1, 'reward': 0.5, 'info': {'value': float('nan')}}]}
    assert first_difference(record, copy.deepcopy(record)) is None
    within = copy.deepcopy(record)
    within['steps'][1]['reward'] += 1e-13
    within['steps'][0]['info']['value'] += 1e-13
    assert first_difference(record, within) is None
    wider = copy.deepcopy(record)
    wider['observations']['x'] = wider['observations']['x'].astype(np.float64)
    assert first_difference(record, wider) == "s: observation 'x' was float32 (2, 3), is float64 (2, 3)"
