"""Trials per hour of `btgym-aac sweep` with `--parallel 1` and `--parallel 2` on this machine.

Each round runs a fresh sweep (its own --out) of the reference configuration (2 workers per trial cluster) on the
built-in sine data written as a CSV: `--trials` trials of a walk-forward of `--folds` folds, `--train-steps` env
steps each, no pruning and no lockbox (the search alone is timed). Rounds alternate the two settings, starting with
--parallel 1. Trials per hour = trials / the command's wall seconds x 3600. Writes `sweep_throughput.json` to --out.

Usage: python benchmarks/sweep_throughput.py [--rounds 1] [--trials 4] [--folds 2] [--train-steps 2000]
                                             [--out benchmarks/results]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from btgym_aac.data import make_sine_data, write_histdata_csv


def sweep_once(parallel, args, data, folder):
    """Runs one sweep command; returns its wall seconds and trials per hour."""
    out = os.path.join(folder, 'parallel_{}_{}'.format(parallel, time.monotonic_ns()))
    command = [sys.executable, '-m', 'btgym_aac.cli', 'sweep', '--data', data, '--trials', str(args.trials),
               '--folds', str(args.folds), '--train-steps', str(args.train_steps), '--test-episodes', '2',
               '--lockbox', '0', '--pruner', 'none', '--parallel', str(parallel), '--out', out]
    started = time.monotonic()
    finished = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if finished.returncode != 0:
        raise RuntimeError('sweep --parallel {} failed:\n{}'.format(parallel, finished.stderr[-3000:]))
    with open(os.path.join(out, 'sweep.json')) as f:
        states = [trial['state'] for trial in json.load(f)['trials']]
    return {'parallel': parallel, 'seconds': round(seconds, 1), 'trials': len(states),
            'complete': states.count('COMPLETE'), 'trials_per_hour': round(3600 * len(states) / seconds, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=1)
    parser.add_argument('--trials', type=int, default=4)
    parser.add_argument('--folds', type=int, default=2)
    parser.add_argument('--train-steps', type=int, default=2000)
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        data = write_histdata_csv(make_sine_data(), os.path.join(folder, 'sine.csv'))
        for _ in range(args.rounds):
            for parallel in (1, 2):
                runs.append(sweep_once(parallel, args, data, folder))
                print(runs[-1], flush=True)
    per_hour = {parallel: statistics.median(run['trials_per_hour'] for run in runs if run['parallel'] == parallel)
                for parallel in (1, 2)}
    result = {'settings': vars(args), 'machine': {'cpus': os.cpu_count(), 'python': platform.python_version()},
              'runs': runs, 'trials_per_hour': per_hour, 'parallel_2_over_1': round(per_hour[2] / per_hour[1], 2)}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, 'sweep_throughput.json')
    with open(path, 'w') as f:
        json.dump(result, f, indent=2)
    print('trials per hour: --parallel 1 {}, --parallel 2 {} ({}x); written {}'.format(
        per_hour[1], per_hour[2], result['parallel_2_over_1'], path))


if __name__ == '__main__':
    main()
