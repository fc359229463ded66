"""A cluster task in its own process (forked or spawned, see `task_start`): a parameter server that serves, or a
worker that trains (see `worker.Worker`), with the signals, exit statuses and launcher reports around them."""
import os
import select
import signal
import sys
import threading
import time
import traceback

from btgym_aac.config_modules import load_with_sources
from btgym_aac.distributed.worker import Worker, WorkerSetupError, cause_where, quiet_threads_config

SETUP_FAILED_EXIT_CODE = 3
NON_FINITE_EXIT_CODE = 5
SESSION_LOST_EXIT_CODE = 6


def run_pickled_task(pickled_config, progress_queue=None, surroundings=None):
    """Entry point of a task process a Launcher starts: `run_task` of the config that `pickled_config` holds
    (from `config_modules.dumps_with_sources`, so the classes of a config file are found), in the launcher's
    `surroundings` (a `task_start.LauncherSurroundings`: its environment variables and output streams).

    Such a task ignores Ctrl-C: the launcher, which gets it too, stops its tasks itself (SIGTERM: the chief saves).
    A forked task ignores it from the fork on (see `task_preload`); a spawned one is started with Ctrl-C blocked, so
    none interrupts its start-up, and it is unblocked here once ignored (one pending meanwhile is dropped).

    The config gets `startup`: when the task started and when its config was loaded (which imports its classes,
    and with them TensorFlow), as `time.time()` stamps (see `worker.Worker.startup`).

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
            `max_env_steps`, `save_secs`, `random_seed`, `num_envs`, `render_last_env`, `test_mode`,
            `log_level`, `run_config` (pickled bytes the chief writes to `<log_dir>/run_config.pkl` once set
            up);
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
    forkserver (see `task_start`) is the forkserver, which lives on while any of its tasks does: a thread of the
    task watches the launcher instead.
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
