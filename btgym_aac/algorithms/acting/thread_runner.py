"""`RunnerThread`: runs a runner generator (default `BaseEnvRunnerFn`) in its own thread and queues its data."""
import contextlib
import queue
import threading
import time

from btgym_aac.algorithms.acting.env_runner import BaseEnvRunnerFn, is_session_failure
from btgym_aac.logs import WARNING, get_logger

QUEUE_SIZE = 5
POLL_INTERVAL = 0.1
PUT_TIMEOUT = 600


class RunnerStopped(RuntimeError):
    """`get_data()` found the queue empty after a stop was asked for: no more data will come."""


class QueueReader:
    """`get_data()` of a runner whose data a thread puts in `queue`.

    A class using it provides `queue`, `task`, `ident` (None before the thread starts), `is_alive()`, `error` and
    `_stop_requested()`.
    """

    def get_data(self, timeout=600, **kwargs):
        """Takes the next data dict from the queue.

        Args:
            timeout: seconds to wait for data while the runner is alive.
            **kwargs: ignored (the trainer's data-getter keywords).

        Returns:
            data dict (see `BaseEnvRunnerFn`).

        Raises:
            RuntimeError: the runner was not started, or it has ended (its exception, if any, is chained).
            RunnerStopped: the queue is empty and a stop was asked for (`stop()` or the `start_runner` stop event).
            queue.Empty: no data within `timeout` seconds from a live runner.
        """
        if self.ident is None:
            raise RuntimeError('runner of task {} is not started; call start_runner(sess, summary_writer)'.format(
                self.task))
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.queue.get(timeout=max(min(POLL_INTERVAL, deadline - time.monotonic()), 0.001))
            except queue.Empty:
                if not self.is_alive():
                    return self._last_item_or_raise()
                if self._stop_requested():
                    raise self._stopped_error() from None
                if time.monotonic() >= deadline:
                    raise queue.Empty('runner of task {}: no data within {} s'.format(self.task, timeout)) from None

    def _last_item_or_raise(self):
        """Data the ended thread queued just before it ended, else RuntimeError describing why it ended."""
        try:
            return self.queue.get_nowait()
        except queue.Empty:
            pass
        if self.error is not None:
            raise RuntimeError('runner of task {} died: {}: {}'.format(
                self.task, type(self.error).__name__, self.error)) from self.error
        if self._stop_requested():
            raise self._stopped_error()
        raise RuntimeError('runner of task {} has stopped and its queue is empty'.format(self.task))

    def _stopped_error(self):
        return RunnerStopped('runner of task {} was stopped on request and its queue is empty'.format(self.task))


class RunnerThread(QueueReader, threading.Thread):
    """Daemon thread collecting environment data into a bounded queue of `QUEUE_SIZE` items.

    The env is reset and stepped only inside this thread (`run`), as in-process BTGym episodes require.
    `stop()` ends the thread within about a step or `POLL_INTERVAL`. `get_data()` notices a dead runner at once
    and raises RuntimeError carrying its exception; the exception is kept in `error` and logged (unless a stop was
    requested or the session failed: the task reports the cause), not re-raised in the thread. A stop event given
    to `start_runner` (a worker's stop flag) ends a wait for data even when the env hangs. The queue can also be
    read directly, e.g. through `rollout.make_data_getter(runner.queue)`.
    """

    def __init__(self, env, policy, task, rollout_length, episode_summary_freq, env_render_freq, test, ep_summary,
                 runner_fn_ref=BaseEnvRunnerFn, memory_config=None, log_level=WARNING, aux_render_modes=None,
                 **kwargs):
        """
        Args:
            env: environment, used only from this thread.
            policy: policy to act with.
            task: runner task number (``worker_task + 0.01 * env_index``).
            rollout_length: maximum frames per rollout.
            episode_summary_freq: train statistics every this many episodes.
            env_render_freq: renderings every this many episodes.
            test: test-mode (Atari / classic-control) environment.
            ep_summary: episode summary ops (passed on to the runner function).
            runner_fn_ref: generator function with `BaseEnvRunnerFn`'s signature; it is also given the keywords
                ``stop_event`` (a function that ignores it through ``**kwargs`` is stopped between queue puts) and
                ``aux_render_modes``.
            memory_config: replay memory config or None.
            log_level: logbook level.
            aux_render_modes: the trainer's extra rendering modes, passed on to the runner function as a tuple
                (e.g. `VerboseEnvRunnerFn` draws them; `BaseEnvRunnerFn` ignores them).
            **kwargs: ignored (e.g. the trainer's `global_step_op`).
        """
        super().__init__(name='RunnerThread_{}'.format(task), daemon=True)
        self.env = env
        self.policy = policy
        self.task = task
        self.rollout_length = rollout_length
        self.episode_summary_freq = episode_summary_freq
        self.env_render_freq = env_render_freq
        self.test = test
        self.ep_summary = ep_summary
        self.runner_fn_ref = runner_fn_ref
        self.memory_config = memory_config
        self.aux_render_modes = tuple(aux_render_modes or ())
        self.log = get_logger('RunnerThread', task, log_level=log_level)
        self.queue = queue.Queue(QUEUE_SIZE)
        self.sess = None
        self.summary_writer = None
        self.error = None
        self._stop_event = threading.Event()
        self._outside_stop_event = None

    def start_runner(self, sess, summary_writer, stop_event=None, **kwargs):
        """Starts collecting data.

        Args:
            sess: TF session the policy runs in (None for policies that need none).
            summary_writer: summary writer handed to the runner function.
            stop_event: threading.Event of the caller, or None. Once it is set, `get_data()` raises RunnerStopped
                instead of waiting for data, and the runner stops at its next queue put.
            **kwargs: ignored.
        """
        self.sess = sess
        self.summary_writer = summary_writer
        self._outside_stop_event = stop_event
        self.start()

    def _stop_requested(self):
        outside = self._outside_stop_event
        return self._stop_event.is_set() or (outside is not None and outside.is_set())

    def stop(self, timeout=10.0):
        """Asks the runner to stop and waits up to `timeout` seconds for the thread to end.

        Returns:
            True if the thread is not running any more.
        """
        self._stop_event.set()
        if self.ident is not None and self is not threading.current_thread():
            self.join(timeout)
        return not self.is_alive()

    def run(self):
        session = self.sess.as_default() if self.sess is not None else contextlib.nullcontext()
        data = None
        try:
            with session:
                data = self.runner_fn_ref(
                    self.sess, self.env, self.policy, self.task, self.rollout_length, self.summary_writer,
                    self.episode_summary_freq, self.env_render_freq, self.test, self.ep_summary,
                    self.memory_config, self.log, stop_event=self._stop_event,
                    aux_render_modes=self.aux_render_modes)
                for item in data:
                    if not self._put(item):
                        break
        except Exception as error:
            self.error = error
            if not (self._stop_requested() or is_session_failure(error)):  # else the task reports the cause
                self.log.error('runner of task {} stopped by {}: {}'.format(self.task, type(error).__name__, error))
        finally:
            if data is not None:
                data.close()

    def _put(self, item):
        """Queues `item`, waiting while the queue is full; returns False if stopped first.

        Raises:
            queue.Full: nobody took data for `PUT_TIMEOUT` seconds.
        """
        deadline = time.monotonic() + PUT_TIMEOUT
        while not self._stop_requested():
            try:
                self.queue.put(item, timeout=POLL_INTERVAL)
                return True
            except queue.Full:
                if time.monotonic() > deadline:
                    raise queue.Full('runner of task {}: nobody took data for {} s'.format(self.task, PUT_TIMEOUT))
        return False

