"""How the launcher meets Ctrl-C and SIGTERM: both stop a run cleanly, and neither cuts a task start or the final
stop short."""
import contextlib
import signal
import threading
import time

STOP_GRACE_SECONDS = 60
"""How long a stopped worker may take to finish its step and, for the chief, save, before it is killed."""
STOP_SIGNAL_REPEAT_SECONDS = 1.0
"""How often a stopped process that still runs gets SIGTERM again (see `terminate_and_wait`)."""


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


@contextlib.contextmanager
def ctrl_c_held():
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
