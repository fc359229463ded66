"""One read-only copy of a run's data per host: the launcher publishes the bars it parsed as memory-mapped arrays,
and every worker's envs map that one copy instead of parsing their own."""
import json
import os
import time

import numpy as np
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.algorithms import A3C, Launcher
from btgym_aac.algorithms.policy import BaseAacPolicy
from btgym_aac.data import make_random_walk_data, shared, write_histdata_csv
from btgym_aac.data.bid_ask import write_bars_csv
from btgym_aac.data.parsing import read_ohlcv, resolve_parsing_params
from btgym_aac.strategy import DevStrat_4_11


@pytest.fixture
def csv(tmp_path):
    return write_histdata_csv(make_random_walk_data(num_bars=20000, seed=0), str(tmp_path / 'bars.csv'))


def backed_by_a_memory_map(frame):
    array = frame.to_numpy()
    while array.base is not None and not isinstance(array, np.memmap):
        array = array.base
    return isinstance(array, np.memmap)


@pytest.fixture
def clean_registry():
    yield
    shared._registered.clear()


def test_a_published_source_is_read_back_equal_and_read_only_from_its_memory_map(tmp_path, csv, clean_registry):
    parsed = read_ohlcv(csv)
    entry = shared.publish(parsed, shared.source_key(csv, resolve_parsing_params(None)), str(tmp_path / 'run'))
    assert os.path.dirname(entry['values']) == str(tmp_path / 'run' / shared.CACHE_DIR)
    shared.register([entry])
    mapped = read_ohlcv(csv)
    assert mapped.equals(parsed) and list(mapped.columns) == list(parsed.columns)
    assert backed_by_a_memory_map(mapped) and not backed_by_a_memory_map(parsed)
    assert not backed_by_a_memory_map(read_ohlcv(csv, {'checks': {'constant_prices': 'off'}}))  # other params
    os.utime(csv, ns=(time.time_ns() + 10 ** 9, time.time_ns() + 10 ** 9))  # the file changed: parsed again
    assert not backed_by_a_memory_map(read_ohlcv(csv))


def test_a_published_source_keeps_its_spread_column(tmp_path, clean_registry):
    frame = make_random_walk_data(num_bars=50, seed=1)
    frame['spread'] = np.linspace(1e-4, 3e-4, 50)
    path = write_bars_csv(frame, str(tmp_path / 'quotes.csv'))
    parsed = read_ohlcv(path)
    shared.register([shared.publish(parsed, shared.source_key(path, resolve_parsing_params(None)),
                                    str(tmp_path / 'run'))])
    mapped = read_ohlcv(path)
    assert backed_by_a_memory_map(mapped) and mapped.equals(parsed)
    assert list(mapped.columns) == ['open', 'high', 'low', 'close', 'volume', 'spread']


def mapped_files(pid):
    with open('/proc/{}/maps'.format(pid)) as f:
        return {line.split()[-1] for line in f if len(line.split()) >= 6}


class MapsRecordingEnv(BTgymEnv):
    """BTgymEnv that writes the files its process maps, at its first step, to `maps_folder/<pid>.json`."""

    def __init__(self, maps_folder, **kwargs):
        self.maps_folder, self.recorded = maps_folder, False
        super().__init__(**kwargs)

    def step(self, action):
        if not self.recorded:
            with open(os.path.join(self.maps_folder, '{}.json'.format(os.getpid())), 'w') as f:
                json.dump(sorted(mapped_files(os.getpid())), f)
            self.recorded = True
        return super().step(action)


def test_every_worker_maps_the_launchers_one_copy_of_the_data(tmp_path, csv):
    maps_folder = tmp_path / 'maps'
    maps_folder.mkdir()
    launcher = Launcher(
        env_config={'class_ref': MapsRecordingEnv,
                    'kwargs': dict(maps_folder=str(maps_folder), filename=csv, strategy=DevStrat_4_11,
                                   episode_duration={'hours': 12}, render_enabled=False)},
        cluster_config={'num_workers': 2, 'log_dir': str(tmp_path / 'run')},
        policy_config={'class_ref': BaseAacPolicy, 'kwargs': {'lstm_layers': (16,)}},
        trainer_config={'class_ref': A3C, 'kwargs': {'rollout_length': 20}},
        max_env_steps=600, save_secs=600, root_random_seed=0, show_progress=False)
    (entry,) = launcher.data_cache
    result = launcher.run()
    assert result['completed']
    recorded = [json.loads(path.read_text()) for path in maps_folder.glob('*.json')]
    assert len(recorded) == 2  # one per worker process
    for files in recorded:
        assert entry['values'] in files
    assert not os.path.exists(tmp_path / 'run' / shared.CACHE_DIR)  # removed when the run ended
