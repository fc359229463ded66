"""The original btgym's API kept for its users' code: module paths, env attributes, ignored arguments, data masters."""
import importlib
import json
import multiprocessing
import os
import subprocess
import sys

import backtrader as bt
import logbook
import numpy as np
import pytest

import btgym_aac
from btgym_aac import BTgymDataset, BTgymEnv
from btgym_aac.data import make_random_walk_data, make_sine_data
from btgym_aac.legacy import data_master
from btgym_aac.legacy.module_paths import ORIGINAL_MODULES
from btgym_aac.strategy import DevStrat_4_11

QUIET = dict(render_enabled=False)
SHORT = {'days': 0, 'hours': 8, 'minutes': 0}


def walk_dataset(seed=3, num_bars=6000):
    return BTgymDataset(dataframe=make_random_walk_data(num_bars=num_bars, seed=seed), episode_duration=SHORT)


def unique_port():
    return 20000 + os.getpid() % 20000


def warnings_of(handler):
    return [record.message for record in handler.records if record.level == logbook.WARNING]


# ------------------------------------------------------------------------------------------------ module paths

@pytest.mark.parametrize('module_name', sorted(ORIGINAL_MODULES))
def test_every_original_module_path_imports_and_its_names_are_the_package_objects(module_name):
    module = importlib.import_module(module_name)
    assert set(dir(module)) >= set(ORIGINAL_MODULES[module_name])
    for name, source in ORIGINAL_MODULES[module_name].items():
        assert getattr(module, name) is getattr(importlib.import_module(source), name), name
    with pytest.raises(AttributeError, match='no attribute'):
        module.NotAName


def test_original_import_statements_of_the_notebooks_work_in_a_fresh_interpreter():
    code = '\n'.join([
        'from btgym_aac.research.strategy_gen_4 import DevStrat_4_6, DevStrat_4_8, DevStrat_4_9, DevStrat_4_12',
        'from btgym_aac.research import DevStrat_4_11, DevStrat_4_12',
        'from btgym_aac.algorithms.launcher.base import Launcher',
        'from btgym_aac.datafeed.derivative import BTgymDataset, BTgymRandomDataDomain',
        'from btgym_aac.envs.base import BTgymEnv',
        'from btgym_aac.strategy.observers import Reward, Position, NormPnL',
        'import btgym_aac.distributed.launcher, btgym_aac.env, btgym_aac.strategy',
        'assert Launcher is btgym_aac.distributed.launcher.Launcher',
        'assert BTgymEnv is btgym_aac.env.BTgymEnv and DevStrat_4_12 is btgym_aac.strategy.DevStrat_4_12',
        'assert BTgymEnv.__module__ == "btgym_aac.env.base"',
        'print("ok")',
    ])
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'ok'


def test_unknown_submodule_of_an_original_path_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module('btgym_aac.datafeed.no_such_module')
    assert btgym_aac.BTgymRendering.__module__ == 'btgym_aac.env.rendering'


# ------------------------------------------------------------------------------------------------ env attributes

def test_env_params_are_the_originals_dict_of_dicts():
    env = BTgymEnv(dataset=walk_dataset(), strategy=DevStrat_4_11, start_cash=250.0, broker_commission=0.002,
                   fixed_stake=7, drawdown_call=8, **QUIET)
    assert set(env.params) == {'dataset', 'engine', 'strategy', 'render'}
    assert env.params['engine'] == {'start_cash': 250.0, 'broker_commission': 0.002, 'fixed_stake': 7}
    assert env.params['strategy'] is env.strategy_params
    assert env.params['strategy']['drawdown_call'] == 8
    assert env.params['strategy']['state_shape'] is env.strategy_params['state_shape']
    assert env.params['dataset']['sample_duration'] == env.dataset.params['sample_duration']
    assert env.params['render'] == {'rendering': 'disabled'}
    assert env.strategy is DevStrat_4_11
    assert env.network_address is None


def test_env_params_of_a_custom_engine_are_read_from_it():
    engine = bt.Cerebro()
    engine.addstrategy(DevStrat_4_11, drawdown_call=4)
    engine.broker.setcash(500.0)
    engine.broker.setcommission(commission=0.0005)
    engine.addsizer(bt.sizers.SizerFix, stake=3)
    env = BTgymEnv(dataset=walk_dataset(), engine=engine, **QUIET)
    assert env.params['engine'] == {'start_cash': 500.0, 'broker_commission': 0.0005, 'fixed_stake': 3}
    assert env.strategy is DevStrat_4_11 and env.params['strategy']['drawdown_call'] == 4


def test_metadata_render_modes_of_the_original_and_of_gymnasium():
    env = BTgymEnv(dataset=walk_dataset(), render_modes=['human', 'episode', 'external'], strategy=DevStrat_4_11)
    assert env.metadata['render.modes'] == ['human', 'episode', 'external']  # the original's picture modes
    assert env.metadata['render_modes'] == ['rgb_array', 'human']  # gymnasium's render_mode values
    assert BTgymEnv.metadata['render.modes'] == ['human', 'episode']


def test_step_info_indexes_its_bars_like_the_originals_info_list():
    env = BTgymEnv(dataset=walk_dataset(), strategy=DevStrat_4_11, **QUIET)
    env.reset(seed=0)
    _, _, _, _, info = env.step(1)
    assert len(info['bars']) == 10  # skip_frame
    assert info[-1] is info['bars'][-1] and info[0] is info['bars'][0]
    assert info[-1]['step'] == info['step'] and info[-1]['time'] == info['time']
    assert info[0]['time'] < info[-1]['time']
    with pytest.raises(IndexError):
        info[10]
    with pytest.raises(KeyError):
        info['no_such_key']
    assert isinstance(info, dict)


def test_force_control_mode_ends_the_episode_for_its_statistics_and_rendering():
    env = BTgymEnv(dataset=walk_dataset(), strategy=DevStrat_4_11)
    assert env._force_control_mode() is False  # nothing started yet
    env.reset(seed=1)
    for _ in range(5):
        env.step(0)
    assert env._force_control_mode() is True
    stat = env.get_stat()
    assert stat['episode'] == 0 and stat['length'] > 286
    image = env.render('episode')
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    with pytest.raises(RuntimeError, match='call reset'):
        env.step(0)


# ---------------------------------------------------------------------------------------- arguments ignored

def test_dataset_kwargs_next_to_a_dataset_are_warned_of_and_ignored():
    dataset = walk_dataset()
    with logbook.TestHandler() as handler:
        env = BTgymEnv(dataset=dataset, episode_duration={'days': 2}, time_gap={'days': 1}, strategy=DevStrat_4_11,
                       **QUIET)
    warnings = warnings_of(handler)
    for key in ('episode_duration', 'time_gap'):
        assert sum('`{}` is ignored: `dataset=` is given'.format(key) in text for text in warnings) == 1, warnings
    assert env.dataset is dataset
    env.reset(seed=0)
    assert len(env._trial.data) == 480  # the dataset's own eight hours of 1-minute bars


def test_strategy_and_broker_kwargs_next_to_an_engine_are_warned_of_and_ignored():
    engine = bt.Cerebro()
    engine.addstrategy(DevStrat_4_11)
    engine.broker.setcash(1000.0)
    engine.addsizer(bt.sizers.SizerFix, stake=2)
    with logbook.TestHandler() as handler:
        env = BTgymEnv(dataset=walk_dataset(), engine=engine, start_cash=5.0, strategy=DevStrat_4_11,
                       state_shape={}, skip_frame=3, **QUIET)
    warnings = warnings_of(handler)
    for key in ('start_cash', 'strategy', 'state_shape', 'skip_frame'):
        assert sum('`{}` is ignored: `engine=` is given'.format(key) in text for text in warnings) == 1, warnings
    assert env.skip_frame == 10 and env.params['engine']['start_cash'] == 1000.0
    assert set(env.observation_space.spaces) == set(DevStrat_4_11.params.state_shape)


def test_unknown_kwargs_without_an_engine_are_still_refused():
    with pytest.raises(TypeError, match='drawdown_cal'):
        BTgymEnv(dataset=walk_dataset(), strategy=DevStrat_4_11, drawdown_cal=3, **QUIET)


# ------------------------------------------------------------------------------------------------ data masters

def _client_window(port, queue):
    env = BTgymEnv(data_master=False, data_port=port, strategy=DevStrat_4_11, **QUIET)
    env.reset()
    data = env.dataset.data
    queue.put((len(data), float(data['close'].iloc[100]), int(env._trial.metadata['first_row'])))
    env.close()


def master_and_client_windows(start_method, port):
    """A data master env and three `data_master=False` envs in processes started with `start_method`.

    Returns:
        [len of the master's data, its 100th close, [(len, 100th close, first row) of each client's first trial]].
    """
    dataset = walk_dataset()
    master = BTgymEnv(dataset=dataset, data_master=True, data_port=port, strategy=DevStrat_4_11, **QUIET)
    context = multiprocessing.get_context(start_method)
    queue = context.Queue()
    workers = [context.Process(target=_client_window, args=(port, queue)) for _ in range(3)]
    try:
        for worker in workers:
            worker.start()
        windows = [queue.get(timeout=120) for _ in workers]
    finally:
        for worker in workers:
            worker.join(timeout=60)
        master.close()
    return [len(dataset.data), float(dataset.data['close'].iloc[100]), windows]


@pytest.mark.parametrize('start_method', ['fork', 'spawn'])
def test_data_master_false_envs_of_other_processes_sample_the_masters_data(start_method, tmp_path, monkeypatch):
    # In a fresh interpreter, as the async notebook runs: forking pytest's process, which earlier tests left with
    # TensorFlow's threads, can deadlock a child.
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(tmp_path))
    code = 'import json, test_original_api as t\nprint(json.dumps(t.master_and_client_windows({!r}, {})))'.format(
        start_method, unique_port())
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300,
                            cwd=os.path.dirname(__file__))
    assert result.returncode == 0, result.stderr[-3000:]
    length_of_data, close_of_data, windows = json.loads(result.stdout.strip().splitlines()[-1])
    sine_close = float(make_sine_data()['close'].iloc[100])
    for length, close, first_row in windows:
        assert length == length_of_data
        assert close == close_of_data != sine_close  # the master's walk, not the sine
        assert 0 <= first_row <= length_of_data - 480
    assert len({first_row for _, _, first_row in windows}) > 1  # each copy samples with a generator of its own
    assert not os.listdir(data_master.registry_folder())  # closed master: its file is gone


def test_data_master_false_without_a_master_names_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(tmp_path))
    with pytest.raises(data_master.DataMasterError, match='no data master env serves data_port 4999.*`dataset=`'):
        BTgymEnv(data_master=False, **QUIET)


def test_client_dataset_settings_are_warned_of_and_the_masters_data_used(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(tmp_path))
    dataset = walk_dataset()
    master = BTgymEnv(dataset=dataset, data_port=5001, strategy=DevStrat_4_11, **QUIET)
    try:
        with logbook.TestHandler() as handler:
            client = BTgymEnv(data_master=False, data_port=5001, filename='elsewhere.csv', strategy=DevStrat_4_11,
                              **QUIET)
        assert any('`filename` is ignored: a data_master=False env' in text for text in warnings_of(handler))
        assert client.dataset is not dataset
        np.testing.assert_array_equal(client.dataset.data.to_numpy(), dataset.data.to_numpy())
    finally:
        master.close()


def test_two_live_masters_cannot_share_a_data_port(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(tmp_path))
    master = BTgymEnv(dataset=walk_dataset(), data_master=True, data_port=5002, strategy=DevStrat_4_11, **QUIET)
    try:
        with pytest.raises(ValueError, match='data_port 5002 already has a data master env'):
            BTgymEnv(dataset=walk_dataset(seed=4), data_master=True, data_port=5002, strategy=DevStrat_4_11,
                     **QUIET)
    finally:
        master.close()
    BTgymEnv(dataset=walk_dataset(seed=4), data_master=True, data_port=5002, strategy=DevStrat_4_11, **QUIET).close()


def test_a_master_that_died_is_reported_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(tmp_path))
    code = ('from btgym_aac import BTgymEnv, BTgymDataset\nfrom btgym_aac.data import make_random_walk_data\n'
            'import os\nenv = BTgymEnv(dataset=BTgymDataset(dataframe=make_random_walk_data(num_bars=3000)), '
            'data_port=5003, render_enabled=False)\nos._exit(0)\n')
    subprocess.run([sys.executable, '-c', code], check=True, timeout=120, env=dict(os.environ))
    assert os.listdir(data_master.registry_folder()) == ['data_master_5003.pkl']  # os._exit left it behind
    with pytest.raises(data_master.DataMasterError, match=r'data_port 5003 \(process \d+\) has ended'):
        BTgymEnv(data_master=False, data_port=5003, **QUIET)
    BTgymEnv(dataset=walk_dataset(), data_port=5003, strategy=DevStrat_4_11, **QUIET).close()  # replaces it


def test_a_master_file_others_could_write_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(tmp_path))
    master = BTgymEnv(dataset=walk_dataset(), data_port=5004, strategy=DevStrat_4_11, **QUIET)
    try:
        path = os.path.join(data_master.registry_folder(), 'data_master_5004.pkl')
        os.chmod(path, 0o666)
        with pytest.raises(PermissionError, match='writable by every user'):
            BTgymEnv(data_master=False, data_port=5004, **QUIET)
    finally:
        master.close()
    assert oct(os.stat(data_master.registry_folder()).st_mode & 0o777) == '0o700'


def test_training_runs_make_no_data_master(tmp_path, monkeypatch):
    from btgym_aac.env.training_envs import training_env_config

    monkeypatch.setenv('XDG_RUNTIME_DIR', str(tmp_path))
    config = {'class_ref': BTgymEnv, 'kwargs': {'dataset': walk_dataset(), 'port': 5000, 'data_port': 4999}}
    kwargs = training_env_config(config)['kwargs']
    assert 'data_port' not in kwargs and 'port' not in kwargs and kwargs['dataset'] is config['kwargs']['dataset']
    client = {'class_ref': BTgymEnv, 'kwargs': {'data_master': False, 'data_port': 4998}}
    assert training_env_config(client) is client


class DataRecordingEnv(BTgymEnv):
    """BTgymEnv writing its dataset's length and 100th close price to `<record_dir>/<pid>_<task>.json`."""

    def __init__(self, record_dir, **kwargs):
        super().__init__(**kwargs)
        data = self.dataset.data
        with open(os.path.join(record_dir, '{}_{}.json'.format(os.getpid(), self.task)), 'w') as f:
            json.dump([len(data), float(data['close'].iloc[100])], f)


@pytest.mark.slow
def test_launcher_workers_with_data_master_false_train_on_the_masters_data(tmp_path, monkeypatch):
    from btgym_aac.algorithms import A3C, AacStackedRL2Policy, Launcher

    monkeypatch.setenv('XDG_RUNTIME_DIR', str(tmp_path))
    records = tmp_path / 'records'
    records.mkdir()
    port = unique_port()
    dataset = walk_dataset(num_bars=20000)
    master = BTgymEnv(dataset=dataset, data_master=True, data_port=port,
                      strategy=DevStrat_4_11, **QUIET)
    try:
        launcher = Launcher(
            env_config={'class_ref': DataRecordingEnv, 'kwargs': dict(
                record_dir=str(records), data_master=False, data_port=port, strategy=DevStrat_4_11,
                render_enabled=False)},
            cluster_config={'num_workers': 2, 'log_dir': str(tmp_path / 'run')},
            policy_config={'class_ref': AacStackedRL2Policy, 'kwargs': {'lstm_layers': (16, 16)}},
            trainer_config={'class_ref': A3C, 'kwargs': {'rollout_length': 20}},
            max_env_steps=300, save_secs=5, root_random_seed=0, show_progress=False)
        result = launcher.run()
    finally:
        master.close()
    assert result['completed'] and result['global_step'] >= 300
    seen = [json.loads(path.read_text()) for path in records.iterdir()]
    assert len(seen) >= 2  # every worker's env (and the chief's policy-checking env) recorded its data
    assert all(record == [len(dataset.data), float(dataset.data['close'].iloc[100])] for record in seen), seen
