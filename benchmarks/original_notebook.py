"""Runs one of the original btgym's example notebooks as a script, on the original's Python 3.7: executes its code
cells up to the one that makes the Launcher, changes the configuration only where a run here needs it, then makes
and runs the Launcher, logging every train step of worker 0 (`time.time()` and the global step, one line each) to
--progress. Used by `startup_vs_original.py`.

Changes to the notebook's configuration: `log_dir` (and no `initial_ckpt_dir`), the cluster's and the envs' ports,
`num_workers` when --workers is given, the trainer class (a subclass that logs the train steps), and
`purge_previous=0` on a new log dir. The notebook's relative data paths (`./data/...`) are read from the working
directory. The run ends at SIGINT, as the notebook's does.

Usage: python original_notebook.py NOTEBOOK.ipynb --log-dir DIR --progress FILE [--workers N] [--port 12230]
"""
import argparse
import json
import os

from notebook_run import trainer_with_progress


def code_cells(notebook_path):
    """The notebook's code cells as source strings, IPython magics and shell lines left out."""
    with open(notebook_path) as f:
        notebook = json.load(f)
    cells = []
    for cell in notebook['cells']:
        if cell['cell_type'] == 'code':
            lines = ''.join(cell['source']).splitlines()
            cells.append('\n'.join(line for line in lines if not line.lstrip().startswith(('%', '!'))))
    return cells


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('notebook')
    parser.add_argument('--log-dir', required=True)
    parser.add_argument('--progress', required=True)
    parser.add_argument('--workers', type=int)
    parser.add_argument('--port', type=int, default=12230)
    args = parser.parse_args()

    namespace = {'__name__': '__notebook__'}
    for cell in code_cells(args.notebook):
        if 'Launcher(' in cell and 'import' not in cell:
            break
        exec(compile(cell, args.notebook, 'exec'), namespace)
    cluster_config, env_config = namespace['cluster_config'], namespace['env_config']
    trainer_config = namespace['trainer_config']
    cluster_config.pop('initial_ckpt_dir', None)
    cluster_config.update(log_dir=os.path.abspath(args.log_dir), port=args.port)
    if args.workers:
        cluster_config['num_workers'] = args.workers
    env_config['kwargs'].update(port=args.port + 100, data_port=args.port + 99)
    os.environ['NOTEBOOK_RUN_PROGRESS'] = os.path.abspath(args.progress)
    trainer_config['class_ref'] = trainer_with_progress(trainer_config['class_ref'])  # forked tasks: no name needed
    launcher = namespace['Launcher'](
        cluster_config=cluster_config, env_config=env_config, trainer_config=trainer_config,
        policy_config=namespace['policy_config'], test_mode=False, max_env_steps=10 ** 8, root_random_seed=0,
        purge_previous=0, verbose=0)
    launcher.run()


if __name__ == '__main__':
    main()
