"""Start-up of btgym_aac's examples against the original btgym's notebooks they port, side by side: seconds from the
command's start to the first trained step.

Pairs: `btgym-aac train` (the reference configuration, 2 workers) and the original's
`unreal_stacked_lstm_strat_4_11` notebook with 2 workers; then every example that ports a notebook against that
notebook, with the example's worker count: `unreal_stacked_lstm_strat_4_11.py`, `guided_a3c.py`,
`multi_discrete_causal_conv.py` (notebook `multi_discrete_setup_intro`), `portfolio_causal_conv.py`
(`portfolio_setup_BETA`). Each pair runs `--runs` times, the order alternating. This package runs as `startup.py`
runs it (`btgym-aac train [CONFIG] --max-steps 100 --fresh`, the first trained step as it prints it); the original
runs the notebook's own cells through `original_notebook.py` until worker 0's first train step, then is stopped
with SIGINT as the notebook is. Both read the same data: the sine series (`make_sine_data()`) and the four FX
stand-ins that `multi_discrete_causal_conv.py` writes (the notebooks' real 2017 files are not shipped). Also
recorded: the machine's 1-minute load before each run. Writes `startup_vs_original.json` to --out.

The original's Python 3.7 environment and source tree: see `vs_original.py`.

Usage: python benchmarks/startup_vs_original.py --original-python /tmp/orig37/bin/python --original-source DIR
                                                [--runs 2] [--port 15230] [--out benchmarks/results]
"""
import argparse
import json
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

from notebook_run import write_sine_csv
from startup import EXAMPLES, train_once
from vs_original import last_step, start_in_session, stop_session

BENCHMARKS = pathlib.Path(__file__).resolve().parent
EXAMPLES_DIR = EXAMPLES[0].parent
PAIRS = ((None, 'unreal_stacked_lstm_strat_4_11'),
         ('unreal_stacked_lstm_strat_4_11.py', 'unreal_stacked_lstm_strat_4_11'),
         ('guided_a3c.py', 'guided_a3c'),
         ('multi_discrete_causal_conv.py', 'multi_discrete_setup_intro'),
         ('portfolio_causal_conv.py', 'portfolio_setup_BETA'))
REFERENCE_WORKERS = 2
FIRST_STEP_TIMEOUT_SECONDS = 600


def example_workers(example):
    """The `num_workers` an example's config file sets (the reference configuration's for None)."""
    if example is None:
        return REFERENCE_WORKERS
    return int(re.search(r'num_workers=(\d+)', (EXAMPLES_DIR / example).read_text()).group(1))


def prepare_data(scratch):
    """Writes the data both versions read into `scratch`: the FX stand-ins (by loading
    `multi_discrete_causal_conv.py` there) and, for the original's notebooks, ./data with them and the sine file.

    Returns:
        the original's working directory.
    """
    ours = os.path.join(scratch, 'btgym_aac')
    os.makedirs(ours)
    subprocess.run([sys.executable, '-c', 'import runpy, sys; runpy.run_path(sys.argv[1])',
                    str(EXAMPLES_DIR / 'multi_discrete_causal_conv.py')], cwd=ours, check=True,
                   stdout=subprocess.DEVNULL)
    original = os.path.join(scratch, 'original')
    data = os.path.join(original, 'data')
    os.makedirs(data)
    fx = os.path.join(ours, 'runs', 'synthetic_fx_2017')
    for name in os.listdir(fx):
        os.symlink(os.path.join(fx, name), os.path.join(data, name))
    write_sine_csv(data)
    return original


def original_once(notebook, workers, args, original_cwd, port):
    """Runs the original's `notebook` until worker 0's first train step.

    Returns:
        dict: seconds from the command's start to the first trained step, load before, how it stopped.
    """
    run_dir = tempfile.mkdtemp(dir=original_cwd)
    progress = os.path.join(run_dir, 'progress.txt')
    command = [args.original_python, str(BENCHMARKS / 'original_notebook.py'),
               os.path.join(args.original_source, 'examples', notebook + '.ipynb'), '--log-dir',
               os.path.join(run_dir, 'log'), '--progress', progress, '--workers', str(workers), '--port', str(port)]
    environment = dict(os.environ, PYTHONPATH=os.path.abspath(args.original_source))
    load = os.getloadavg()[0]
    with open(os.path.join(run_dir, 'output.txt'), 'w') as output:
        started = time.time()
        process = start_in_session(command, original_cwd, environment, output)
        while last_step(progress) is None:
            if process.poll() is not None or time.time() - started > FIRST_STEP_TIMEOUT_SECONDS:
                stop_session(process, process.pid)
                raise RuntimeError('the original {} trained no step; see {}'.format(notebook, output.name))
            time.sleep(0.1)
        first_step = last_step(progress)[0] - started
        stop = stop_session(process, process.pid)
    return dict(load_before=load, first_step=first_step, **stop)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--original-python', required=True, help="python of the original's environment")
    parser.add_argument('--original-source', required=True, help="the original btgym's source tree")
    parser.add_argument('--runs', type=int, default=2)
    parser.add_argument('--port', type=int, default=15230, help="the original's first cluster port")
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()

    pairs = []
    port = args.port
    with tempfile.TemporaryDirectory() as scratch:
        original_cwd = prepare_data(scratch)
        ours_cwd = os.path.join(scratch, 'btgym_aac')
        for example, notebook in PAIRS:
            workers = example_workers(example)
            runs = {'btgym_aac': [], 'original': []}
            for index in range(args.runs):
                for version in (('btgym_aac', 'original') if index % 2 == 0 else ('original', 'btgym_aac')):
                    if version == 'original':
                        run = original_once(notebook, workers, args, original_cwd, port)
                        port += 100
                    else:
                        config = EXAMPLES_DIR / example if example else None
                        run = train_once(config, tempfile.mkdtemp(dir=ours_cwd), cwd=ours_cwd)
                    runs[version].append(run)
                    print('{} / {} {}: {}'.format(example or 'reference', notebook, version, json.dumps(run)),
                          flush=True)
            medians = {version: statistics.median(run['first_step'] for run in group)
                       for version, group in runs.items()}
            pairs.append(dict(example=example or 'reference (btgym-aac train)', notebook=notebook, workers=workers,
                              runs=runs, median_first_step=medians,
                              ours_over_original=medians['btgym_aac'] / medians['original']))
    result = dict(benchmark='startup_vs_original', description=__doc__.split('\n\n')[0],
                  machine=dict(cpus=os.cpu_count(), python=platform.python_version(), platform=platform.platform()),
                  pairs=pairs)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'startup_vs_original.json'), 'w') as f:
        json.dump(result, f, indent=1)
    print('{:34} {:32} {:>7} {:>10} {:>9} {:>6}'.format('btgym_aac', 'original notebook', 'workers', 'btgym_aac',
                                                        'original', 'ratio'))
    for pair in pairs:
        print('{:34} {:32} {:>7} {:>9.1f}s {:>8.1f}s {:>6.2f}'.format(
            pair['example'], pair['notebook'], pair['workers'], pair['median_first_step']['btgym_aac'],
            pair['median_first_step']['original'], pair['ours_over_original']))


if __name__ == '__main__':
    main()
