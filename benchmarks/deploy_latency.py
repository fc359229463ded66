"""Decision latency and memory of `btgym-aac trade`, ONNX backend against TensorFlow backend, in one run.

An artifact (`--artifact`, or exported from a short `btgym-aac train` run of the reference configuration,
`--train-steps` env steps, made here) trades a replay of `--bars` bars of a fresh sine series (`replay:FILE:max`,
paper mode) in a new `btgym-aac trade` process per round, the backends alternating for `--rounds` rounds each.
From every run: the journal's `latency_ms` (from the moment a bar is complete to the decision taken on it: the
strategy's work on that bar, the observation, the policy's step and the order), the process's peak RSS (`wait4`'s
`ru_maxrss`), its wall seconds and the number of decisions. The summary per backend: latency p50 and p99 over every
decision of its rounds, median peak RSS, median wall seconds; and the ONNX / TF ratios. Writes
`deploy_latency.json` to `--out`.

Usage: python benchmarks/deploy_latency.py [--artifact DIR] [--train-steps 2000] [--rounds 3] [--bars 20000]
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

import numpy as np

BACKENDS = ('onnx', 'tf')


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--artifact', help='a policy artifact (default: exported from a short training run)')
    parser.add_argument('--train-steps', type=int, default=2000)
    parser.add_argument('--rounds', type=int, default=3, help='runs per backend, alternating')
    parser.add_argument('--bars', type=int, default=20000, help='bars of the replayed series')
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()
    for name in ('train_steps', 'rounds', 'bars'):
        if getattr(args, name) < 1:
            parser.error('--{} must be >= 1'.format(name.replace('_', '-')))
    return args


def command(*args):
    return [sys.executable, '-m', 'btgym_aac.cli'] + list(args)


def made_artifact(folder, steps):
    """Trains the reference configuration for `steps` env steps and exports it; returns the artifact folder."""
    log_dir, artifact = os.path.join(folder, 'run'), os.path.join(folder, 'artifact')
    subprocess.run(command('train', '--preset', 'reference', '--max-steps', str(steps), '--log-dir', log_dir),
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(command('export', log_dir, artifact), check=True, stdout=subprocess.DEVNULL)
    return artifact


def replay_file(folder, bars):
    """A fresh sine series (not the training one) as a HistData file."""
    from btgym_aac.data import make_sine_data, write_histdata_csv

    path = os.path.join(folder, 'replay.csv')
    write_histdata_csv(make_sine_data(num_bars=bars, start='2018-01-01 00:00', seed=7, noise=2e-5), path)
    return path


def trade_once(artifact, path, backend, out):
    """One `trade` process: its latencies (ms), peak RSS (MB), wall seconds and decisions."""
    start = time.perf_counter()
    process = subprocess.Popen(command('trade', artifact, '--feed', 'replay:{}:max'.format(path), '--out', out,
                                       '--backend', backend), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit('trade with the {} backend failed: {}'.format(backend, process.stderr.read().decode()[-2000:]))
    process.stderr.close()
    with open(os.path.join(out, 'journal.jsonl')) as f:
        latencies = [json.loads(line)['latency_ms'] for line in f]
    return {'backend': backend, 'latencies_ms': latencies, 'peak_rss_mb': usage.ru_maxrss / 1024.0,
            'wall_seconds': seconds, 'decisions': len(latencies)}


def summary(runs):
    """Per backend: latency p50 / p99 over all its decisions, median peak RSS and wall seconds; ONNX / TF ratios."""
    rows = {}
    for backend in BACKENDS:
        mine = [run for run in runs if run['backend'] == backend]
        latencies = np.concatenate([run['latencies_ms'] for run in mine])
        rows[backend] = {'latency_p50_ms': float(np.percentile(latencies, 50)),
                         'latency_p99_ms': float(np.percentile(latencies, 99)), 'decisions': int(latencies.size),
                         'peak_rss_mb': statistics.median(run['peak_rss_mb'] for run in mine),
                         'wall_seconds': statistics.median(run['wall_seconds'] for run in mine)}
    rows['onnx_over_tf'] = {key: rows['onnx'][key] / rows['tf'][key]
                            for key in ('latency_p50_ms', 'latency_p99_ms', 'peak_rss_mb', 'wall_seconds')}
    return rows


def main():
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix='deploy_latency_') as folder:
        artifact = args.artifact or made_artifact(folder, args.train_steps)
        path = replay_file(folder, args.bars)
        runs = []
        for round_number in range(args.rounds):
            for backend in BACKENDS if round_number % 2 == 0 else BACKENDS[::-1]:
                runs.append(trade_once(artifact, path, backend,
                                       os.path.join(folder, 'trade_{}_{}'.format(backend, round_number))))
                print('{backend}: {decisions} decisions, peak RSS {peak_rss_mb:.0f} MB, {wall_seconds:.1f} s'.format(
                    **runs[-1]), flush=True)
    rows = summary(runs)
    output = {'benchmark': 'deploy_latency', 'settings': vars(args), 'summary': rows,
              'runs': [dict({key: value for key, value in run.items() if key != 'latencies_ms'},
                            latency_p50_ms=float(np.percentile(run['latencies_ms'], 50)),
                            latency_p99_ms=float(np.percentile(run['latencies_ms'], 99))) for run in runs],
              'machine': {'python': platform.python_version(), 'cpus': os.cpu_count()}}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'deploy_latency.json'), 'w') as f:
        json.dump(output, f, indent=1)
    for backend in BACKENDS:
        print('{}: latency p50 {latency_p50_ms:.2f} ms, p99 {latency_p99_ms:.2f} ms over {decisions} decisions; '
              'peak RSS {peak_rss_mb:.0f} MB'.format(backend, **rows[backend]))
    print('ONNX / TF: p50 {latency_p50_ms:.2f}, p99 {latency_p99_ms:.2f}, peak RSS {peak_rss_mb:.2f}'.format(
        **rows['onnx_over_tf']))


if __name__ == '__main__':
    main()
