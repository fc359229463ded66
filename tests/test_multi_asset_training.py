"""Training on several assets: the trainers on MultiDiscreteEnv and PortfolioEnv in-process, `btgym-aac train
--assets` through the launcher, and its bad input."""
import glob
import json
import os

import numpy as np
import pytest

from btgym_aac.algorithms.aac import A3C, PPO, Unreal
from btgym_aac.algorithms.in_process import train_in_process
from btgym_aac.algorithms.policy import AacDensePolicy, AacStackedRL2Policy
from btgym_aac.cli import main as cli_main
from btgym_aac.data import (BTgymDataset, BTgymMultiData, make_cointegrated_pair, make_correlated_walks,
                            write_histdata_csv)
from btgym_aac.distributed.launcher import Launcher
from btgym_aac.env import MultiDiscreteEnv, PortfolioEnv
from btgym_aac.distributed.run_config import multi_asset_env_config

SMALL_POLICY = {'class_ref': AacStackedRL2Policy, 'kwargs': {'lstm_layers': (16, 16)}}


def small_env_config(portfolio, num_bars=3000):
    config = multi_asset_env_config(make_cointegrated_pair(num_bars=num_bars, seed=1), portfolio=portfolio)
    config['kwargs'].update(render_enabled=False)
    return config


@pytest.mark.slow
@pytest.mark.parametrize('portfolio, trainer', [(False, PPO), (True, A3C)], ids=['multi-discrete-ppo',
                                                                              'portfolio-a3c'])
def test_trainers_train_on_multi_asset_envs_in_process(portfolio, trainer):
    env_config = small_env_config(portfolio)
    result = train_in_process(env_config, SMALL_POLICY, {'class_ref': trainer, 'kwargs': {'rollout_length': 20}},
                              max_env_steps=160, random_seed=0)
    assert result['global_step'] >= 160
    assert result['train_steps'] >= 8


@pytest.mark.slow
@pytest.mark.parametrize('portfolio', [False, True], ids=['multi-discrete', 'portfolio'])
def test_unreal_trains_on_multi_asset_envs_in_process(portfolio):
    result = train_in_process(small_env_config(portfolio), SMALL_POLICY,
                              {'class_ref': Unreal, 'kwargs': {'rollout_length': 20}}, max_env_steps=200,
                              random_seed=0)
    assert result['global_step'] >= 200


@pytest.mark.slow
@pytest.mark.parametrize('portfolio', [False, True], ids=['multi-discrete', 'portfolio'])
def test_the_dense_policy_trains_on_multi_asset_envs_in_process(portfolio):
    """`AacDensePolicy` (`--preset dense`) trains on both envs: several streams, discrete or continuous actions."""
    policy_config = {'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (16,), 'lstm_layers': (16,)}}
    result = train_in_process(small_env_config(portfolio), policy_config,
                              {'class_ref': A3C, 'kwargs': {'rollout_length': 20}}, max_env_steps=160, random_seed=0)
    assert result['global_step'] >= 160
    assert result['train_steps'] >= 8


def test_multi_asset_env_config_names_its_env_strategy_and_lines():
    frames = make_correlated_walks(num_bars=500, names=('A', 'B', 'C'), seed=0)
    discrete = multi_asset_env_config(frames)
    portfolio = multi_asset_env_config(frames, portfolio=True)
    assert discrete['class_ref'] is MultiDiscreteEnv and portfolio['class_ref'] is PortfolioEnv
    for config in (discrete, portfolio):
        assert config['kwargs']['asset_names'] == ['A', 'B', 'C']
        assert config['kwargs']['dataset'].data_names == ('A', 'B', 'C')
        assert not config['kwargs']['dataset'].is_ready, 'every env loads its own copy'
    assert discrete['kwargs']['order_size'] == 2000 and 'order_size' not in portfolio['kwargs']


def test_misaligned_asset_files_fail_before_any_task_starts(tmp_path, capsys):
    frames = make_correlated_walks(num_bars=500, names=('A', 'B'), seed=0)
    late = frames['B'].copy()
    late.index = late.index + np.timedelta64(30, 's')
    paths = [write_histdata_csv(frames['A'], str(tmp_path / 'a.csv')),
             write_histdata_csv(late, str(tmp_path / 'b.csv'))]
    run = tmp_path / 'run'
    assert cli_main(['train', '--assets', 'A=' + paths[0], 'B=' + paths[1], '--log-dir', str(run)]) == 2
    error = capsys.readouterr().err
    assert "'A'" in error and "'B'" in error and 'absent from' in error, error
    assert not run.exists()


def test_a_launcher_refuses_misaligned_data_lines_before_any_task_starts(tmp_path):
    """Not only `--assets`: any env config holding a BTgymMultiData has its lines aligned when the Launcher is made."""
    frames = make_correlated_walks(num_bars=500, names=('A', 'B'), seed=0)
    frames['B'] = frames['B'].set_axis(frames['B'].index + np.timedelta64(30, 's'))
    dataset = BTgymMultiData(data_class_ref=BTgymDataset, data_config={
        name: {'filename': None, 'dataframe': frame} for name, frame in frames.items()})
    env_config = {'class_ref': MultiDiscreteEnv, 'kwargs': {'dataset': dataset, 'asset_names': ['A', 'B']}}
    with pytest.raises(ValueError, match="cannot align data lines 'A' and 'B'"):
        Launcher(env_config=env_config, policy_config=SMALL_POLICY,
                 trainer_config={'class_ref': A3C, 'kwargs': {}},
                 cluster_config={'num_workers': 1, 'log_dir': str(tmp_path / 'run')}, max_env_steps=10)
    assert not (tmp_path / 'run').exists()


@pytest.mark.parametrize('flags, message', [
    (['--assets', 'A'], "'A' is not NAME=CSV"),
    (['--assets', 'A=missing.csv'], "no such file 'missing.csv'"),
    (['--portfolio'], '--portfolio needs --assets'),
    (['--assets', '--data', 'x.csv'], '--assets and --data'),
])
def test_bad_asset_flags_are_named(tmp_path, capsys, flags, message):
    assert cli_main(['train'] + flags + ['--log-dir', str(tmp_path / 'run')]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / 'run').exists()


def test_asset_names_given_twice_are_refused(tmp_path, capsys):
    path = write_histdata_csv(make_correlated_walks(num_bars=300, names=('A',), seed=0)['A'], str(tmp_path / 'a.csv'))
    assert cli_main(['train', '--assets', 'A=' + path, 'A=' + path, '--log-dir', str(tmp_path / 'run')]) == 2
    assert "names 'A' twice" in capsys.readouterr().err


def checkpoint_steps(log_dir):
    return sorted(int(path.rsplit('-', 1)[1].split('.')[0])
                  for path in glob.glob(os.path.join(log_dir, 'current_train_checkpoint', '*.index')))


@pytest.mark.slow
def test_cli_trains_two_workers_on_asset_files_and_checkpoints(tmp_path, capsys):
    frames = make_cointegrated_pair(num_bars=4000, seed=2)
    flags = ['{}={}'.format(name, write_histdata_csv(frame, str(tmp_path / '{}.csv'.format(name))))
             for name, frame in frames.items()]
    run = tmp_path / 'run'
    assert cli_main(['train', '--assets'] + flags + ['--max-steps', '120', '--workers', '2', '--log-dir', str(run),
                                                   '--seed', '0']) == 0
    assert checkpoint_steps(str(run)) and checkpoint_steps(str(run))[-1] >= 120
    assert 'done:' in capsys.readouterr().out
    assert cli_main(['evaluate', str(run), '--episodes', '1']) == 0
    with open(run / 'evaluation' / 'report.json') as f:
        report = json.load(f)
    assert report['assets'] == ['X', 'Y'] and set(report['agents']['policy']['assets']) == {'X', 'Y'}


@pytest.mark.slow
def test_launcher_trains_two_a3c_workers_on_the_portfolio_env(tmp_path):
    launcher = Launcher(
        env_config=small_env_config(portfolio=True),
        cluster_config={'num_workers': 2, 'num_ps': 1, 'num_envs': 1, 'log_dir': str(tmp_path / 'run')},
        policy_config=SMALL_POLICY,
        trainer_config={'class_ref': A3C, 'kwargs': {'rollout_length': 20}},
        max_env_steps=120, root_random_seed=0, purge_previous=2, show_progress=False)
    result = launcher.run()
    assert result['completed'] and result['global_step'] >= 120
    assert checkpoint_steps(str(tmp_path / 'run'))[-1] >= 120
