"""How a launcher starts its task processes.

'forkserver' (the default on Linux): the first task started (or `start_forkserver_early`) makes a forkserver
process, which imports TensorFlow and the reference configuration's modules once (`task_preload`); every task,
restarts included, is then forked from it with all of that imported. A cluster's tasks no longer each import
TensorFlow at the same time on the same cores, and they share the imported modules' memory. The forkserver lives
until the launching process exits, so later runs of that process start at once.

'spawn': every task is a new interpreter that imports what it needs itself (as in earlier versions).

Either way a task starts with the launcher's environment variables and standard output and error as they are
when it is started (`LauncherSurroundings`), not as they were when the forkserver was made.
"""
import multiprocessing
import os
import sys
from multiprocessing import reduction

START_METHODS = ('forkserver', 'spawn')
PRELOAD_MODULES = ['btgym_aac.distributed.task_preload']


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
        context.set_forkserver_preload(PRELOAD_MODULES)
    return context


def start_forkserver_early():
    """Starts the forkserver now where the default start method is 'forkserver' (and returns at once), so that it
    imports TensorFlow while this process does other work, such as reading a config file or running a script's own
    imports that import TensorFlow themselves. A launching script calls it first thing; in a process started by
    multiprocessing (a task importing its launching script) it does nothing. A Ctrl-C while the forkserver is
    started is held back until it is (see `stop_signals.ctrl_c_held`); the forkserver and the tasks it forks ignore
    Ctrl-C (see `task_preload`)."""
    if default_start_method() != 'forkserver' or _in_started_process():
        return
    from multiprocessing import forkserver

    from btgym_aac.distributed.stop_signals import ctrl_c_held

    task_context('forkserver')
    with ctrl_c_held():
        forkserver.ensure_running()


def _in_started_process():
    """True in a process that multiprocessing started: while it imports its parent's main script (multiprocessing
    marks the current process `_inheriting` then, as its own check against starting processes at import does) and
    after."""
    return multiprocessing.parent_process() is not None or getattr(multiprocessing.current_process(), '_inheriting',
                                                                   False)


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
