"""Cluster training speed (env steps/s) for 1 and 2 workers (or any counts given) of the A3C reference
configuration: BaseAacPolicy with one 256-unit LSTM, rollout 20, time_flat, DevStrat_4_11 with skip_frame 10 on the
built-in sine data, one parameter server, one env per worker.

Speed is measured between the first and the last progress report of the run (start-up excluded); the time from
`Launcher.run()` to the first trained step and the peak memory of every process are reported too. A separate
single-process run (`train_in_process`) of the same configuration splits the cost of one env step into policy
act, env step and train step (train time excluding the wait for rollouts, per env step). Writes JSON and prints
a table.

Usage:
    python benchmarks/train_throughput.py [--workers 1 2] [--max-steps 6000] [--out benchmarks/results]
"""
import argparse
import json
import os
import platform
import tempfile
import time

import numpy as np

from btgym_aac.algorithms import A3C, BaseAacPolicy, Launcher, train_in_process
from btgym_aac.env import BTgymEnv
from btgym_aac.strategy import DevStrat_4_11

ENV_KWARGS = dict(
    strategy=DevStrat_4_11, skip_frame=10, start_cash=2000, commission=0.0001, leverage=10.0, order_size=2000,
    drawdown_call=10, target_call=10, reward_scale=7, state_ext_scale=np.linspace(3e3, 1e3, 5),
    episode_duration={'days': 1, 'hours': 23, 'minutes': 40}, render_enabled=False)
POLICY_KWARGS = {'lstm_layers': (256,)}
TRAINER_KWARGS = dict(opt_learn_rate=1e-4, model_beta=0.05, rollout_length=20, time_flat=True, model_summary_freq=100)
TIMERS = {'act': [], 'env_step': [], 'train': [], 'wait': []}


def reference_launcher(num_workers, max_env_steps, log_dir):
    return Launcher(
        env_config={'class_ref': BTgymEnv, 'kwargs': ENV_KWARGS},
        cluster_config={'num_workers': num_workers, 'num_ps': 1, 'num_envs': 1, 'log_dir': log_dir},
        policy_config={'class_ref': BaseAacPolicy, 'kwargs': POLICY_KWARGS},
        trainer_config={'class_ref': A3C, 'kwargs': TRAINER_KWARGS},
        max_env_steps=max_env_steps, save_secs=3600, root_random_seed=0, show_progress=False)


def _timed(name, method):
    def timed(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            TIMERS[name].append(time.perf_counter() - start)
    return timed


class TimedEnv(BTgymEnv):
    step = _timed('env_step', BTgymEnv.step)


class TimedPolicy(BaseAacPolicy):
    act = _timed('act', BaseAacPolicy.act)


class TimedA3C(A3C):
    _process = _timed('train', A3C._process)
    get_data = _timed('wait', A3C.get_data)


def cost_split(max_env_steps):
    """Per env step costs in milliseconds, measured in one process."""
    for timer in TIMERS.values():
        timer.clear()
    result = train_in_process({'class_ref': TimedEnv, 'kwargs': ENV_KWARGS},
                              {'class_ref': TimedPolicy, 'kwargs': POLICY_KWARGS},
                              {'class_ref': TimedA3C, 'kwargs': TRAINER_KWARGS}, max_env_steps, random_seed=0)
    train_seconds = sum(TIMERS['train']) - sum(TIMERS['wait'])
    return {
        'policy_act_ms': 1e3 * float(np.mean(TIMERS['act'])),
        'env_step_ms': 1e3 * float(np.mean(TIMERS['env_step'])),
        'train_ms_per_env_step': 1e3 * train_seconds / result['global_step'],
        'in_process_env_steps_per_s': result['global_step'] / result['wall_time'],
    }


def measure(num_workers, max_env_steps):
    """Runs one cluster; returns its speed and start-up figures."""
    reports = []
    with tempfile.TemporaryDirectory() as log_dir:
        launcher = reference_launcher(num_workers, max_env_steps, log_dir)
        drain = launcher._drain

        def recording_drain(progress, start):
            drain(progress, start)
            reports.append((time.time(), max((r['step'] for r in launcher.progress.values()), default=0)))

        launcher._drain = recording_drain
        start = time.time()
        result = launcher.run()
    stepped = [(t, step) for t, step in reports if step > 0]
    (t0, s0), (t1, s1) = stepped[0], stepped[-1]
    return {
        'workers': num_workers,
        'env_steps': result['global_step'],
        'env_steps_per_s': (s1 - s0) / max(t1 - t0, 1e-9),
        'first_step_seconds': result['first_step_seconds'],
        'total_seconds': time.time() - start,
        'peak_rss_mb': result['peak_rss_mb'],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--workers', type=int, nargs='+', default=[1, 2])
    parser.add_argument('--max-steps', type=int, default=6000)
    parser.add_argument('--split-steps', type=int, default=3000, help='env steps of the cost-split run')
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()
    runs = [measure(n, args.max_steps) for n in args.workers]
    split = cost_split(args.split_steps)
    speeds = {run['workers']: run['env_steps_per_s'] for run in runs}
    result = {
        'benchmark': 'train_throughput',
        'configuration': 'A3C reference: BaseAacPolicy lstm 256, rollout 20, time_flat, DevStrat_4_11, '
                         'skip_frame 10, sine data, 1 ps, 1 env per worker',
        'runs': runs,
        'scaling_2_over_1': speeds[2] / speeds[1] if 1 in speeds and 2 in speeds else None,
        'cost_split_one_process': split,
        'original_btgym_1_worker_steps_per_s': 28,
        'machine': {'python': platform.python_version(), 'cpus': os.cpu_count()},
    }
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, 'train_throughput.json')
    with open(path, 'w') as f:
        json.dump(result, f, indent=2)
    print('{:>8}{:>16}{:>20}'.format('workers', 'env steps/s', 'first step after s'))
    for run in runs:
        print('{:>8}{:>16.1f}{:>20.1f}'.format(run['workers'], run['env_steps_per_s'], run['first_step_seconds']))
    print('one process: act {policy_act_ms:.2f} ms, env step {env_step_ms:.2f} ms, train {train_ms_per_env_step:.2f} '
          'ms per env step; {in_process_env_steps_per_s:.0f} env steps/s'.format(**split))
    if result['scaling_2_over_1'] is not None:
        print('scaling 2 / 1 workers: {:.2f}'.format(result['scaling_2_over_1']))
    print('written: {}'.format(path))


if __name__ == '__main__':
    main()
