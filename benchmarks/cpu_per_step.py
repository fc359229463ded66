"""CPU per env step of the reference configuration by envs per worker, batched or not, and against another version.

Runs `train_throughput.py --configs reference` (2 workers, rendering as shipped; one cluster per run, each in a
fresh process) for every `--envs` count (batched acting); for every `--threads-envs` count also with a runner
thread per env (`--no-batch-acting`); and with `--baseline DIR` (the source tree of another version, e.g. from `git
worktree add`) for every `--baseline-envs` count. The runs of one env count follow each other, the counts in
turn, `--repeats` times over. Each run gives the whole cluster's CPU per env step, the envs' own (steps and
resets) in the same window, their ratio, and the speed (see `train_throughput.py`). Also recorded: the machine's
1-minute load average before each run. Writes `cpu_per_step.json` (every run, and the medians per variant and env
count) to --out and prints a table.

Usage: python benchmarks/cpu_per_step.py [--envs 1 2 4 8] [--threads-envs 4] [--baseline DIR]
                                         [--baseline-envs 1 4] [--repeats 1] [--max-steps 8000] [--workers 2]
                                         [--out benchmarks/results]
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

THROUGHPUT = pathlib.Path(__file__).resolve().with_name('train_throughput.py')
REPOSITORY = THROUGHPUT.parents[1]
KEYS = ('cluster_cpu_ms_per_env_step', 'env_cpu_ms_per_env_step', 'cpu_ratio_cluster_to_env', 'env_steps_per_s')


def measure(envs, workers, max_steps, source_tree=None, batch_acting=True):
    """One `train_throughput.py` run of the reference configuration, from `source_tree` when given (its working
    directory too: the spawned task processes import the package from their working directory first).

    Returns:
        dict of `KEYS`, the per-process CPU, the env's reset and render CPU per env step and the load before.
    """
    with tempfile.TemporaryDirectory() as out:
        environment = dict(os.environ)
        if source_tree:
            environment['PYTHONPATH'] = os.path.abspath(source_tree)
        load = os.getloadavg()[0]
        subprocess.run([sys.executable, str(THROUGHPUT), '--configs', 'reference', '--workers', str(workers),
                        '--repeats', '1', '--max-steps', str(max_steps), '--alternation-pairs', '0',
                        '--envs-per-worker', str(envs), '--out', out] + ([] if batch_acting else ['--no-batch-acting']),
                       check=True, env=environment, cwd=source_tree or REPOSITORY, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, 'train_throughput.json')) as f:
            run = json.load(f)['configurations']['reference']['runs'][0]
    detail = run['cpu_per_env_step']
    return dict({key: run[key] for key in KEYS}, envs_per_worker=envs, load_before=load,
                process_cpu_ms_per_env_step=detail['process_cpu_ms_per_env_step'],
                env_reset_cpu_ms_per_env_step=detail['env_reset_cpu_ms_per_env_step'],
                env_render_cpu_ms_per_env_step=detail['env_render_cpu_ms_per_env_step'],
                cost_split_worker_0=run['cost_split_worker_0'])


def medians(runs):
    """{envs per worker: {key: median over the runs}}."""
    by_envs = {}
    for run in runs:
        by_envs.setdefault(run['envs_per_worker'], []).append(run)
    return {str(envs): {key: statistics.median(run[key] for run in group) for key in KEYS}
            for envs, group in sorted(by_envs.items())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--envs', type=int, nargs='+', default=[1, 2, 4, 8])
    parser.add_argument('--threads-envs', type=int, nargs='*', default=[4],
                        help='env counts also run with a runner thread per env')
    parser.add_argument('--baseline', help='source tree of another version to run alternately')
    parser.add_argument('--baseline-envs', type=int, nargs='+', default=[1, 4])
    parser.add_argument('--repeats', type=int, default=1)
    parser.add_argument('--max-steps', type=int, default=8000)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()

    plan = []
    for envs in sorted(set(args.envs) | set(args.threads_envs) | set(args.baseline_envs if args.baseline else ())):
        plan += [('this', None, envs, True)] if envs in args.envs else []
        plan += [('this_threads', None, envs, False)] if envs in args.threads_envs else []
        plan += [('baseline', args.baseline, envs, True)] if args.baseline and envs in args.baseline_envs else []
    runs = {variant: [] for variant, _, _, _ in plan}
    for _ in range(args.repeats):
        for variant, source_tree, envs, batch_acting in plan:
            run = measure(envs, args.workers, args.max_steps, source_tree, batch_acting)
            runs[variant].append(run)
            print('{:<13} envs {:>2}: cluster {:.2f} ms, env {:.2f} ms per env step, ratio {:.2f}, {:.0f} env '
                  'steps/s'.format(variant, envs, run['cluster_cpu_ms_per_env_step'], run['env_cpu_ms_per_env_step'],
                                   run['cpu_ratio_cluster_to_env'], run['env_steps_per_s']), flush=True)
    result = {
        'benchmark': 'cpu_per_step',
        'configuration': 'reference (run_config.default_configs(\'a3c\')), rendering as shipped, {} workers, '
                         '1 ps'.format(args.workers),
        'max_steps': args.max_steps,
        'repeats': args.repeats,
        'baseline_source_tree': args.baseline,
        'variants': {'this': 'this tree, batched acting', 'this_threads': 'this tree, a runner thread per env',
                     'baseline': 'the baseline tree'},
        'medians': {variant: medians(variant_runs) for variant, variant_runs in runs.items()},
        'runs': runs,
        'machine': {'python': platform.python_version(), 'cpus': os.cpu_count()},
    }
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, 'cpu_per_step.json')
    with open(path, 'w') as f:
        json.dump(result, f, indent=2)
    for version, table in result['medians'].items():
        for envs, values in table.items():
            print('{:<13} envs {:>2}: medians cluster {cluster_cpu_ms_per_env_step:.2f} ms, env '
                  '{env_cpu_ms_per_env_step:.2f} ms, ratio {cpu_ratio_cluster_to_env:.2f}, '
                  '{env_steps_per_s:.0f} env steps/s'.format(version, envs, **values))
    print('written: {}'.format(path))


if __name__ == '__main__':
    main()
