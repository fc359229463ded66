"""The worker of a `btgym-aac cluster-node`, kept going through a parameter server's restart.

A scheduler (Kubernetes, SLURM) restarts a parameter server that dies, often elsewhere and later; the workers'
sessions fail with it. The node runs its worker in a spawned child process and starts it again when it exits
because its cluster session failed: the new process waits for the parameter servers (saying so every
`worker.PS_WAIT_NOTICE_SECONDS`), and the chief restores the global variables from the latest checkpoint.
"""
import multiprocessing
import os
import signal

from btgym_aac.config_modules import dumps_with_sources
from btgym_aac.distributed.stop_signals import (STOP_GRACE_SECONDS, ctrl_c_held, signals_handled, stop_on_signal,
                                                stop_process)
from btgym_aac.distributed.task_process import SESSION_LOST_EXIT_CODE, run_pickled_task


def run_node_worker(task_config, max_restarts, log):
    """Runs worker `task_config['task']` in a child process (which dies with this one), started again up to
    `max_restarts` times when it loses its cluster session. Ctrl-C or SIGTERM stop it as they stop a worker (the
    chief saves).

    Args:
        task_config: the worker's config (`Launcher.task_config`).
        max_restarts: restarts allowed after lost sessions.
        log: logbook logger of the node.

    Returns:
        (stopped, exit status): stopped is True when Ctrl-C or SIGTERM stopped it; the status is the worker's
        last (0 when it reached `max_env_steps`; see `task_process` for the others).
    """
    context = multiprocessing.get_context('spawn')
    task = task_config['task']
    pickled = dumps_with_sources(dict(task_config, launcher_pid=os.getpid()))
    restarts = 0
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
        if process.exitcode != SESSION_LOST_EXIT_CODE or restarts == max_restarts:
            return False, process.exitcode
        restarts += 1
        log.warning('worker {} lost its cluster session (a parameter server is gone or cannot be reached): starting '
                    'it again ({} of {}); it waits for the parameter servers'.format(task, restarts, max_restarts))

