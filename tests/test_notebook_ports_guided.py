"""The original btgym's `guided_a3c` notebook: its configs (GuidedStrategy_0_0 with the notebook's expert_config in
a bt.Cerebro with the ExpertObserver, a leveraged broker and a fixed sizer; a BTgymRandomDataDomain with its trial
and episode params; GuidedPolicy_0_0 with two 256-unit LSTM layers and four conv layers; GuidedAAC with the
notebook's kwargs) trained briefly in this process, and (slow) through the Launcher as the notebook does.

Changes from the notebook: btgym -> btgym_aac, gym -> gymnasium, the notebook's sine test file
(`test_sine_1min_period256_delta0002.csv`) generated in pytest's temp dir (`make_sine_data` with the file's
defaults, written in its HistData format), 10 days of bars instead of the file's length, episodes of 8 hours
instead of 1 day 23h50m (GuidedStrategy_0_0 warms up on 286 bars and steps every 10 bars: 19 steps an episode),
a few hundred env steps instead of 100 million, one worker instead of four, temp log dirs and free cluster ports.
The default test runs the notebook's env / policy / trainer configs through `train_in_process` instead of the
Launcher (same configs, one process); the Launcher run is the slow test.
"""
import datetime
import glob
import os

import backtrader as bt
import numpy as np
import pytest
from gymnasium import spaces

from btgym_aac import BTgymEnv, BTgymRandomDataDomain
from btgym_aac.algorithms import Launcher, train_in_process
from btgym_aac.data import make_sine_data, write_histdata_csv
from btgym_aac.distributed.checkpoints import latest_checkpoint
from btgym_aac.research.gps.aac import GuidedAAC
from btgym_aac.research.gps.policy import GuidedPolicy_0_0
from btgym_aac.research.gps.strategy import ExpertObserver, GuidedStrategy_0_0
from btgym_aac.compat import tf
from trainer_helpers import graph_written, scalar_events

pytestmark = pytest.mark.xdist_group('notebook_ports_guided')  # one xdist worker builds the module's fixtures

EPISODE_BARS = 8 * 60
STEPS_AN_EPISODE = (EPISODE_BARS - GuidedStrategy_0_0.warmup_period) // 10


def graph_node_names(log_dir):
    """Names of the nodes of the graph written to the event files of `log_dir`."""
    names = []
    for path in sorted(glob.glob(str(log_dir) + '/events.*')):
        for event in tf.train.summary_iterator(path):
            if event.graph_def:
                graph_def = tf.GraphDef()
                graph_def.ParseFromString(event.graph_def)
                names.extend(node.name for node in graph_def.node)
    return names


@pytest.fixture(scope='module')
def data_file(tmp_path_factory):
    """10 days of the notebook's sine series (period 256 bars, swing 0.002), in the sine file's format."""
    frame = make_sine_data(num_bars=10 * 24 * 60)
    path = tmp_path_factory.mktemp('data') / 'test_sine_1min_period256_delta0002.csv'
    return write_histdata_csv(frame, str(path), header=True)


def notebook_configs(filename, log_dir):
    """The notebook's second cell: engine, dataset, env, cluster, policy and trainer configs."""
    # Set backtesting engine and parameters:
    engine = bt.Cerebro()

    engine.addstrategy(
        GuidedStrategy_0_0,
        drawdown_call=10,  # max % to loose, in percent of initial cash
        target_call=10,  # max % to win, same
        skip_frame=10,
        gamma=0.99,
        state_ext_scale=np.linspace(4e3, 1e3, num=6),
        reward_scale=7,
        expert_config=  # see btgym.research.gps.oracle.Oracle class for details
            {
                'time_threshold': 5,
                'pips_threshold': 10,
                'pips_scale': 1e-4,
                'kernel_size': 10,
                'kernel_stddev': 1,
            },
    )

    # Expert actions observer:
    engine.addobserver(ExpertObserver)

    # Set leveraged account:
    engine.broker.setcash(2000)
    engine.broker.setcommission(commission=0.0001, leverage=10.0)  # commisssion to imitate spread
    engine.addsizer(bt.sizers.SizerFix, stake=5000)

    dataset = BTgymRandomDataDomain(
        filename=filename,  # the notebook's './data/test_sine_1min_period256_delta0002.csv', generated
        trial_params=dict(
            start_weekdays={0, 1, 2, 3, 4, 5, 6},
            sample_duration={'days': 3, 'hours': 0, 'minutes': 0},
            start_00=False,
            time_gap={'days': 1, 'hours': 10},
            test_period={'days': 0, 'hours': 0, 'minutes': 0},
        ),
        episode_params=dict(
            start_weekdays={0, 1, 2, 3, 4, 5, 6},
            sample_duration={'days': 0, 'hours': 8, 'minutes': 0},  # the notebook's 1 day 23h50m, shortened
            start_00=False,
            time_gap={'days': 1, 'hours': 0},
        ),
    )

    env_config = dict(
        class_ref=BTgymEnv,
        kwargs=dict(
            dataset=dataset,
            engine=engine,
            render_modes=['episode', 'human', 'external', 'internal'],
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
        log_dir=log_dir,  # the notebook's '~/tmp/gps'
    )

    policy_config = dict(
        class_ref=GuidedPolicy_0_0,
        kwargs={
            'lstm_layers': (256, 256),
            'lstm_2_init_period': 50,
            'conv_2d_layer_config': (
                (32, (3, 1), (2, 1)),
                (32, (3, 1), (2, 1)),
                (64, (3, 1), (2, 1)),
                (64, (3, 1), (2, 1))
            ),
            'encode_internal_state': False,
        }
    )

    trainer_config = dict(
        class_ref=GuidedAAC,
        kwargs=dict(
            opt_learn_rate=1e-4,  # scalar or random log-uniform
            opt_end_learn_rate=1e-5,
            opt_decay_steps=20 * 10 ** 6,
            model_gamma=0.99,
            model_gae_lambda=1.0,
            model_beta=0.01,  # Entropy reg, scalar or random log-uniform
            aac_lambda=1.0,  # main a3c loss weight
            guided_lambda=1.0,  # Imitation loss weight
            guided_decay_steps=10 * 10 ** 6,  # annealing guided_lambda to zero in 10M steps
            rollout_length=20,
            time_flat=True,
            use_value_replay=False,
            episode_train_test_cycle=[1, 0],
            model_summary_freq=100,
            episode_summary_freq=5,
            env_render_freq=5,
        )
    )
    return env_config, cluster_config, policy_config, trainer_config


def test_notebook_imports_resolve_under_btgym_aac():
    """The notebook's first cell, btgym -> btgym_aac and gym -> gymnasium."""
    assert GuidedStrategy_0_0.params.state_shape['expert'].shape == (4,)
    assert isinstance(GuidedStrategy_0_0.params.state_shape['expert'], spaces.Box)
    assert issubclass(ExpertObserver, bt.Observer)


def test_notebook_configs_train_in_process(data_file, tmp_path):
    env_config, _, policy_config, trainer_config = notebook_configs(data_file, str(tmp_path / 'gps'))
    log_dir = tmp_path / 'in_process'

    result = train_in_process(env_config, policy_config, trainer_config, max_env_steps=200,
                              log_dir=str(log_dir), random_seed=0)

    assert result['global_step'] >= 200
    assert result['episodes'] >= 3 and result['test_episodes'] == 0
    episodes = result['train_episodes']
    assert len(episodes) == result['episodes']
    for episode in episodes:
        assert not episode['test'] and np.isfinite(episode['total_reward'])
        assert STEPS_AN_EPISODE - 2 <= episode['steps'] <= STEPS_AN_EPISODE + 1
        assert 2000 * 0.9 < episode['final_value'] < 2000 * 1.1  # cash 2000, 10% drawdown / target calls
    starts = [episode['start_time'] for episode in episodes]
    assert all(isinstance(start, datetime.datetime) for start in starts)
    assert all(a != b for a, b in zip(starts, starts[1:]))  # a new window every episode, as the original drew

    worker_dir = log_dir / 'worker_0'
    assert os.listdir(str(worker_dir)) and graph_written(worker_dir)  # TensorBoard summaries
    events = scalar_events(worker_dir)
    assert any(tag.endswith('episode_train/total_reward') for tag in events), sorted(events)
    # the imitation loss (guided_aac_loss_def_0_3, tag `actions_mse` under `on_policy/guided_loss`) is in the model
    # summary of the first train step: evaluated in training with the decayed guided_lambda, close to 1 here
    guided = [tag for tag in events if tag.endswith('guided_loss/actions_mse')]
    assert len(guided) == 1, sorted(events)
    values = [value for _, value in events[guided[0]]]
    assert values and all(np.isfinite(values)) and all(value > 0 for value in values)
    # and it is differentiated in the train op: the graph holds the gradients of the guided loss's ops
    gradient_ops = [name for name in graph_node_names(worker_dir)
                    if '/gradients/' in name and '/on_policy/guided_loss/' in name]
    assert gradient_ops


@pytest.mark.slow
def test_notebook_launcher_run(data_file, tmp_path):
    log_dir = tmp_path / 'gps'
    env_config, cluster_config, policy_config, trainer_config = notebook_configs(data_file, str(log_dir))

    launcher = Launcher(
        cluster_config=cluster_config,
        env_config=env_config,
        trainer_config=trainer_config,
        policy_config=policy_config,
        test_mode=False,
        max_env_steps=200,  # the notebook's 100 million
        root_random_seed=0,
        purge_previous=1,  # ask to override previously saved model and logs
        verbose=0,
        show_progress=False,
    )

    result = launcher.run()

    assert result['completed'] and result['global_step'] >= 200 and result['restarts'] == {}
    assert result['episodes'] >= 3
    checkpoint = latest_checkpoint(str(log_dir / 'current_train_checkpoint'))
    assert checkpoint is not None and int(checkpoint.rsplit('-', 1)[1]) >= 200
