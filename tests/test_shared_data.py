"""One read-only copy of a run's data per host: the launcher publishes the bars it parsed as memory-mapped arrays,
and every worker's envs map that one copy instead of parsing their own."""
import os
import threading
import time

import numpy as np
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.algorithms import A3C, Launcher
from btgym_aac.algorithms.policy import BaseAacPolicy
from btgym_aac.data import make_random_walk_data, shared, write_histdata_csv
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


def mapped_files(pid):
    with open('/proc/{}/maps'.format(pid)) as f:
        return {line.split()[-1] for line in f if len(line.split()) >= 6}


def test_every_worker_maps_the_launchers_one_copy_of_the_data(tmp_path, csv):
    launcher = Launcher(
        env_config={'class_ref': BTgymEnv, 'kwargs': dict(filename=csv, strategy=DevStrat_4_11,
                                                            episode_duration={'hours': 12}, render_enabled=False)},
        cluster_config={'num_workers': 2, 'log_dir': str(tmp_path / 'run')},
        policy_config={'class_ref': BaseAacPolicy, 'kwargs': {'lstm_layers': (16,)}},
        trainer_config={'class_ref': A3C, 'kwargs': {'rollout_length': 20}},
        max_env_steps=600, save_secs=600, root_random_seed=0, show_progress=False)
    (entry,) = launcher.data_cache
    seen = {}

    def watch_the_workers():
        deadline = time.time() + 120
        while time.time() < deadline and len(seen) < 2:
            for task in (0, 1):
                report = launcher.progress.get(task)
                if report and report['step'] > report['start_step']:
                    seen[task] = mapped_files(launcher.processes[('worker', task)].pid)
            time.sleep(0.2)

    thread = threading.Thread(target=watch_the_workers, daemon=True)
    thread.start()
    result = launcher.run()
    thread.join(5)
    assert result['completed'] and sorted(seen) == [0, 1]
    for files in seen.values():
        assert entry['values'] in files
    assert not os.path.exists(tmp_path / 'run' / shared.CACHE_DIR)  # removed when the run ended
