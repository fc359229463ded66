"""What network isolation costs: `btgym-aac train` (the reference configuration, 2 workers) run alternately with
`--network-isolation auto` (a private network namespace) and `off`, on the same seed.

For every run: seconds from the command's start to the first trained step (as the command prints it); env steps/s,
the least-squares slope of the progress lines' steps (one every 2 s, `--progress-seconds 2`) against their arrival
times once training runs (the first trained line and the last line left out: start-up and shut-down); and the CPU seconds of the command and all its
processes per env step, start-up included (from `wait4`). Pairs alternate which mode runs first. Writes
`isolation_cost.json` to --out.

Usage: python benchmarks/isolation_cost.py [--pairs 3] [--max-steps 6000] [--out benchmarks/results]
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PROGRESS = re.compile(r'^env steps (\d+)/\d+ ')
FIRST_STEP = re.compile(r'first trained step ([\d.]+) s after the command started')
MODES = ('auto', 'off')


def train_once(mode, max_steps, log_dir):
    """Runs `btgym-aac train` once and returns its start-up seconds and steady env steps/s."""
    command = [sys.executable, '-m', 'btgym_aac.cli', 'train', '--preset', 'reference', '--max-steps', str(max_steps),
               '--log-dir', log_dir, '--fresh', '--seed', '0', '--network-isolation', mode, '--progress-seconds', '2']
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    progress, output = [], []
    for line in process.stdout:
        output.append(line)
        match = PROGRESS.match(line)
        if match:
            progress.append((time.time(), int(match.group(1))))
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError('train --network-isolation {} failed:\n{}'.format(mode, ''.join(output[-20:])))
    first_step = float(FIRST_STEP.search(''.join(output)).group(1))
    trained = [(seen, step) for seen, step in progress if step > 0][1:-1]
    final_step = max(step for _, step in progress)
    return {'mode': mode, 'first_step_seconds': first_step, 'env_steps_per_second': slope(trained),
            'cpu_ms_per_env_step': 1000.0 * (usage.ru_utime + usage.ru_stime) / final_step, 'final_step': final_step,
            'warning': any('WARNING' in line for line in output)}


def slope(points):
    """Least-squares slope of (x, y) points."""
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points)


def run_pairs(pairs, max_steps):
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        for pair in range(pairs):
            for mode in MODES if pair % 2 == 0 else MODES[::-1]:
                log_dir = os.path.join(scratch, '{}_{}'.format(mode, pair))
                runs.append(dict(train_once(mode, max_steps, log_dir), pair=pair))
                shutil.rmtree(log_dir)
                print(runs[-1], flush=True)
    return runs


def summarize(runs):
    pairs = {}
    for run in runs:
        pairs.setdefault(run['pair'], {})[run['mode']] = run

    def paired(key, combine):
        values = [combine(pair['auto'][key], pair['off'][key]) for pair in pairs.values()]
        return {'median': statistics.median(values), 'pairs': values}

    def per_mode(key):
        return {mode: statistics.median(run[key] for run in runs if run['mode'] == mode) for mode in MODES}

    return {'speed_ratio_isolated_over_off': paired('env_steps_per_second', lambda auto, off: auto / off),
            'cpu_ratio_isolated_over_off': paired('cpu_ms_per_env_step', lambda auto, off: auto / off),
            'start_up_seconds_isolated_minus_off': paired('first_step_seconds', lambda auto, off: auto - off),
            'first_step_seconds': per_mode('first_step_seconds'),
            'env_steps_per_second': per_mode('env_steps_per_second'),
            'cpu_ms_per_env_step': per_mode('cpu_ms_per_env_step')}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--pairs', type=int, default=3)
    parser.add_argument('--max-steps', type=int, default=10000)
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()
    runs = run_pairs(args.pairs, args.max_steps)
    result = {'date': time.strftime('%Y-%m-%d'), 'python': platform.python_version(), 'cpus': os.cpu_count(),
              'max_steps': args.max_steps, 'runs': runs, 'summary': summarize(runs)}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, 'isolation_cost.json')
    with open(path, 'w') as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result['summary'], indent=1))
    print('written', path)


if __name__ == '__main__':
    main()
