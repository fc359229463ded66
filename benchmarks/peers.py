"""Stable-Baselines3 PPO against this package's PPO and A3C on the reference env, same seeds, same env steps.

The env is the reference configuration's (`gymnasium.make('BTgymDevStrat_4_11-v0')`: DevStrat_4_11 on the
built-in sine data, rendering as shipped), for SB3 through `SimpleSpaces` (its Box observations, one Discrete
action) with SB3's default PPO ('MultiInputPolicy'); this package's trainers run as `btgym-aac train --algo
{ppo,a3c} --workers W`, the shipped defaults. `sb3_ppo_our_settings` (run only when named) is SB3's PPO with the
reference PPO trainer's update schedule and settings (see `our_ppo_settings_for_sb3`). Every run is a subprocess,
one at a time; its clock starts when the subprocess is started (imports, cluster start-up and model building
count). Curves: every finished train episode (env steps at its end, seconds since the start, total reward); ours
are read from the TensorBoard scalars `episode_train_by_step/total_reward` of every worker. Writes `peers.json`
and `peers.png` and prints a table.

SB3 is an optional dependency of this benchmark only (the CPU build of torch is enough)::

    pip install torch==2.13.0 'stable-baselines3>=2.3'   # elsewhere: pip install torch --index-url https://download.pytorch.org/whl/cpu

Usage:
    python benchmarks/peers.py [--steps 30000] [--seeds 0 1 2] [--workers 2] [--methods sb3_ppo ppo a3c]
                               [--envs-per-worker K] [--preset reference] [--config CONFIG.py] [--name peers]
                               [--out benchmarks/results]
"""
import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

from btgym_aac.distributed.run_config import PRESETS

METHODS = ('sb3_ppo', 'sb3_ppo_our_settings', 'ppo', 'a3c')
DEFAULT_METHODS = ('sb3_ppo', 'ppo', 'a3c')
SB3_METHODS = ('sb3_ppo', 'sb3_ppo_our_settings')
FINAL_SHARE = 0.2
"""The last share of the env steps (or seconds) whose episodes make the final mean reward."""


def our_ppo_settings_for_sb3():
    """SB3 PPO arguments with the reference PPO trainer's update schedule: one rollout of `rollout_length` steps
    per update, one epoch over it, its learning rate, entropy weight, gamma, GAE lambda, clip range and gradient
    clip norm (SB3's value-loss weight stays 0.5 where ours is 1, and its policy and value nets stay apart)."""
    from btgym_aac.algorithms.config import AacConfig
    from btgym_aac.algorithms.learner import GRADIENT_CLIP_NORM
    from btgym_aac.distributed.run_config import default_configs

    ours = AacConfig(**default_configs('ppo', import_classes=False, preset='reference')['trainer_config']['kwargs'])
    return dict(n_steps=ours.rollout_length, batch_size=ours.rollout_length, n_epochs=ours.num_epochs,
                learning_rate=ours.opt_learn_rate, ent_coef=ours.model_beta, gamma=ours.model_gamma,
                gae_lambda=ours.model_gae_lambda, clip_range=ours.clip_epsilon, max_grad_norm=GRADIENT_CLIP_NORM)


def sb3_run(seed, steps, out_path, settings):
    """Trains SB3 PPO in this process with `settings` (PPO arguments; {} for SB3's defaults) and writes the
    episode curve as JSON lines to `out_path`."""
    import gymnasium
    import torch  # noqa: F401  (before anything imports TensorFlow; btgym_aac.env does not)
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import Logger

    import btgym_aac.env  # noqa: F401  (registers the ids)
    from btgym_aac.env.wrappers import SimpleSpaces

    class EpisodeLog(gymnasium.Wrapper):
        def __init__(self, env):
            super().__init__(env)
            self.env_steps, self.reward = 0, 0.0

        def step(self, action):
            observation, reward, terminated, truncated, info = self.env.step(action)
            self.env_steps += 1
            self.reward += float(reward)
            if terminated or truncated:
                with open(out_path, 'a') as out:
                    out.write(json.dumps({'env_steps': self.env_steps, 'time': time.time(),
                                          'total_reward': self.reward}) + '\n')
                self.reward = 0.0
            return observation, reward, terminated, truncated, info

    env = EpisodeLog(SimpleSpaces(gymnasium.make('BTgymDevStrat_4_11-v0')))
    model = PPO('MultiInputPolicy', env, seed=seed, device='cpu', verbose=0, **settings)
    model.set_logger(Logger(folder=None, output_formats=[]))  # SB3's default logger makes a folder in /tmp
    model.learn(steps)


def run_sb3(seed, steps, method):
    """SB3 PPO in a subprocess: its defaults ('sb3_ppo') or `our_ppo_settings_for_sb3` ('sb3_ppo_our_settings');
    returns the curve (seconds since the subprocess started)."""
    settings = our_ppo_settings_for_sb3() if method == 'sb3_ppo_our_settings' else {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'curve.jsonl')
        start = time.time()
        subprocess.run([sys.executable, __file__, '--sb3-run', str(seed), str(steps), path, json.dumps(settings)],
                       check=True)
        wall = time.time() - start
        with open(path) as lines:
            episodes = [json.loads(line) for line in lines]
    curve = [{'env_steps': e['env_steps'], 'seconds': round(e['time'] - start, 2),
              'total_reward': round(e['total_reward'], 4)} for e in episodes]
    return {'env_steps': steps, 'wall_time': wall, 'curve': curve, 'settings': settings}


def run_ours(algo, seed, steps, workers, config=None, envs_per_worker=None, preset='reference'):
    """`btgym-aac train --preset PRESET` (of `config`, a config file, when given; with `envs_per_worker` envs per
    worker when given) in a subprocess; returns the curve read from its TensorBoard files."""
    with tempfile.TemporaryDirectory() as tmp:
        log_dir = os.path.join(tmp, 'run')
        start = time.time()
        subprocess.run([sys.executable, '-m', 'btgym_aac.cli', 'train'] + ([config] if config else []) +
                       ['--algo', algo, '--preset', preset, '--workers', str(workers), '--max-steps', str(steps),
                        '--seed', str(seed), '--log-dir', log_dir] +
                       (['--envs-per-worker', str(envs_per_worker)] if envs_per_worker else []),
                       check=True, stdout=subprocess.DEVNULL)
        wall = time.time() - start
        points = episode_scalars(log_dir, 'episode_train_by_step/total_reward')
    curve = [{'env_steps': int(step), 'seconds': round(stamp - start, 2), 'total_reward': round(value, 4)}
             for step, stamp, value in sorted(points)]
    return {'env_steps': steps, 'wall_time': wall, 'curve': curve}


def episode_scalars(log_dir, tag_suffix):
    """(step, wall time, value) of every summary whose tag ends with `tag_suffix`, over all workers' files."""
    import btgym_aac.compat  # noqa: F401  (legacy Keras before TensorFlow)
    import tensorflow as tf2

    points = []
    for path in glob.glob(os.path.join(log_dir, 'worker_*', 'events.out.tfevents.*')):
        for event in tf2.compat.v1.train.summary_iterator(path):
            points += [(event.step, event.wall_time, value.simple_value) for value in event.summary.value
                       if value.tag.endswith(tag_suffix)]
    return points


def final_reward(curve, axis, end):
    """Mean total reward of the episodes that ended in the last `FINAL_SHARE` of [0, end] on `axis`."""
    rewards = [point['total_reward'] for point in curve if (1 - FINAL_SHARE) * end < point[axis] <= end]
    return float(np.mean(rewards)) if rewards else None


def summarise(runs, steps):
    """Per method: final mean reward by env steps (last 20 % of the budget) and by wall time (last 20 % of the
    shortest method's mean wall time), env steps per second, first-episode time; means over seeds and per seed."""
    methods = sorted({run['method'] for run in runs}, key=METHODS.index)
    common_wall = min(np.mean([run['wall_time'] for run in runs if run['method'] == method]) for method in methods)
    table = {'common_wall_seconds': round(float(common_wall), 1)}
    for method in methods:
        mine = [run for run in runs if run['method'] == method]
        by_steps = [final_reward(run['curve'], 'env_steps', steps) for run in mine]
        by_wall = [final_reward(run['curve'], 'seconds', common_wall) for run in mine]
        table[method] = {
            'final_reward_by_env_steps': by_steps,
            'final_reward_by_wall_time': by_wall,
            'mean_final_reward_by_env_steps': _mean(by_steps),
            'mean_final_reward_by_wall_time': _mean(by_wall),
            'env_steps_per_second': [round(run['env_steps'] / run['wall_time'], 1) for run in mine],
            'wall_time': [round(run['wall_time'], 1) for run in mine],
            'first_episode_seconds': [run['curve'][0]['seconds'] if run['curve'] else None for run in mine],
        }
    return table


def _mean(values):
    values = [value for value in values if value is not None]
    return round(float(np.mean(values)), 2) if values else None


def smoothed(curve, axis, grid, width):
    """Mean reward of the episodes within `width` before each grid point (NaN where none)."""
    x = np.array([point[axis] for point in curve], dtype=float)
    y = np.array([point['total_reward'] for point in curve], dtype=float)
    return np.array([y[(x > g - width) & (x <= g)].mean() if np.any((x > g - width) & (x <= g)) else np.nan
                     for g in grid])


def plot(runs, steps, path):
    """Reward against env steps and against seconds: the mean over seeds per method, each seed faint."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.5), dpi=80)
    longest = max(run['wall_time'] for run in runs)
    for index, (axis, end, label) in enumerate((('env_steps', steps, 'env steps'), ('seconds', longest, 'seconds')),
                                                start=1):
        ax = fig.add_subplot(1, 2, index)
        grid = np.linspace(end / 20, end, 40)
        for number, method in enumerate(method for method in METHODS if any(r['method'] == method for r in runs)):
            curves = np.array([smoothed(run['curve'], axis, grid, end / 10) for run in runs
                               if run['method'] == method])
            color = 'C{}'.format(number)
            for curve in curves:
                ax.plot(grid, curve, color=color, alpha=0.25, linewidth=1)
            with warnings.catch_warnings():
                warnings.simplefilter('ignore', RuntimeWarning)  # grid points before a method's first episode
                ax.plot(grid, np.nanmean(curves, axis=0), color=color, linewidth=2, label=method)
        ax.set_xlabel(label + (' since the command started' if axis == 'seconds' else ''))
        ax.set_ylabel('episode total reward (mean over the last tenth)')
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle('Reference env (DevStrat_4_11, sine data): SB3 PPO vs btgym_aac PPO and A3C')
    FigureCanvasAgg(fig).print_png(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=30000)
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--methods', nargs='+', choices=METHODS, default=list(DEFAULT_METHODS))
    parser.add_argument('--envs-per-worker', type=int, help="envs per worker of this package's runs")
    parser.add_argument('--preset', choices=tuple(PRESETS), default='reference',
                        help="the preset of this package's runs (`btgym-aac train --preset`)")
    parser.add_argument('--config', help="a `btgym-aac train` config file for this package's runs, over the preset")
    parser.add_argument('--name', default='peers', help='name of the JSON and PNG files')
    parser.add_argument('--out', default='benchmarks/results')
    parser.add_argument('--sb3-run', nargs=4, metavar=('SEED', 'STEPS', 'PATH', 'SETTINGS'), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sb3_run:
        sb3_run(int(args.sb3_run[0]), int(args.sb3_run[1]), args.sb3_run[2], json.loads(args.sb3_run[3]))
        return
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        if set(SB3_METHODS) & set(args.methods):
            sys.exit("stable-baselines3 is not installed: pip install torch==2.13.0 'stable-baselines3>=2.3' "
                     '(or leave {} out of --methods)'.format(' and '.join(SB3_METHODS)))
    runs = []
    for seed in args.seeds:
        for method in args.methods:
            load = os.getloadavg()[0]
            print('{} seed {} ...'.format(method, seed), flush=True)
            result = run_sb3(seed, args.steps, method) if method in SB3_METHODS else \
                run_ours(method, seed, args.steps, args.workers, args.config, args.envs_per_worker, args.preset)
            runs.append(dict(result, method=method, seed=seed, load_before=round(load, 2)))
            print('  {:.0f} s, {} episodes'.format(result['wall_time'], len(result['curve'])), flush=True)
    summary = summarise(runs, args.steps)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, args.name + '.json'), 'w') as out:
        json.dump({'benchmark': 'peers', 'steps': args.steps, 'seeds': args.seeds, 'workers': args.workers,
                   'preset': args.preset, 'config': args.config, 'envs_per_worker': args.envs_per_worker,
                   'summary': summary, 'runs': runs,
                   'machine': {'python': platform.python_version(), 'cpus': os.cpu_count()}}, out)
    plot(runs, args.steps, os.path.join(args.out, args.name + '.png'))
    print('{:21s} {:>22s} {:>22s} {:>14s}'.format('method', 'final reward (steps)', 'final reward (wall)',
                                                 'env steps/s'))
    for method in (m for m in METHODS if m in summary):
        row = summary[method]
        print('{:21s} {:>22} {:>22} {:>14}'.format(method, str(row['mean_final_reward_by_env_steps']),
                                                  str(row['mean_final_reward_by_wall_time']),
                                                  str(row['env_steps_per_second'])))


if __name__ == '__main__':
    main()
