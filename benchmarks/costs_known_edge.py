"""How much of a known edge survives trading costs: the oracle of each known-edge market (`btgym_aac.data.markets`,
the ceiling of what a policy can earn there) and buy-and-hold, played through the reference configuration's env
with a spread of 0 to 2 pips.

For every market of `--markets` (mr: mean reversion, regime: regime switching, intraday: intraday pattern), the test
file `known_edge.py` evaluates on for run seed 0 (`--bars` bars, generator seed 1001, starting 2018-01-01); the env
is the reference configuration's (`run_config.default_configs`: commission 0.0001 of the value per fill, order
size 2000, leverage 10) with `known_edge.py`'s 8-hour episodes, plus `--spread-pips` spreads (1 pip = 0.0001; the
markets trade near 1.1) and `--slippage` (a fraction of the price, backtrader's). Every setting plays the same
`--episodes` windows (episode i seeded i) with the oracle, which weighs the env's costs per fill (commission, half
the spread, the slippage: `oracle_agent.env_cost_per_side`) before trading, and buy-and-hold.

Reported per market and spread: the oracle's and buy-and-hold's mean return per episode (%), the share of the
oracle's return without a spread that survives, and what the oracle's fills paid per episode (commission, spread,
slippage, in money; start cash 2000). Writes `costs_known_edge.json` to `--out` and prints a table.

Usage:
    python benchmarks/costs_known_edge.py [--markets mr regime intraday] [--spread-pips 0 0.25 0.5 1 2]
                                          [--slippage 0] [--episodes 10] [--bars 20000] [--out benchmarks/results]
"""
import argparse
import os
import platform
import tempfile

import numpy as np

from known_edge_runs import ENV_OVERRIDES, EVAL_SEED, PACKAGE_MARKETS, write_markets

from btgym_aac.paths import write_json

PIP = 1e-4


def env_config(test_csv, spread, slippage):
    """The reference configuration's env_config on `test_csv` with ENV_OVERRIDES and the costs."""
    from btgym_aac.distributed.run_config import default_configs

    config = default_configs('a3c', preset='reference')['env_config']
    costs = {'spread': spread}
    if slippage:
        costs['slippage'] = slippage
    config['kwargs'].update(ENV_OVERRIDES, filename=test_csv, **costs)
    return config


def play(test_csv, spread, slippage, episodes):
    """The oracle's and buy-and-hold's records of `episodes` episodes on `test_csv` with these costs.

    Returns:
        {'oracle': [EpisodeRecord, ...], 'buy_and_hold': [...]}.
    """
    from btgym_aac.evaluation.baselines import baseline_agents
    from btgym_aac.evaluation.episodes import episode_sample_type, make_evaluation_env, play_episode, reset_options
    from btgym_aac.evaluation.oracle_agent import oracle_agent

    env = make_evaluation_env({'env_config': env_config(test_csv, spread, slippage)})
    try:
        agents = {'oracle': oracle_agent(env), 'buy_and_hold': baseline_agents(env, EVAL_SEED)['buy_and_hold']}
        if agents['oracle'] is None:
            raise RuntimeError('{} carries no market recipe: no oracle'.format(test_csv))
        options = reset_options(episode_sample_type(env))
        return {name: [play_episode(env, agent, EVAL_SEED + index, options) for index in range(episodes)]
                for name, agent in agents.items()}
    finally:
        env.close()


def summary(records):
    """Mean return per episode (%) of every agent and the oracle's mean costs per episode."""
    metrics = {name: [record.metrics() for record in agent_records] for name, agent_records in records.items()}
    result = {name: float(np.mean([episode['return_pct'] for episode in episodes]))
              for name, episodes in metrics.items()}
    result['oracle_costs'] = {key: float(np.mean([episode[key] for episode in metrics['oracle']]))
                              for key in ('commission', 'spread_cost', 'slippage_cost', 'orders')}
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--markets', nargs='+', choices=sorted(PACKAGE_MARKETS), default=['mr', 'regime', 'intraday'])
    parser.add_argument('--spread-pips', type=float, nargs='+', default=[0.0, 0.25, 0.5, 1.0, 2.0])
    parser.add_argument('--slippage', type=float, default=0.0)
    parser.add_argument('--episodes', type=int, default=10)
    parser.add_argument('--bars', type=int, default=20000)
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()

    results = {}
    with tempfile.TemporaryDirectory() as work:
        for market in args.markets:
            _, test_csv = write_markets(market, True, 0, os.path.join(work, market), args.bars, args.bars)
            rows = []
            for pips in args.spread_pips:
                row = dict(spread_pips=pips, **summary(play(test_csv, pips * PIP, args.slippage, args.episodes)))
                rows.append(row)
                print('{:<9} spread {:>5.2f} pips: oracle {:+.3f} %, buy-and-hold {:+.3f} %, oracle orders {:.1f}, '
                      'costs {:.2f} + {:.2f} + {:.2f}'.format(market, pips, row['oracle'], row['buy_and_hold'],
                                                             row['oracle_costs']['orders'],
                                                             row['oracle_costs']['commission'],
                                                             row['oracle_costs']['spread_cost'],
                                                             row['oracle_costs']['slippage_cost']))
            baseline = rows[0]['oracle'] if rows[0]['spread_pips'] == 0 else None
            for row in rows:
                row['oracle_share_of_no_spread'] = row['oracle'] / baseline if baseline else None
            results[market] = rows
    result = {
        'benchmark': 'costs_known_edge',
        'settings': {'markets': args.markets, 'spread_pips': args.spread_pips, 'pip': PIP, 'slippage': args.slippage,
                     'episodes': args.episodes, 'bars': args.bars, 'env_overrides': ENV_OVERRIDES,
                     'configuration': 'default_configs(a3c) env kwargs'},
        'results': results,
        'machine': {'python': platform.python_version(), 'cpus': os.cpu_count()},
    }
    os.makedirs(args.out, exist_ok=True)
    print('written: {}'.format(write_json(result, os.path.join(args.out, 'costs_known_edge.json'))))


if __name__ == '__main__':
    main()
