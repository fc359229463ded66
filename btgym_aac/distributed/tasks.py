"""How a launcher starts its task processes (what they run is `worker.run_pickled_task`): the start method, the
forkserver and its preparation, and the launcher's surroundings that every task takes on.

Start method 'forkserver' (the default on Linux): the first task started (or `start_forkserver_early`) makes a
forkserver process, which imports TensorFlow and the reference configuration's modules once (`prepare_forkserver`);
every task, restarts included, is then forked from it with all of that imported. A cluster's tasks no longer each
import TensorFlow at the same time on the same cores, and they share the imported modules' memory. The forkserver
lives until the launching process exits, so later runs of that process start at once.

Start method 'spawn': every task is a new interpreter that imports what it needs itself (as in earlier versions).

Either way a task starts with the launcher's environment variables and standard output and error as they are
when it is started (`LauncherSurroundings`), not as they were when the forkserver was made.
"""
import atexit
import contextlib
import gc
import importlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from multiprocessing import reduction

START_METHODS = ('forkserver', 'spawn')
FORKSERVER_PRELOAD = [__name__]
"""The forkserver's preload list: this module, whose import prepares the forkserver there (`_is_forkserver`)."""
TASK_MODULES = ('btgym_aac.distributed.worker', 'btgym_aac.algorithms.aac', 'btgym_aac.algorithms.policy.stacked_lstm',
                'btgym_aac.algorithms.acting.batched_runner', 'btgym_aac.env.base', 'btgym_aac.env.training_envs',
                'btgym_aac.strategy.gen4')
"""What a task process runs and the modules the tasks of the reference configuration use, which the forkserver
imports (with TensorFlow)."""
LAUNCHER_WATCH_SECONDS = 0.05
_FORKSERVER_COMMAND = 'from multiprocessing.forkserver import main;'


# ----------------------------------------------------------------------------------------------------- starting a task

def default_start_method():
    """'forkserver' on Linux, else 'spawn' (macOS's system libraries are not safe to use after a fork)."""
    return 'forkserver' if sys.platform.startswith('linux') else 'spawn'


def check_start_method(method):
    """Returns `method` when this system can start tasks that way, else raises ValueError naming the setting."""
    if method not in START_METHODS:
        raise ValueError("cluster_config start_method must be one of {}, got {!r}".format(START_METHODS, method))
    if method not in multiprocessing.get_all_start_methods():
        raise ValueError("cluster_config start_method {!r} is not available on this system; use 'spawn'".format(
            method))
    return method


def task_context(method):
    """The multiprocessing context that starts task processes by `method` (a forkserver's preload is set here;
    one already running keeps its own)."""
    context = multiprocessing.get_context(method)
    if method == 'forkserver':
        context.set_forkserver_preload(FORKSERVER_PRELOAD)
    return context


def start_forkserver_early():
    """Starts the forkserver now where the default start method is 'forkserver' (and returns at once), so that it
    imports TensorFlow while this process does other work, such as reading a config file or running a script's own
    imports that import TensorFlow themselves. A launching script calls it first thing; in a process started by
    multiprocessing (a task importing its launching script) it does nothing. A Ctrl-C while the forkserver is
    started is held back until it is (see `ctrl_c_held`); the forkserver and the tasks it forks ignore Ctrl-C (see
    `prepare_forkserver`)."""
    if default_start_method() != 'forkserver' or _in_started_process():
        return
    from multiprocessing import forkserver

    task_context('forkserver')
    with ctrl_c_held():
        forkserver.ensure_running()


def _in_started_process():
    """True in a process that multiprocessing started: while it imports its parent's main script (multiprocessing
    marks the current process `_inheriting` then, as its own check against starting processes at import does) and
    after."""
    return multiprocessing.parent_process() is not None or getattr(multiprocessing.current_process(), '_inheriting',
                                                                   False)


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


class LauncherSurroundings:
    """The launcher's environment variables and standard output and error, taken when a task process is started
    (pickled with its arguments) and put in place by the task (`apply`) before it does anything else.

    A forked task would otherwise have the forkserver's: the environment and the streams of the moment the
    forkserver was made (under pytest, another test's captured output, say).
    """

    def __init__(self, environment=None, stream_fds=None):
        self.environment = dict(os.environ) if environment is None else environment
        self.stream_fds = stream_fds or {}

    def __reduce__(self):
        return type(self), (self.environment, {fd: reduction.DupFd(fd) for fd in (1, 2) if _is_open(fd)})

    def apply(self):
        """Makes this process's environment and its file descriptors 1 and 2 the launcher's."""
        os.environ.clear()
        os.environ.update(self.environment)
        for target, duplicate in self.stream_fds.items():
            fd = duplicate.detach()
            if fd != target:
                os.dup2(fd, target)
                os.close(fd)


def _is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


# ------------------------------------------------------------------------------------------------------ the forkserver

preloading = False
"""True while the forkserver imports `TASK_MODULES`: `compat` then leaves TensorFlow's devices alone (a CUDA
driver initialised before a fork is unusable in the forked process, so each task initialises them itself,
`compat.initialise_devices`)."""


def _is_forkserver():
    """True in the forkserver of `task_context` while it imports its preload list (this module), and in no other
    process: multiprocessing starts it as `python -c 'from multiprocessing.forkserver import main; main(..., <the
    preload list>, ...)'` and imports each module of that list before it serves. The tasks it forks inherit that
    command line, but they are started processes (`_in_started_process`)."""
    command = sys.orig_argv[-1] if sys.argv == ['-c'] else ''
    return (command.startswith(_FORKSERVER_COMMAND) and repr(FORKSERVER_PRELOAD) in command
            and not _in_started_process())


def prepare_forkserver():
    """Prepares the launcher's forkserver before it forks any task (its import of this module calls it, see
    `_is_forkserver`): imports TensorFlow and `TASK_MODULES`, so that every task starts with them imported.

    The forkserver ignores Ctrl-C and SIGTERM all along, and so does every task it forks, from its first
    instruction (multiprocessing gives a forked task the handlers the forkserver had before it served; a Ctrl-C
    reaching the process group while a task unpickles its target would otherwise raise KeyboardInterrupt there)
    until it sets its own handling (`worker.run_task`). SIGTERM: the launcher learns its tasks' exit statuses
    through the forkserver, so it must outlive a SIGTERM sent to the whole process group (as a service manager
    stops a run) until the chief's last save is done and the launcher has seen its tasks end. It exits when the
    launching process has ended and its tasks are gone; while it imports (multiprocessing looks for the launcher's
    end only after the imports), a watching thread ends it as soon as the launcher ends, so that a launcher that
    fails at once (a bad config) does not leave it holding the launcher's standard output and error open, and a
    pipe reading them waiting for TensorFlow's import.

    The garbage collector is off while the modules are imported (a full collection over TensorFlow's objects, run
    several times during its import, costs ~0.3 s each time) and then moved out of the collector's way for good
    (`gc.freeze`): the forked tasks inherit the imported objects in the permanent generation, so their collections
    (one full collection costs ~0.3 s while a task builds its graph otherwise) skip them and do not write to the
    pages they share with the forkserver.

    The forkserver holds no data of its own, so it exits without the interpreter's teardown of these modules
    (about 1 s). Its forked tasks end by `os._exit` and never run this.

    Raises:
        ImportError: a module of `TASK_MODULES` cannot be imported; multiprocessing's forkserver goes on without
            its preload then, with the collector on and no watching thread.
    """
    global preloading
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)
    gc.disable()
    preloading = True
    launcher_watch = threading.Thread(target=_exit_when_launcher_ends, args=(os.getppid(),), daemon=True,
                                      name='launcher-watch')
    launcher_watch.start()
    try:
        for module in TASK_MODULES:
            importlib.import_module(module)
    finally:
        preloading = False
        launcher_watch.join()  # no thread may run when multiprocessing forks the tasks
        gc.freeze()
        gc.enable()
    atexit.register(_exit_at_once)


def _exit_when_launcher_ends(launcher_pid):
    """Ends this process at once when its parent, the launching process, has ended (it was reparented) before the
    imports are done."""
    while preloading:
        if os.getppid() != launcher_pid:
            os._exit(0)
        time.sleep(LAUNCHER_WATCH_SECONDS)


def _exit_at_once():
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


if _is_forkserver():  # (in any other process, importing this module changes nothing in it)
    prepare_forkserver()
