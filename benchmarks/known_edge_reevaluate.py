"""Plays the kept checkpoints of a finished `known_edge.py` benchmark again on more test episodes, without
training again.

A run's fraction of the oracle from 10 test episodes has a standard error of 0.1 to 0.8 (docs/learning.md), and
every checkpoint and variant of a seed plays the same 10 windows, so a hard or an easy draw of windows moves a
whole run. This script takes the benchmark's `known_edge.json` and the `--work-dir` it trained in, evaluates every
kept checkpoint of this package's trainers on `--eval-episodes` episodes of the same test file (episode i seeded
EVAL_SEED + i, so the first episodes are the ones played before), and writes a `known_edge.json` with the same
runs, stages, env steps and CPU and wall seconds, and the new returns, to `--out`, with its plots; the settings
say what was re-evaluated (`reevaluated`). Stable-Baselines3's runs keep no model, so they are left out and named.

Usage:
    python benchmarks/known_edge_reevaluate.py --results DIR/known_edge.json --work-dir WORK --eval-episodes 100
                                               --out DIR2
"""
import argparse
import json
import os
import sys
import time

from known_edge_runs import (SB3_TRAINER, data_folder, evaluate_checkpoint, kept_checkpoints, market_oracle,
                             reachable_rule_returns, run_folder, stage_record, write_markets)
from known_edge_summary import summarize, table_lines, write_result


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--results', required=True, help="a known_edge.py result (known_edge.json)")
    parser.add_argument('--work-dir', required=True, help="the --work-dir the benchmark trained in")
    parser.add_argument('--eval-episodes', type=int, required=True, help='test episodes per agent and checkpoint')
    parser.add_argument('--out', required=True, help='folder of the re-evaluated known_edge.json and plots')
    args = parser.parse_args(argv)
    if args.eval_episodes < 1:
        parser.error('--eval-episodes must be at least 1')
    if not os.path.isdir(os.path.join(args.work_dir, 'runs')):
        parser.error('--work-dir {}: no runs folder; is it the work dir of {}?'.format(args.work_dir, args.results))
    return args


def checkpoints_by_step(log_dir):
    """{global step: checkpoint path prefix} of a run's kept checkpoints."""
    return {step: prefix for step, prefix, _ in kept_checkpoints(log_dir)}


def reevaluate_run(run, settings, work_dir, episodes):
    """`run` (a record of known_edge.json) with every stage's checkpoint played on `episodes` episodes; raises
    FileNotFoundError naming the run where a stage's checkpoint is not in the work dir."""
    from btgym_aac.evaluation.loading import read_run_config

    folder = run_folder(work_dir, run['market'], run['edge'], run['trainer'], run['seed'])
    log_dir = os.path.join(folder, 'run')
    checkpoints = checkpoints_by_step(log_dir) if os.path.isdir(log_dir) else {}
    params = settings.get('market_params', {}).get(run['market'])
    _, test_data = write_markets(run['market'], run['edge'], run['seed'],
                                 data_folder(work_dir, run['market'], run['edge'], run['seed']),
                                 settings['train_bars'], settings['test_bars'], params)
    rule = reachable_rule_returns(read_run_config(log_dir), test_data, episodes) if checkpoints else None
    stages = []
    for stage in run['stages']:
        checkpoint = checkpoints.get(stage['env_steps'])
        if checkpoint is None:
            raise FileNotFoundError('{}: no kept checkpoint of step {} (kept: {})'.format(
                log_dir, stage['env_steps'], sorted(checkpoints) or 'none'))
        out = os.path.join(folder, 'reevaluation_{}'.format(episodes), 'evaluation_{}'.format(stage['stage']))
        report, sampled = evaluate_checkpoint(log_dir, checkpoint, test_data, episodes, out,
                                              market_oracle(run['market'], params))
        stages.append(stage_record(stage['stage'], stage['env_steps'], stage['cpu_seconds'], stage['wall_seconds'],
                                   report, sampled, rule))
    return dict(run, stages=stages)


def main(argv=None):
    args = parse_args(argv)
    start = time.time()
    with open(args.results) as f:
        earlier = json.load(f)
    settings = earlier['settings']
    replayable = [run for run in earlier['runs'] if run['trainer'] != SB3_TRAINER]
    left_out = ['{market} {trainer} seed {seed}'.format(**run) for run in earlier['runs']
                if run['trainer'] == SB3_TRAINER]
    runs = []
    try:
        for run in replayable:
            runs.append(reevaluate_run(run, settings, os.path.abspath(args.work_dir), args.eval_episodes))
            print('{market} {trainer} seed {seed}: {} stages'.format(len(run['stages']), **run), flush=True)
    except FileNotFoundError as error:
        sys.exit('known_edge_reevaluate: {}'.format(error))
    if left_out:
        print('left out (Stable-Baselines3 keeps no model to play again): ' + ', '.join(left_out))
    budgets = settings['budgets']
    rows = summarize(runs, budgets)
    reevaluated = {'from': os.path.abspath(args.results), 'eval_episodes_before': settings['eval_episodes'],
                   'left_out': left_out}
    output = dict(earlier, settings=dict(settings, eval_episodes=args.eval_episodes, reevaluated=reevaluated),
                  summary=rows, runs=runs, reevaluation_wall_seconds=time.time() - start)
    write_result(output, args.out)
    print('\n'.join(table_lines(rows, budgets)))
    print('written: {} ({:.0f} s)'.format(os.path.join(args.out, 'known_edge.json'), time.time() - start))


if __name__ == '__main__':
    main()
