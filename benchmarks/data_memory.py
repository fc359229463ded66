"""Memory of a run's data against its number of workers: one copy per worker (each parses its own) or one per host
(the launcher's memory-mapped copy, `btgym_aac.data.shared`).

For each interpreter given (`--python`: one whose `btgym_aac` is the code to measure, so that two versions run
side by side) and each worker count, a Launcher trains DevStrat_4_11 on a generated CSV of `--rows` one-minute bars
and on a tiny one, and the summed PSS (proportional set size: a page shared by k processes counts 1/k in each) of
its parameter server and workers is sampled every 0.5 s while they train; its peak is the run's memory. The data's
share is the peak on the large CSV minus the peak on the tiny one. Writes `data_memory.json` to --out.

Usage: python benchmarks/data_memory.py [--rows 1000000] [--workers 1 2 6] [--python PY ...] [--out DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from btgym_aac.proc_memory import proc_memory_mb

SAMPLE_SECONDS = 0.5


def pss_mb(pid):
    """PSS of a process in MB (from /proc/PID/smaps_rollup), 0 once it is gone."""
    return proc_memory_mb(pid, 'smaps_rollup', 'Pss') or 0.0


def drive(csv, workers, log_dir):
    """One measured run in this interpreter; prints a JSON line with the peak summed PSS of the run's tasks."""
    from btgym_aac import BTgymEnv
    from btgym_aac.algorithms import A3C, Launcher
    from btgym_aac.algorithms.policy import BaseAacPolicy
    from btgym_aac.strategy import DevStrat_4_11

    launcher = Launcher(
        env_config={'class_ref': BTgymEnv, 'kwargs': dict(filename=csv, strategy=DevStrat_4_11,
                                                            episode_duration={'hours': 12}, render_enabled=False)},
        cluster_config={'num_workers': workers, 'log_dir': log_dir},
        policy_config={'class_ref': BaseAacPolicy, 'kwargs': {'lstm_layers': (64,)}},
        trainer_config={'class_ref': A3C, 'kwargs': {'rollout_length': 20}},
        max_env_steps=300 * workers, save_secs=600, root_random_seed=0, show_progress=False, purge_previous=2)
    peak = {'total': 0.0, 'while_all_trained': 0.0}
    done = threading.Event()

    def sample():
        while not done.wait(SAMPLE_SECONDS):
            total = sum(pss_mb(process.pid) for process in list(launcher.processes.values()) if process.pid)
            peak['total'] = max(peak['total'], total)
            trained = [task for task, report in launcher.progress.items() if report['step'] > report['start_step']]
            if len(trained) == workers:
                peak['while_all_trained'] = max(peak['while_all_trained'], total)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    result = launcher.run()
    done.set()
    thread.join()
    print(json.dumps({'peak_pss_mb': peak['total'], 'peak_pss_mb_all_training': peak['while_all_trained'],
                      'global_step': result['global_step']}), flush=True)


def measure(python, csv, workers):
    with tempfile.TemporaryDirectory() as log_dir:
        output = subprocess.run([python, os.path.abspath(__file__), '--driver', csv, str(workers), log_dir],
                                capture_output=True, text=True, cwd=tempfile.gettempdir(), check=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def write_csvs(folder, rows):
    from btgym_aac.data import make_random_walk_data, write_histdata_csv

    return {name: write_histdata_csv(make_random_walk_data(num_bars=count, seed=0), os.path.join(folder, name))
            for name, count in (('large.csv', rows), ('tiny.csv', 5000))}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--driver':
        drive(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rows', type=int, default=1000000)
    parser.add_argument('--workers', type=int, nargs='+', default=[1, 2, 6])
    parser.add_argument('--python', nargs='+', default=[sys.executable], help='interpreters to measure')
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as folder:
        csvs = write_csvs(folder, args.rows)
        for workers in args.workers:
            for python in args.python:
                row = {'python': python, 'workers': workers}
                for name, csv in sorted(csvs.items()):
                    row[name] = measure(python, csv, workers)
                row['data_mb'] = row['large.csv']['peak_pss_mb'] - row['tiny.csv']['peak_pss_mb']
                results.append(row)
                print(json.dumps(row), flush=True)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, 'data_memory.json')
    with open(path, 'w') as f:
        json.dump({'date': time.strftime('%Y-%m-%d'), 'rows': args.rows, 'cpus': os.cpu_count(), 'runs': results},
                  f, indent=1)
    print('written', path)


if __name__ == '__main__':
    main()
