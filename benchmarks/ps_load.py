"""How much CPU a parameter server spends per env step, with 1 and with 2 parameter servers, to size `num_ps`.

Trains `btgym-aac train`'s reference configuration (DevStrat_4_11, AacStackedRL2Policy (256, 256), A3C, rendering
as shipped) with 2 workers and `num_ps` 1, then 2, alternately `--repeats` times. Between the first progress report
after every worker has trained and the report of the final step, it reads the CPU seconds of every task process
(/proc/<pid>/stat) and the global step, giving each process's CPU milliseconds per env step. A parameter server's
work grows with the env steps the cluster trains per second (every train step sends it the gradients of a
rollout and reads the weights back), so `1000 / (ps CPU ms per env step)` is how many cluster env steps/s one
parameter-server core keeps up with. Writes `ps_load.json` to --out.

Usage: python benchmarks/ps_load.py [--repeats 2] [--max-steps 6000] [--out benchmarks/results]
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

from btgym_aac.distributed.launcher import make_launcher
from btgym_aac.distributed.run_config import default_configs
from train_throughput import process_cpu_seconds


def measure(num_ps, max_steps, log_dir):
    """One 2-worker run on `num_ps` parameter servers; CPU ms per env step of every task over its training."""
    configs = default_configs('a3c', preset='reference')
    configs['cluster_config'] = dict(configs['cluster_config'], num_ps=num_ps, log_dir=log_dir)
    launcher = make_launcher(configs, max_env_steps=max_steps, save_secs=3600, root_random_seed=0,
                             show_progress=False)
    readings = []
    drain = launcher._drain

    def drain_then_read(progress, start):
        drain(progress, start)
        reports = launcher.progress
        if len(reports) == 2 and all(r['step'] > r['start_step'] for r in reports.values()):
            readings.append((time.time(), max(r['step'] for r in reports.values()), process_cpu_seconds(launcher)))

    launcher._drain = drain_then_read
    launcher.run()
    (t0, step0, cpu0), (t1, step1, cpu1) = readings[0], max(readings, key=lambda reading: reading[1])
    steps = max(step1 - step0, 1)
    per_step = {name: 1e3 * (cpu1[name] - cpu0[name]) / steps for name in cpu0 if name in cpu1}
    servers = [per_step[name] for name in per_step if name.startswith('ps_')]
    return {'num_ps': num_ps, 'env_steps_per_s': steps / max(t1 - t0, 1e-9), 'measured_env_steps': steps,
            'cpu_ms_per_env_step': per_step, 'all_ps_cpu_ms_per_env_step': sum(servers),
            'env_steps_per_s_one_ps_core_serves': 1e3 / max(sum(servers), 1e-9)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--repeats', type=int, default=2)
    parser.add_argument('--max-steps', type=int, default=6000)
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()
    runs = []
    for _ in range(args.repeats):
        for num_ps in (1, 2):
            load = os.getloadavg()[0]
            with tempfile.TemporaryDirectory() as log_dir:
                runs.append(dict(measure(num_ps, args.max_steps, os.path.join(log_dir, 'run')), load_before=load))
    summary = {}
    for num_ps in (1, 2):
        mine = [run for run in runs if run['num_ps'] == num_ps]
        summary[str(num_ps)] = {key: statistics.median(run[key] for run in mine) for key in (
            'env_steps_per_s', 'all_ps_cpu_ms_per_env_step', 'env_steps_per_s_one_ps_core_serves')}
        summary[str(num_ps)]['worker_cpu_ms_per_env_step'] = statistics.median(
            value for run in mine for name, value in run['cpu_ms_per_env_step'].items() if name.startswith('worker'))
    result = {'description': __doc__.split('\n\n')[0],
              'machine': {'cpus': os.cpu_count(), 'python': platform.python_version()},
              'runs': runs, 'medians': summary}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'ps_load.json'), 'w') as out:
        json.dump(result, out, indent=2)
    for num_ps, row in summary.items():
        print('num_ps {}: {env_steps_per_s:.0f} env steps/s; parameter servers {all_ps_cpu_ms_per_env_step:.2f} CPU '
              'ms per env step (one core serves {env_steps_per_s_one_ps_core_serves:.0f} env steps/s); a worker '
              '{worker_cpu_ms_per_env_step:.2f}'.format(num_ps, **row))


if __name__ == '__main__':
    sys.exit(main())
