"""How task processes are kept running and stopped: the launcher's watch over its tasks (`TaskSupervision`, a base
class of `Launcher`), the worker of a `btgym-aac cluster-node` kept going through a parameter server's restart
(`run_node_worker`), and Ctrl-C and SIGTERM, which stop either cleanly and cut neither a task start nor the final
stop short.

A launcher's worker that dies, or stops reporting progress for `stall_seconds`, is restarted while its restart
budget lasts (`RestartBudget`: at most `max_restarts` restarts within any `restart_window_minutes` minutes); one
that could not set up, met NaN or inf values, or died again before training of the error it died of before stops
the run. A parameter server that dies is restarted on a budget of its own, and the workers that lost their cluster
session to it are restarted without spending theirs. At the end every task is stopped (`_stop_all`).

A scheduler (Kubernetes, SLURM) restarts a parameter server that dies, often elsewhere and later; the workers'
sessions fail with it. A cluster node runs its worker in a spawned child process and starts it again, on the same
budget, when it exits because its cluster session failed: the new process waits for the parameter servers (saying
so every `worker.PS_WAIT_NOTICE_SECONDS`). Either way the chief restores the global variables from the freshest of
the latest checkpoint and the weights the workers rescued when their sessions failed (`rescued_weights`).
"""
import contextlib
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import threading
import time

from btgym_aac.config_modules import dumps_with_sources
from btgym_aac.distributed.checkpoints import checkpoint_step, latest_checkpoint
from btgym_aac.distributed.network_namespace import JOIN_FAILED_EXIT_CODE
from btgym_aac.distributed.tasks import ctrl_c_held
from btgym_aac.distributed.worker import (NON_FINITE_EXIT_CODE, SESSION_LOST_EXIT_CODE, SETUP_FAILED_EXIT_CODE,
                                          run_pickled_task)
from btgym_aac.proc_memory import proc_memory_mb

STOP_GRACE_SECONDS = 60
"""How long a stopped worker may take to finish its step and, for the chief, save, before it is killed."""
STOP_SIGNAL_REPEAT_SECONDS = 1.0
"""How often a stopped process that still runs gets SIGTERM again (see `terminate_and_wait`)."""
STALL_STOP_SECONDS = 10
POLL_SECONDS = 0.5
"""Longest wait between two looks at the tasks and their reports; a task that ends is looked at once it has."""
PS_DEATH_WAIT_SECONDS = 3.0


# -------------------------------------------------------------------------------------------------------- stop signals

class StopRequested(KeyboardInterrupt):
    """SIGTERM reached the launcher during `run()`: the run stops as on Ctrl-C (the chief saves)."""


def stop_on_signal(signum, frame):
    """Handler of Ctrl-C and SIGTERM during `run()`: ignores both from now on (a second one must not cut the
    stop short) and raises KeyboardInterrupt, or StopRequested for SIGTERM."""
    for ignored in (signal.SIGINT, signal.SIGTERM):
        signal.signal(ignored, signal.SIG_IGN)
    raise StopRequested('SIGTERM') if signum == signal.SIGTERM else KeyboardInterrupt()


@contextlib.contextmanager
def signals_handled(handlers):
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




def terminate_and_wait(processes, grace_seconds):
    """Sends every one of `processes` (multiprocessing.Process objects) SIGTERM, again every
    `STOP_SIGNAL_REPEAT_SECONDS` while it runs (a task still starting ignores SIGTERM until it has set its own
    handling), for up to `grace_seconds`.

    Returns:
        the processes still alive at the end.
    """
    deadline = time.time() + grace_seconds
    alive = [process for process in processes if process.is_alive()]
    while alive and time.time() < deadline:
        for process in alive:
            process.terminate()
        repeat_at = min(deadline, time.time() + STOP_SIGNAL_REPEAT_SECONDS)
        for process in alive:
            process.join(max(0.0, repeat_at - time.time()))
        alive = [process for process in alive if process.is_alive()]
    return alive


def stop_process(process, grace_seconds):
    """Stops `process` (a multiprocessing.Process) with `terminate_and_wait` and kills it if it has not ended."""
    if terminate_and_wait([process], grace_seconds):
        process.kill()
        process.join()


# ---------------------------------------------------------------------------------------------------- restart budgets

class RestartBudgetSpent(RuntimeError):
    """A task needs one restart more than its budget allows; the message counts them ('4 restarts within 10
    minutes, more than --max-restarts 3 allows')."""


class RestartBudget:
    """How often each task may be restarted: at most `max_restarts` times within any `window_minutes` minutes (a
    sliding window over the times of its restarts), so a run survives occasional deaths however long it runs, and
    stops when a task dies faster than that.

    Args:
        max_restarts: restarts allowed per task within the window (0: none).
        window_minutes: the window's length in minutes.
        clock: fn() -> seconds (default `time.monotonic`).
    """

    def __init__(self, max_restarts, window_minutes, clock=time.monotonic):
        self.max_restarts, self.window_minutes, self.clock = max_restarts, window_minutes, clock
        self._restart_times = {}

    def spend(self, task):
        """Takes one restart of `task` now from its budget.

        Args:
            task: the task's key, e.g. ('worker', 0).

        Returns:
            the restarts of `task` within the window, this one included.

        Raises:
            RestartBudgetSpent: this restart would be more than `max_restarts` within the window (it is not
                recorded).
        """
        now = self.clock()
        recent = [at for at in self._restart_times.get(task, []) if now - at < self.window_minutes * 60]
        if len(recent) >= self.max_restarts:
            raise RestartBudgetSpent('{}, more than --max-restarts {} allows'.format(
                self.count_in_words(len(recent) + 1), self.max_restarts))
        self._restart_times[task] = recent + [now]
        return len(recent) + 1

    def count_in_words(self, count):
        """'4 restarts within 10 minutes' ('1 restart ...')."""
        return '{} restart{} within {:g} minutes'.format(count, '' if count == 1 else 's', self.window_minutes)

    def spent_in_words(self, count):
        """'restart 2 of 3 allowed within 10 minutes', for the `count`th restart of a window."""
        return 'restart {} of {} allowed within {:g} minutes'.format(count, self.max_restarts, self.window_minutes)


# ------------------------------------------------------------------------------------------------ the launcher's tasks

class TaskSupervision:
    """Mixin of `Launcher`: the supervision of the task processes from their start to their stop.

    It reads the launcher's settings (`cluster_spec`, `stall_seconds`, `current_ckpt_dir`, `log`) and keeps its run
    state (`processes`, `started_at`, `restart_budget`, `restarts`, `ps_restarts`, `progress`, `last_report_time`,
    `episodes_before_restart`, `last_errors`, `error_before_restart`, `first_step_seconds`, `first_trained`,
    `ps_peak_rss_mb`, see `Launcher._init_run_state`); it starts tasks with `Launcher._start` and reports with
    `summary`, `_print_progress` and `_log_dir_state`.
    """

    def _supervise(self, context, progress, start):
        """Watches the tasks until every worker has finished: reads their reports, restarts those that died or
        stalled, and raises RuntimeError where a restart would not help or none is left. It looks again as soon as
        a task ends, and at least every `POLL_SECONDS`.

        Args:
            context: the multiprocessing context the tasks are started with.
            progress: the queue the workers report on.
            start: time.time() at the start of `run()`.
        """
        finished = set()
        num_workers = len(self.cluster_spec['worker'])
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
                    self._restart_parameter_server(context, task, process.exitcode)
                    continue
                if process.exitcode == SESSION_LOST_EXIT_CODE and self._lost_to_a_parameter_server(context, task):
                    self._restart(context, task, 'lost its cluster session to the parameter server\'s restart',
                                  progress, counted=False)
                    continue
                if process.exitcode == 0:
                    finished.add((job_name, task))
                    continue
                if process.exitcode == NON_FINITE_EXIT_CODE:
                    raise RuntimeError('worker {} stopped training: it met NaN or inf values (see its message above: a '
                                       'restart would meet them again); {}'.format(task, self._log_dir_state()))
                if process.exitcode == SETUP_FAILED_EXIT_CODE:
                    raise RuntimeError('worker {} could not set up: {} (a restart would meet the same problem); '
                                       '{}'.format(task, self.last_errors.pop(task, 'see its message above'),
                                                   self._log_dir_state()))
                self._restart(context, task, 'died with exit code {}'.format(process.exitcode), progress)
            for task in self._stalled_workers():
                self._stop_stalled(task)
                self._restart(context, task, 'reported no progress for {} s'.format(self.stall_seconds), progress)
            self._print_progress(start)  # (the display shows it when due)
            multiprocessing.connection.wait([process.sentinel for process in self.processes.values()
                                             if process.is_alive()], timeout=POLL_SECONDS)
        self._drain(progress, start)

    def _lost_to_a_parameter_server(self, context, task):
        """For worker `task`, whose cluster session failed: True when a parameter server was restarted since the
        worker started, or has died (waited for, see `_dead_parameter_server`) and is restarted now."""
        if self._restarted_parameter_server_since(('worker', task)):
            return True
        dead = self._dead_parameter_server()
        if dead is None:
            return False
        self._restart_parameter_server(context, *dead)
        return True

    def _dead_parameter_server(self):
        """Waits up to PS_DEATH_WAIT_SECONDS for a parameter server to end (a worker whose cluster session failed
        may exit before the parameter server that caused it can be reaped).

        Returns:
            (task, exit code) of one that ended, or None.
        """
        deadline = time.monotonic() + PS_DEATH_WAIT_SECONDS
        servers = [(task, process) for (job_name, task), process in self.processes.items() if job_name == 'ps']
        for task, process in servers:
            process.join(max(deadline - time.monotonic(), 0))
            if not process.is_alive():
                return task, process.exitcode
        return None

    def _restart_parameter_server(self, context, task, exitcode):
        """Starts parameter server `task` again while its restart budget lasts (then raises RuntimeError), saying
        from what training goes on: the workers lose their sessions (and are restarted), each writing the weights
        it holds to the log dir first, and the chief restores the global variables from the freshest of the latest
        checkpoint and those weights."""
        reason = 'parameter server {} died with exit code {}'.format(task, exitcode)
        try:
            count = self.restart_budget.spend(('ps', task))
        except RestartBudgetSpent as spent:
            raise RuntimeError('{}: {}; {}'.format(reason, spent, self._log_dir_state())) from None
        self.ps_restarts[task] = self.ps_restarts.get(task, 0) + 1
        reached = self.summary(time.time())['global_step']
        saved = checkpoint_step(latest_checkpoint(self.current_ckpt_dir))
        checkpoint = 'scratch (no checkpoint yet)' if saved is None else 'the checkpoint at step {}'.format(saved)
        self.log.warning('{}: restarting it ({}); training goes on from the freshest of: {}, the weights the workers '
                         'held at their last sync (the chief says which it takes; with the weights, few of the {} env '
                         'steps trained since the checkpoint are lost)'.format(
                             reason, self.restart_budget.spent_in_words(count), checkpoint,
                             max(reached - (saved or 0), 0)))
        self._start(context, 'ps', task, None)

    def _restarted_parameter_server_since(self, job_task):
        """True when a parameter server was (re)started after task `job_task` was."""
        return any(started > self.started_at[job_task] for (job, _), started in self.started_at.items()
                   if job == 'ps')

    def _stalled_workers(self):
        """Tasks of live workers whose last (unfinished) progress report is older than `stall_seconds`."""
        if self.stall_seconds is None:
            return []
        now = time.time()
        return [task for task, seen in self.last_report_time.items()
                if now - seen > self.stall_seconds and self.processes[('worker', task)].is_alive()
                and not self.progress.get(task, {}).get('finished')]

    def _stop_stalled(self, task):
        """Stops stalled worker `task`, killing it after STALL_STOP_SECONDS."""
        stop_process(self.processes[('worker', task)], STALL_STOP_SECONDS)

    def _restart(self, context, task, reason, progress, counted=True):
        """Starts worker `task` again; one `counted` spends a restart of its budget (RuntimeError when the budget
        is spent, or when it died again before training of the error it died of before)."""
        error = self.last_errors.pop(task, None)
        cause = '; its error: {}'.format(error) if error and counted else ''
        self.log.warning('worker {} {}{}'.format(task, reason, cause))
        which = ''
        if counted:
            try:
                count = self.restart_budget.spend(('worker', task))
            except RestartBudgetSpent as spent:
                raise RuntimeError('worker {} {}: {}{}; {}'.format(task, reason, spent, cause,
                                                                   self._log_dir_state())) from None
            trained = self.progress.get(task, {}).get('step', 0) > self.progress.get(task, {}).get('start_step', 0)
            if error and not trained and error == self.error_before_restart.get(task):
                raise RuntimeError('worker {} died again before training, of the same error as before its restart '
                                   '({}): a restart would meet it again; {}'.format(task, error, self._log_dir_state()))
            self.error_before_restart[task] = error
            self.restarts[task] = self.restarts.get(task, 0) + 1
            which = ' ({})'.format(self.restart_budget.spent_in_words(count))
        self._forget_progress(task)
        self.log.notice('restarting worker {}{}'.format(task, which))
        self._start(context, 'worker', task, progress)

    def _forget_progress(self, task):
        """Drops the last progress report of worker `task` (about to restart), keeping its count of episodes."""
        self.last_report_time.pop(task, None)
        self.episodes_before_restart[task] = self.episodes_before_restart.get(task, 0) + \
            self.progress.pop(task, {}).get('episodes', 0)

    def _drain(self, progress, start):
        """Takes every report waiting on `progress`: an error report is kept for the worker's restart, a progress
        report replaces the worker's last one; the first that shows a trained step times it from `start`."""
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
                trained_at = report.get('startup', {}).get('first_step') or time.time()
                self.first_step_seconds = trained_at - start
                self.first_trained = (report['task'], dict(report.get('startup', {})))

    def _stop_all_uninterrupted(self):
        """`_stop_all` with Ctrl-C and SIGTERM ignored (in the main thread), so a second one cannot cut the stop
        short and leave a parameter server running."""
        with signals_handled({signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: signal.SIG_IGN}):
            self._stop_all()

    def _stop_all(self):
        """Stops the workers (SIGTERM: the chief saves), kills those that hang, then kills the parameter servers
        (they ignore SIGTERM)."""
        for (job, task), process in self.processes.items():
            if job == 'ps' and process.is_alive():
                self.ps_peak_rss_mb[task] = proc_memory_mb(process.pid, 'status', 'VmHWM')  # peak RSS
        terminate_and_wait([p for (job, _), p in self.processes.items() if job == 'worker'], STOP_GRACE_SECONDS)
        for (job, _), process in self.processes.items():
            if process.pid is None:
                continue
            if process.is_alive():
                if job == 'worker':
                    self.log.warning('{} did not stop in time: killing it'.format(process.name))
                process.kill()
            process.join(10)


# --------------------------------------------------------------------------------------------- a cluster node's worker

def run_node_worker(task_config, restart_budget, log):
    """Runs worker `task_config['task']` in a child process (which dies with this one), started again when it
    loses its cluster session, while `restart_budget` lasts. Ctrl-C or SIGTERM stop it as they stop a worker (the
    chief saves).

    Args:
        task_config: the worker's config (`Launcher.task_config`).
        restart_budget: RestartBudget of the restarts after lost sessions.
        log: logbook logger of the node.

    Returns:
        (stopped, exit status): stopped is True when Ctrl-C or SIGTERM stopped it; the status is the worker's
        last (0 when it reached `max_env_steps`; see `worker` for the others).
    """
    context = multiprocessing.get_context('spawn')
    task = task_config['task']
    pickled = dumps_with_sources(dict(task_config, launcher_pid=os.getpid()))
    while True:
        process = context.Process(target=run_pickled_task, args=(pickled, None),
                                  name='btgym_aac-worker-{}'.format(task))
        with ctrl_c_held():
            process.start()
        try:
            with signals_handled({signal.SIGINT: stop_on_signal, signal.SIGTERM: stop_on_signal}):
                process.join()
        except KeyboardInterrupt:
            with signals_handled({signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: signal.SIG_IGN}):
                stop_process(process, STOP_GRACE_SECONDS)  # it finishes its step; the chief saves
            return True, process.exitcode
        if process.exitcode != SESSION_LOST_EXIT_CODE:
            return False, process.exitcode
        lost = 'worker {} lost its cluster session (a parameter server is gone or cannot be reached)'.format(task)
        try:
            count = restart_budget.spend(('worker', task))
        except RestartBudgetSpent as spent:
            log.error('{}: {}; it is not started again'.format(lost, spent))
            return False, process.exitcode
        log.warning('{}: starting it again ({}); it waits for the parameter servers'.format(
            lost, restart_budget.spent_in_words(count)))
