"""Agent steps per second of BTgymEnv against a bare backtrader run of the same episodes.

Both runs use DevStrat_4_11 (skip_frame 10) on the built-in sine data, rendering off, random actions, and the
same episode windows. The bare run builds a Cerebro per episode with the same strategy, indicators and state
computations (preload and runonce on) and picks actions in-line, with no environment, thread or gymnasium layer.
The ratio env / bare (median over rounds that alternate which run goes first) is the environment's
efficiency; target >= 0.8.

Usage:
    python benchmarks/env_throughput.py [--episodes 12] [--out benchmarks/results]
"""
import argparse
import json
import os
import platform
import time

import backtrader as bt
import numpy as np

from btgym_aac.data import BTgymDataset, make_sine_data
from btgym_aac.env import BTgymEnv
from btgym_aac.env.engine import STOP, prepare_cerebro, run_episode
from btgym_aac.strategy import DevStrat_4_11

EPISODE_DURATION = {'days': 1, 'hours': 23, 'minutes': 40}
ENGINE = dict(start_cash=100.0, broker_commission=0.001, fixed_stake=10)


def _dataset(seed):
    dataset = BTgymDataset(dataframe=make_sine_data(num_bars=30000), episode_duration=EPISODE_DURATION)
    dataset.seed(seed)
    return dataset


def run_env(num_episodes, seed):
    """Steps BTgymEnv with random actions; every observation (reset's included) counts as an agent step.

    Returns:
        (agent steps, seconds, list of episode first rows).
    """
    env = BTgymEnv(dataset=_dataset(seed), strategy=DevStrat_4_11, skip_frame=10, render_enabled=False,
                   **ENGINE)
    env.action_space.seed(seed)
    steps, starts = 0, []
    start = time.perf_counter()
    for _ in range(num_episodes):
        observation, _ = env.reset()
        starts.append(int(observation['metadata']['first_row']))
        steps += 1
        terminated = False
        while not terminated:
            _, _, terminated, _, _ = env.step(env.action_space.sample())
            steps += 1
    seconds = time.perf_counter() - start
    env.close()
    return steps, seconds, starts


def _bare_cerebro():
    cerebro = bt.Cerebro()
    cerebro.addstrategy(DevStrat_4_11, skip_frame=10,
                        initial_action={'default_asset': 0},
                        initial_portfolio_action={'default_asset': 'hold'})
    cerebro.broker.setcash(ENGINE['start_cash'])
    cerebro.broker.setcommission(commission=ENGINE['broker_commission'])
    cerebro.addsizer(bt.sizers.SizerFix, stake=ENGINE['fixed_stake'])
    return cerebro


def run_bare(num_episodes, seed):
    """Runs the same episode windows in plain backtrader with in-line random actions.

    Returns:
        (agent steps, seconds).
    """
    dataset = _dataset(seed)
    dataset.reset()
    episodes = []
    for _ in range(num_episodes):
        trial = dataset.sample()
        trial.reset()
        episodes.append(trial.sample())
    rng = np.random.default_rng(seed)
    actions = DevStrat_4_11.portfolio_actions
    steps = [0]

    def decide(response):
        if response is not None:
            steps[0] += 1
            if response.done:
                return STOP
        return {'default_asset': actions[rng.integers(len(actions))]}

    start = time.perf_counter()
    for episode in episodes:
        feeds = episode.to_btfeed()
        for feed in feeds.values():
            feed.numrecords = len(episode.data)
        cerebro = prepare_cerebro(_bare_cerebro(), feeds, {'metadata': episode.metadata}, decide)
        run_episode(cerebro)
    seconds = time.perf_counter() - start
    return steps[0], seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--episodes', type=int, default=12)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--rounds', type=int, default=4,
                        help='rounds of one env and one bare run, alternating which goes first')
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()

    env_rates, bare_rates, env_steps, bare_steps = [], [], 0, 0
    for round_number in range(args.rounds):
        if round_number % 2:
            bare_steps, bare_seconds = run_bare(args.episodes, args.seed)
            env_steps, env_seconds, _ = run_env(args.episodes, args.seed)
        else:
            env_steps, env_seconds, _ = run_env(args.episodes, args.seed)
            bare_steps, bare_seconds = run_bare(args.episodes, args.seed)
        env_rates.append(env_steps / env_seconds)
        bare_rates.append(bare_steps / bare_seconds)
    ratios = [env / bare for env, bare in zip(env_rates, bare_rates)]
    result = {
        'benchmark': 'env_throughput',
        'strategy': 'DevStrat_4_11',
        'skip_frame': 10,
        'data': 'make_sine_data(num_bars=30000)',
        'episode_duration': EPISODE_DURATION,
        'episodes_per_round': args.episodes,
        'rounds': args.rounds,
        'env_agent_steps_per_round': env_steps,
        'bare_agent_steps_per_round': bare_steps,
        'env_steps_per_s': float(np.median(env_rates)),
        'bare_steps_per_s': float(np.median(bare_rates)),
        'ratio_env_to_bare': float(np.median(ratios)),
        'ratio_all_rounds': ratios,
        'env_steps_per_s_all_rounds': env_rates,
        'bare_steps_per_s_all_rounds': bare_rates,
        'target_ratio': 0.8,
        'machine': {'python': platform.python_version(), 'processor': platform.processor() or platform.machine(),
                    'cpus': os.cpu_count()},
    }
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, 'env_throughput.json')
    with open(path, 'w') as f:
        json.dump(result, f, indent=2)
    print('{:<28}{:>12}'.format('run', 'steps/s'))
    print('{:<28}{:>12.1f}'.format('BTgymEnv', result['env_steps_per_s']))
    print('{:<28}{:>12.1f}'.format('bare backtrader', result['bare_steps_per_s']))
    print('{:<28}{:>12.3f}'.format('ratio (target >= 0.8)', result['ratio_env_to_bare']))
    print('written: {}'.format(path))


if __name__ == '__main__':
    main()
