"""Memory of a training cluster's processes, RSS beside PSS and USS, against what the imports alone take.

Baselines, each a fresh interpreter measured once its imports are done: Python alone; TensorFlow as this package
imports it (`btgym_aac.compat`); everything a task imports (`btgym_aac.algorithms`, `btgym_aac.env`,
`btgym_aac.distributed.worker`) before it builds anything. Then the reference configuration (`btgym-aac
train`'s: DevStrat_4_11, AacStackedRL2Policy (256, 256), rendering as shipped) trains with the Launcher, and every
task process (parameter servers, workers), and the forkserver they are forked from where they are, is sampled
every half second; the JSON keeps each one's largest RSS, PSS and USS (each its own maximum), the RSS a task holds
beyond the task imports, and the largest sum of the PSS of all of them in one sample (the cluster's PSS). RSS
counts the pages a process shares with others (the interpreter, TensorFlow's libraries) in full; PSS divides them
among their users (the sum over processes is the machine's memory); USS counts only a process's own pages. Writes
`process_memory.json` and prints a table.

Usage:
    python benchmarks/process_memory.py [--workers 2] [--max-steps 4000] [--out benchmarks/results]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time

from btgym_aac.proc_memory import memory_split_mb
from btgym_aac.distributed.launcher import make_launcher
from btgym_aac.distributed.run_config import default_configs

BASELINES = {
    'python': 'pass',
    'tensorflow_import': 'import btgym_aac.compat',
    'task_imports': 'import btgym_aac.compat, btgym_aac.algorithms, btgym_aac.env, btgym_aac.distributed.worker',
}
SAMPLE_SECONDS = 0.5


def baseline(code):
    """Memory of a fresh interpreter after running `code` (it waits on its stdin, then exits)."""
    process = subprocess.Popen([sys.executable, '-c', code + '\nprint("ready", flush=True)\ninput()'],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if process.stdout.readline().strip() != 'ready':
            raise RuntimeError('the baseline {!r} failed'.format(code))
        return memory_split_mb(process.pid)
    finally:
        process.communicate('\n', timeout=60)


def forkserver_pids():
    """PIDs of this process's children that are multiprocessing forkservers (the launcher's tasks fork from one)."""
    pids = []
    for entry in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/{}/stat'.format(entry)) as stat, open('/proc/{}/cmdline'.format(entry), 'rb') as cmd:
                parent = int(stat.read().rpartition(')')[2].split()[1])
                command = cmd.read()
        except (OSError, ValueError):
            continue
        if parent == os.getpid() and b'multiprocessing.forkserver' in command:
            pids.append(int(entry))
    return pids


class Sampler(threading.Thread):
    """Samples the memory of a Launcher's task processes (and of the forkserver they are forked from, if any)
    until stopped; keeps each measure's maximum per process."""

    def __init__(self, launcher):
        super().__init__(daemon=True)
        self.launcher, self.peaks, self.stopped = launcher, {}, threading.Event()
        self.cluster_pss_peak = 0.0

    def run(self):
        while not self.stopped.wait(SAMPLE_SECONDS):
            processes = [('{}_{}'.format(job, task), process.pid)
                         for (job, task), process in list(self.launcher.processes.items())]
            cluster_pss = 0.0
            for name, pid in processes + [('forkserver', pid) for pid in forkserver_pids()]:
                split = memory_split_mb(pid) if pid else None
                if split is None:
                    continue
                cluster_pss += split['pss']
                peak = self.peaks.setdefault(name, dict.fromkeys(split, 0.0))
                for key, value in split.items():
                    peak[key] = max(peak[key], value)
            self.cluster_pss_peak = max(self.cluster_pss_peak, cluster_pss)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--max-steps', type=int, default=4000)
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()
    baselines = {name: baseline(code) for name, code in BASELINES.items()}
    configs = default_configs('a3c', preset='reference')
    with tempfile.TemporaryDirectory() as tmp:
        configs['cluster_config'].update(num_workers=args.workers, log_dir=os.path.join(tmp, 'run'))
        launcher = make_launcher(configs, max_env_steps=args.max_steps, show_progress=False)
        sampler = Sampler(launcher)
        sampler.start()
        start = time.time()
        result = launcher.run()
        sampler.stopped.set()
        sampler.join()
    tasks = {name: {key: round(value, 1) for key, value in peak.items()}
             for name, peak in sorted(sampler.peaks.items())}
    # RSS only: a page shared in the cluster counts in a task's RSS as in the lone baseline's, not in its USS.
    rss_beyond_imports = {name: round(peak['rss'] - baselines['task_imports']['rss'], 1)
                          for name, peak in tasks.items()}
    report = {
        'benchmark': 'process_memory', 'workers': args.workers, 'max_env_steps': args.max_steps,
        'global_step': result['global_step'], 'seconds': round(time.time() - start, 1),
        'baselines_mb': {name: {key: round(value, 1) for key, value in split.items()}
                         for name, split in baselines.items()},
        'tasks_peak_mb': tasks, 'tasks_rss_beyond_task_imports_mb': rss_beyond_imports,
        'cluster_pss_mb': round(sampler.cluster_pss_peak, 1),
        'machine': {'python': platform.python_version(), 'cpus': os.cpu_count()},
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'process_memory.json'), 'w') as out:
        json.dump(report, out, indent=1)
    print('{:18s} {:>8s} {:>8s} {:>8s}'.format('MB', 'RSS', 'PSS', 'USS'))
    for name, split in list(report['baselines_mb'].items()) + list(tasks.items()):
        print('{:18s} {:8.1f} {:8.1f} {:8.1f}'.format(name, split['rss'], split['pss'], split['uss']))
    print('cluster PSS (the machine memory the tasks and their forkserver take, largest in one sample): {} MB'
          .format(report['cluster_pss_mb']))


if __name__ == '__main__':
    main()
