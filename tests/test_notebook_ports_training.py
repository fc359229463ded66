"""The original btgym's `unreal_stacked_lstm_strat_4_11` notebook: its configs (DevStrat_4_11 in a bt.Cerebro with
the Reward / Position / NormPnL observers, a BTgymDataset, the AacStackedRL2Policy with two 256-unit LSTM layers,
the Unreal trainer with the notebook's kwargs) trained briefly in this process and through the Launcher.

Changes from the notebook: btgym -> btgym_aac, generated random-walk data in pytest's temp dir instead of the
sine test file, episodes of 8 hours instead of 1 day 23h40m (DevStrat_4_11 warms up on 286 bars and steps every
10 bars: 19 steps an episode), a few hundred env steps instead of 100 million, one worker, temp log dirs and free
cluster ports.
"""
import datetime
import os

import backtrader as bt
import logbook
import numpy as np
import pytest

from btgym_aac import BTgymDataset, BTgymEnv
from btgym_aac.algorithms import AacStackedRL2Policy, Launcher, Unreal, train_in_process
from btgym_aac.data import make_random_walk_data, write_histdata_csv
from btgym_aac.distributed.checkpoints import latest_checkpoint
from btgym_aac.research.strategy_gen_4 import DevStrat_4_11
from btgym_aac.strategy.observers import NormPnL, Position, Reward

pytestmark = pytest.mark.xdist_group('notebook_ports_training')  # one xdist worker builds the module's fixtures

EPISODE_BARS = 8 * 60


@pytest.fixture(scope='module')
def data_file(tmp_path_factory):
    """35 days of 1-minute random-walk bars: some 50000 windows of 8 hours to sample from."""
    frame = make_random_walk_data(num_bars=50000, seed=1)
    return write_histdata_csv(frame, str(tmp_path_factory.mktemp('data') / 'DAT_ASCII_RANDOM_WALK_M1.csv'))


def notebook_configs(filename, log_dir, initial_ckpt_dir):
    """The notebook's second cell: env, cluster, policy and trainer configs."""
    MyCerebro = bt.Cerebro()

    MyCerebro.addstrategy(
        DevStrat_4_11,
        start_cash=2000,
        commission=0.0001,
        leverage=10.0,
        order_size=2000,
        drawdown_call=10,
        target_call=10,
        skip_frame=10,
        gamma=0.99,
        reward_scale=7,
        state_ext_scale=np.linspace(3e3, 1e3, num=5)
    )
    MyCerebro.addobserver(Reward)
    MyCerebro.addobserver(Position)
    MyCerebro.addobserver(NormPnL)

    MyDataset = BTgymDataset(
        filename=filename,
        start_weekdays={0, 1, 2, 3, 4, 5, 6},
        episode_duration={'days': 0, 'hours': 8, 'minutes': 0},  # the notebook's 1 day 23h40m, shortened
        start_00=False,
        time_gap={'hours': 10},
    )

    env_config = dict(
        class_ref=BTgymEnv,
        kwargs=dict(
            dataset=MyDataset,
            engine=MyCerebro,
            render_modes=['episode', 'human', 'internal', ],
            render_state_as_image=True,
            render_ylabel='OHL_diff. / Internals',
            render_size_episode=(12, 8),
            render_size_human=(9, 4),
            render_size_state=(11, 3),
            render_dpi=75,
            port=5000,
            data_port=4999,
            connect_timeout=90,
            verbose=0,
        )
    )

    cluster_config = dict(
        host='127.0.0.1',
        port=None,  # the notebook's 12230: free ports instead, for parallel test runs
        num_workers=1,  # the notebook's 4
        num_ps=1,
        num_envs=1,
        log_dir=log_dir,
        initial_ckpt_dir=initial_ckpt_dir,
    )

    policy_config = dict(
        class_ref=AacStackedRL2Policy,
        kwargs={
            'lstm_layers': (256, 256),
            'lstm_2_init_period': 60,
        }
    )

    trainer_config = dict(
        class_ref=Unreal,
        kwargs=dict(
            opt_learn_rate=[1e-4, 1e-4],
            opt_end_learn_rate=1e-5,
            opt_decay_steps=50 * 10 ** 6,
            model_gamma=0.99,
            model_gae_lambda=1.0,
            model_beta=0.05,
            rollout_length=20,
            time_flat=True,
            use_value_replay=False,
            model_summary_freq=10,
            episode_summary_freq=1,
            env_render_freq=2,
        )
    )
    return env_config, cluster_config, policy_config, trainer_config


def test_notebook_configs_train_in_process(data_file, tmp_path):
    env_config, _, policy_config, trainer_config = notebook_configs(data_file, str(tmp_path / 'run'), None)

    result = train_in_process(env_config, policy_config, trainer_config, max_env_steps=120,
                              log_dir=str(tmp_path / 'in_process'), random_seed=0)

    assert result['global_step'] >= 120
    assert result['episodes'] >= 4 and result['test_episodes'] == 0
    episodes = result['train_episodes']
    assert len(episodes) == result['episodes']
    steps_an_episode = (EPISODE_BARS - DevStrat_4_11.warmup_period) // 10
    for episode in episodes:
        assert not episode['test'] and np.isfinite(episode['total_reward'])
        assert steps_an_episode - 2 <= episode['steps'] <= steps_an_episode + 1
        assert 2000 * 0.9 < episode['final_value'] < 2000 * 1.1  # start_cash 2000, 10% drawdown / target calls
    assert os.listdir(str(tmp_path / 'in_process' / 'worker_0'))  # TensorBoard summaries
    starts = [episode['start_time'] for episode in episodes]
    assert all(isinstance(start, datetime.datetime) for start in starts)
    assert all(a != b for a, b in zip(starts, starts[1:]))  # a new window every episode, as the original drew


@pytest.mark.slow
def test_notebook_launcher_run_starts_from_scratch_and_exports(data_file, tmp_path):
    pre_trained = tmp_path / 'pre_trained_model' / 'test_4_11'
    pre_trained.mkdir(parents=True)  # the notebook's initial_ckpt_dir: a folder without a checkpoint yet
    log_dir = tmp_path / 'test_4_11'
    env_config, cluster_config, policy_config, trainer_config = notebook_configs(data_file, str(log_dir),
                                                                                 str(pre_trained))

    with logbook.TestHandler() as handler:
        launcher = Launcher(
            cluster_config=cluster_config,
            env_config=env_config,
            trainer_config=trainer_config,
            policy_config=policy_config,
            test_mode=False,
            max_env_steps=200,
            save_secs=300,
            root_random_seed=0,
            verbose=0,
            show_progress=False,
        )
    notices = [record.message for record in handler.records if record.level == logbook.NOTICE]
    assert any('{} holds no checkpoint'.format(pre_trained) in message for message in notices), notices
    assert launcher.initial_ckpt_dir is None

    result = launcher.run()

    assert result['completed'] and result['global_step'] >= 200 and result['restarts'] == {}
    assert result['episodes'] >= 4
    checkpoint = latest_checkpoint(str(log_dir / 'current_train_checkpoint'))
    assert checkpoint is not None and int(checkpoint.rsplit('-', 1)[1]) >= 200

    launcher.export_checkpoint(str(pre_trained))
    exported = latest_checkpoint(str(pre_trained))
    assert exported is not None and exported.rsplit('-', 1)[1] == checkpoint.rsplit('-', 1)[1]
