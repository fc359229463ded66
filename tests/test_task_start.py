"""How the launcher starts its tasks: forked from a forkserver that preloaded TensorFlow (in the launcher's
environment and output streams of the moment), or spawned; and the setting that chooses."""
import contextlib
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from btgym_aac.algorithms import A3C, Launcher
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac.distributed.tasks import LauncherSurroundings, check_start_method, task_context
from btgym_aac.env import gym_wrappers
from proc_helpers import GROUP, PARENT, command_line, live_descendants, live_processes, wait_until_group_ends


def report_surroundings(variable):
    """Task target: writes what it finds to its file descriptors 1 and 2."""
    import gc

    import btgym_aac.compat

    os.write(1, ('out {}={} tensorflow={} devices={} ctrl_c_ignored={} gc_enabled={} '
                 'preloaded_objects_frozen={}\n').format(
        variable, os.environ.get(variable), 'tensorflow' in sys.modules,
        btgym_aac.compat._devices_initialised, signal.getsignal(signal.SIGINT) is signal.SIG_IGN, gc.isenabled(),
        gc.get_freeze_count() > 0).encode())
    os.write(2, b'err line\n')


def run_in_task(context, target, args, surroundings):
    process = context.Process(target=_apply_then_run, args=(surroundings, target, args))
    process.start()
    process.join(120)
    assert process.exitcode == 0


def _apply_then_run(surroundings, target, args):
    surroundings.apply()
    target(*args)


def test_a_forked_task_starts_preloaded_in_the_launchers_environment_and_streams(tmp_path, monkeypatch):
    context = task_context('forkserver')
    run_in_task(context, report_surroundings, ('BTGYM_AAC_TEST_VARIABLE',), LauncherSurroundings())  # forkserver up
    monkeypatch.setenv('BTGYM_AAC_TEST_VARIABLE', 'set after the forkserver started')
    output = tmp_path / 'output.txt'
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(output, 'wb') as target:
            os.dup2(target.fileno(), 1)
            os.dup2(target.fileno(), 2)
        run_in_task(context, report_surroundings, ('BTGYM_AAC_TEST_VARIABLE',), LauncherSurroundings())
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
    lines = output.read_text().splitlines()
    # (Ctrl-C is ignored from the fork on, not only once `run_pickled_task` runs: no KeyboardInterrupt in between)
    # (the garbage collector runs in the task, over its own objects only: the preloaded ones are frozen)
    assert ('out BTGYM_AAC_TEST_VARIABLE=set after the forkserver started tensorflow=True devices=False '
            'ctrl_c_ignored=True gc_enabled=True preloaded_objects_frozen=True') in lines
    assert 'err line' in lines


def test_start_method_setting_is_checked():
    assert check_start_method('spawn') == 'spawn'
    for wrong in ('fork', 'Spawn', None):
        with pytest.raises(ValueError, match=r"cluster_config start_method must be one of \('forkserver', "
                                             r"'spawn'\), got " + re.escape(repr(wrong))):
            check_start_method(wrong)
    with pytest.raises(ValueError, match='start_method'):
        Launcher(cluster_config={'start_method': 'fork', 'log_dir': '/nonexistent/never/made'}, show_progress=False)


def test_spawned_tasks_train_too(tmp_path):
    launcher = Launcher(
        env_config={'class_ref': gym_wrappers.TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}},
        cluster_config={'num_workers': 1, 'log_dir': str(tmp_path / 'run'), 'start_method': 'spawn'},
        policy_config={'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (16,), 'lstm_layers': (16,)}},
        trainer_config={'class_ref': A3C, 'kwargs': {'rollout_length': 20}},
        test_mode=True, max_env_steps=300, save_secs=60, root_random_seed=0, show_progress=False)
    result = launcher.run()
    assert result['completed'] and result['global_step'] >= 300
    assert result['startup_seconds']['imported'] > result['startup_seconds']['started']
    assert multiprocessing.active_children() == []


STALLED_TENSORFLOW = """import os, time
open(os.environ['TENSORFLOW_IMPORT_STARTED'], 'w').close()
time.sleep(3600)
"""


def stalled_tensorflow_environment(tmp_path):
    """Environment for a command whose `import tensorflow` (only the forkserver's preload imports it) first writes
    the file `tmp_path/tensorflow_import_started` and then never ends, so that the command can be made to stop or be
    interrupted while the forkserver is sure to be importing. Returns (environment, that file)."""
    package = tmp_path / 'stalled' / 'tensorflow'
    package.mkdir(parents=True)
    (package / '__init__.py').write_text(STALLED_TENSORFLOW)
    started = tmp_path / 'tensorflow_import_started'
    path = os.pathsep.join(filter(None, [str(package.parent), os.environ.get('PYTHONPATH')]))
    return dict(os.environ, PYTHONPATH=path, TENSORFLOW_IMPORT_STARTED=str(started)), started


def wait_for_file(path, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline and not path.exists():
        time.sleep(0.05)
    return path.exists()


@contextlib.contextmanager
def train_with_config(tmp_path, source, env=None):
    """`btgym-aac train CONFIG.py` (CONFIG.py holding `source`, `env` its environment) in a session of its own;
    yields (process, whether a forkserver appeared below it while it ran); kills what is left of its group at the
    end."""
    config = tmp_path / 'config.py'
    config.write_text(source)
    command = subprocess.Popen([sys.executable, '-m', 'btgym_aac.cli', 'train', str(config), '--log-dir',
                                str(tmp_path / 'run')], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, env=env)
    try:
        deadline = time.time() + 20
        forkserver_seen = False
        while time.time() < deadline and not forkserver_seen and command.poll() is None:
            forkserver_seen = any(b'multiprocessing.forkserver' in command_line(pid)
                                  for pid in live_descendants(command.pid))
            time.sleep(0.05)
        yield command, forkserver_seen
    finally:
        if live_processes(GROUP, command.pid):
            os.killpg(command.pid, signal.SIGKILL)


def test_train_starts_the_forkserver_first_and_it_ends_after_a_command_that_stops_early(tmp_path):
    """`btgym-aac train` starts the forkserver before reading its config file; a command that then stops (here: a
    config file that raises) leaves no process behind once the forkserver's imports are done."""
    source = 'import time\ntime.sleep(2)\nraise RuntimeError("broken on purpose")\n'
    with train_with_config(tmp_path, source) as (command, forkserver_seen):
        assert forkserver_seen, 'no forkserver was started while the config file was read'
        _, err = command.communicate(timeout=60)
        assert wait_until_group_ends(command.pid, 30) == []
    assert command.returncode == 2 and 'broken on purpose' in err


def test_a_command_that_stops_while_the_forkserver_imports_closes_its_output_at_once(tmp_path):
    """The forkserver ends with a command that stops before its imports are done (here: a config file that raises
    once the forkserver is importing a TensorFlow whose import never ends), instead of holding the command's output
    open until they are: a reader of that output (`btgym-aac train ... | tee log`) sees its end when the command has
    exited, not never."""
    env, importing = stalled_tensorflow_environment(tmp_path)
    source = ('import os, time\nwhile not os.path.exists({!r}):\n    time.sleep(0.05)\n'
              'raise RuntimeError("broken on purpose")\n'.format(str(importing)))
    with train_with_config(tmp_path, source, env=env) as (command, forkserver_seen):
        assert forkserver_seen
        _, err = command.communicate(timeout=120)  # the end of its output, with the forkserver still importing
        assert wait_until_group_ends(command.pid, 30) == []
    assert importing.exists() and command.returncode == 2 and 'broken on purpose' in err


def test_ctrl_c_while_train_reads_its_config_ends_it_without_a_traceback(tmp_path):
    """Ctrl-C reaches the whole group while the forkserver imports TensorFlow and the command reads its config
    file: the command says it was interrupted, and the forkserver (which ignores it) prints nothing."""
    env, importing = stalled_tensorflow_environment(tmp_path)
    with train_with_config(tmp_path, 'import time\ntime.sleep(3600)\n', env=env) as (command, forkserver_seen):
        assert forkserver_seen
        assert wait_for_file(importing, 120), 'the forkserver never began to import TensorFlow'
        os.killpg(command.pid, signal.SIGINT)
        _, err = command.communicate(timeout=60)
        assert wait_until_group_ends(command.pid, 30) == []
    assert command.returncode == 130
    assert err.strip() == 'btgym-aac train: interrupted'


EARLY_FORKSERVER_SCRIPT = """
from btgym_aac import start_forkserver_early
start_forkserver_early()

import os
import time
from btgym_aac.distributed.tasks import task_context
from proc_helpers import PARENT, command_line, live_processes


def forkservers_below(pid):
    return sum(b'multiprocessing.forkserver' in command_line(child) for child in live_processes(PARENT, pid))


def report():
    print('task forkservers', forkservers_below(os.getpid()), flush=True)


if __name__ == '__main__':
    deadline = time.monotonic() + 60  # the forkserver's process exists; its command line is set once it has exec'd
    while forkservers_below(os.getpid()) == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    print('script forkservers', forkservers_below(os.getpid()), flush=True)
    task = task_context('forkserver').Process(target=report)
    task.start()
    task.join(120)
    print('task exit', task.exitcode, flush=True)
"""


def test_a_script_starts_the_forkserver_first_and_its_tasks_do_not(tmp_path):
    """`start_forkserver_early()` at the top of a launching script starts the forkserver at once; a task, which
    imports that script again, starts none of its own."""
    script = tmp_path / 'launch.py'
    script.write_text(EARLY_FORKSERVER_SCRIPT)
    tests = os.path.dirname(os.path.abspath(__file__))  # for proc_helpers
    finished = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180,
                              cwd=tmp_path, env=dict(os.environ, PYTHONPATH=tests))
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.splitlines() == ['script forkservers 1', 'task forkservers 0', 'task exit 0']


LAUNCHER_STAND_IN = '''
import subprocess, sys
forkserver = subprocess.Popen(['sleep', '120'])
watcher = subprocess.Popen([sys.executable, '-c', 'import sys; from btgym_aac.distributed.worker import '
                            '_die_with; _die_with(None, int(sys.argv[1]), int(sys.argv[2]))',
                            str(forkserver.pid), str(os.getpid())])
print(forkserver.pid, watcher.pid, flush=True)
sys.stdin.read()
'''


def test_without_a_pidfd_a_forked_task_dies_once_its_launcher_is_gone():
    """The watch thread's fallback (kernels before pidfds): it kills its task once the forkserver's parent is no
    longer the launcher. Stand-ins: a launcher process with a 'forkserver' child and a watching 'task'."""
    launcher = subprocess.Popen([sys.executable, '-c', 'import os\n' + LAUNCHER_STAND_IN], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
    forkserver, task = (int(pid) for pid in launcher.stdout.readline().split())
    try:
        time.sleep(2)
        assert task in live_processes(PARENT, launcher.pid)  # still watching while its launcher lives
        launcher.kill()
        launcher.wait()
        deadline = time.time() + 10
        while time.time() < deadline and os.path.exists('/proc/{}'.format(task)) and not is_zombie(task):
            time.sleep(0.1)
        assert not os.path.exists('/proc/{}'.format(task)) or is_zombie(task)
    finally:
        for pid in (forkserver, task):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def is_zombie(pid):
    try:
        with open('/proc/{}/stat'.format(pid)) as stat:
            return stat.read().rpartition(')')[2].split()[0] == 'Z'
    except OSError:
        return False


def test_a_preload_that_fails_to_import_leaves_the_collector_on_and_no_thread():
    """multiprocessing's forkserver goes on without a preload module that raised ImportError: its tasks must not
    inherit a disabled garbage collector or the preparation's watching thread."""
    code = ('import gc, sys, threading\n'
            'from btgym_aac.distributed.tasks import prepare_forkserver\n'
            'sys.modules["btgym_aac.strategy.gen4"] = None  # its import raises ImportError\n'
            'try:\n'
            '    prepare_forkserver()\n'
            'except ImportError:\n'
            '    print(gc.isenabled(), [thread.name for thread in threading.enumerate()])\n')
    finished = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.splitlines()[-1] == "True ['MainThread']"


def test_importing_the_distributed_modules_changes_nothing_in_the_process():
    """Only the forkserver runs `prepare_forkserver`. Anywhere else (a documentation tool, `pytest
    --doctest-modules`) importing every module of `btgym_aac.distributed` leaves the process's Ctrl-C and SIGTERM
    handling, its garbage collector, its threads and its exit status as they were."""
    code = ('import gc, importlib, pkgutil, signal, threading\n'
            'import btgym_aac.distributed\n'
            'from btgym_aac.distributed.tasks import prepare_forkserver\n'
            'for module in pkgutil.iter_modules(btgym_aac.distributed.__path__):\n'
            '    importlib.import_module("btgym_aac.distributed." + module.name)\n'
            'print(signal.getsignal(signal.SIGINT) is signal.default_int_handler,\n'
            '      signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, gc.isenabled(), gc.get_freeze_count(),\n'
            '      [thread.name for thread in threading.enumerate()], flush=True)\n'
            'raise SystemExit(3)\n')
    finished = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)
    assert finished.returncode == 3, finished.stderr
    assert finished.stdout.splitlines()[-1] == "True True True 0 ['MainThread']"
