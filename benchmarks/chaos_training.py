"""Chaos run: training through repeated process deaths. A 2-worker run of `btgym-aac train`'s reference
configuration whose task processes (the two workers and the parameter server) are SIGKILLed at random until the run
ends, with the env steps each death costs.

One task is killed every `--min-interval` to `--max-interval` seconds (uniform), the target and the interval drawn
from `random.Random(--seed)`; a kill waits until the job hit by the previous one trains again (after a parameter
server's death: both workers), so every kill hits a training cluster. The launcher restarts the tasks on a budget of
`--max-restarts` per `--restart-window` minutes. Per fault it records the global step reached before it (with the
dying workers' last reports), the checkpoint then on disk, the step the cluster went on from and how long until it
trained again. A parameter server's death loses the env steps between the workers' last sync and the death (the
chief takes the weights they held, see `btgym_aac.distributed.rescued_weights`), where restoring the checkpoint
alone would lose every step since it; a worker's death loses no global step (the global weights stay on the
parameter server), only the rollout it was collecting (at most `rollout_length` env steps per env). At the end the
latest checkpoint is restored (`evaluation.load_policy`) and every value in it checked to be finite. Writes
`chaos_training.json` to --out.

The default seed, 4, draws the parameter server as the first target, then worker 0, the parameter server, worker 1,
...: in a run of some 4 minutes, both kinds of death several times.

Usage: python benchmarks/chaos_training.py [--max-steps 60000] [--seed 4] [--min-interval 20] [--max-interval 40]
    [--max-restarts 20] [--restart-window 10] [--save-secs 60] [--out benchmarks/results]
"""
import argparse
import json
import os
import platform
import random
import signal
import statistics
import sys
import tempfile
import threading
import time

import numpy as np

from btgym_aac.distributed.checkpoints import checkpoint_step, latest_checkpoint
from btgym_aac.distributed.launcher import make_launcher
from btgym_aac.distributed.run_config import default_configs

TARGETS = (('ps', 0), ('worker', 0), ('worker', 1))
POLL_SECONDS = 0.2


class ChaosMonkey:
    """Kills a random task of `launcher` (one this process started through it) every `interval` seconds, each kill
    waiting until the job hit by the previous one trains again, until `stop` is set.

    Args:
        launcher: the Launcher whose tasks are killed; its `_drain` is wrapped to keep every report.
        interval: (shortest, longest) seconds between two kills.
        seed: seeds the choice of targets and intervals.
    """

    def __init__(self, launcher, interval, seed):
        self.launcher, self.interval, self.rng = launcher, interval, random.Random(seed)
        self.reports, self.faults, self.stop = [], [], threading.Event()
        drain = launcher._drain

        def drain_and_keep(progress, start):
            drain(progress, start)
            self.reports.extend(dict(report, received=time.time()) for report in launcher.progress.values())

        launcher._drain = drain_and_keep
        self.thread = threading.Thread(target=self._kill_at_random, name='chaos', daemon=True)

    def _kill_at_random(self):
        next_kill = None
        while not self.stop.wait(POLL_SECONDS):
            if not self._training_again():
                continue
            now = time.time()
            if next_kill is None:
                next_kill = now + self.rng.uniform(*self.interval)
            if now < next_kill:
                continue
            job, task = self.rng.choice(TARGETS)
            process = self.launcher.processes.get((job, task))
            if process is None or not process.is_alive() or self._finished(job, task):
                next_kill = None
                continue
            self.faults.append({'target': '{}_{}'.format(job, task), 'killed_at': now,
                                'checkpoint_step': checkpoint_step(latest_checkpoint(self.launcher.current_ckpt_dir))})
            os.kill(process.pid, signal.SIGKILL)
            next_kill = now + self.rng.uniform(*self.interval)

    def _finished(self, job, task):
        """True when worker `task` has reported its end (a parameter server never does)."""
        return job == 'worker' and self.launcher.progress.get(task, {}).get('finished', False)

    def _training_again(self):
        """True when the job hit by the last kill trains again: a step trained by a process started after it (by
        every worker after a parameter server's death)."""
        if not self.faults:
            return any(report['step'] > report['start_step'] for report in self.reports)
        fault = self.faults[-1]
        return all(self._trained_after(task, fault['killed_at']) for task in restarted_workers(fault['target']))

    def _trained_after(self, task, moment):
        return any(report['task'] == task and report['startup']['started'] > moment
                   and report['step'] > report['start_step'] for report in self.reports)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stop.set()
        self.thread.join(10)


def restarted_workers(target):
    """The worker tasks restarted after the death of `target` ('ps_0', 'worker_1', ...)."""
    job, _, task = target.rpartition('_')
    return (0, 1) if job == 'ps' else (int(task),)


def fault_figures(fault, reports, started, rollout_env_steps):
    """What one fault cost, from the workers' reports.

    Args:
        fault: a `ChaosMonkey` fault (target, killed_at, checkpoint_step).
        reports: every report the launcher received, with `received` times.
        started: time.time() when the run started.
        rollout_env_steps: env steps of the rollout a worker collects between its train steps (all its envs).

    Returns:
        dict: the target; `at_seconds` into the run; `reached`: the global step before the death (the last reports
        of the processes that died included); `went_on_from`: the step the restarted processes started at (None
        where none started); `env_steps_lost` (global steps: `reached - went_on_from`, 0 when it did not go back);
        `recovery_seconds` until a restarted process trained (None where none did before the run ended);
        `survived`: a restarted process reported; for a parameter server, `env_steps_since_checkpoint` (what
        restoring the checkpoint alone would lose); for a worker, `unsent_rollout_env_steps_at_most`.
    """
    killed_at = fault['killed_at']
    workers = restarted_workers(fault['target'])
    before = [report for report in reports if report['received'] <= killed_at
              or (report['task'] in workers and report['startup']['started'] < killed_at)]
    reached = max(report['step'] for report in before)
    after = [report for report in reports if report['task'] in workers and report['startup']['started'] > killed_at]
    went_on_from = min((report['start_step'] for report in after), default=None)
    trained = [report['received'] for report in after if report['step'] > report['start_step']]
    figures = {
        'target': fault['target'], 'at_seconds': round(killed_at - started, 1), 'reached': reached,
        'checkpoint_step': fault['checkpoint_step'], 'went_on_from': went_on_from,
        'env_steps_lost': None if went_on_from is None else max(reached - went_on_from, 0),
        'recovery_seconds': round(min(trained) - killed_at, 1) if trained else None,
        'survived': bool(after),
    }
    if fault['target'].startswith('ps'):
        figures['env_steps_since_checkpoint'] = reached - (fault['checkpoint_step'] or 0)
    else:
        figures['unsent_rollout_env_steps_at_most'] = rollout_env_steps
    return figures


def check_checkpoint(log_dir):
    """Restores the run's latest checkpoint into its rebuilt policy and reads every value it holds.

    Returns:
        dict: `step`, `restores` (True, or the error), `all_finite` (every float tensor of the checkpoint, optimizer
        slots included).
    """
    from btgym_aac.compat import tf
    from btgym_aac.evaluation.loading import load_policy

    try:
        loaded = load_policy(log_dir)
    except (OSError, ValueError) as error:
        return {'step': None, 'restores': str(error), 'all_finite': None}
    try:
        weights = loaded.session.run(loaded.policy.var_list)
    finally:
        loaded.close()
    reader = tf.train.load_checkpoint(loaded.checkpoint)
    tensors = [reader.get_tensor(name) for name in reader.get_variable_to_shape_map()]
    floats = [value for value in tensors + weights if np.issubdtype(np.asarray(value).dtype, np.floating)]
    return {'step': checkpoint_step(loaded.checkpoint), 'restores': True,
            'all_finite': all(bool(np.all(np.isfinite(value))) for value in floats)}


def chaos_run(configs, max_steps, seed, interval, max_restarts, restart_window_minutes=10, save_secs=60):
    """One chaos run (see the module docstring) of `configs` (2 workers, 1 parameter server).

    Args:
        configs: the run's config dicts (`run_config.default_configs` layout), with their log dir.
        max_steps: env steps to train.
        seed: seeds the run and the kills.
        interval: (shortest, longest) seconds between two kills.
        max_restarts, restart_window_minutes: the launcher's restart budget.
        save_secs: seconds between the chief's checkpoints.

    Returns:
        dict: `completed`, `final_step`, `wall_seconds`, `faults` (see `fault_figures`), `checkpoint` (see
        `check_checkpoint`), `restarts` and `ps_restarts` as the launcher counted them.
    """
    launcher = make_launcher(configs, max_env_steps=max_steps, save_secs=save_secs, root_random_seed=seed,
                             show_progress=False, max_restarts=max_restarts,
                             restart_window_minutes=restart_window_minutes, purge_previous=2)
    started = time.time()
    with ChaosMonkey(launcher, interval, seed) as monkey:
        result = launcher.run()
    trainer_kwargs = configs['trainer_config'].get('kwargs', {})
    rollout_env_steps = trainer_kwargs.get('rollout_length', 20) * configs['cluster_config'].get('num_envs', 1)
    return {
        'completed': result['completed'], 'final_step': result['global_step'],
        'wall_seconds': round(time.time() - started, 1),
        'faults': [fault_figures(fault, monkey.reports, started, rollout_env_steps) for fault in monkey.faults],
        'checkpoint': check_checkpoint(launcher.log_dir),
        'restarts': result['restarts'], 'ps_restarts': result['ps_restarts'],
    }


def summary(run):
    """Medians and totals of a chaos run's faults, parameter servers and workers apart."""
    figures = {}
    for kind in ('ps', 'worker'):
        faults = [fault for fault in run['faults'] if fault['target'].startswith(kind)]
        lost = [fault['env_steps_lost'] for fault in faults if fault['env_steps_lost'] is not None]
        recovered = [fault['recovery_seconds'] for fault in faults if fault['recovery_seconds'] is not None]
        figures[kind] = {
            'faults': len(faults), 'survived': sum(fault['survived'] for fault in faults),
            'env_steps_lost': lost, 'median_env_steps_lost': statistics.median(lost) if lost else None,
            'median_recovery_seconds': statistics.median(recovered) if recovered else None,
        }
    figures['ps']['env_steps_since_checkpoint'] = [fault['env_steps_since_checkpoint'] for fault in run['faults']
                                                   if fault['target'].startswith('ps')]
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--max-steps', type=int, default=60000)
    parser.add_argument('--seed', type=int, default=4)
    parser.add_argument('--min-interval', type=float, default=20.0)
    parser.add_argument('--max-interval', type=float, default=40.0)
    parser.add_argument('--max-restarts', type=int, default=20)
    parser.add_argument('--restart-window', type=float, default=10.0)
    parser.add_argument('--save-secs', type=float, default=60.0)
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        configs = default_configs('a3c', preset='reference')
        configs['cluster_config'] = dict(configs['cluster_config'], log_dir=os.path.join(folder, 'run'))
        run = chaos_run(configs, args.max_steps, args.seed, (args.min_interval, args.max_interval),
                        args.max_restarts, args.restart_window, args.save_secs)
    result = {'description': __doc__.split('\n\n')[0], 'settings': vars(args),
              'machine': {'cpus': os.cpu_count(), 'python': platform.python_version(), 'load_before': load_before},
              'run': run, 'summary': summary(run)}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'chaos_training.json'), 'w') as out:
        json.dump(result, out, indent=2)
    print('{} faults injected, {} survived; final step {} of {} in {:.0f} s; checkpoint restores: {}, all finite: '
          '{}'.format(len(run['faults']), sum(fault['survived'] for fault in run['faults']), run['final_step'],
                      args.max_steps, run['wall_seconds'], run['checkpoint']['restores'],
                      run['checkpoint']['all_finite']))
    for kind, figures in result['summary'].items():
        since = ' (since the checkpoint: {})'.format(figures['env_steps_since_checkpoint']) if kind == 'ps' else ''
        print('{}: {} faults, {} survived, env steps lost {}{}, median recovery {} s'.format(
            kind, figures['faults'], figures['survived'], figures['env_steps_lost'], since,
            figures['median_recovery_seconds']))
    return 0 if run['completed'] else 1


if __name__ == '__main__':
    sys.exit(main())
