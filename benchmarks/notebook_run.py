"""Trains the reference notebook's configuration (`unreal_stacked_lstm_strat_4_11`) with the original btgym or with
btgym_aac, the same code for both, and logs every train step of worker 0: `time.time()` and the global step, one
line each, to --progress. Used by `vs_original.py`; runs on the original's Python 3.7 as well as on this one.

The configuration is the notebook's: a `bt.Cerebro` with DevStrat_4_11 and its parameters and the Reward, Position
and NormPnL observers, `BTgymDataset` of the sine file with the notebook's episode settings, its render settings,
AacStackedRL2Policy (256, 256) with lstm_2_init_period 60, and its trainer kwargs, with these differences: the
trainer is A3C (--trainer Unreal: the notebook's Unreal), renderings every `--render-freq` episodes, `--workers`
workers with `--envs` envs each, ports from `--port`, and a fresh `--log-dir`. The run ends at SIGINT (the
original's launcher runs until interrupted) or at `--max-steps`. The task processes must find this module by its
name `notebook_run` (PYTHONPATH).

Usage: python notebook_run.py --package btgym|btgym_aac --data CSV --log-dir DIR --progress FILE
                              [--trainer A3C] [--workers 1] [--envs 1] [--render-freq 10] [--max-steps 1000000]
                              [--port 12230] [--start-forkserver-early]
"""
import argparse
import importlib
import os
import time


def trainer_with_progress(trainer_class):
    """A subclass of `trainer_class` whose worker 0 appends `time global_step` to the file named by the environment
    variable `NOTEBOOK_RUN_PROGRESS` after every train step."""

    class ProgressTrainer(trainer_class):

        def process(self, sess, **kwargs):
            super(ProgressTrainer, self).process(sess, **kwargs)
            if self.task == 0:
                step = sess.run(self.global_step)
                with open(os.environ['NOTEBOOK_RUN_PROGRESS'], 'a') as f:
                    f.write('{:.4f} {}\n'.format(time.time(), int(step)))

    ProgressTrainer.__name__ = ProgressTrainer.__qualname__ = 'Progress' + trainer_class.__name__
    ProgressTrainer.__module__ = __name__
    return ProgressTrainer


_PROGRESS_TRAINERS = {}


def __getattr__(name):
    """`ProgressA3C` and `ProgressUnreal` of the package named by `NOTEBOOK_RUN_PACKAGE`, made once, so that a task
    process started by spawn or forkserver unpickles the trainer class by its name."""
    if name not in ('ProgressA3C', 'ProgressUnreal'):
        raise AttributeError(name)
    if name not in _PROGRESS_TRAINERS:
        algorithms = importlib.import_module(os.environ['NOTEBOOK_RUN_PACKAGE'] + '.algorithms')
        _PROGRESS_TRAINERS[name] = trainer_with_progress(getattr(algorithms, name[len('Progress'):]))
    return _PROGRESS_TRAINERS[name]


def write_sine_csv(folder):
    """Writes the sine series the notebook reads (`make_sine_data()`: the bundled file's bars, unrounded) to
    `folder` under the bundled file's name, as that file is laid out (HistData format with its header line).
    Needs btgym_aac.

    Returns:
        the file's path.
    """
    from btgym_aac.data import make_sine_data, write_histdata_csv

    return write_histdata_csv(make_sine_data(), os.path.join(folder, 'test_sine_1min_period256_delta0002.csv'),
                              header=True)


def configs(package, args):
    """The notebook's env, cluster, policy and trainer configs built from `package`'s classes."""
    import backtrader as bt
    import numpy as np

    top = importlib.import_module(package)
    algorithms = importlib.import_module(package + '.algorithms')
    observers = importlib.import_module(package + '.strategy.observers')
    strategies = importlib.import_module(package + '.research.strategy_gen_4')

    engine = bt.Cerebro()
    engine.addstrategy(strategies.DevStrat_4_11, start_cash=2000, commission=0.0001, leverage=10.0, order_size=2000,
                       drawdown_call=10, target_call=10, skip_frame=10, gamma=0.99, reward_scale=7,
                       state_ext_scale=np.linspace(3e3, 1e3, num=5))
    for observer in (observers.Reward, observers.Position, observers.NormPnL):
        engine.addobserver(observer)
    dataset = top.BTgymDataset(filename=args.data, start_weekdays={0, 1, 2, 3, 4, 5, 6},
                               episode_duration={'days': 1, 'hours': 23, 'minutes': 40}, start_00=False,
                               time_gap={'hours': 10})
    env_config = dict(class_ref=top.BTgymEnv, kwargs=dict(
        dataset=dataset, engine=engine, render_modes=['episode', 'human', 'internal'], render_state_as_image=True,
        render_ylabel='OHL_diff. / Internals', render_size_episode=(12, 8), render_size_human=(9, 4),
        render_size_state=(11, 3), render_dpi=75, port=args.port + 100, data_port=args.port + 99,
        connect_timeout=90, verbose=0))
    cluster_config = dict(host='127.0.0.1', port=args.port, num_workers=args.workers, num_ps=1, num_envs=args.envs,
                          log_dir=args.log_dir)
    policy_config = dict(class_ref=algorithms.AacStackedRL2Policy,
                         kwargs={'lstm_layers': (256, 256), 'lstm_2_init_period': 60})
    trainer_kwargs = dict(
        opt_learn_rate=[1e-4, 1e-4], opt_end_learn_rate=1e-5, opt_decay_steps=50 * 10 ** 6, model_gamma=0.99,
        model_gae_lambda=1.0, model_beta=0.05, rollout_length=20, time_flat=True, use_value_replay=False,
        model_summary_freq=10, episode_summary_freq=1, env_render_freq=args.render_freq)
    if args.trainer == 'A3C':
        trainer_kwargs.pop('use_value_replay')
    trainer_class = getattr(importlib.import_module('notebook_run'), 'Progress' + args.trainer)
    return env_config, cluster_config, policy_config, dict(class_ref=trainer_class, kwargs=trainer_kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--package', choices=('btgym', 'btgym_aac'), required=True)
    parser.add_argument('--data', required=True, help='the sine CSV (test_sine_1min_period256_delta0002.csv)')
    parser.add_argument('--log-dir', required=True)
    parser.add_argument('--progress', required=True)
    parser.add_argument('--trainer', choices=('A3C', 'Unreal'), default='A3C')
    parser.add_argument('--workers', type=int, default=1)
    parser.add_argument('--envs', type=int, default=1, help='envs per worker')
    parser.add_argument('--render-freq', type=int, default=10)
    parser.add_argument('--max-steps', type=int, default=10 ** 6)
    parser.add_argument('--port', type=int, default=12230)
    parser.add_argument('--start-forkserver-early', action='store_true',
                        help="btgym_aac: start the tasks' forkserver before the configs' imports")
    args = parser.parse_args()
    if args.start_forkserver_early:
        importlib.import_module(args.package).start_forkserver_early()
    os.environ['NOTEBOOK_RUN_PACKAGE'] = args.package
    os.environ['NOTEBOOK_RUN_PROGRESS'] = os.path.abspath(args.progress)

    env_config, cluster_config, policy_config, trainer_config = configs(args.package, args)
    launcher = importlib.import_module(args.package + '.algorithms').Launcher(
        cluster_config=cluster_config, env_config=env_config, trainer_config=trainer_config,
        policy_config=policy_config, test_mode=False, max_env_steps=args.max_steps, save_secs=300,
        root_random_seed=0, purge_previous=0, verbose=0)
    launcher.run()


if __name__ == '__main__':
    os.environ.setdefault('PYTHONWARNINGS', 'ignore')
    main()
