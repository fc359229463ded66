"""Learning curves: A3C, Unreal and PPO on the sine data (reference DevStrat_4_11 setup) and A3C and PPO on
CartPole, several seeds each, trained in one process per run (two runs at a time).

For every run the curve is the list of finished train episodes: env steps and wall seconds at the episode end,
total reward and final broker value. Writes `learning.json` and `learning.png` and prints a table.

Usage:
    python benchmarks/learning.py [--seeds 0 1] [--sine-steps 6000] [--cartpole-steps 30000] [--out DIR]
"""
import argparse
import json
import multiprocessing
import os
import platform

import numpy as np

SINE_ENV_KWARGS = dict(
    skip_frame=10, start_cash=2000, commission=0.0001, leverage=10.0, order_size=2000, drawdown_call=10,
    target_call=10, reward_scale=7, episode_duration={'days': 1, 'hours': 23, 'minutes': 40}, render_enabled=False,
)


def run_config(name, seed, max_steps):
    """Builds the configs of one named setup and trains it; returns the curve (runs in a child process)."""
    from btgym_aac import BTgymEnv
    from btgym_aac.algorithms import A3C, PPO, AacDensePolicy, AacStackedRL2Policy, Unreal, train_in_process
    from btgym_aac.env.gym_wrappers import TestModeEnv
    from btgym_aac.strategy import DevStrat_4_11

    algo, task = name.split('/')
    trainer = {'a3c': A3C, 'unreal': Unreal, 'ppo': PPO}[algo]
    if task == 'sine':
        env_config = {'class_ref': BTgymEnv, 'kwargs': dict(
            SINE_ENV_KWARGS, strategy=DevStrat_4_11, state_ext_scale=np.linspace(3e3, 1e3, 5))}
        policy_config = {'class_ref': AacStackedRL2Policy, 'kwargs': {'lstm_layers': (256, 256),
                                                                      'lstm_2_init_period': 60}}
        trainer_kwargs = dict(opt_learn_rate=1e-4, model_beta=0.05, rollout_length=20, time_flat=True)
        if algo == 'unreal':
            trainer_kwargs.update(use_value_replay=True, use_reward_prediction=True, replay_memory_size=500)
    else:
        env_config = {'class_ref': TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}}
        policy_config = {'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (64,), 'lstm_layers': (64,)}}
        trainer_kwargs = dict(test_mode=True, opt_learn_rate=2e-3, model_beta=0.01, rollout_length=20,
                              model_gae_lambda=0.95)
    if algo == 'ppo':
        trainer_kwargs.update(num_epochs=2)
    result = train_in_process(env_config, policy_config, {'class_ref': trainer, 'kwargs': trainer_kwargs},
                              max_env_steps=max_steps, random_seed=seed)
    curve = [{'env_steps': episode['env_steps'], 'seconds': round(episode['seconds'], 2),
              'total_reward': round(episode['total_reward'], 4),
              'final_value': None if episode['final_value'] is None else round(episode['final_value'], 4)}
             for episode in result['train_episodes']]
    return {'name': name, 'seed': seed, 'env_steps': result['global_step'], 'wall_time': result['wall_time'],
            'curve': curve}


def _run(args):
    return run_config(*args)


def summarise(runs):
    """Per setup: mean over seeds of the last-10-episode mean reward, steps/s."""
    table = {}
    for run in runs:
        rewards = [point['total_reward'] for point in run['curve']]
        entry = table.setdefault(run['name'], {'final_mean_reward': [], 'env_steps_per_s': []})
        entry['final_mean_reward'].append(float(np.mean(rewards[-10:])) if rewards else None)
        entry['env_steps_per_s'].append(run['env_steps'] / run['wall_time'])
    return table


def plot(runs, path):
    """Reward vs env steps, one panel per task, one line per run."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    tasks = sorted({run['name'].split('/')[1] for run in runs})
    fig = Figure(figsize=(6 * len(tasks), 4), dpi=80)
    for index, task in enumerate(tasks, start=1):
        ax = fig.add_subplot(1, len(tasks), index)
        for run in (r for r in runs if r['name'].endswith('/' + task)):
            steps = [point['env_steps'] for point in run['curve']]
            rewards = [point['total_reward'] for point in run['curve']]
            ax.plot(steps, rewards, label='{} seed {}'.format(run['name'].split('/')[0], run['seed']), lw=1)
        ax.set_title(task)
        ax.set_xlabel('env steps')
        ax.set_ylabel('episode total reward')
        ax.legend(fontsize=7)
    fig.tight_layout()
    FigureCanvasAgg(fig).print_png(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1])
    parser.add_argument('--sine-steps', type=int, default=6000)
    parser.add_argument('--cartpole-steps', type=int, default=30000)
    parser.add_argument('--setups', nargs='+', default=['a3c/sine', 'unreal/sine', 'ppo/sine', 'a3c/cartpole',
                                                          'ppo/cartpole'])
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()
    jobs = [(name, seed, args.sine_steps if name.endswith('sine') else args.cartpole_steps)
            for name in args.setups for seed in args.seeds]
    with multiprocessing.get_context('spawn').Pool(2) as pool:
        runs = pool.map(_run, jobs)
    table = summarise(runs)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'learning.json'), 'w') as f:
        json.dump({'benchmark': 'learning', 'summary': table, 'runs': runs,
                   'machine': {'python': platform.python_version(), 'cpus': os.cpu_count()}}, f)
    plot(runs, os.path.join(args.out, 'learning.png'))
    print('{:<16}{:>28}{:>18}'.format('setup', 'mean reward, last 10 eps', 'env steps/s'))
    for name, entry in table.items():
        rewards = [r for r in entry['final_mean_reward'] if r is not None]
        print('{:<16}{:>28.2f}{:>18.1f}'.format(name, np.mean(rewards) if rewards else float('nan'),
                                                  np.mean(entry['env_steps_per_s'])))
    print('written: {}'.format(os.path.join(args.out, 'learning.json')))


if __name__ == '__main__':
    main()
