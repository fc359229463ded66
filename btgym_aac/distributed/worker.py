"""A cluster task's process, as a launcher (or a cluster node) starts it (see `tasks`): a parameter server that
serves, or a worker that trains, with the signals, exit statuses and launcher reports around them; and a worker's
training: its environments, graph, session, training loop, checkpoints and progress reports.

A worker builds its environments, graph and session; the chief (task 0) alone initialises or restores the global
variables (pre-trained model, else this run's checkpoint, else scratch, then the weights the workers rescued from a
lost parameter server where they are fresher) and then writes the run's configs (`run_config.pkl`); other workers
wait until the global variables are ready. Every worker trains until the global step reaches `max_env_steps`; the
chief saves every `save_secs` and at the end. Workers report progress to the launcher through a queue. A worker
whose cluster session fails writes the weights of its local policy to the log dir before it exits (see
`rescued_weights`).
"""
import os
import resource
import select
import signal
import socket
import sys
import threading
import time
import traceback

from btgym_aac.config_modules import load_with_sources

SETUP_FAILED_EXIT_CODE = 3
NON_FINITE_EXIT_CODE = 5
SESSION_LOST_EXIT_CODE = 6
PROGRESS_SECONDS = 2.0
SESSION_RUN_TIMEOUT_SECONDS = 120
PS_POLL_SECONDS = 0.1
PS_CONNECT_TIMEOUT_SECONDS = 1.0
PS_WAIT_NOTICE_SECONDS = 30.0
CHIEF_WAIT_POLL_SECONDS = 0.2
"""How often a worker other than the chief checks whether the chief has set up the global variables."""
RESCUE_READ_TIMEOUT_SECONDS = 10
"""How long a worker whose cluster session failed may take to read its local policy's weights (`_rescue_weights`)."""


# ---------------------------------------------------------------------------------------------------- the task process

def run_pickled_task(pickled_config, progress_queue=None, surroundings=None):
    """Entry point of a task process a Launcher starts: `run_task` of the config that `pickled_config` holds
    (from `config_modules.dumps_with_sources`, so the classes of a config file are found), in the launcher's
    `surroundings` (a `tasks.LauncherSurroundings`: its environment variables and output streams).

    Such a task ignores Ctrl-C: the launcher, which gets it too, stops its tasks itself (SIGTERM: the chief saves).
    A forked task ignores it from the fork on (see `tasks.prepare_forkserver`); a spawned one is started with
    Ctrl-C blocked, so none interrupts its start-up, and it is unblocked here once ignored (one pending meanwhile
    is dropped).

    The config gets `startup`: when the task started and when its config was loaded (which imports its classes,
    and with them TensorFlow), as `time.time()` stamps (see `Worker.startup`).

    Returns:
        what `run_task` returns.
    """
    started = time.time()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if surroundings is not None:
        surroundings.apply()
    config = load_with_sources(pickled_config)
    config['startup'] = {'started': started, 'imported': time.time()}
    return run_task(config, progress_queue)


def run_task(config, progress_queue=None):
    """Entry point of a cluster task process.

    Args:
        config: dict with `job_name` ('ps' or 'worker'), `task`, `cluster_spec` and, for workers, `env_config`,
            `policy_config`, `trainer_config`, `log_dir`, `current_ckpt_dir`, `initial_ckpt_dir`,
            `max_env_steps`, `save_secs`, `keep_checkpoint_every_steps` (None: none kept), `random_seed`,
            `num_envs`, `render_last_env`, `test_mode`, `log_level`, `run_config` (pickled bytes the chief writes
            to `<log_dir>/run_config.pkl` once set up);
            optional `launcher_pid`: the task was started by that Launcher process and is killed when it dies,
            even by SIGKILL (Linux); such a parameter server ignores Ctrl-C and SIGTERM (sent to a whole process
            group, they would stop it before the chief's last save, which needs it): the launcher kills it last.
        progress_queue: multiprocessing queue for progress reports (worker only), or None.

    Returns:
        for a worker, True when SIGTERM or Ctrl-C stopped it (a parameter server serves until interrupted).

    A worker stops at SIGTERM or Ctrl-C (SIGINT) by finishing its current train step, saving (chief) and closing:
    the signals only set a flag, so they can never cut the final save short. A worker waiting for data from its
    runners stops waiting, so a chief whose environment hangs still saves. A worker started with Ctrl-C ignored
    (its launcher was started in the background by a script) keeps ignoring it, as its launcher does. A session
    run of a worker that takes longer than `SESSION_RUN_TIMEOUT_SECONDS` fails (TensorFlow's gRPC runtime can,
    rarely, leave a step waiting forever for a parameter server's reply); the worker then exits with an error and
    the launcher restarts it.
    """
    from btgym_aac.compat import initialise_devices, tf
    from btgym_aac.logs import get_logger

    initialise_devices()
    log = get_logger('Worker', config['task'], log_level=config.get('log_level'))
    cluster = tf.train.ClusterSpec(config['cluster_spec'])
    if config['job_name'] == 'ps':
        _serve_as_parameter_server(config, cluster, log)
        return None
    stop = threading.Event()
    stop_signals = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        stop_signals.append(signal.SIGINT)
    for signum in stop_signals:
        signal.signal(signum, lambda *_: stop.set())
    if config.get('launcher_pid') is not None:
        _end_with_launcher(config['launcher_pid'])
    server = tf.train.Server(cluster, job_name='worker', task_index=config['task'],
                             config=quiet_threads_config(intra_op_parallelism_threads=1,
                                                         inter_op_parallelism_threads=2))
    try:
        Worker(config, server, log, progress_queue, stop).run()
    except WorkerSetupError as error:
        if error.__cause__ is not None:
            log.debug('traceback of the setup error:\n{}'.format(''.join(traceback.format_exception(error.__cause__))))
        sys.stderr.write('worker {}: {}\n'.format(config['task'], error))
        if progress_queue is not None:  # (the launcher's final message names it too)
            progress_queue.put({'task': config['task'], 'error': str(error)})
            progress_queue.close()
            progress_queue.join_thread()
        sys.exit(SETUP_FAILED_EXIT_CODE)
    except Exception as error:
        _exit_for(error, config['task'], progress_queue)
    return stop.is_set()


def _serve_as_parameter_server(config, cluster, log):
    """Serves parameter server `config['task']` until interrupted; one a Launcher started ignores Ctrl-C and
    SIGTERM and dies with its launcher."""
    from btgym_aac.compat import tf

    if config.get('launcher_pid') is not None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
        _end_with_launcher(config['launcher_pid'])
    server = tf.train.Server(cluster, job_name='ps', task_index=config['task'],
                             config=quiet_threads_config(device_filters=['/job:ps']))
    log.info('parameter server {} started'.format(config['task']))
    _serve_until_interrupted(server)


def _exit_for(error, task, progress_queue):
    """Ends a worker that `error` stopped. NaN or inf: one line, exit NON_FINITE_EXIT_CODE. Otherwise the error is
    reported to the launcher; then a failed cluster session gets one line and exit SESSION_LOST_EXIT_CODE, and
    anything else is re-raised."""
    from btgym_aac.algorithms.acting.env_runner import is_session_failure
    from btgym_aac.logs import error_summary
    from btgym_aac.nonfinite import NonFiniteError

    non_finite = cause_where(error, lambda cause: isinstance(cause, NonFiniteError))
    if non_finite is not None:
        sys.stderr.write('worker {}: {}\n'.format(task, non_finite))
        sys.exit(NON_FINITE_EXIT_CODE)
    _report_error(progress_queue, task, error)
    lost = cause_where(error, is_session_failure)
    if lost is None:
        raise error
    sys.stderr.write('worker {}: its cluster session failed ({}): a task of the cluster is gone or cannot be '
                     'reached\n'.format(task, error_summary(lost)))
    _exit_without_cleanup(progress_queue, SESSION_LOST_EXIT_CODE)


def _exit_without_cleanup(progress_queue, status):
    """Ends the process once its output and queued reports are out, skipping TensorFlow's clean-up: closing a
    session whose parameter server is gone waits on it for minutes."""
    if progress_queue is not None:
        progress_queue.close()
        progress_queue.join_thread()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _report_error(progress_queue, task, error):
    """Tells the launcher (if any) the error a worker is dying of, and where its first cause was raised, so the
    launcher's final message can name it."""
    if progress_queue is not None:
        from btgym_aac.logs import error_summary

        origin = error
        while origin.__cause__ is not None:
            origin = origin.__cause__
        frames = traceback.extract_tb(origin.__traceback__)
        where = ' (raised at {}:{})'.format(frames[-1].filename, frames[-1].lineno) if frames else ''
        progress_queue.put({'task': task, 'error': error_summary(error) + where})


def _serve_until_interrupted(server):
    """Keeps `server` serving in short Python sleeps rather than in `server.join()`, which no signal handler can
    interrupt: Ctrl-C ends a hand-started parameter server (launcher-started ones ignore it). The kernel may hand a
    process's Ctrl-C to any of its threads (one of TensorFlow's, on a busy machine), which does not cut the main
    thread's sleep short; the main thread runs Python's handler when it next wakes, within a second."""
    while server is not None:
        time.sleep(1.0)


def _end_with_launcher(launcher_pid):
    """Has this process killed (SIGKILL) when its launcher dies, so no task outlives it (the parameter servers die
    with the launcher, so a chief could not save anyway); exits at once when the launcher is already gone. Linux
    only; does nothing on other systems.

    A task the launcher started itself gets the parent-death signal. The parent of one forked by the launcher's
    forkserver (see `tasks`) is the forkserver, which lives on while any of its tasks does: a thread of the task
    watches the launcher instead.
    """
    if not sys.platform.startswith('linux'):
        return
    parent = os.getppid()
    if parent == launcher_pid:
        import ctypes

        set_parent_death_signal = 1  # PR_SET_PDEATHSIG
        ctypes.CDLL(None).prctl(set_parent_death_signal, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != launcher_pid:
            os._exit(1)
        return
    try:
        launcher = os.pidfd_open(launcher_pid)
    except ProcessLookupError:
        os._exit(1)
    except OSError:  # a kernel without pidfds (before Linux 5.3): the thread looks every second instead
        launcher = None
    if _parent_of(parent) != launcher_pid:  # gone (its pid maybe someone else's now): the forkserver was reparented
        os._exit(1)
    threading.Thread(target=_die_with, args=(launcher, parent, launcher_pid), name='launcher-watch',
                     daemon=True).start()


def _die_with(launcher_pidfd, forkserver_pid, launcher_pid):
    """Kills this process once its launcher has ended: when `launcher_pidfd` becomes readable, or, without one,
    when the forkserver's parent is no longer the launcher (it was reparented)."""
    if launcher_pidfd is not None:
        select.select([launcher_pidfd], [], [])
    else:
        while _parent_of(forkserver_pid) == launcher_pid:
            time.sleep(1)
    os.kill(os.getpid(), signal.SIGKILL)


def _parent_of(pid):
    """The parent process id of process `pid` (Linux), or None when it cannot be read."""
    try:
        with open('/proc/{}/stat'.format(pid)) as stat:
            return int(stat.read().rpartition(')')[2].split()[1])
    except (OSError, ValueError, IndexError):
        return None


# ---------------------------------------------------------------------------------------------------------- the worker

class WorkerSetupError(RuntimeError):
    """A worker could not make its environments, build its trainer or restore its checkpoint: causes that a restart
    would meet again (or, for a checkpoint, work around by training from scratch over it)."""


def _setup_error(what, error):
    """WorkerSetupError saying `what` failed, with the type and first line of `error` and where it was raised."""
    from btgym_aac.logs import error_summary

    frames = traceback.extract_tb(error.__traceback__)
    where = '; raised at {}:{}'.format(frames[-1].filename, frames[-1].lineno) if frames else ''
    return WorkerSetupError('{} ({}{})'.format(what, error_summary(error), where))


def cause_where(error, test):
    """The first of `error` and its causes and contexts (a runner's error carries the env's) that passes `test`,
    or None."""
    while error is not None:
        if test(error):
            return error
        error = error.__cause__ or error.__context__
    return None


def load_values(sess, values):
    """Assigns every (variable, value) pair of `values` in one session run through the variables' initializers, as
    `Variable.load` does: no op is added to the graph (a worker's is finalised)."""
    sess.run([variable.initializer for variable, _ in values],
             feed_dict={variable.initializer.inputs[1]: value for variable, value in values})


def _accepts_connections(address):
    """True if a TCP connection to `address` ('host:port') succeeds now."""
    host, _, port = address.rpartition(':')
    try:
        with socket.create_connection((host, int(port)), timeout=PS_CONNECT_TIMEOUT_SECONDS):
            return True
    except OSError:
        return False


def quiet_threads_config(**kwargs):
    """`session_config(**kwargs)` whose idle TensorFlow threads sleep at once instead of spinning: on a machine with
    a core per worker, spinning pool threads of one process take CPU from the other processes' env runners."""
    from btgym_aac.algorithms.common.sessions import session_config

    config = session_config(**kwargs)
    config.experimental.disable_thread_spinning = True
    return config


def worker_session_config(task):
    """Session config of worker `task`: sees only the parameter servers and itself, one intra-op thread, idle
    threads that do not spin, and session runs that fail after `SESSION_RUN_TIMEOUT_SECONDS`."""
    return quiet_threads_config(
        device_filters=['/job:ps', '/job:worker/task:{}/cpu:0'.format(task)],
        intra_op_parallelism_threads=1, inter_op_parallelism_threads=2,
        operation_timeout_in_ms=SESSION_RUN_TIMEOUT_SECONDS * 1000)


def _env_kwargs(config, index):
    """Per-env kwargs: task number, rendering (chief's last env only when `render_last_env`), seed."""
    from btgym_aac.env.training_envs import env_seed_kwargs, training_env_config

    env_config = training_env_config(config['env_config'])
    kwargs = dict(env_config.get('kwargs', {}))
    num_envs, task = config['num_envs'], config['task']
    render = task == 0 and (index == num_envs - 1 if config['render_last_env'] else True)
    kwargs['render_enabled'] = bool(kwargs.get('render_enabled', True)) and render
    kwargs['task'] = task + 0.01 * index if num_envs > 1 else task
    seed = None if config['random_seed'] is None else config['random_seed'] + index
    kwargs.update(env_seed_kwargs(env_config, seed))
    return kwargs


class Worker:
    """Training loop of one worker task (see the module docstring).

    Args:
        config: see `run_task`.
        server: this task's tf.train.Server.
        log: logbook logger.
        progress_queue: multiprocessing queue or None.
        stop: threading.Event set to stop training (None: never).

    Attribute `startup`: `time.time()` stamps of its start-up, sent with every progress report: `started` and
    `imported` (from `config['startup']`, where given), `envs_made`, `graph_built`, `session_ready`, `first_step`.
    Attribute `took_rescued_weights`: the chief set the global policy from weights rescued from a lost parameter
    server (see `_take_rescued_weights`).
    """

    def __init__(self, config, server, log, progress_queue=None, stop=None):
        self.config = config
        self.stop = stop or threading.Event()
        self.server = server
        self.log = log
        self.progress_queue = progress_queue
        self.task = config['task']
        self.is_chief = self.task == 0
        self.envs = []
        self.start_step = self.step = None
        self.startup = dict(config.get('startup', {}))
        self.took_rescued_weights = False

    def run(self):
        from btgym_aac.env.training_envs import EpisodeRecorder
        from btgym_aac.data.shared import register

        register(self.config.get('data_cache'))  # the envs map the launcher's copy of the data files
        try:
            env_config = self.config['env_config']
            for index in range(self.config['num_envs']):
                try:
                    env = env_config['class_ref'](**_env_kwargs(self.config, index))
                except Exception as error:
                    raise _setup_error('cannot make environment {} from env_config'.format(index), error) from error
                self.envs.append(EpisodeRecorder(env))
            self.startup['envs_made'] = time.time()
            self._train()
        finally:
            for env in self.envs:
                env.close()

    def _build(self):
        from btgym_aac.compat import tf
        from btgym_aac.distributed.checkpoints import FastSaver

        config = self.config
        trainer_config = config['trainer_config']
        trainer_kwargs = dict(trainer_config.get('kwargs', {}), test_mode=config['test_mode'])
        trainer_kwargs.setdefault('log_level', config.get('log_level'))
        self.trainer = trainer_config['class_ref'](
            env=self.envs, task=self.task, policy_config=config['policy_config'],
            cluster_spec=config['cluster_spec'], random_seed=config['random_seed'], **trainer_kwargs)
        global_vars = [v for v in tf.global_variables() if 'local' not in v.name]
        local_vars = [v for v in tf.global_variables() if 'local' in v.name] + tf.local_variables()
        global_step = self.trainer.global_step
        with tf.device(global_step.device):
            self.saved_step = tf.Variable(0, dtype=global_step.dtype.base_dtype, trainable=False,
                                          name='saved_global_step', collections=[])
        self.snapshot_step = self.saved_step.assign(global_step)
        saved = {variable.op.name: self.saved_step if variable is global_step else variable for variable in global_vars}
        self.saver = FastSaver(var_list=saved, max_to_keep=2, save_relative_paths=True)
        self.kept_saver = FastSaver(var_list=saved, max_to_keep=None, save_relative_paths=True) \
            if self.is_chief and config.get('keep_checkpoint_every_steps') else None
        self.resume_step = global_step.assign(self.saved_step)
        self.float_globals = [(variable.op.name, variable) for variable in global_vars
                              if variable.dtype.base_dtype.is_floating]
        self.policy_pairs = list(zip(self.trainer.local_network.var_list, self.trainer.network.var_list)) \
            if self.trainer.learner is not None else []
        self.init_op = tf.variables_initializer(global_vars)
        self.local_init_op = tf.variables_initializer(local_vars)
        with tf.device('/job:ps/task:0'):
            self.chief_ready = tf.Variable(True, trainable=False, name='chief_ready', collections=[])
        self.ready_op = tf.report_uninitialized_variables(global_vars + [self.chief_ready])
        self.ready_op.mark_used()  # a worker stopped before its session never runs it: no "never used" dump
        self.session_config = worker_session_config(self.task)

    def _wait_for_parameter_servers(self):
        """Waits until every parameter server accepts connections, in Python so that a stop is seen (TensorFlow's
        session creation would block unseen); says what it waits for at once and every `PS_WAIT_NOTICE_SECONDS`.

        Returns:
            False if a stop was requested first.
        """
        pending = list(self.config['cluster_spec']['ps'])
        last_notice = 0.0
        while True:
            pending = [address for address in pending if not _accepts_connections(address)]
            if not pending:
                return True
            if time.time() - last_notice >= PS_WAIT_NOTICE_SECONDS:
                self.log.notice('waiting for parameter server(s) {} to accept connections'.format(pending))
                last_notice = time.time()
            if self.stop.wait(PS_POLL_SECONDS):
                return False

    def _chief_session(self):
        """The chief initialises and restores the global variables unless the parameter server has them from a
        chief that finished doing so: `chief_ready` (on the parameter server, never saved) is initialised only
        after the restore, so a chief that died in between is followed by one that restores again, and the
        other workers wait for it. Unless it starts from a pre-trained model, it then takes the weights the
        workers rescued from a lost parameter server where they are fresher (`_take_rescued_weights`)."""
        from btgym_aac.compat import tf
        from btgym_aac.distributed.checkpoints import recover_checkpoints, remove_save_leftovers, restore_order

        sess = tf.Session(self.server.target, config=self.session_config)
        uninitialized = sess.run(self.ready_op)
        if len(uninitialized) == 0:
            self.log.notice('global variables are live on the parameter server: rejoining')
        else:
            sess.run(self.init_op)
            try:
                restored = restore_order(sess, self.saver, self.trainer.reset_global_step,
                                         self.config['initial_ckpt_dir'], self.config['current_ckpt_dir'], self.log,
                                         resume_step=self.resume_step)
            except (tf.errors.OpError, ValueError) as error:
                raise _setup_error(
                    'cannot restore the checkpoint in {}; it is left as it is. Point the run at a new log dir (or '
                    'start fresh) to train from scratch, or use the policy and trainer configs the checkpoint was '
                    'made with'.format(self.config['initial_ckpt_dir'] or self.config['current_ckpt_dir']),
                    error) from error
            if restored != 'pre-trained':
                self._take_rescued_weights(sess, restored)
            sess.run(self.chief_ready.initializer)
        remove_save_leftovers(self.config['current_ckpt_dir'], self.log)
        recover_checkpoints(self.saver, self.config['current_ckpt_dir'])
        sess.run(self.local_init_op)
        return sess

    def _take_rescued_weights(self, sess, restored):
        """Assigns the freshest weights the workers rescued from a lost parameter server to the global policy, and
        their step to the global step, where that step is past the one restored (the optimizer's state stays the
        checkpoint's); weights that do not fit the policy (a name or a shape) are warned of and left alone.

        Args:
            sess: the chief's session, its global variables restored.
            restored: how they were, 'resumed' (this run's checkpoint) or 'scratch' (see `restore_order`).
        """
        from btgym_aac.distributed.rescued_weights import freshest_rescued_weights, mismatches

        restored_step = int(sess.run(self.trainer.global_step))
        rescued = freshest_rescued_weights(self.config['log_dir'], restored_step, self.log)
        if rescued is None:
            return
        origin = 'the checkpoint at step {}'.format(restored_step) if restored == 'resumed' else 'scratch'
        problems = mismatches(rescued.weights, {local.op.name: local.get_shape().as_list()
                                                for local, _ in self.policy_pairs})
        if problems:
            self.log.warning('the weights worker {} rescued at step {} ({}) do not fit this run\'s policy: {}; they '
                             'are ignored and training goes on from {}'.format(
                                 rescued.task, rescued.step, rescued.path, '; '.join(problems), origin))
            return
        load_values(sess, [(global_variable, rescued.weights[local.op.name])
                           for local, global_variable in self.policy_pairs] +
                    [(self.trainer.global_step, rescued.step)])
        self.took_rescued_weights = True
        self.log.notice('took the weights worker {} held at step {} ({}) over {}: {} env steps saved'.format(
            rescued.task, rescued.step, rescued.path, origin, rescued.step - restored_step))

    def _worker_session(self):
        from btgym_aac.compat import tf

        manager = tf.train.SessionManager(local_init_op=self.local_init_op, ready_op=self.ready_op,
                                          ready_for_local_init_op=self.ready_op,
                                          recovery_wait_secs=CHIEF_WAIT_POLL_SECONDS)
        return manager.wait_for_session(self.server.target, config=self.session_config, max_wait_secs=600)

    def _train(self):
        from btgym_aac.compat import tf

        graph = tf.Graph()
        with graph.as_default():
            try:
                self._build()
            except Exception as error:
                raise _setup_error('cannot build the trainer and policy from trainer_config and policy_config',
                                   error) from error
        graph.finalize()
        self.startup['graph_built'] = time.time()
        if not self._wait_for_parameter_servers():
            self.log.notice('stop requested while waiting for the parameter servers')
            return
        with graph.as_default():
            sess = self._chief_session() if self.is_chief else self._worker_session()
        self.startup['session_ready'] = time.time()
        if self.is_chief:
            self._write_run_config()
        summary_dir = os.path.join(self.config['log_dir'], 'worker_{}'.format(self.task))
        self._train_in(sess, tf.summary.FileWriter(summary_dir), graph if self.is_chief else None)

    def _write_run_config(self):
        from btgym_aac.distributed.run_config import write_run_config

        try:
            write_run_config(self.config['log_dir'], self.config['run_config'])
        except OSError as error:
            raise _setup_error('cannot write the run config to {}'.format(self.config['log_dir']), error) from error

    def _train_in(self, sess, writer, graph=None):
        """Trains to `max_env_steps` (see `learner.train_until`), the chief saving every `save_secs` (and at its
        first step where it took rescued weights, which no checkpoint holds yet) and every worker reporting
        progress every PROGRESS_SECONDS; then ends (see `_end_training`). `graph` (the chief's) goes to the
        summary `writer` for TensorBoard after the first trained step, off the start-up's critical path."""
        from btgym_aac.algorithms.learner import train_until

        from btgym_aac.distributed.checkpoints import CHECKPOINT_PREFIX, KEPT_CHECKPOINT_DIR

        ckpt_path = os.path.join(self.config['current_ckpt_dir'], CHECKPOINT_PREFIX)
        kept_path = os.path.join(self.config['log_dir'], KEPT_CHECKPOINT_DIR, CHECKPOINT_PREFIX)
        keep_every = self.config.get('keep_checkpoint_every_steps')
        self.trainer.start(sess, writer, stop_event=self.stop)
        self.start_step = self.step = int(sess.run(self.trainer.global_step))
        self.log.notice('started at global step {}'.format(self.step))
        start_time = time.time()
        times = {'save': 0.0 if self.took_rescued_weights else start_time, 'report': 0.0}
        next_kept = (self.step // keep_every + 1) * keep_every if keep_every else None

        def after_step(step):
            nonlocal next_kept
            self.step, now = step, time.time()
            if 'first_step' not in self.startup:
                self.startup['first_step'] = now
                if graph is not None:
                    writer.add_graph(graph)
            if self.kept_saver is not None and step >= next_kept:
                self._save(sess, kept_path, start_time, self.kept_saver)
                next_kept = (step // keep_every + 1) * keep_every
            if self.is_chief and now - times['save'] >= self.config['save_secs']:
                self._save(sess, ckpt_path, start_time)
                times['save'] = now
            if now - times['report'] >= PROGRESS_SECONDS:
                self._report(step, now - start_time)
                times['report'] = now

        failure = None
        try:
            self.step, _ = train_until(self.trainer, sess, self.config['max_env_steps'], self.stop, after_step)
        except BaseException as error:
            failure = error
            raise
        finally:
            self._end_training(sess, writer, ckpt_path, self.step, start_time, failure)
        if not self.stop.is_set():
            self.log.notice('reached {} steps, exiting'.format(self.step))

    def _end_training(self, sess, writer, ckpt_path, step, start_time, failure):
        """Stops the runners (first: after a `failure`, the first cause being raised, they would add errors of their
        own), saves (chief) and reports the end, and always closes the writer and the session. After a failed
        cluster session the chief does not try to save (the parameter server it would read is gone); a final save
        that fails after another `failure` is logged, not raised over it.
        """
        from btgym_aac.algorithms.acting.env_runner import is_session_failure
        from btgym_aac.logs import error_summary

        session_lost = failure is not None and cause_where(failure, is_session_failure) is not None
        self.trainer.stop()
        if session_lost:
            self._rescue_weights()
        try:
            if self.stop.is_set():
                self.log.notice('stop requested at step {}'.format(step))
            if self.is_chief and not session_lost:
                self._save(sess, ckpt_path, start_time)
            self._report(step, time.time() - start_time, finished=True)
        except Exception as error:
            if failure is None:
                raise
            self.log.warning('no final checkpoint ({}); the run failed first of {}'.format(
                error_summary(error), error_summary(failure)))
        finally:
            writer.close()
            if not session_lost:
                sess.close()  # (closing a failed cluster session waits on its lost tasks: the process ends instead)

    def _rescue_weights(self):
        """After its cluster session failed: writes the local policy's weights, with the global step of the sync
        they come from, to the log dir (`rescued_weights.write_rescued_weights`) for the chief that restores the
        global variables on the restarted parameter server; says so, or why nothing was written."""
        import numpy as np

        from btgym_aac.compat import tf
        from btgym_aac.distributed.rescued_weights import write_rescued_weights
        from btgym_aac.logs import error_summary

        step = self.trainer.learner.synced_global_step if self.trainer.learner is not None else None
        if step is None:
            self.log.notice('no weights synced from the global policy yet: nothing rescued')
            return
        local_variables = [local for local, _ in self.policy_pairs]
        try:
            values = self._read_on_own_device(local_variables)
        except tf.errors.OpError as error:
            self.log.warning('cannot read the local policy\'s weights ({}): nothing rescued'.format(
                error_summary(error)))
            return
        if not all(np.all(np.isfinite(value)) for value in values if np.issubdtype(value.dtype, np.floating)):
            self.log.warning('the local policy\'s weights hold NaN or inf: nothing rescued')
            return
        try:
            path = write_rescued_weights(self.config['log_dir'], self.task, step,
                                         {local.op.name: value for local, value in zip(local_variables, values)})
        except OSError as error:
            self.log.warning('cannot write the local policy\'s weights ({}): nothing rescued'.format(
                error_summary(error)))
            return
        self.log.notice('rescued the weights of its last sync, at step {}, to {}'.format(step, path))

    def _read_on_own_device(self, variables):
        """The values of `variables`, which live on this worker's own device, read in a session that sees that
        device alone and fails after `RESCUE_READ_TIMEOUT_SECONDS`. Its graph holds one variable op of the same name,
        type, shape and device per variable: the server keeps a variable's value by its name for all the sessions
        it serves (as it keeps the global ones for every worker). The failed cluster session is not used: it would
        clean up its partitions on the lost parameter server, logging errors."""
        from btgym_aac.compat import tf

        graph = tf.Graph()
        with graph.as_default():
            reads = []
            for variable in variables:
                with tf.device(variable.device):
                    stored = tf.raw_ops.VariableV2(shape=variable.shape, dtype=variable.dtype.base_dtype,
                                                   name=variable.op.name)
                    reads.append(tf.identity(stored))
        config = quiet_threads_config(device_filters=['/job:worker/task:{}'.format(self.task)],
                                      operation_timeout_in_ms=RESCUE_READ_TIMEOUT_SECONDS * 1000)
        with tf.Session(self.server.target, graph=graph, config=config) as sess:
            return sess.run(reads)

    def _save(self, sess, ckpt_path, start_time, saver=None):
        """Saves a checkpoint of the global variables with `saver` (None: the run's rotating one) named after the
        global step it stores (a snapshot of the step, taken first, is saved in its place: other workers move the
        step meanwhile), unless a variable holds NaN or inf: then raises NonFiniteTrainingError, and the previous
        checkpoint stays the latest. Then removes the rescued weights the run's checkpoint has caught up with (a
        kept one is not restored from)."""
        from btgym_aac.algorithms.common.finite_guard import first_non_finite
        from btgym_aac.distributed.rescued_weights import remove_caught_up
        from btgym_aac.nonfinite import NonFiniteTrainingError

        step = int(sess.run(self.snapshot_step))
        bad = first_non_finite(sess, self.float_globals)
        if bad is not None:
            raise NonFiniteTrainingError('the global variables hold NaN or inf (first {}) at step {}: no checkpoint '
                                         'is written, the last one is kept'.format(bad, step))
        os.makedirs(os.path.dirname(ckpt_path), exist_ok=True)
        (saver or self.saver).save(sess, ckpt_path, global_step=step)
        speed = (step - self.start_step) / max(time.time() - start_time, 1e-9)
        self.log.notice('saved {}checkpoint at step {}; cluster speed {:.1f} env steps/s'.format(
            '' if saver is None else 'kept ', step, speed))
        if saver is None:
            remove_caught_up(self.config['log_dir'], step, self.log)

    def _report(self, step, seconds, finished=False):
        if self.progress_queue is None:
            return
        episodes = [episode for env in self.envs for episode in env.episodes if not episode['test']]
        self.progress_queue.put({
            'task': self.task, 'step': step, 'start_step': self.start_step, 'seconds': seconds, 'finished': finished,
            'episodes': len(episodes), 'recent_rewards': [episode['total_reward'] for episode in episodes[-10:]],
            'peak_rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 'startup': self.startup,
        })
