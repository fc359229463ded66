"""Launcher: starts a parameter-server + workers cluster as spawned processes and runs it to `max_env_steps`.

`run()` returns when the workers reach `max_env_steps` (they save, close their environments and exit; the
parameter servers are then stopped). A worker that dies is reported with its exit status and restarted, up to
`max_restarts` times within any `restart_window_minutes` minutes, and so is one that stops reporting progress for
`stall_seconds`. A parameter server that dies is restarted too (on the same budget): the workers, whose sessions
fail with it, are restarted without counting, and the chief restores the global variables from the freshest of the
latest checkpoint and the weights the workers held (`rescued_weights`). Ctrl-C or SIGTERM stops
everything cleanly (the chief saves first), and no task outlives the launcher. Only processes this launcher
started are ever stopped. A launcher holds its log dir's lock (`log_dir.LogDirLock`) while it empties the folder and
while it runs, so a second run on the same log dir is refused instead of overwriting the first one's checkpoints.
Its tasks run in a private network namespace (`network_namespace`), so their TensorFlow ports, which take any
graph from anyone, cannot be reached from outside the run. The supervision of the running tasks (restarts, stalls,
the final stop) is `supervision.TaskSupervision`.
"""
import contextlib
import inspect
import os
import pickle
import shutil
import signal
import sys
import time

import numpy as np

from btgym_aac.config_modules import dumps_with_sources
from btgym_aac.data.shared import CACHE_DIR, publish
from btgym_aac.distributed.checkpoints import (check_checkpoint_readable, checkpoint_step, export_checkpoint,
                                               latest_checkpoint)
from btgym_aac.distributed.cluster import check_local_task_count, make_cluster_spec
from btgym_aac.distributed.log_dir import LogDirLock, checkpoint_report, log_dir_state, prepare_log_dir
from btgym_aac.distributed.network_namespace import isolate_cluster
from btgym_aac.distributed.run_config import (DEFAULT_MAX_RESTARTS, DEFAULT_RESTART_WINDOW_MINUTES, check_data_costs,
                                              check_purge_previous, launcher_configs, pickle_run_config,
                                              positive_minutes, positive_seconds, read_data_files)
from btgym_aac.distributed.supervision import RestartBudget, TaskSupervision, signals_handled, stop_on_signal
from btgym_aac.distributed.tasks import LauncherSurroundings, ctrl_c_held, task_context
from btgym_aac.distributed.worker import run_pickled_task
from btgym_aac.logs import get_logger
from btgym_aac.paths import file_in_the_way
from btgym_aac.progress import PLAIN_LINE_SECONDS, Progress
from btgym_aac.validation import check_whole_number


class Launcher(TaskSupervision):
    """Distributed training session of one host (or one process per node with `btgym-aac cluster-node`).

    Args:
        env_config: {'class_ref': env class, 'kwargs': dict}.
        cluster_config: dict with `host`, `port` (first port, None: free ports), `num_workers`, `num_ps`,
            `num_envs` (per worker), `log_dir`, `initial_ckpt_dir` (pre-trained model), `log_ckpt_subdir`,
            `network_isolation`: 'auto' (default) runs every task in a private network namespace where the system
            allows it (Linux; see `network_namespace`) and warns where not, 'require' refuses to run without it
            (NetworkIsolationError), 'off' neither isolates nor warns;
            `start_method`: 'forkserver' (default on Linux) forks every task from one process that imported
            TensorFlow once, 'spawn' (default elsewhere) starts each in a new interpreter (see `tasks`).
        policy_config: {'class_ref', 'kwargs'} of the policy.
        trainer_config: {'class_ref', 'kwargs'} of the trainer (A3C, Unreal, PPO, ...).
        max_env_steps: training length in env steps over all workers.
        save_secs: seconds between the chief's checkpoints.
        keep_checkpoint_every_steps: the chief also keeps a checkpoint every this many env steps (at the first
            train step at or past each multiple) in `<log_dir>/kept_checkpoints` (`model_parameters-<global step>`),
            none of them removed: the policy along training, for learning curves (`evaluate(...,
            checkpoint=...)`); None: none kept.
        root_random_seed: seeds every task (None: random).
        test_mode: train on gymnasium test environments.
        purge_previous: what to do with an existing log_dir: 0 keep it (resume from its checkpoint), 1 ask (only
            when run interactively), 2 delete its contents.
        render_last_env: render only the chief's last env (else all the chief's envs).
        log_level, verbose: logging (0 notice, 1 info, 2 debug).
        max_restarts: restarts allowed per task within any `restart_window_minutes`: per worker after a crash or
            a stall (a worker that cannot set up is never restarted: the run stops, see `worker.WorkerSetupError`;
            nor is one that dies before training of the same error as before its last restart), and per parameter
            server after it died (the workers' restarts that follow do not count). One more stops the run.
        restart_window_minutes: the sliding window, in minutes, over which a task's restarts are counted.
        stall_seconds: a worker that has reported training progress and then reports nothing for this long (a
            deadlocked env, say) is stopped and restarted like a crashed one; None: never.
        show_progress: show the training's progress on stdout from the workers' first report on (env steps, their
            speed since that report, the time left, episodes, mean reward; see `btgym_aac.progress`): a bar redrawn
            in place on a terminal, else a line every `progress_seconds` and one at the end.
        progress_seconds: seconds between two progress lines where stdout is no terminal.
        cluster_spec: a ready cluster dict ({'ps': [...], 'worker': [...]}, e.g. spanning hosts) instead of the
            one made from `cluster_config`.
        shared_log_dir: True for a node of a hand-started cluster (`btgym-aac cluster-node`), whose tasks share
            the log dir: construction then takes no lock on it (`run()` still does) and never empties it
            (`purge_previous` must be 0).
        resume_from: name of an earlier checkpoint of this run (`model_parameters-<step>`) to resume from where
            the latest is damaged: the files of the later checkpoints are moved to `<checkpoint folder>/set_aside`
            (see `checkpoints.resume_from_checkpoint`). Needs `purge_previous` 0 and no `initial_ckpt_dir`.
        preset: the name of the preset (`run_config.PRESETS`) the configs were made from (`default_configs` puts it
            in their launcher_config), recorded in the run's run_config.pkl; None: configs made otherwise.
    """

    def __init__(self, env_config=None, cluster_config=None, policy_config=None, trainer_config=None,
                 max_env_steps=100e6, save_secs=600, root_random_seed=None, test_mode=False, purge_previous=0,
                 render_last_env=True, log_level=None, verbose=0, max_restarts=DEFAULT_MAX_RESTARTS,
                 restart_window_minutes=DEFAULT_RESTART_WINDOW_MINUTES, show_progress=True, cluster_spec=None,
                 stall_seconds=300, shared_log_dir=False, resume_from=None, progress_seconds=PLAIN_LINE_SECONDS,
                 preset=None, keep_checkpoint_every_steps=None):
        self.log = get_logger('Launcher', 'shell', verbose, log_level)
        self.log_level = self.log.level
        configs = launcher_configs(env_config=env_config, cluster_config=cluster_config, policy_config=policy_config,
                                   trainer_config=trainer_config)
        self.env_config, self.cluster_config = configs['env_config'], configs['cluster_config']
        self.policy_config, self.trainer_config = configs['policy_config'], configs['trainer_config']
        self.max_env_steps = check_whole_number('max_env_steps (env steps to train)', max_env_steps, 1)
        self.save_secs = positive_seconds('save_secs', save_secs)
        self.keep_checkpoint_every_steps = None if keep_checkpoint_every_steps is None else check_whole_number(
            'keep_checkpoint_every_steps', keep_checkpoint_every_steps, 1)
        self.test_mode = test_mode
        self.preset = preset
        self.render_last_env = render_last_env
        self.max_restarts = check_whole_number('max_restarts', max_restarts, 0)
        self.restart_window_minutes = positive_minutes('restart_window_minutes', restart_window_minutes)
        self.stall_seconds = None if stall_seconds is None else positive_seconds('stall_seconds', stall_seconds)
        check_purge_previous(purge_previous, shared_log_dir)
        if resume_from is not None and purge_previous != 0:
            raise ValueError('resume_from resumes the run in the log dir; purge_previous must be 0, got {}'.format(
                purge_previous))
        self.show_progress = show_progress
        self.progress_seconds = positive_seconds('progress_seconds', progress_seconds)
        self.shared_log_dir = shared_log_dir
        if cluster_spec is None:  # before anything is done per worker
            check_local_task_count(self.cluster_config['num_workers'], self.cluster_config['num_ps'])
        self._set_log_paths()
        data = read_data_files(self.env_config)
        check_data_costs(self.env_config, [frame for frame, _ in data])
        self._set_initial_checkpoint()
        if resume_from is not None and self.initial_ckpt_dir:
            raise ValueError('resume_from resumes the run in the log dir, initial_ckpt_dir starts from another '
                             'model: give one of them')
        if cluster_spec is None:
            cluster_spec = make_cluster_spec(self.cluster_config['host'], self.cluster_config['port'],
                                             self.cluster_config['num_workers'], self.cluster_config['num_ps'])
        self.cluster_spec = cluster_spec
        self.pickled_run_config = self._pickled_run_config()
        with contextlib.nullcontext() if shared_log_dir else LogDirLock(self.log_dir):
            self.purged = prepare_log_dir(self.log_dir, self.current_ckpt_dir, self.initial_ckpt_dir, purge_previous,
                                          self.log, resume_from)
            # (a run with nothing to train starts no task: it publishes no data)
            self.data_cache = [] if self.already_trained() is not None else \
                [publish(frame, key, self.log_dir) for frame, key in data]
        rng = np.random.default_rng(root_random_seed)
        self.task_seeds = [int(seed) for seed in rng.integers(0, 2 ** 30, size=len(cluster_spec['worker']))]
        self._init_run_state()

    def _set_log_paths(self):
        """Sets `log_dir` and `current_ckpt_dir`; raises NotADirectoryError where a file stands in the way of
        them or of a worker's folder."""
        self.log_dir = os.path.abspath(os.path.expanduser(self.cluster_config['log_dir']))
        self.current_ckpt_dir = os.path.join(self.log_dir, self.cluster_config['log_ckpt_subdir'].strip('/'))
        worker_dirs = [os.path.join(self.log_dir, 'worker_{}'.format(task))
                       for task in range(self.cluster_config['num_workers'])]
        for path in [self.log_dir, self.current_ckpt_dir] + worker_dirs:
            blocking = file_in_the_way(path)
            if blocking is not None:
                raise NotADirectoryError('{} is a file, not a folder for logs and checkpoints'.format(blocking))

    def _set_initial_checkpoint(self):
        """Sets `initial_ckpt_dir` (None: no pre-trained model) and checks its checkpoint can be read
        (`check_checkpoint_readable`'s error otherwise).

        A folder without a checkpoint is dropped with a NOTICE, as the original did: the run starts from its own
        checkpoint if it has one, otherwise from scratch.
        """
        initial = self.cluster_config['initial_ckpt_dir']
        self.initial_ckpt_dir = os.path.abspath(os.path.expanduser(initial)) if initial else None
        if self.initial_ckpt_dir:
            initial_checkpoint = latest_checkpoint(self.initial_ckpt_dir)
            if initial_checkpoint is None:
                self.log.notice('initial_ckpt_dir {} holds no checkpoint: starting from this run\'s own checkpoint '
                                'if it has one, otherwise from scratch'.format(self.initial_ckpt_dir))
                self.initial_ckpt_dir = None
            else:
                check_checkpoint_readable(initial_checkpoint)

    def _pickled_run_config(self):
        """`run_config()` pickled for the chief; ValueError when a config holds what the tasks cannot import."""
        try:
            return pickle_run_config(self.run_config())
        except (pickle.PicklingError, AttributeError, TypeError) as error:
            raise ValueError('the configs cannot be passed to the run\'s processes ({}): their classes and functions '
                             'must be importable (defined at the top level of a module)'.format(error)) from error

    def _init_run_state(self):
        """The bookkeeping of `run()`: task processes, the tasks' restart budget, and per worker its restarts, last
        progress report and its time, episodes of its previous lives and errors; the peak memory of the parameter
        servers; the progress display (made at the first report)."""
        self.processes = {}
        self.restart_budget = RestartBudget(self.max_restarts, self.restart_window_minutes)
        self.restarts = {}
        self.ps_restarts = {}
        self.started_at = {}
        self.progress = {}
        self.last_report_time = {}
        self.episodes_before_restart = {}
        self.last_errors = {}
        self.error_before_restart = {}
        self.first_step_seconds = None
        self.first_trained = None
        self.ps_peak_rss_mb = {}
        self.namespace_holder = None
        self.display = None

    def _log_dir_state(self):
        """What the run leaves to resume from (see `log_dir.log_dir_state`)."""
        return log_dir_state(self.purged, self.current_ckpt_dir)

    def run_config(self):
        """The configs the chief writes to `<log_dir>/run_config.pkl` once it is set up (see `run_config.py`)."""
        return dict(env_config=self.env_config, policy_config=self.policy_config, trainer_config=self.trainer_config,
                    cluster_config=self.cluster_config, test_mode=self.test_mode, preset=self.preset)

    def task_config(self, job_name, task):
        """Config of one cluster task, as passed to `worker.run_task`."""
        config = dict(job_name=job_name, task=task, cluster_spec=self.cluster_spec, log_level=self.log_level)
        if job_name == 'worker':
            config.update(
                env_config=self.env_config, policy_config=self.policy_config, trainer_config=self.trainer_config,
                log_dir=self.log_dir, current_ckpt_dir=self.current_ckpt_dir,
                initial_ckpt_dir=self.initial_ckpt_dir, max_env_steps=self.max_env_steps,
                save_secs=self.save_secs, keep_checkpoint_every_steps=self.keep_checkpoint_every_steps,
                random_seed=self.task_seeds[task],
                num_envs=self.cluster_config['num_envs'], render_last_env=self.render_last_env,
                test_mode=self.test_mode, run_config=self.pickled_run_config, data_cache=self.data_cache)
        return config

    # ----------------------------------------------------------------------------------------------- running

    def _start(self, context, job_name, task, progress):
        """Starts a task process with Ctrl-C held back: one arriving meanwhile reaches the launcher once the process
        is started (not in the middle of handing it its config), and none reaches the task's interpreter before
        `run_pickled_task` ignores it (the launcher stops its tasks itself), so no task prints a traceback. In an
        isolated run the task joins the run's network namespace as it starts."""
        config = dict(self.task_config(job_name, task), launcher_pid=os.getpid())
        name = 'btgym_aac-{}-{}'.format(job_name, task)
        if self.namespace_holder is not None:
            if not self.namespace_holder.alive():
                raise RuntimeError('the holder of the run\'s network namespace (process {}) is gone, so {} cannot '
                                   'join its cluster'.format(self.namespace_holder.pid, name))
            name = self.namespace_holder.task_name(name)
        process = context.Process(target=run_pickled_task, name=name,
                                  args=(dumps_with_sources(config), progress, LauncherSurroundings()))
        self.processes[(job_name, task)] = process
        self.started_at[(job_name, task)] = time.monotonic()
        with ctrl_c_held():
            process.start()
        return process

    def run(self):
        """Starts the cluster and trains to `max_env_steps`.

        Returns:
            dict with `global_step`, `completed` (False where every worker was stopped by a signal from outside
            before `max_env_steps`), `episodes`, `mean_reward` (recent train episodes), `seconds`, `restarts` (the
            counted restarts per worker), `ps_restarts` (per parameter server), `first_step_seconds` (from `run()`
            to the first trained step a worker reported, timed when it was done; None where none was trained),
            `startup_task` and `startup_seconds` (the worker that trained first and the start-up stamps of that start
            of it, see `worker.Worker.startup`, in seconds from `run()`; before any worker trained, the chief's
            latest), `peak_rss_mb` per process (Linux) and `log_dir`. A run whose own latest checkpoint is at or past
            `max_env_steps` (see `already_trained`) starts no task and says so: `global_step` is that checkpoint's.

        Raises:
            RuntimeError: a worker kept crashing or could not set up, or a parameter server kept dying.
            LogDirInUseError (an OSError): another run holds the log dir.
            KeyboardInterrupt: after stopping everything on Ctrl-C (`supervision.StopRequested`, a subclass, on
                SIGTERM).
            NetworkIsolationError (an OSError): `network_isolation` is 'require' and the run cannot be isolated.
        """
        with LogDirLock(self.log_dir):
            try:
                return self._run()
            finally:
                if not self.shared_log_dir:  # (the nodes of a hand-started cluster may still read it)
                    shutil.rmtree(os.path.join(self.log_dir, CACHE_DIR), ignore_errors=True)

    def _run(self):
        start = time.time()
        reached = self.already_trained()
        if reached is not None:
            self.log.notice('the run is at step {} already, at or past max_env_steps {}: nothing to train'.format(
                reached, self.max_env_steps))
            return dict(self.summary(start), global_step=reached, completed=True)
        context = task_context(self.cluster_config['start_method'])
        progress = context.Queue()
        self.log.notice('cluster {}; logs and checkpoints in {}'.format(self.cluster_spec, self.log_dir))
        stop_handlers = {signal.SIGTERM: stop_on_signal}
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            stop_handlers[signal.SIGINT] = stop_on_signal
        with signals_handled(stop_handlers):
            try:
                with ctrl_c_held():
                    self.namespace_holder = isolate_cluster(self.cluster_config['network_isolation'],
                                                            self.cluster_spec, self.log)
                for task in range(len(self.cluster_spec['ps'])):
                    self._start(context, 'ps', task, None)
                for task in range(len(self.cluster_spec['worker'])):
                    self._start(context, 'worker', task, progress)
                self._supervise(context, progress, start)
            finally:
                self._stop_all_uninterrupted()
                if self.namespace_holder is not None:
                    self.namespace_holder.close()
        self._print_progress(start, final=True)
        result = self.summary(start)
        if not result['completed']:
            self.log.warning('the workers stopped at env step {} of {}: they were stopped from outside the launcher '
                             '(a signal); {}'.format(result['global_step'], self.max_env_steps,
                                                     self.checkpoint_report()))
        return result

    def already_trained(self):
        """The global step of the run's own latest checkpoint where it is at or past `max_env_steps` (`run()` has
        nothing to train), else None; None too for a run from a pre-trained model (`initial_ckpt_dir`), whose global
        step starts again at 0."""
        if self.initial_ckpt_dir:
            return None
        step = checkpoint_step(latest_checkpoint(self.current_ckpt_dir))
        return step if step is not None and step >= self.max_env_steps else None

    def checkpoint_report(self):
        """One line on the run's latest checkpoint: where it is and its step, or that none was written."""
        return checkpoint_report(self.current_ckpt_dir)

    # ------------------------------------------------------------------------------------------------ report

    def summary(self, start):
        """Current totals from the workers' progress reports."""
        reports = list(self.progress.values())
        rewards = [reward for report in reports for reward in report['recent_rewards']]
        global_step = max((report['step'] for report in reports), default=0)
        startup_task, startup = self._startup()
        return {
            'global_step': global_step,
            'completed': global_step >= self.max_env_steps,
            'episodes': sum(report['episodes'] for report in reports) + sum(self.episodes_before_restart.values()),
            'mean_reward': float(np.mean(rewards)) if rewards else None,
            'seconds': time.time() - start,
            'restarts': dict(self.restarts),
            'ps_restarts': dict(self.ps_restarts),
            'first_step_seconds': self.first_step_seconds,
            'startup_task': startup_task,
            'startup_seconds': {phase: stamp - start for phase, stamp in startup.items()},
            'peak_rss_mb': dict({'worker_{}'.format(task): report.get('peak_rss_mb')
                                 for task, report in self.progress.items()},
                                **{'ps_{}'.format(task): rss for task, rss in self.ps_peak_rss_mb.items()}),
            'log_dir': self.log_dir,
        }

    def _startup(self):
        """(task, start-up stamps) of the worker that trained first, as that start of it reported them; before any
        trained, worker 0's latest ({} before it reports)."""
        if self.first_trained is not None:
            return self.first_trained
        return 0, self.progress.get(0, {}).get('startup', {})

    def _print_progress(self, start, final=False):
        """Shows the workers' latest totals on the progress display (where `show_progress`, from their first report
        on; it shows them when due, see `btgym_aac.progress`); `final` ends the display.

        Args:
            start: time.time() at the start of `run()`.
            final: the run has ended.
        """
        if not self.show_progress:
            return
        if self.progress:
            if self.display is None:
                self.display = Progress('env step', self.max_env_steps, sys.stdout, self.progress_seconds)
            info = self.summary(start)
            reward = '{:+.3f}'.format(info['mean_reward']) if info['mean_reward'] is not None else '-'
            self.display.update(info['global_step'], 'episodes {} | mean reward {}'.format(info['episodes'], reward))
        if final and self.display is not None:
            self.display.close()
            self.display = None

    def export_checkpoint(self, save_path):
        """Copies the latest checkpoint of this run to `save_path` (usable as `initial_ckpt_dir`).

        Returns:
            path prefix of the exported checkpoint.
        """
        return export_checkpoint(self.current_ckpt_dir, save_path)


def make_launcher(configs, **overrides):
    """A Launcher from `configs` (the dicts of `run_config.default_configs`'s layout) and Launcher keyword
    overrides (over `configs['launcher_config']`).

    Raises:
        ValueError: `launcher_config` has a key the Launcher does not take.
    """
    kwargs = dict(configs.get('launcher_config') or {}, **overrides)
    known = inspect.signature(Launcher).parameters
    unknown = sorted(set(kwargs) - set(known))
    if unknown:
        raise ValueError('launcher_config has unknown key(s) {}; Launcher takes {}'.format(
            ', '.join(unknown), ', '.join(name for name in known if not name.endswith('_config'))))
    return Launcher(env_config=configs['env_config'], cluster_config=configs['cluster_config'],
                    policy_config=configs['policy_config'], trainer_config=configs['trainer_config'], **kwargs)
