"""CPU per env step of the reference configuration's learner without a cluster, against a 1-worker cluster.

The in-process run trains `btgym-aac train`'s reference configuration (AacStackedRL2Policy (256, 256), A3C,
rendering as shipped, one env) with `train_in_process`: one process and one plain session, no parameter server,
no gRPC and no acting replica, summaries written as a worker writes them. Its CPU per env step is what acting,
training and the env cost with nothing distributed, the floor below which a cluster of this configuration cannot
go. The cluster run is `train_throughput.py --configs reference --workers 1` (one worker, one parameter server).
Both report the envs' own CPU per env step in the same run (thread CPU time of env steps and resets, renderings
apart) and the ratio of the whole (the process, or every task process of the cluster) to it; the rounds alternate
which goes first. Each runs in a fresh process. Writes `learner_floor.json` to --out and prints a table.

Usage: python benchmarks/learner_floor.py [--max-steps 8000] [--rounds 2] [--out benchmarks/results]
"""
import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
WARM_UP_STEPS = 1000
KEYS = ('cpu_ms_per_env_step', 'env_cpu_ms_per_env_step', 'cpu_ratio_to_env', 'env_steps_per_s')


def measure_in_process(max_steps):
    """Trains the reference configuration in this process; returns its CPU figures after `WARM_UP_STEPS`."""
    sys.path.insert(0, str(HERE))
    from train_throughput import REFERENCE, TimedEnv, env_cpu_in_window

    from btgym_aac.algorithms.in_process import train_in_process

    marks, envs = [], []

    class MarkedEnv(TimedEnv):
        """TimedEnv noting the process CPU time and wall time at the end of every step (and kept in `envs`)."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            envs.append(self)

        def step(self, action):
            try:
                return super().step(action)
            finally:
                marks.append((time.process_time(), time.time()))

    env_config = {'class_ref': MarkedEnv, 'kwargs': dict(REFERENCE['env_config']['kwargs'])}
    with tempfile.TemporaryDirectory() as log_dir:
        train_in_process(env_config, REFERENCE['policy_config'], REFERENCE['trainer_config'], max_steps,
                         log_dir=log_dir, random_seed=0)
    if len(marks) <= WARM_UP_STEPS + 1:
        raise SystemExit('learner_floor: {} env steps, too few to measure after {} warm-up steps'.format(
            len(marks), WARM_UP_STEPS))
    (cpu0, t0), (cpu1, t1) = marks[WARM_UP_STEPS], marks[-1]
    env_timers = [env.timers for env in envs]
    steps = len(marks) - 1 - WARM_UP_STEPS
    env_cpu, render_cpu = (sum(env_cpu_in_window(env_timers, name, t0, t1)[0] for name in names)
                           for names in (('env_step', 'env_reset'), ('env_render',)))
    return {'cpu_ms_per_env_step': 1e3 * (cpu1 - cpu0) / steps, 'env_cpu_ms_per_env_step': 1e3 * env_cpu / steps,
            'cpu_ratio_to_env': (cpu1 - cpu0) / env_cpu, 'env_steps_per_s': steps / (t1 - t0),
            'env_render_cpu_ms_per_env_step': 1e3 * render_cpu / steps, 'env_steps': steps}


def measure_cluster(max_steps):
    """One `train_throughput.py --configs reference --workers 1` run in a fresh process; returns its CPU figures."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, str(HERE / 'train_throughput.py'), '--configs', 'reference', '--workers', '1',
                        '--repeats', '1', '--max-steps', str(max_steps), '--alternation-pairs', '0', '--out', out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, 'train_throughput.json')) as f:
            run = json.load(f)['configurations']['reference']['runs'][0]
    detail = run['cpu_per_env_step']
    return {'cpu_ms_per_env_step': run['cluster_cpu_ms_per_env_step'],
            'env_cpu_ms_per_env_step': run['env_cpu_ms_per_env_step'],
            'cpu_ratio_to_env': run['cpu_ratio_cluster_to_env'], 'env_steps_per_s': run['env_steps_per_s'],
            'env_render_cpu_ms_per_env_step': detail['env_render_cpu_ms_per_env_step'],
            'process_cpu_ms_per_env_step': detail['process_cpu_ms_per_env_step'], 'env_steps': detail['env_steps']}


def run_child(max_steps):
    """`measure_in_process` in a fresh process."""
    finished = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), '--child', '--max-steps',
                               str(max_steps)], capture_output=True, text=True)
    if finished.returncode != 0:
        sys.exit('learner_floor: the in-process run failed (exit {}):\n{}'.format(finished.returncode,
                                                                                  finished.stderr[-3000:]))
    return json.loads(finished.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--max-steps', type=int, default=8000)
    parser.add_argument('--rounds', type=int, default=2)
    parser.add_argument('--out', default='benchmarks/results')
    parser.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.max_steps <= 2 * WARM_UP_STEPS:
        parser.error('--max-steps must exceed {} (twice the warm-up), got {}'.format(2 * WARM_UP_STEPS,
                                                                                    args.max_steps))
    if args.rounds < 1:
        parser.error('--rounds must be >= 1, got {}'.format(args.rounds))
    if args.child:
        print(json.dumps(measure_in_process(args.max_steps)))
        return
    measures = {'in_process': run_child, 'cluster_1_worker': measure_cluster}
    runs = {name: [] for name in measures}
    for round_index in range(args.rounds):
        order = list(measures) if round_index % 2 == 0 else list(reversed(list(measures)))
        for name in order:
            load = os.getloadavg()[0]
            run = dict(measures[name](args.max_steps), round=round_index, load_before=round(load, 2))
            runs[name].append(run)
            print('{:<16} round {}: {:.2f} ms per env step, env {:.2f} ms, ratio {:.2f}, {:.0f} env steps/s'.format(
                name, round_index, *(run[key] for key in KEYS)), flush=True)
    medians = {name: {key: statistics.median(run[key] for run in name_runs) for key in KEYS}
               for name, name_runs in runs.items()}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, 'learner_floor.json')
    with open(path, 'w') as out:
        json.dump({'benchmark': 'learner_floor',
                   'configuration': "reference (run_config.default_configs('a3c')), rendering as shipped, one env",
                   'variants': {'in_process': 'train_in_process: one process, one plain session',
                                'cluster_1_worker': 'train_throughput.py --configs reference --workers 1 (1 ps)'},
                   'max_steps': args.max_steps, 'warm_up_steps': WARM_UP_STEPS, 'medians': medians, 'runs': runs,
                   'machine': {'python': platform.python_version(), 'cpus': os.cpu_count()}}, out, indent=2)
    for name, values in medians.items():
        print('{:<16} medians: {:.2f} ms per env step, env {:.2f} ms, ratio {:.2f}, {:.0f} env steps/s'.format(
            name, *(values[key] for key in KEYS)))
    print('written: {}'.format(path))


if __name__ == '__main__':
    main()
