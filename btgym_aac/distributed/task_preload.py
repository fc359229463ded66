"""Imported once by a launcher's forkserver before it forks any task process (see `task_start`): TensorFlow and
the modules that the tasks of the reference configuration use, so that every task starts with them imported.

TensorFlow's devices are left alone meanwhile (`compat` reads `preloading`): a CUDA driver initialised before a
fork is unusable in the forked process, so each task initialises them itself (`compat.initialise_devices`).

The forkserver ignores Ctrl-C and SIGTERM all along, and so does every task it forks, from its first instruction
(multiprocessing gives a forked task the handlers the forkserver had before it served; a Ctrl-C reaching the process
group while a task unpickles its target would otherwise raise KeyboardInterrupt there) until it sets its own
handling (`task_process.run_task`). SIGTERM: the launcher learns its tasks' exit statuses through the forkserver, so
it must outlive a SIGTERM sent to the whole process group (as a service manager stops a run) until the chief's last
save is done and the launcher has seen its tasks end. It exits when the launching process has ended and its tasks
are gone; while it imports (multiprocessing looks for the launcher's end only after the imports), a watching thread
ends it as soon as the launcher ends, so that a launcher that fails at once (a bad config) does not leave it holding
the launcher's standard output and error open, and a pipe reading them waiting for TensorFlow's import.

The garbage collector is off while the modules are imported (a full collection over TensorFlow's objects, run
several times during its import, costs ~0.3 s each time) and then moved out of the collector's way for good
(`gc.freeze`): the forked tasks inherit the imported objects in the permanent generation, so their collections
(one full collection costs ~0.3 s while a task builds its graph otherwise) skip them and do not write to the pages
they share with the forkserver.

The forkserver holds no data of its own, so it exits without the interpreter's teardown of these modules (about
1 s). Its forked tasks end by `os._exit` and never run this.
"""
import atexit
import gc
import os
import signal
import sys
import threading
import time

LAUNCHER_WATCH_SECONDS = 0.05

signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
preloading = True


def _exit_when_launcher_ends(launcher_pid):
    """Ends this process at once when its parent, the launching process, has ended (it was reparented) before the
    imports are done."""
    while preloading:
        if os.getppid() != launcher_pid:
            os._exit(0)
        time.sleep(LAUNCHER_WATCH_SECONDS)


gc.disable()
launcher_watch = threading.Thread(target=_exit_when_launcher_ends, args=(os.getppid(),), daemon=True,
                                  name='launcher-watch')
launcher_watch.start()

try:
    import btgym_aac.algorithms.aac  # noqa: E402,F401
    import btgym_aac.algorithms.policy.stacked_lstm  # noqa: E402,F401
    import btgym_aac.algorithms.acting.batched_runner  # noqa: E402,F401
    import btgym_aac.distributed.task_process  # noqa: E402,F401
    import btgym_aac.env.base  # noqa: E402,F401
    import btgym_aac.env.episode_recorder  # noqa: E402,F401
    import btgym_aac.strategy.gen4  # noqa: E402,F401
finally:  # (multiprocessing's forkserver goes on without a preload that raised ImportError)
    preloading = False
    launcher_watch.join()  # no thread may run when multiprocessing forks the tasks
    gc.freeze()
    gc.enable()


def _exit_at_once():
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


atexit.register(_exit_at_once)
