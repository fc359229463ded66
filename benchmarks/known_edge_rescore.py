"""Plays the oracle again on the test windows of a finished `known_edge.py` benchmark, without training or
evaluating the policies again.

After an oracle changes (docs/multi-asset.md, "Oracles that use the margin"), the fractions of the oracle recorded
before measure against the old one. This script takes a `known_edge.json`, writes every run's market files again (in a
temporary folder), plays the current oracle on the env of the run's settings, on the episodes the run was evaluated on
(episode i seeded EVAL_SEED + i, as `evaluate` plays them), and writes a `known_edge.json` with the same runs and the
policies' returns as recorded, the oracle's returns replaced and every fraction of the oracle recomputed, to `--out`,
with its plots. A run of a market with a rule within a policy's reach that was recorded without one gets the rule's
returns on the same episodes (`known_edge_runs.with_reachable_rule`). The settings name the results rescored and the
oracle's mean return per episode before and after, per market and seed (`rescored`).

Usage:
    python benchmarks/known_edge_rescore.py --results DIR/known_edge.json --out DIR/rescored
"""
import argparse
import json
import os
import tempfile
import time

import numpy as np
from known_edge_runs import (EVAL_SEED, SB3_TRAINER, evaluation_data, market_oracle, recorded_run_env,
                             with_reachable_rule)
from known_edge_summary import summarize, table_lines, write_result


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--results', required=True, help='a known_edge.py result (known_edge.json)')
    parser.add_argument('--out', required=True, help='folder of the rescored known_edge.json and plots')
    args = parser.parse_args(argv)
    try:
        with open(args.results) as f:
            args.results_data = json.load(f)
    except (OSError, ValueError) as error:
        parser.error('--results {}: {}'.format(args.results, error))
    if not isinstance(args.results_data, dict) or args.results_data.get('benchmark') != 'known_edge':
        parser.error('--results {}: not a known_edge.py result (known_edge.json)'.format(args.results))
    return args


def settings_args(settings, work_dir):
    """The options `recorded_run_env` reads, from a result's settings: the env overrides as recorded, the config
    file's text written to `work_dir`."""
    config = settings.get('config_file')
    config_path = None
    if config:
        config_path = os.path.join(work_dir, os.path.basename(config['path']))
        with open(config_path, 'w') as f:
            f.write(config['text'])
    return argparse.Namespace(train_bars=settings['train_bars'], test_bars=settings['test_bars'],
                              market_params=settings.get('market_params', {}), spread=0.0,
                              env_kwargs=settings['env_overrides'], preset=settings['preset'],
                              sb3_env_preset=settings.get('sb3_env_preset', 'reference'),
                              portfolio=settings['portfolio'], config=config_path)


def oracle_returns(run, work_dir, args, episodes):
    """The current oracle's per-episode returns (%) on the `episodes` test episodes `run` was evaluated on."""
    from known_edge_runs import episode_returns

    from btgym_aac.evaluation.episodes import make_evaluation_env
    from btgym_aac.evaluation.oracle_agent import oracle_agent

    configs, test_data = recorded_run_env(run, work_dir, args)
    env = make_evaluation_env(configs, evaluation_data(test_data))
    try:
        oracle = (market_oracle(run['market'], args.market_params.get(run['market'])) or oracle_agent)(env)
        if oracle is None:
            raise RuntimeError('{market} seed {seed}: its test file carries no market recipe'.format(**run))
        return episode_returns(env, oracle, episodes)
    finally:
        env.close()


def rescored_stage(stage, oracle):
    """`stage` with the oracle's per-episode returns `oracle` and the fractions of it recomputed (None where the
    oracle does not gain)."""
    mean = float(np.mean(oracle))

    def fraction(returns):
        return float(np.mean(returns)) / mean if mean > 0 else None

    return dict(stage, returns_pct=dict(stage['returns_pct'], oracle=list(oracle)),
                fraction_of_oracle=fraction(stage['returns_pct']['policy']),
                sampled_fraction_of_oracle=fraction(stage['sampled_returns_pct']))


def rescore(results, work_dir):
    """(runs rescored, {'market seed N': {'before': mean %, 'after': mean %}}) of a result's runs, each with the rule
    within reach where its market has one; the oracle is played once per market, seed, edge and env (SB3's env preset
    may differ from this package's)."""
    args = settings_args(results['settings'], work_dir)
    played, means, runs = {}, {}, []
    for run in results['runs']:
        episodes = len(run['stages'][0]['returns_pct']['oracle'])
        key = (run['market'], run['edge'], run['seed'], run['trainer'] == SB3_TRAINER)
        if key not in played:
            played[key] = oracle_returns(run, work_dir, args, episodes)
            print('{market} {} seed {seed}: the oracle makes {:+.3f} % per episode, {:+.3f} % before'.format(
                'edge' if run['edge'] else 'twin', np.mean(played[key]),
                np.mean(run['stages'][0]['returns_pct']['oracle']), **run), flush=True)
        means['{} {} seed {}'.format(run['market'], 'edge' if run['edge'] else 'twin', run['seed'])] = {
            'before': float(np.mean(run['stages'][0]['returns_pct']['oracle'])),
            'after': float(np.mean(played[key]))}
        rescored = dict(run, stages=[rescored_stage(stage, played[key]) for stage in run['stages']])
        runs.append(with_reachable_rule(rescored, work_dir, args))
    return runs, means


def main(argv=None):
    args = parse_args(argv)
    start = time.time()
    results = args.results_data
    with tempfile.TemporaryDirectory(prefix='known_edge_rescore_') as work_dir:
        runs, means = rescore(results, work_dir)
    settings = results['settings']
    rows = summarize(runs, settings['budgets'])
    rescored = {'from': os.path.abspath(args.results), 'eval_seed': EVAL_SEED, 'oracle_return_pct': means}
    write_result(dict(results, settings=dict(settings, rescored=rescored), summary=rows, runs=runs), args.out)
    print('\n'.join(table_lines(rows, settings['budgets'])))
    print('written: {} ({:.0f} s)'.format(os.path.join(args.out, 'known_edge.json'), time.time() - start))


if __name__ == '__main__':
    main()
