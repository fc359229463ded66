"""Learning evidence on several assets: A3C on MultiDiscreteEnv trades a synthetic cointegrated pair and is tested
on held-out windows of the same process against equal-weight buy-and-hold and a random policy.

Data: `make_cointegrated_pair(num_bars, theta, spread_sigma, seed=data_seed)`, log Y = log X + s with s an
Ornstein-Uhlenbeck spread; `btgym-aac train --assets`'s configuration (`run_config.multi_asset_env_config`:
MultiAssetStrategy, reference broker and episode settings) on a `BTgymMultiData` whose last `--test-days` form the
test part (`target_period`): training samples episodes before it only. Each seed trains with the Launcher (2
workers, A3C, the reference policy) and `evaluate` then plays `--episodes` test episodes per agent on the same
windows. Writes `pair_trading.json`: settings, per-seed per-agent returns, and the policy's return minus each
baseline's over all test episodes with a bootstrap 95 % interval.

Usage:
    python benchmarks/pair_trading.py [--steps 60000] [--seeds 0 1] [--episodes 10] [--out benchmarks/results]
"""
import argparse
import json
import os
import platform
import tempfile
import time

import numpy as np

PAIR = dict(num_bars=40000, theta=0.05, spread_sigma=5e-4, volatility=2e-4)
TEST_DAYS = 7


def pair_configs(seed, steps, log_dir):
    """The run's configs: the CLI's --assets defaults on the pair of `seed`, its last TEST_DAYS held out."""
    from btgym_aac.data import make_cointegrated_pair
    from btgym_aac.distributed.run_config import default_configs, multi_asset_env_config

    configs = default_configs('a3c', preset='reference')
    configs['env_config'] = multi_asset_env_config(make_cointegrated_pair(seed=seed, **PAIR),
                                                   target_period={'days': TEST_DAYS})
    configs['cluster_config'] = dict(configs['cluster_config'], log_dir=log_dir, network_isolation='auto')
    configs['launcher_config'] = dict(configs['launcher_config'], max_env_steps=steps, root_random_seed=seed)
    return configs


def run_seed(seed, steps, episodes, work_dir):
    """Trains and evaluates one seed; returns its record."""
    from btgym_aac.evaluation import evaluate
    from btgym_aac.distributed.launcher import make_launcher

    log_dir = os.path.join(work_dir, 'seed_{}'.format(seed))
    started = time.time()
    launcher = make_launcher(pair_configs(seed, steps, log_dir), purge_previous=2, show_progress=False)
    result = launcher.run()
    report = evaluate(log_dir, episodes=episodes, seed=1000 + seed)
    returns = {name: agent['per_episode']['return_pct'] for name, agent in report['agents'].items()}
    return {'seed': seed, 'global_step': result['global_step'], 'train_episodes': result['episodes'],
            'seconds': round(time.time() - started, 1), 'episode_type': report['episode_type'],
            'windows': report['windows'], 'return_pct': returns,
            'mean_return_pct': {name: float(np.mean(values)) for name, values in returns.items()}}


def compare(records):
    """The policy's per-episode return minus each baseline's, over every seed's test episodes."""
    from btgym_aac.walk_forward.summary import bootstrap_mean_interval

    comparison = {}
    for baseline in ('buy_and_hold', 'random'):
        excess = [p - b for record in records
                  for p, b in zip(record['return_pct']['policy'], record['return_pct'][baseline])]
        mean, low, high = bootstrap_mean_interval(excess)
        comparison['policy_minus_' + baseline] = {'mean_pct': mean, 'ci95_low_pct': low, 'ci95_high_pct': high,
                                                   'episodes': len(excess), 'above_zero': low > 0}
    return comparison


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=60000)
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1])
    parser.add_argument('--episodes', type=int, default=10)
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix='pair_trading_') as work_dir:
        records = [run_seed(seed, args.steps, args.episodes, work_dir) for seed in args.seeds]
    result = {
        'benchmark': 'pair_trading', 'pair': dict(PAIR, test_days=TEST_DAYS), 'steps': args.steps,
        'episodes_per_seed': args.episodes, 'machine': {'cpus': os.cpu_count(), 'python': platform.python_version(),
                                                        'load_after': os.getloadavg()},
        'seeds': records, 'comparison': compare(records),
    }
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, 'pair_trading.json')
    with open(path, 'w') as f:
        json.dump(result, f, indent=2, default=str)
    for record in records:
        print('seed {seed}: {global_step} steps in {seconds} s; mean return per test episode: {means}'.format(
            means=', '.join('{} {:+.3f} %'.format(name, value) for name, value in record['mean_return_pct'].items()),
            **record))
    for name, item in result['comparison'].items():
        print('{}: {:+.3f} % per episode, 95 % interval [{:+.3f} %, {:+.3f} %] over {} episodes'.format(
            name, item['mean_pct'], item['ci95_low_pct'], item['ci95_high_pct'], item['episodes']))
    print('written: {}'.format(path))


if __name__ == '__main__':
    main()
