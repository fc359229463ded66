"""Compares variants of one trainer on the known-edge markets: runs of several `known_edge.py` results (each made
with other `--env-kwargs`, `--trainer-kwargs`, `--config` or `--spread`), the same markets and seeds, side by side.

For each market and variant: the last stage's fraction of the oracle with its bootstrap interval (seeds and
episodes pooled, `known_edge_summary.learning_curve`), the fraction over every stage from `--late-from` env steps
on (`known_edge_summary.late_fraction`: steadier than one stage's), that late fraction minus the first variant's
with a paired bootstrap interval (`known_edge_summary.paired_late_difference`: the runs are paired by market seed,
so their test windows are the same, and what a hard seed or a quiet window does to both cancels), the CPU
milliseconds per env step, the env steps and CPU seconds of the first stage at 50 % and at 80 % of the oracle or
more (`known_edge_summary.time_to`), and the learning curve. Writes
`known_edge_compare.json` and `known_edge_compare_steps.png` (one panel per market, one line per variant) to
`--out` and prints the markdown table.

Usage:
    python benchmarks/known_edge_compare.py --results default=benchmarks/results/known_edge/known_edge.json
                                            lr3x=DIR/known_edge.json ppo4x4:ppo=DIR/known_edge.json ...
                                            [--trainer a3c] [--markets mr regime] [--seeds 0 1 2]
                                            [--late-from 20000] [--until ENV_STEPS]
                                            [--out benchmarks/results/known_edge_compare]

A variant named `NAME:TRAINER` takes that trainer's runs of its file instead of `--trainer`'s; `NAME=A.json+B.json`
pools the runs of several files (seeds added by another command, `known_edge.py --first-seed`). `--until N` leaves
out every stage after N env steps, so that a run trained to 100,000 compares with runs of 40,000. Without `--markets`
or `--seeds`, the markets and seeds that every variant has runs of are compared (the table's first line names them).
"""
import argparse
import json
import os
import sys

from known_edge_summary import (THRESHOLDS, late_fraction, learning_curve, paired_late_difference, plot, table_reached,
                                time_to_entries, within)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--results', nargs='+', required=True, metavar='NAME=JSON',
                        help='a variant\'s name and its known_edge.json; the first is the reference')
    parser.add_argument('--trainer', default='a3c')
    parser.add_argument('--markets', nargs='+', help='default: those every variant has runs on')
    parser.add_argument('--seeds', nargs='+', type=int, help='default: those every variant has on every market')
    parser.add_argument('--late-from', type=int, default=20000,
                        help='env steps from which the stages make the late fraction')
    parser.add_argument('--until', type=int,
                        help='leave out the stages after this many env steps (within 1 %%): runs trained longer '
                             'compared at a shorter budget')
    parser.add_argument('--out', default='benchmarks/results/known_edge_compare')
    args = parser.parse_args()
    if args.until is not None and args.until <= 0:
        parser.error('--until must be a positive number of env steps, not {}'.format(args.until))
    args.variants = {}
    for entry in args.results:
        name, sign, path = entry.partition('=')
        if not sign or not name or not all(os.path.isfile(part) for part in path.split('+')):
            parser.error('--results entry {!r} is not NAME=JSON (or NAME=JSON+JSON...) of existing files'.format(
                entry))
        args.variants[name] = path
    return args


def edge_runs(path, trainer):
    """The edge-market runs of `trainer` in a known_edge.json, and the file's settings; `path` may join several
    files with '+' (seeds made by other commands): their runs pooled, the first file's settings.

    Raises:
        ValueError: a market's seed has runs of `trainer` in more than one of the files.
    """
    runs, settings = [], None
    for part in path.split('+'):
        with open(part) as f:
            results = json.load(f)
        settings = results['settings'] if settings is None else settings
        runs += [run for run in results['runs'] if run['trainer'] == trainer and run['edge']]
    keys = [(run['market'], run['seed']) for run in runs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError('{}: {} of {} {} runs in more than one file'.format(
            path, ', '.join('{} seed {}'.format(*key) for key in twice), trainer, 'has' if len(twice) == 1 else 'have'))
    return runs, settings


def variant_runs(runs, markets, seeds, until=None):
    """`runs` (a variant's `edge_runs`) of `seeds`, by market, with their stages up to `until` env steps (within
    1 %; None: all)."""
    chosen = [run for run in runs if run['seed'] in seeds]
    if until is not None:
        chosen = [dict(run, stages=[stage for stage in run['stages'] if within(stage['env_steps'], until)])
                  for run in chosen]
    return {market: [run for run in chosen if run['market'] == market] for market in markets}


def shared_markets_and_seeds(runs_of_variants, markets=None):
    """The markets that every variant has runs on (in the first variant's order), and the seeds that every variant
    has on every one of them.

    Args:
        runs_of_variants: every variant's `edge_runs`, the first variant's first.
        markets: the markets to compare, or None for those every variant has.

    Raises:
        ValueError: no market, or no seed, is shared by all.
    """
    pairs = [[(run['market'], run['seed']) for run in runs] for runs in runs_of_variants]
    if markets is None:
        markets = [market for market in dict.fromkeys(market for market, _ in pairs[0])
                   if all(any(other == market for other, _ in variant) for variant in pairs)]
    if not markets:
        raise ValueError('no market has runs in every variant')
    seeds = set.intersection(*({seed for other, seed in variant if other == market}
                               for variant in pairs for market in markets))
    if not seeds:
        raise ValueError('no seed has runs in every variant on every one of {}'.format(', '.join(markets)))
    return markets, sorted(seeds)


def compare(args):
    """One row per market and variant (see the module docstring); ValueError where a variant lacks a seed or
    `--until` leaves one of its runs without a stage. `args.markets` and `args.seeds` left None are set to those
    every variant has (`shared_markets_and_seeds`)."""
    variants = []
    for spec, path in args.variants.items():
        name, _, trainer = spec.partition(':')
        trainer = trainer or args.trainer
        variants.append((name, path, trainer) + edge_runs(path, trainer))
    if args.markets is None or args.seeds is None:
        markets, seeds = shared_markets_and_seeds([variant[3] for variant in variants], args.markets)
        args.markets = args.markets or markets
        args.seeds = args.seeds or seeds
    rows, first_runs = [], None
    for name, path, trainer, all_runs, settings in variants:
        runs = variant_runs(all_runs, args.markets, args.seeds, args.until)
        for market in args.markets:
            found = sorted(run['seed'] for run in runs[market])
            if found != sorted(args.seeds):
                raise ValueError('{}: {} has seeds {} of {} on {}, not {}'.format(
                    name, path, found, trainer, market, sorted(args.seeds)))
            if any(not run['stages'] for run in runs[market]):
                raise ValueError('{}: {} has runs of {} on {} with no stage at or before --until {:,} env steps'.format(
                    name, path, trainer, market, args.until))
        first_runs = first_runs or runs
        for market in args.markets:
            curve = learning_curve(runs[market])
            rows.append({'market': market, 'trainer': name, 'variant_trainer': trainer, 'variant_file': path,
                         'env_overrides': settings.get('env_overrides'),
                         'trainer_overrides': settings.get('trainer_overrides', {}),
                         'config_file': settings.get('config_file'),
                         'fraction_of_oracle': curve[-1], 'late_fraction': late_fraction(runs[market], args.late_from),
                         'late_minus_first': None if runs is first_runs else paired_late_difference(
                             first_runs[market], runs[market], args.late_from),
                         'cpu_ms_per_env_step': _cpu_ms_per_env_step(curve[-1]),
                         'learning_curve': curve, 'time_to': time_to_entries(curve)})
    return rows


def _cpu_ms_per_env_step(point):
    """CPU milliseconds per env step of a curve point (None without CPU seconds)."""
    return None if point['cpu_seconds'] is None else 1000.0 * point['cpu_seconds'] / point['env_steps']


def table_lines(rows, late_from):
    """The comparison as the lines of a markdown table."""
    lines = ['| market | variant | fraction of the oracle [95 % interval] | from {:,} env steps on | the same minus '
             "the first variant's, paired | CPU ms per env step | env steps / CPU s to {} |".format(
                 late_from, ' / '.join('{:.0%}'.format(level) for level in THRESHOLDS)),
             '|---|---|---|---|---|---|---|']
    for row in rows:
        cpu = row['cpu_ms_per_env_step']
        lines.append('| {} | {} | {} | {} | {} | {} | {} |'.format(
            row['market'], row['trainer'], _fraction_cell(row['fraction_of_oracle']),
            _fraction_cell(row['late_fraction']), _difference_cell(row['late_minus_first']),
            '-' if cpu is None else '{:.1f}'.format(cpu), table_reached(row)))
    return lines


def _fraction_cell(fraction):
    """'fraction [low, high]', or '-' where there is none."""
    if fraction is None or fraction['fraction'] is None:
        return '-'
    return '{:.2f} [{:.2f}, {:.2f}]'.format(fraction['fraction'], fraction['ci_low'], fraction['ci_high'])


def _difference_cell(difference):
    """'+difference [low, high]', or '-' where there is none (the first variant, or no late stage)."""
    if difference is None or difference['difference'] is None:
        return '-'
    return '{:+.2f} [{:+.2f}, {:+.2f}]'.format(difference['difference'], difference['ci_low'], difference['ci_high'])


def main():
    args = parse_args()
    try:
        rows = compare(args)
    except ValueError as error:
        sys.exit('known_edge_compare: {}'.format(error))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'known_edge_compare.json'), 'w') as f:
        json.dump({'benchmark': 'known_edge_compare', 'trainer': args.trainer, 'markets': args.markets,
                   'seeds': args.seeds, 'late_from': args.late_from, 'until': args.until, 'variants': args.variants,
                   'rows': rows}, f, indent=1)
    plot(sorted(rows, key=lambda row: args.markets.index(row['market'])), 'env_steps', 'env steps',
         os.path.join(args.out, 'known_edge_compare_steps.png'))
    print('markets {}, seeds {}'.format(', '.join(args.markets), ', '.join(map(str, args.seeds))))
    print('\n'.join(table_lines(rows, args.late_from)))


if __name__ == '__main__':
    main()
