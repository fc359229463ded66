"""Launcher: starts a parameter-server + workers cluster as spawned processes and runs it to `max_env_steps`.

`run()` returns when the workers reach `max_env_steps` (they save, close their environments and exit; the
parameter servers are then stopped). A worker that dies is reported with its exit status and restarted, up to
`max_restarts` times, and so is one that stops reporting progress for `stall_seconds`. Ctrl-C or SIGTERM stops
everything cleanly (the chief saves first), and no task outlives the launcher. Only processes this launcher
started are ever stopped. A launcher holds its log dir's lock (`log_dir_lock`) while it empties the folder and
while it runs, so a second run on the same log dir is refused instead of overwriting the first one's checkpoints.
Its tasks run in a private network namespace (`network_namespace`), so their TensorFlow ports, which take any
graph from anyone, cannot be reached from outside the run.
"""
import contextlib
import copy
import multiprocessing
import os
import pickle
import queue
import re
import shutil
import signal
import sys
import threading
import time

import numpy as np

from btgym_aac.config_modules import dumps_with_sources
from btgym_aac.data.shared import CACHE_DIR, publish
from btgym_aac.distributed.checkpoints import (check_checkpoint_readable, export_checkpoint, is_within,
                                               latest_checkpoint, resumable_checkpoint)
from btgym_aac.distributed.cluster import make_cluster_spec, spec_ports
from btgym_aac.distributed.log_dir_lock import LOCK_FILE, LogDirLock
from btgym_aac.distributed.network_namespace import (JOIN_FAILED_EXIT_CODE, NamespaceHolder, NetworkIsolationError,
                                                     check_isolation_mode, isolation_obstacle, open_ports_warning)
from btgym_aac.distributed.run_config import RUN_CONFIG_FILE, pickle_run_config
from btgym_aac.distributed.task_process import (NON_FINITE_EXIT_CODE, SESSION_LOST_EXIT_CODE,
                                                SETUP_FAILED_EXIT_CODE, run_pickled_task)
from btgym_aac.logs import get_logger
from btgym_aac.paths import file_in_the_way
from btgym_aac.validation import check_whole_number, is_finite_real

STOP_GRACE_SECONDS = 60
STALL_STOP_SECONDS = 10
POLL_SECONDS = 0.5
PS_DEATH_WAIT_SECONDS = 3.0


def _default_configs():
    from btgym_aac.algorithms.aac import A3C
    from btgym_aac.algorithms.policy import BaseAacPolicy
    from btgym_aac.env import BTgymEnv

    return dict(
        env_config={'class_ref': BTgymEnv, 'kwargs': {}},
        cluster_config={'host': '127.0.0.1', 'port': None, 'num_workers': 1, 'num_ps': 1, 'num_envs': 1,
                        'log_dir': './tmp/btgym_aac_log', 'initial_ckpt_dir': None,
                        'log_ckpt_subdir': 'current_train_checkpoint', 'network_isolation': 'auto'},
        policy_config={'class_ref': BaseAacPolicy, 'kwargs': {'lstm_layers': (256,)}},
        trainer_config={'class_ref': A3C, 'kwargs': {}},
    )


class StopRequested(KeyboardInterrupt):
    """SIGTERM reached the launcher during `run()`: the run stops as on Ctrl-C (the chief saves)."""


def _stop_on_signal(signum, frame):
    """Handler of Ctrl-C and SIGTERM during `run()`: ignores both from now on (a second one must not cut the
    stop short) and raises KeyboardInterrupt, or StopRequested for SIGTERM."""
    for ignored in (signal.SIGINT, signal.SIGTERM):
        signal.signal(ignored, signal.SIG_IGN)
    raise StopRequested('SIGTERM') if signum == signal.SIGTERM else KeyboardInterrupt()


def _positive_seconds(name, value):
    """`value` if it is a finite number of seconds > 0, else ValueError naming the setting."""
    if not is_finite_real(value) or value <= 0:
        raise ValueError('{} must be a positive number of seconds, got {!r}'.format(name, value))
    return value


def _check_cluster_config(config, known):
    """Raises ValueError naming an unknown `cluster_config` key or a `log_dir`, `log_ckpt_subdir` or `host` of the
    wrong kind."""
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise ValueError('unknown cluster_config key(s) {}; known: {}'.format(unknown, sorted(known)))
    if not isinstance(config['log_dir'], (str, os.PathLike)) or not str(config['log_dir']).strip():
        raise ValueError('cluster_config log_dir is empty or not a path: name the folder for logs and checkpoints, '
                         'got {!r}'.format(config['log_dir']))
    subdir = config['log_ckpt_subdir']
    if not isinstance(subdir, str) or not subdir.strip('/') or os.path.normpath(subdir.strip('/')).startswith('..'):
        raise ValueError('cluster_config log_ckpt_subdir must be a folder name inside the log dir, got {!r}'.format(
            subdir))
    if not isinstance(config['host'], str) or not config['host'].strip():
        raise ValueError('cluster_config host must be a host name or address, got {!r}'.format(config['host']))
    check_isolation_mode(config['network_isolation'])


def _read_data_files(env_config):
    """Reads the data files named by `env_config` (its `filename`, or its `dataset`'s) once, so that a missing or
    unusable file stops the run here, before any task starts (see `data.parsing.read_ohlcv` and `data.sanity`).

    Returns:
        (their bars as a DataFrame, their `data.shared.source_key`), or None when the env names no data files.

    Raises:
        FileNotFoundError: a data file is not a file here.
        DataError (a ValueError): a file cannot be read, or fails a data check set to 'error'.
    """
    from btgym_aac.data.parsing import read_ohlcv, resolve_parsing_params
    from btgym_aac.data.shared import source_key

    kwargs = env_config.get('kwargs', {})
    dataset = kwargs.get('dataset')
    filenames = getattr(dataset, 'filename', None) if dataset is not None else kwargs.get('filename')
    parsing_params = getattr(dataset, 'parsing_params', None) if dataset is not None else kwargs.get('parsing_params')
    if not filenames:
        return None
    for filename in [filenames] if isinstance(filenames, (str, os.PathLike)) else filenames:
        if isinstance(filename, (str, os.PathLike)) and not os.path.isfile(filename):
            what = 'is a folder, not a file' if os.path.isdir(filename) else 'does not exist'
            raise FileNotFoundError('data file {!r} (env_config filename) {}'.format(os.fspath(filename), what))
    return read_ohlcv(filenames, parsing_params), source_key(filenames, resolve_parsing_params(parsing_params))


def _peak_rss_mb(pid):
    """Peak resident memory of a process in MB from /proc (None where unavailable)."""
    try:
        with open('/proc/{}/status'.format(pid)) as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


@contextlib.contextmanager
def _signals_handled(handlers):
    """Installs `handlers` ({signal number: handler}) for the block; only in the main thread (elsewhere Python
    cannot set handlers and the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


@contextlib.contextmanager
def _ctrl_c_held():
    """Holds Ctrl-C back for the block and hands it to the previous handler after it: SIGINT is blocked in this
    thread (processes started inside inherit the block), and, in the main thread, one delivered through another
    thread is recorded instead of interrupting the block."""
    received = []
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_handler = signal.signal(signal.SIGINT, lambda *_: received.append(True)) if in_main_thread else None
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if in_main_thread:
            signal.signal(signal.SIGINT, previous_handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)
        if received and callable(previous_handler):
            previous_handler(signal.SIGINT, None)


def merge_config(defaults, update):
    """Recursively merges `update` into a copy of `defaults` (nested dicts key by key, other values replaced).

    Raises:
        ValueError: `update` is not a dict (or None).
    """
    if update is None:
        return copy.copy(defaults)
    if not isinstance(update, dict):
        raise ValueError('expected a config dict, got {!r}'.format(update))
    merged = dict(defaults)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_config(merged[key], value)
        else:
            merged[key] = value
    return merged


class Launcher:
    """Distributed training session of one host (or one process per node with `btgym-aac cluster-node`).

    Args:
        env_config: {'class_ref': env class, 'kwargs': dict}.
        cluster_config: dict with `host`, `port` (first port, None: free ports), `num_workers`, `num_ps`,
            `num_envs` (per worker), `log_dir`, `initial_ckpt_dir` (pre-trained model), `log_ckpt_subdir`,
            `network_isolation`: 'auto' (default) runs every task in a private network namespace where the system
            allows it (Linux; see `network_namespace`) and warns where not, 'require' refuses to run without it
            (NetworkIsolationError), 'off' neither isolates nor warns.
        policy_config: {'class_ref', 'kwargs'} of the policy.
        trainer_config: {'class_ref', 'kwargs'} of the trainer (A3C, Unreal, PPO, ...).
        max_env_steps: training length in env steps over all workers.
        save_secs: seconds between the chief's checkpoints.
        root_random_seed: seeds every task (None: random).
        test_mode: train on gymnasium test environments.
        purge_previous: what to do with an existing log_dir: 0 keep it (resume from its checkpoint), 1 ask (only
            when run interactively), 2 delete its contents.
        render_last_env: render only the chief's last env (else all the chief's envs).
        log_level, verbose: logging (0 notice, 1 info, 2 debug).
        max_restarts: restarts allowed per worker task after a crash or a stall (a worker that cannot set up is
            never restarted: the run stops, see `worker.WorkerSetupError`; nor is one that dies before training
            of the same error as before its last restart).
        stall_seconds: a worker that has reported training progress and then reports nothing for this long (a
            deadlocked env, say) is stopped and restarted like a crashed one; None: never.
        show_progress: print a progress line.
        cluster_spec: a ready cluster dict ({'ps': [...], 'worker': [...]}, e.g. spanning hosts) instead of the
            one made from `cluster_config`.
        shared_log_dir: True for a node of a hand-started cluster (`btgym-aac cluster-node`), whose tasks share
            the log dir: construction then takes no lock on it (`run()` still does) and never empties it
            (`purge_previous` must be 0).
    """

    def __init__(self, env_config=None, cluster_config=None, policy_config=None, trainer_config=None,
                 max_env_steps=100e6, save_secs=600, root_random_seed=None, test_mode=False, purge_previous=0,
                 render_last_env=True, log_level=None, verbose=0, max_restarts=3, show_progress=True,
                 cluster_spec=None, stall_seconds=300, shared_log_dir=False):
        self.log = get_logger('Launcher', 'shell', verbose, log_level)
        self.log_level = self.log.level
        defaults = _default_configs()
        self.env_config = merge_config(defaults['env_config'], env_config)
        self.cluster_config = merge_config(defaults['cluster_config'], cluster_config)
        self.policy_config = merge_config(defaults['policy_config'], policy_config)
        self.trainer_config = merge_config(defaults['trainer_config'], trainer_config)
        for name, config in (('env_config', self.env_config), ('policy_config', self.policy_config),
                             ('trainer_config', self.trainer_config)):
            if config.get('class_ref') is None:
                raise ValueError('{} needs a `class_ref`'.format(name))
        _check_cluster_config(self.cluster_config, defaults['cluster_config'])
        self.max_env_steps = check_whole_number('max_env_steps (env steps to train)', max_env_steps, 1)
        for key in ('num_envs', 'num_workers', 'num_ps'):
            self.cluster_config[key] = check_whole_number('cluster_config {}'.format(key), self.cluster_config[key], 1)
        if self.cluster_config['port']:
            self.cluster_config['port'] = check_whole_number('cluster_config port', self.cluster_config['port'], 1)
        self.save_secs = _positive_seconds('save_secs', save_secs)
        self.test_mode = test_mode
        self.render_last_env = render_last_env
        self.max_restarts = check_whole_number('max_restarts', max_restarts, 0)
        self.stall_seconds = None if stall_seconds is None else _positive_seconds('stall_seconds', stall_seconds)
        if purge_previous not in (0, 1, 2) or isinstance(purge_previous, bool):
            raise ValueError('purge_previous must be 0 (keep), 1 (ask) or 2 (delete), got {!r}'.format(
                purge_previous))
        self.show_progress = show_progress
        self.log_dir = os.path.abspath(os.path.expanduser(self.cluster_config['log_dir']))
        self.current_ckpt_dir = os.path.join(self.log_dir, self.cluster_config['log_ckpt_subdir'].strip('/'))
        worker_dirs = [os.path.join(self.log_dir, 'worker_{}'.format(task))
                       for task in range(self.cluster_config['num_workers'])]
        for path in [self.log_dir, self.current_ckpt_dir] + worker_dirs:
            blocking = file_in_the_way(path)
            if blocking is not None:
                raise NotADirectoryError('{} is a file, not a folder for logs and checkpoints'.format(blocking))
        data = _read_data_files(self.env_config)
        initial = self.cluster_config['initial_ckpt_dir']
        self.initial_ckpt_dir = os.path.abspath(os.path.expanduser(initial)) if initial else None
        if self.initial_ckpt_dir:
            initial_checkpoint = latest_checkpoint(self.initial_ckpt_dir)
            if initial_checkpoint is None:
                raise FileNotFoundError('initial_ckpt_dir {!r} holds no checkpoint'.format(self.initial_ckpt_dir))
            check_checkpoint_readable(initial_checkpoint)
        if cluster_spec is None:
            cluster_spec = make_cluster_spec(self.cluster_config['host'], self.cluster_config['port'],
                                             self.cluster_config['num_workers'], self.cluster_config['num_ps'])
        self.cluster_spec = cluster_spec
        try:
            self.pickled_run_config = pickle_run_config(self.run_config())
        except (pickle.PicklingError, AttributeError, TypeError) as error:
            raise ValueError('the configs cannot be passed to the run\'s processes ({}): their classes and functions '
                             'must be importable (defined at the top level of a module)'.format(error)) from error
        if shared_log_dir and purge_previous:
            raise ValueError('a log dir shared by hand-started cluster nodes is never emptied: purge_previous must be '
                             '0, got {!r}'.format(purge_previous))
        with contextlib.nullcontext() if shared_log_dir else LogDirLock(self.log_dir):
            self._prepare_log_dir(purge_previous)
            self.data_cache = [publish(*data, self.log_dir)] if data is not None else []
        del data
        self.shared_log_dir = shared_log_dir
        num_workers = len(cluster_spec['worker'])
        rng = np.random.default_rng(root_random_seed)
        self.task_seeds = [int(seed) for seed in rng.integers(0, 2 ** 30, size=num_workers)]
        self.processes = {}
        self.restarts = {}
        self.progress = {}
        self.last_report_time = {}
        self.episodes_before_restart = {}
        self.last_errors = {}
        self.error_before_restart = {}
        self.first_step_seconds = None
        self.ps_peak_rss_mb = {}
        self.namespace_holder = None

    def _prepare_log_dir(self, purge_previous):
        """Empties the log dir when `purge_previous` says so, else checks its checkpoints can be resumed from."""
        self.purged = False
        os.makedirs(self.log_dir, exist_ok=True)
        if set(os.listdir(self.log_dir)) - {LOCK_FILE}:
            purge = purge_previous == 2
            if purge_previous == 1:
                if not sys.stdin or not sys.stdin.isatty():
                    raise RuntimeError('purge_previous=1 asks before deleting {} but there is no terminal to ask; '
                                       'use purge_previous=0 (keep, resume) or 2 (delete)'.format(self.log_dir))
                purge = input('{} already exists. Delete its contents [y/N]? '.format(self.log_dir)).strip() == 'y'
            if purge:
                self._check_purgeable()
                self.purged = True
                for entry in set(os.listdir(self.log_dir)) - {LOCK_FILE}:
                    path = os.path.join(self.log_dir, entry)
                    shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
                self.log.notice('purged {}'.format(self.log_dir))
        if not self.purged:
            resumable = resumable_checkpoint(self.current_ckpt_dir)  # raises for a damaged state before any task starts
            if resumable is not None:
                check_checkpoint_readable(resumable)

    def _check_purgeable(self):
        """Raises ValueError unless the log dir holds only what runs write, and no input of this run."""
        ckpt_subdir = os.path.relpath(self.current_ckpt_dir, self.log_dir).split(os.sep)[0]
        run_entries = {RUN_CONFIG_FILE, RUN_CONFIG_FILE + '.writing', ckpt_subdir, 'evaluation', LOCK_FILE, CACHE_DIR}
        foreign = sorted(entry for entry in os.listdir(self.log_dir)
                         if entry not in run_entries and not re.fullmatch(r'worker_\d+', entry))
        if foreign:
            raise ValueError('refusing to empty {}: it holds {} besides what a run writes (run_config.pkl, {}, '
                             'worker_N, evaluation); choose another log dir or move them'.format(
                                 self.log_dir, ', '.join(foreign[:5]) + (', ...' if len(foreign) > 5 else ''),
                                 ckpt_subdir))
        if self.initial_ckpt_dir and is_within(self.initial_ckpt_dir, self.log_dir):
            raise ValueError('refusing to empty {}: it holds the initial_ckpt_dir {} of this run'.format(
                self.log_dir, self.initial_ckpt_dir))

    def _log_dir_state(self):
        if self.purged:
            return 'the log dir was emptied at start, as purge_previous asked'
        checkpoint = latest_checkpoint(self.current_ckpt_dir)
        if checkpoint is None:
            return 'the log dir holds no checkpoint'
        return 'the checkpoint in the log dir ({}) is kept'.format(os.path.basename(checkpoint))

    def run_config(self):
        """The configs the chief writes to `<log_dir>/run_config.pkl` once it is set up (see `run_config.py`)."""
        return dict(env_config=self.env_config, policy_config=self.policy_config, trainer_config=self.trainer_config,
                    cluster_config=self.cluster_config, test_mode=self.test_mode)

    def task_config(self, job_name, task):
        """Config of one cluster task, as passed to `worker.run_task`."""
        config = dict(job_name=job_name, task=task, cluster_spec=self.cluster_spec, log_level=self.log_level)
        if job_name == 'worker':
            config.update(
                env_config=self.env_config, policy_config=self.policy_config, trainer_config=self.trainer_config,
                log_dir=self.log_dir, current_ckpt_dir=self.current_ckpt_dir,
                initial_ckpt_dir=self.initial_ckpt_dir, max_env_steps=self.max_env_steps,
                save_secs=self.save_secs, random_seed=self.task_seeds[task],
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
        process = context.Process(target=run_pickled_task, args=(dumps_with_sources(config), progress), name=name)
        self.processes[(job_name, task)] = process
        with _ctrl_c_held():
            process.start()
        return process

    def _isolate_network(self):
        """Starts the holder of the run's private network namespace, as `network_isolation` asks.

        Returns:
            the NamespaceHolder, or None where the run goes on without one (warned of in 'auto' mode).

        Raises:
            NetworkIsolationError: isolation is required and cannot be had.
        """
        mode = self.cluster_config['network_isolation']
        if mode == 'off':
            return None
        reason = isolation_obstacle(self.cluster_spec)
        if reason is None:
            try:
                holder = NamespaceHolder()
            except NetworkIsolationError as error:
                reason = str(error)
            else:
                self.log.notice('the cluster runs in a private network namespace: its ports cannot be reached from '
                                'outside it')
                return holder
        if mode == 'require':
            raise NetworkIsolationError('network_isolation is \'require\' but the cluster cannot be isolated: '
                                        '{}'.format(reason))
        self.log.warning(open_ports_warning(spec_ports(self.cluster_spec), reason))
        return None

    def run(self):
        """Starts the cluster and trains to `max_env_steps`.

        Returns:
            dict with `global_step`, `completed` (False where every worker was stopped by a signal from outside
            before `max_env_steps`), `episodes`, `mean_reward` (recent train episodes), `seconds`, `restarts`,
            `first_step_seconds` (from `run()` to the first progress report of a trained step; None where
            none was trained), `peak_rss_mb` per process (Linux) and `log_dir`.

        Raises:
            RuntimeError: a worker kept crashing, could not set up, or a parameter server died.
            LogDirInUseError (an OSError): another run holds the log dir.
            KeyboardInterrupt: after stopping everything on Ctrl-C (`StopRequested`, a subclass, on SIGTERM).
            NetworkIsolationError (an OSError): `network_isolation` is 'require' and the run cannot be isolated.
        """
        with LogDirLock(self.log_dir):
            try:
                return self._run()
            finally:
                if not self.shared_log_dir:  # (the nodes of a hand-started cluster may still read it)
                    shutil.rmtree(os.path.join(self.log_dir, CACHE_DIR), ignore_errors=True)

    def _run(self):
        context = multiprocessing.get_context('spawn')
        progress = context.Queue()
        start = time.time()
        self.log.notice('cluster {}; logs and checkpoints in {}'.format(self.cluster_spec, self.log_dir))
        stop_handlers = {signal.SIGTERM: _stop_on_signal}
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            stop_handlers[signal.SIGINT] = _stop_on_signal
        with _signals_handled(stop_handlers):
            try:
                with _ctrl_c_held():
                    self.namespace_holder = self._isolate_network()
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

    def checkpoint_report(self):
        """One line on the run's latest checkpoint: where it is and its step, or that none was written."""
        try:
            path = latest_checkpoint(self.current_ckpt_dir)
        except ValueError:
            path = None
        if path is None:
            return 'no checkpoint was written in {}'.format(self.current_ckpt_dir)
        return 'the latest checkpoint, {}, is in {}'.format(os.path.basename(path), self.current_ckpt_dir)

    def _supervise(self, context, progress, start):
        finished = set()
        num_workers = len(self.cluster_spec['worker'])
        last_print = 0.0
        while len(finished) < num_workers:
            self._drain(progress, start)
            for (job_name, task), process in list(self.processes.items()):
                if process.is_alive() or (job_name, task) in finished:
                    continue
                self._drain(progress, start)  # the error report a dying worker sent
                if process.exitcode == JOIN_FAILED_EXIT_CODE:
                    raise RuntimeError('{} {} could not join the run\'s network namespace (see its message '
                                       'above)'.format(job_name, task))
                if job_name == 'ps':
                    raise RuntimeError('parameter server {} died with exit code {}'.format(task, process.exitcode))
                if process.exitcode == SESSION_LOST_EXIT_CODE:
                    self._raise_if_a_parameter_server_dies()
                if process.exitcode == 0:
                    finished.add((job_name, task))
                    continue
                if process.exitcode == NON_FINITE_EXIT_CODE:
                    raise RuntimeError('worker {} stopped training: it met NaN or inf values (see its message above: a '
                                       'restart would meet them again); {}'.format(task, self._log_dir_state()))
                if process.exitcode == SETUP_FAILED_EXIT_CODE:
                    raise RuntimeError('worker {} could not set up (see its message above: a restart would meet '
                                       'the same problem); {}'.format(task, self._log_dir_state()))
                self._restart(context, task, 'died with exit code {}'.format(process.exitcode), progress)
            for task in self._stalled_workers():
                self._stop_stalled(task)
                self._restart(context, task, 'reported no progress for {} s'.format(self.stall_seconds), progress)
            if self.show_progress and time.time() - last_print >= 2.0:
                self._print_progress(start)
                last_print = time.time()
            time.sleep(POLL_SECONDS)
        self._drain(progress, start)

    def _raise_if_a_parameter_server_dies(self):
        """Waits up to PS_DEATH_WAIT_SECONDS for a parameter server to end, and raises RuntimeError naming it if
        one does: a worker whose cluster session failed may exit before the parameter server that caused it can be
        reaped."""
        deadline = time.monotonic() + PS_DEATH_WAIT_SECONDS
        servers = [(task, process) for (job_name, task), process in self.processes.items() if job_name == 'ps']
        for task, process in servers:
            process.join(max(deadline - time.monotonic(), 0))
            if not process.is_alive():
                raise RuntimeError('parameter server {} died with exit code {}'.format(task, process.exitcode))

    def _stalled_workers(self):
        """Tasks of live workers whose last (unfinished) progress report is older than `stall_seconds`."""
        if self.stall_seconds is None:
            return []
        now = time.time()
        return [task for task, seen in self.last_report_time.items()
                if now - seen > self.stall_seconds and self.processes[('worker', task)].is_alive()
                and not self.progress.get(task, {}).get('finished')]

    def _stop_stalled(self, task):
        process = self.processes[('worker', task)]
        process.terminate()
        process.join(STALL_STOP_SECONDS)
        if process.is_alive():
            process.kill()
            process.join()

    def _restart(self, context, task, reason, progress):
        count = self.restarts.get(task, 0)
        error = self.last_errors.pop(task, None)
        cause = '; its error: {}'.format(error) if error else ''
        self.log.warning('worker {} {}{}'.format(task, reason, cause))
        if count >= self.max_restarts:
            raise RuntimeError('worker {} {} after {} restarts{}; see the log above'.format(task, reason, count, cause))
        trained = self.progress.get(task, {}).get('step', 0) > self.progress.get(task, {}).get('start_step', 0)
        if error and not trained and error == self.error_before_restart.get(task):
            raise RuntimeError('worker {} died again before training, of the same error as before its restart ({}): '
                               'a restart would meet it again; {}'.format(task, error, self._log_dir_state()))
        self.error_before_restart[task] = error
        self.restarts[task] = count + 1
        self.last_report_time.pop(task, None)
        self.episodes_before_restart[task] = self.episodes_before_restart.get(task, 0) + \
            self.progress.pop(task, {}).get('episodes', 0)
        self.log.notice('restarting worker {} ({} of {})'.format(task, count + 1, self.max_restarts))
        self._start(context, 'worker', task, progress)

    def _drain(self, progress, start):
        while True:
            try:
                report = progress.get_nowait()
            except queue.Empty:
                return
            if 'error' in report:
                self.last_errors[report['task']] = report['error']
                continue
            self.progress[report['task']] = report
            self.last_report_time[report['task']] = time.time()
            if self.first_step_seconds is None and report['step'] > report['start_step']:
                self.first_step_seconds = time.time() - start

    def _stop_all_uninterrupted(self):
        """`_stop_all` with Ctrl-C and SIGTERM ignored (in the main thread), so a second one cannot cut the stop
        short and leave a parameter server running."""
        with _signals_handled({signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: signal.SIG_IGN}):
            self._stop_all()

    def _stop_all(self):
        """Stops the workers (SIGTERM: the chief saves), kills those that hang, then kills the parameter servers
        (they ignore SIGTERM)."""
        for (job, task), process in self.processes.items():
            if job == 'ps' and process.is_alive():
                self.ps_peak_rss_mb[task] = _peak_rss_mb(process.pid)
        workers = [p for (job, _), p in self.processes.items() if job == 'worker' and p.is_alive()]
        for process in workers:
            process.terminate()
        deadline = time.time() + STOP_GRACE_SECONDS
        for process in workers:
            process.join(max(0.1, deadline - time.time()))
        for (job, _), process in self.processes.items():
            if process.pid is None:
                continue
            if process.is_alive():
                if job == 'worker':
                    self.log.warning('{} did not stop in time: killing it'.format(process.name))
                process.kill()
            process.join(10)

    # ------------------------------------------------------------------------------------------------ report

    def summary(self, start):
        """Current totals from the workers' progress reports."""
        reports = list(self.progress.values())
        rewards = [reward for report in reports for reward in report['recent_rewards']]
        global_step = max((report['step'] for report in reports), default=0)
        return {
            'global_step': global_step,
            'completed': global_step >= self.max_env_steps,
            'episodes': sum(report['episodes'] for report in reports) + sum(self.episodes_before_restart.values()),
            'mean_reward': float(np.mean(rewards)) if rewards else None,
            'seconds': time.time() - start,
            'restarts': dict(self.restarts),
            'first_step_seconds': self.first_step_seconds,
            'peak_rss_mb': dict({'worker_{}'.format(task): report.get('peak_rss_mb')
                                 for task, report in self.progress.items()},
                                **{'ps_{}'.format(task): rss for task, rss in self.ps_peak_rss_mb.items()}),
            'log_dir': self.log_dir,
        }

    def _print_progress(self, start, final=False):
        if not self.show_progress:
            return
        info = self.summary(start)
        step, seconds = info['global_step'], info['seconds']
        speed = step / seconds if seconds > 0 else 0.0
        eta = (self.max_env_steps - step) / speed if speed > 0 and step < self.max_env_steps else 0.0
        reward = '{:+.3f}'.format(info['mean_reward']) if info['mean_reward'] is not None else '-'
        line = 'env steps {}/{} | {:.1f} steps/s | episodes {} | mean reward {} | ETA {:.0f}s'.format(
            step, self.max_env_steps, speed, info['episodes'], reward, eta)
        end = '\n' if final or not sys.stdout.isatty() else '\r'
        print(line, end=end, flush=True)

    def export_checkpoint(self, save_path):
        """Copies the latest checkpoint of this run to `save_path` (usable as `initial_ckpt_dir`).

        Returns:
            path prefix of the exported checkpoint.
        """
        return export_checkpoint(self.current_ckpt_dir, save_path)
