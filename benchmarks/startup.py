"""Start-up of `btgym-aac train`: seconds from the command's start to the first trained step, and where they go.

Runs the reference configuration (2 workers, the built-in sine data) `--runs` times, then every config file in
`examples/` once (with its own worker count), each as `btgym-aac train ... --max-steps 100 --fresh` on a new log
dir, one at a time. From each run's last line: the first trained step and the chief's start-up phases (its configs
and TensorFlow imported, graph built, session ready), all timed from the command's process start. Also recorded:
the machine's 1-minute load average before each run and the CPU count, and before every reference run a bare
`import tensorflow` in a new interpreter (the floor of the first step; their medians' ratio is printed). Medians of
the reference runs are set beside the original btgym's 18.4-20.9 s, measured for its notebook configuration on the
same machine type (issue 26). With `--baseline DIR` (the source tree of another version, e.g. from `git worktree
add`), that version runs the reference configuration too, alternating with this one (its first-step figure only, as
it prints it). With `--script-runs N`, N pairs of runs of a script that calls `Launcher.run()` (`notebook_run.py`:
the reference notebook's configuration, 1 worker), alternately as it is and with `start_forkserver_early()` first.
Writes `startup.json` to --out.

Usage: python benchmarks/startup.py [--runs 5] [--no-examples] [--baseline DIR] [--script-runs 0]
                                    [--out benchmarks/results]
"""
import argparse
import json
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ORIGINAL_SECONDS = (18.4, 20.9)
FIRST_STEP = re.compile(r'first trained step ([\d.]+) s after the command started')
STARTUP_LINE = re.compile(r'first trained step ([\d.]+) s after the command started \(worker \d+: configs and '
                          r'TensorFlow imported at ([\d.]+) s, graph built at ([\d.]+) s, session ready at '
                          r'([\d.]+) s\)')
PHASES = ('imported', 'graph_built', 'session_ready', 'first_step')
EXAMPLES = sorted((pathlib.Path(__file__).resolve().parents[1] / 'examples').glob('*.py'))
NOTEBOOK_RUN = pathlib.Path(__file__).resolve().with_name('notebook_run.py')


def has_presets(source_tree=None):
    """Whether the version in `source_tree` (None: this one) has presets, so that its default configuration is
    not the reference one and `--preset reference` names it (versions before presets ran the reference by
    default and do not know the option)."""
    root = pathlib.Path(source_tree) if source_tree else pathlib.Path(__file__).resolve().parents[1]
    run_config = root / 'btgym_aac' / 'distributed' / 'run_config.py'
    return run_config.is_file() and 'DEFAULT_PRESET' in run_config.read_text()


def train_once(config_file, log_dir, source_tree=None, cwd=None):
    """Runs `btgym-aac train` once (the reference configuration when `config_file` is None), from `source_tree`
    when given (then only its first trained step is read), in `cwd` when given (a source tree's run: in it).

    Returns:
        dict of the phases' seconds from the command's start, the load average before it, and its name.
    """
    command = [sys.executable, '-m', 'btgym_aac.cli', 'train'] + ([str(config_file)] if config_file else []) + [
        '--max-steps', '100', '--log-dir', log_dir, '--fresh', '--seed', '0']
    if config_file is None and has_presets(source_tree):
        command += ['--preset', 'reference']
    environment = dict(os.environ, PYTHONPATH=source_tree) if source_tree else None
    load = os.getloadavg()[0]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=900, env=environment,
                              cwd=source_tree or cwd)
    if finished.returncode != 0:
        raise RuntimeError('{} failed:\n{}'.format(' '.join(command), finished.stderr[-3000:]))
    if source_tree:
        return {'config': 'reference', 'source_tree': source_tree, 'load_before': load,
                'first_step': float(FIRST_STEP.search(finished.stdout).group(1))}
    match = STARTUP_LINE.search(finished.stdout)
    if match is None:
        raise RuntimeError('{} printed no start-up line:\n{}'.format(' '.join(command), finished.stdout[-2000:]))
    imported, graph_built, session_ready = (float(value) for value in match.groups()[1:])
    return {'config': config_file.name if config_file else 'reference', 'load_before': load,
            'imported': imported, 'graph_built': graph_built, 'session_ready': session_ready,
            'first_step': float(match.group(1))}


def bare_import_once():
    """Seconds from starting a new interpreter to the end of a bare `import tensorflow` in it (the floor of any
    command that imports TensorFlow), measured as `train_once` measures: from the command's start."""
    started = time.time()
    finished = subprocess.run([sys.executable, '-c', 'import tensorflow; import time; print(time.time())'],
                              capture_output=True, text=True, timeout=300, check=True)
    return float(finished.stdout.strip().splitlines()[-1]) - started


def script_once(work_dir, data, port, early):
    """Runs `notebook_run.py` (the reference notebook's configuration as a script calling `Launcher.run()`, 1 worker,
    100 env steps), with `start_forkserver_early()` first when `early`.

    Returns:
        dict: seconds from the command's start to the first trained step, the load average before it, the mode.
    """
    progress = os.path.join(work_dir, 'progress.txt')
    command = [sys.executable, str(NOTEBOOK_RUN), '--package', 'btgym_aac', '--data', data, '--log-dir',
               os.path.join(work_dir, 'log'), '--progress', progress, '--max-steps', '100', '--port', str(port)]
    load = os.getloadavg()[0]
    started = time.time()
    subprocess.run(command + (['--start-forkserver-early'] if early else []), check=True, timeout=900,
                   capture_output=True, env=dict(os.environ, PYTHONPATH=str(NOTEBOOK_RUN.parent)))
    with open(progress) as f:
        first_step = float(f.readline().split()[0]) - started
    return {'start_forkserver_early': early, 'load_before': load, 'first_step': first_step}


def script_runs(runs, scratch):
    """`runs` pairs of `script_once`, plain and early alternating."""
    if not runs:
        return []
    from notebook_run import write_sine_csv

    data = write_sine_csv(scratch)
    results = []
    for run in range(runs):
        for early in ((False, True) if run % 2 == 0 else (True, False)):
            work_dir = tempfile.mkdtemp(dir=scratch)
            results.append(script_once(work_dir, data, 16230 + 10 * len(results), early))
    return results


def medians(runs):
    return {phase: statistics.median(run[phase] for run in runs) for phase in PHASES}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--runs', type=int, default=5, help='runs of the reference configuration')
    parser.add_argument('--no-examples', action='store_true', help='skip the examples/ config files')
    parser.add_argument('--baseline', help='source tree of another version to run alternately')
    parser.add_argument('--script-runs', type=int, default=0,
                        help='pairs of script runs (Launcher.run() from a script) without and with '
                             'start_forkserver_early()')
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix='btgym_aac_startup_')
    reference, baseline, bare_imports = [], [], []
    try:
        for run in range(args.runs):
            if args.baseline:
                baseline.append(train_once(None, os.path.join(scratch, 'baseline_{}'.format(run)), args.baseline))
            bare_imports.append(bare_import_once())
            reference.append(train_once(None, os.path.join(scratch, 'reference_{}'.format(run))))
        examples = [] if args.no_examples else [train_once(path, os.path.join(scratch, path.stem))
                                                for path in EXAMPLES]
        scripts = script_runs(args.script_runs, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result = {
        'description': __doc__.split('\n\n')[0],
        'machine': {'cpus': os.cpu_count(), 'python': platform.python_version(), 'platform': platform.platform()},
        'original_btgym_seconds': ORIGINAL_SECONDS,
        'reference_runs': reference, 'reference_medians': medians(reference), 'examples': examples,
        'bare_import_seconds': bare_imports, 'bare_import_median': statistics.median(bare_imports),
    }
    result['first_step_over_bare_import'] = result['reference_medians']['first_step'] / result['bare_import_median']
    if scripts:
        result.update(script_runs=scripts, script_median_first_step={
            mode: statistics.median(run['first_step'] for run in scripts if run['start_forkserver_early'] == early)
            for mode, early in (('plain', False), ('start_forkserver_early', True))})
    if baseline:
        result.update(baseline_source_tree=args.baseline, baseline_runs=baseline,
                      baseline_median_first_step=statistics.median(run['first_step'] for run in baseline))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'startup.json'), 'w') as out:
        json.dump(result, out, indent=2)
    print('{:34} {:>9} {:>12} {:>14} {:>11} {:>6}'.format('config', 'imported', 'graph built', 'session ready',
                                                          'first step', 'load'))
    for run in reference + examples:
        print('{config:34} {imported:9.1f} {graph_built:12.1f} {session_ready:14.1f} {first_step:11.1f} '
              '{load_before:6.2f}'.format(**run))
    print('reference median: first trained step {first_step:.1f} s after the command started (original btgym: '
          '{0[0]}-{0[1]} s)'.format(ORIGINAL_SECONDS, **result['reference_medians']))
    print('bare `import tensorflow` median {:.1f} s; first trained step / bare import: {:.2f}'.format(
        result['bare_import_median'], result['first_step_over_bare_import']))
    if scripts:
        print('script (Launcher.run(), 1 worker) median first trained step: {plain:.1f} s, with '
              'start_forkserver_early() first {start_forkserver_early:.1f} s'.format(
                  **result['script_median_first_step']))
    if baseline:
        print('baseline {} median: {:.1f} s'.format(args.baseline, result['baseline_median_first_step']))


if __name__ == '__main__':
    sys.exit(main())
