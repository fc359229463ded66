"""Launcher on loopback: runs that finish by themselves, resume, pre-trained starts, export, taken ports, a killed
worker, and a cluster of hand-started `btgym-aac cluster-node` processes."""
import contextlib
import glob
import json
import multiprocessing
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import types

import logbook
import numpy as np
import pytest
from trainer_helpers import graph_written

from btgym_aac.algorithms import A3C, Launcher
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac import cli as cli_module
from btgym_aac.cli import commands as cli_commands
from btgym_aac.cli import main as cli_main
from btgym_aac.compat import tf
from btgym_aac.distributed.checkpoints import KEPT_CHECKPOINT_DIR, FastSaver, latest_checkpoint
from btgym_aac.distributed.cluster import PortInUseError, free_ports
from btgym_aac.distributed.log_dir import LOCK_FILE, LogDirInUseError, LogDirLock
from btgym_aac.distributed.rescued_weights import rescued_files
from btgym_aac.distributed.run_config import RUN_CONFIG_DICTS, pickle_run_config, write_run_config
from btgym_aac.distributed.run_config import launcher_configs
from btgym_aac.distributed.supervision import terminate_and_wait
from btgym_aac.distributed.tasks import ctrl_c_held
from btgym_aac.distributed import checkpoints as checkpoints_module
from btgym_aac.distributed import supervision as supervision_module
from btgym_aac.distributed import worker as worker_module
from btgym_aac.data import make_random_walk_data, write_histdata_csv
from btgym_aac.env import gym_wrappers
from btgym_aac.evaluation.loading import read_run_config
from btgym_aac.logs import get_logger
from proc_helpers import GROUP, PARENT, command_line, live_processes, wait_until_group_ends

CKPT = 'current_train_checkpoint'


def cartpole_launcher(log_dir, max_env_steps, num_workers=2, learn_rate=1e-3, save_secs=5, **kwargs):
    return Launcher(
        env_config={'class_ref': gym_wrappers.TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}},
        cluster_config=dict({'num_workers': num_workers, 'log_dir': str(log_dir)}, **kwargs.pop('cluster', {})),
        policy_config={'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (16,), 'lstm_layers': (16,)}},
        trainer_config={'class_ref': A3C, 'kwargs': {'rollout_length': 20, 'opt_learn_rate': learn_rate}},
        test_mode=True, max_env_steps=max_env_steps, save_secs=save_secs, root_random_seed=0, show_progress=False,
        **kwargs)


class HangingOnceEnv(gym_wrappers.TestModeEnv):
    """CartPole that blocks forever at the first step of its third episode, the first time only: a marker file
    remembers it and holds the number of steps taken before (all of them in rollouts that ended)."""

    def __init__(self, marker, **kwargs):
        super().__init__(**kwargs)
        self.marker, self.steps, self.episodes, self.episode_steps = marker, 0, 0, 0

    def reset(self, **kwargs):
        self.episodes, self.episode_steps = self.episodes + 1, 0
        return super().reset(**kwargs)

    def step(self, action):
        if self.episodes == 3 and self.episode_steps == 0 and not os.path.exists(self.marker):
            with open(self.marker + '.part', 'w') as f:
                f.write(str(self.steps))
            os.rename(self.marker + '.part', self.marker)
            threading.Event().wait()
        self.steps, self.episode_steps = self.steps + 1, self.episode_steps + 1
        return super().step(action)


class BreakingEnv(gym_wrappers.TestModeEnv):
    """CartPole that breaks at its `break_at`-th step, every time: its process exits with `exit_code`, or, with
    none given, the step raises ValueError."""

    def __init__(self, break_at, exit_code=None, **kwargs):
        super().__init__(**kwargs)
        self.break_at, self.exit_code, self.steps = break_at, exit_code, 0

    def step(self, action):
        self.steps += 1
        if self.steps == self.break_at:
            if self.exit_code is not None:
                os._exit(self.exit_code)
            raise ValueError('the env broke at step {}'.format(self.steps))
        return super().step(action)


def live_processes_in_group(group):
    """PIDs of the running (not zombie) processes of a process group, read from /proc."""
    return live_processes(GROUP, group)


def saved_checkpoint_dir(directory):
    """A folder holding one checkpoint of one variable."""
    directory.mkdir(parents=True)
    graph = tf.Graph()
    with graph.as_default(), tf.Session(graph=graph) as sess:
        variable = tf.Variable(1.0)
        sess.run(variable.initializer)
        FastSaver().save(sess, str(directory / 'model_parameters'), global_step=1)
    return directory


def checkpoint_step(directory):
    return int(latest_checkpoint(directory).rsplit('-', 1)[1])


def checkpoint_weights(directory):
    reader = tf.train.load_checkpoint(latest_checkpoint(directory))
    names = sorted(name for name in reader.get_variable_to_shape_map() if name.startswith('global/')
                   and 'Adam' not in name and 'global_step' not in name and 'global_episode' not in name)
    return {name: reader.get_tensor(name) for name in names}


def test_run_finishes_resumes_exports_and_starts_pretrained(tmp_path):
    log_dir = tmp_path / 'run'
    result = cartpole_launcher(log_dir, 4000).run()
    assert result['global_step'] >= 4000 and result['restarts'] == {}
    assert set(result['peak_rss_mb']) == {'worker_0', 'worker_1', 'ps_0'}
    assert all(100 < rss < 20000 for rss in result['peak_rss_mb'].values())  # MB: TF processes, not bytes or GB
    phases = ['started', 'imported', 'envs_made', 'graph_built', 'session_ready', 'first_step']
    startup = result['startup_seconds']
    assert list(startup) == phases
    assert 0 < startup['started'] and [startup[phase] for phase in phases] == sorted(startup.values())
    assert result['first_step_seconds'] <= startup['first_step'] < result['seconds']  # any worker's, the chief's
    assert multiprocessing.active_children() == []
    first_step = checkpoint_step(str(log_dir / CKPT))
    assert first_step >= 4000
    for task in (0, 1):
        assert glob.glob(str(log_dir / 'worker_{}'.format(task) / 'events.*'))
    # the chief adds the graph for TensorBoard after its first trained step; the other worker none
    assert graph_written(log_dir / 'worker_0') and not graph_written(log_dir / 'worker_1')
    saved = read_run_config(str(log_dir))
    assert saved['policy_config']['kwargs'] == {'dense_layers': (16,), 'lstm_layers': (16,)}
    assert saved['cluster_config']['num_workers'] == 2 and saved['test_mode'] is True
    assert not glob.glob(str(log_dir / '*.writing'))

    result = cartpole_launcher(log_dir, first_step + 600).run()
    resumed_step = checkpoint_step(str(log_dir / CKPT))
    assert first_step + 600 <= resumed_step < first_step + 1500  # continued from the saved step, not from 0
    listed = {os.path.basename(path) for path in
              tf.train.get_checkpoint_state(str(log_dir / CKPT)).all_model_checkpoint_paths}
    on_disk = {name.split('.')[0] for name in os.listdir(str(log_dir / CKPT)) if name != 'checkpoint'}
    assert on_disk == listed and len(listed) <= 2  # the first run's checkpoints rotate with the resumed run's

    export_dir = tmp_path / 'exported'
    assert cli_main(['export', str(log_dir), str(export_dir)]) == 0
    assert checkpoint_step(str(export_dir)) == resumed_step
    assert {'manifest.json', 'policy.onnx', 'saved_model'} <= set(os.listdir(str(export_dir)))  # a policy artifact
    exported = checkpoint_weights(str(export_dir))
    assert exported and exported.keys() == checkpoint_weights(str(log_dir / CKPT)).keys()

    pretrained_dir = tmp_path / 'pretrained'
    cartpole_launcher(pretrained_dir, 300, learn_rate=1e-12,
                      cluster={'initial_ckpt_dir': str(export_dir)}).run()
    assert 300 <= checkpoint_step(str(pretrained_dir / CKPT)) < 1000  # counted from 0 again
    pretrained = checkpoint_weights(str(pretrained_dir / CKPT))
    assert pretrained.keys() == exported.keys()
    for name, value in pretrained.items():
        np.testing.assert_allclose(value, exported[name], atol=1e-6, err_msg=name)


def test_first_trained_step_is_timed_from_a_report_past_the_step_the_worker_started_at(tmp_path, monkeypatch):
    launcher = cartpole_launcher(tmp_path / 'run', 1000)
    monkeypatch.setattr(supervision_module, 'time', types.SimpleNamespace(time=lambda: 1000.0))  # the launcher's clock
    reports = queue.Queue()
    resumed = {'task': 0, 'step': 800, 'start_step': 800, 'seconds': 1.0, 'finished': False, 'episodes': 0,
               'recent_rewards': [], 'peak_rss_mb': 300.0}
    reports.put(resumed)
    launcher._drain(reports, 990.0)
    assert launcher.first_step_seconds is None  # a resumed worker that has not trained yet
    reports.put(dict(resumed, step=820))
    launcher._drain(reports, 998.0)
    assert launcher.first_step_seconds == 2.0  # received at 1000.0, the report naming no time of its own
    launcher.first_step_seconds = None
    reports.put(dict(resumed, step=820, startup={'first_step': 995.5}))
    launcher._drain(reports, 990.0)
    assert launcher.first_step_seconds == 5.5  # the worker's own time of its first trained step


def test_the_start_up_line_names_the_first_start_of_the_worker_that_trained_first(tmp_path, monkeypatch):
    """After a restart the start-up stamps of the later start are not mixed into the line: it gives the phases of
    the start that trained first, labelled with its worker."""
    launcher = cartpole_launcher(tmp_path / 'run', 1000)
    monkeypatch.setattr(supervision_module, 'time', types.SimpleNamespace(time=lambda: 1000.0))
    first_start = {'started': 101.0, 'imported': 104.0, 'graph_built': 105.0, 'session_ready': 105.5,
                   'first_step': 106.0}
    report = {'step': 0, 'start_step': 0, 'seconds': 1.0, 'finished': False, 'episodes': 0, 'recent_rewards': [],
              'peak_rss_mb': 300.0}
    reports = queue.Queue()
    reports.put(dict(report, task=0, startup={'started': 101.0}))  # the chief, not trained yet
    reports.put(dict(report, task=1, step=40, startup=first_start))  # worker 1 trains first
    reports.put(dict(report, task=0, step=900, start_step=800, startup={  # the chief again, after a restart
        'started': 120.0, 'imported': 125.6, 'graph_built': 127.0, 'session_ready': 127.5, 'first_step': 128.0}))
    launcher._drain(reports, 100.0)
    summary = launcher.summary(100.0)
    assert summary['first_step_seconds'] == 6.0 and summary['startup_task'] == 1
    assert summary['startup_seconds'] == {phase: stamp - 100.0 for phase, stamp in first_start.items()}
    assert cli_module._startup_phases(summary['startup_task'], summary['startup_seconds'], 2.0) == (
        ' (worker 1: configs and TensorFlow imported at 6.0 s, graph built at 7.0 s, session ready at 7.5 s)')


def test_initial_checkpoint_folder_without_a_checkpoint_is_dropped_with_a_notice(tmp_path):
    (tmp_path / 'empty').mkdir()
    with logbook.TestHandler() as handler:
        launcher = cartpole_launcher(tmp_path / 'run', 100, cluster={'initial_ckpt_dir': str(tmp_path / 'empty')})
    assert launcher.initial_ckpt_dir is None
    notices = [record.message for record in handler.records if record.level == logbook.NOTICE]
    assert any('{} holds no checkpoint: starting from this run\'s own checkpoint'.format(tmp_path / 'empty') in text
               for text in notices), notices


def test_taken_port_is_reported_and_left_alone(tmp_path):
    with socket.socket() as holder:
        holder.bind(('127.0.0.1', 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        with pytest.raises(PortInUseError, match=str(port)):
            cartpole_launcher(tmp_path / 'run', 100, cluster={'port': port})
        holder.getsockname()  # still ours: nothing was killed or closed


@pytest.mark.slow  # by default: test_network_isolation's isolated run (a killed worker restarted, the run ends)
def test_killed_worker_is_restarted_and_the_run_completes(tmp_path):
    launcher = cartpole_launcher(tmp_path / 'run', 6000)
    killed = []

    def kill_worker_1():
        deadline = time.time() + 120
        while time.time() < deadline and not killed:
            report = launcher.progress.get(1)
            if report and report['step'] > report['start_step']:  # worker 1 trains
                os.kill(launcher.processes[('worker', 1)].pid, signal.SIGKILL)
                killed.append(report['step'])
            time.sleep(0.2)

    thread = threading.Thread(target=kill_worker_1, daemon=True)
    thread.start()
    result = launcher.run()
    thread.join(5)
    assert killed, 'worker 1 was never seen running'
    assert result['restarts'] == {1: 1}
    assert result['global_step'] >= 6000
    assert multiprocessing.active_children() == []


def test_a_worker_that_keeps_dying_ends_the_run_once_its_restarts_are_used_up(tmp_path):
    launcher = cartpole_launcher(tmp_path / 'run', 10 ** 6, num_workers=1, max_restarts=1)
    launcher.env_config = {'class_ref': BreakingEnv, 'kwargs': {'env_id': 'CartPole-v1', 'break_at': 50,
                                                                'exit_code': 7}}
    with pytest.raises(RuntimeError, match=r'^worker 0 died with exit code 7: 2 restarts within 10 minutes, more '
                                           r'than --max-restarts 1 allows; the log dir holds no checkpoint$'):
        launcher.run()
    assert launcher.restarts == {0: 1}
    assert multiprocessing.active_children() == []


def test_a_worker_dying_of_the_same_error_before_training_is_not_restarted_again(tmp_path):
    launcher = cartpole_launcher(tmp_path / 'run', 10 ** 6, num_workers=1, max_restarts=5)
    launcher.env_config = {'class_ref': BreakingEnv, 'kwargs': {'env_id': 'CartPole-v1', 'break_at': 5}}
    with pytest.raises(RuntimeError, match=r'worker 0 died again before training, of the same error as before its '
                                           r'restart \(RuntimeError: runner of task 0.0 died: ValueError: the env '
                                           r'broke at step 5 \(raised at .*'
                                           r'test_launcher.py:\d+\)\): a restart would meet it again; the '
                                           r'checkpoint in the log dir \(model_parameters-0\) is kept'):
        launcher.run()
    assert launcher.restarts == {0: 1}
    assert launcher.checkpoint_report() == 'the latest checkpoint, model_parameters-0, is in {}'.format(
        launcher.current_ckpt_dir)
    assert multiprocessing.active_children() == []


def test_a_run_is_refused_while_another_holds_the_log_dir(tmp_path):
    launcher = cartpole_launcher(tmp_path / 'run', 100, num_workers=1)
    with LogDirLock(launcher.log_dir):
        with pytest.raises(LogDirInUseError, match='log dir {} is in use by another run \\(process {}\\)'.format(
                re.escape(launcher.log_dir), os.getpid())):
            launcher.run()
        with pytest.raises(LogDirInUseError):
            cartpole_launcher(tmp_path / 'run', 100, num_workers=1)
    assert multiprocessing.active_children() == []
    assert launcher.run()['global_step'] >= 100
    with LogDirLock(launcher.log_dir):  # released at the end of the run
        pass


def test_a_shared_log_dir_is_built_on_without_its_lock_and_never_emptied(tmp_path):
    (tmp_path / 'run').mkdir()
    (tmp_path / 'run' / 'notes.txt').write_text('kept')
    with LogDirLock(str(tmp_path / 'run')):
        node = cartpole_launcher(tmp_path / 'run', 100, num_workers=1, shared_log_dir=True)
        with pytest.raises(ValueError, match='never emptied: purge_previous must be 0, got 2'):
            cartpole_launcher(tmp_path / 'run', 100, num_workers=1, shared_log_dir=True, purge_previous=2)
    assert node.task_config('worker', 0)['task'] == 0
    assert sorted(os.listdir(str(tmp_path / 'run'))) == [LOCK_FILE, 'notes.txt']


@pytest.mark.parametrize('stall_seconds', [0, -5])
def test_non_positive_stall_seconds_is_refused(tmp_path, stall_seconds):
    with pytest.raises(ValueError, match='stall_seconds must be a positive number'):
        cartpole_launcher(tmp_path / 'run', 100, num_workers=1, stall_seconds=stall_seconds)


class AliveProcess:
    """Stands in for a multiprocessing.Process that is `alive` or not."""

    def __init__(self, alive):
        self.alive = alive

    def is_alive(self):
        return self.alive


def test_a_worker_is_stalled_when_its_last_unfinished_report_is_older_than_stall_seconds(monkeypatch):
    """The check `test_stalled_worker_is_stopped_and_restarted` (slow) runs end to end; the stop of a worker whose
    env hangs is run by `test_a_chief_waiting_on_a_hung_env_saves_when_the_run_is_stopped`, a restart by
    `test_killed_worker_is_restarted_and_the_run_completes`."""
    monkeypatch.setattr(supervision_module, 'time', types.SimpleNamespace(time=lambda: 1000.0))
    launcher = object.__new__(Launcher)
    launcher.stall_seconds = 8
    launcher.last_report_time = {0: 991.0, 1: 992.5, 2: 985.0, 3: 980.0}
    launcher.processes = {('worker', 0): AliveProcess(True), ('worker', 1): AliveProcess(True),
                          ('worker', 2): AliveProcess(False), ('worker', 3): AliveProcess(True)}
    launcher.progress = {0: {'finished': False}, 1: {'finished': False}, 2: {'finished': False},
                         3: {'finished': True}}
    assert launcher._stalled_workers() == [0]  # 9 s old; 1 is 7.5 s old, 2 has ended, 3 has finished
    launcher.stall_seconds = None
    assert launcher._stalled_workers() == []


@pytest.mark.slow
def test_stalled_worker_is_stopped_and_restarted(tmp_path):
    marker = tmp_path / 'hung'
    launcher = cartpole_launcher(tmp_path / 'run', 600, num_workers=1, stall_seconds=8)
    launcher.env_config = {'class_ref': HangingOnceEnv, 'kwargs': {'env_id': 'CartPole-v1', 'marker': str(marker)}}
    result = launcher.run()
    assert marker.exists(), 'the env never blocked'
    assert result['restarts'] == {0: 1}
    assert result['global_step'] >= 600
    assert multiprocessing.active_children() == []


def test_a_chief_waiting_on_a_hung_env_saves_when_the_run_is_stopped(tmp_path):
    """The env hangs at the start of its third episode: the chief trains every rollout before it (saving after each
    step, save_secs 0.001), then waits for data; Ctrl-C then ends the wait and the chief saves that step again."""
    marker, checkpoints = tmp_path / 'hung', tmp_path / 'run' / CKPT
    launcher = cartpole_launcher(tmp_path / 'run', 10 ** 6, num_workers=1, save_secs=0.001)
    launcher.env_config = {'class_ref': HangingOnceEnv, 'kwargs': {'env_id': 'CartPole-v1', 'marker': str(marker)}}
    before_the_stop = {}

    def ctrl_c_once_the_chief_waits_on_the_hung_env():
        deadline = time.time() + 180
        while time.time() < deadline and 'mtime' not in before_the_stop:
            if marker.exists() and latest_checkpoint(str(checkpoints)):
                before_the_stop['step'] = int(marker.read_text())
                index = checkpoints / 'model_parameters-{}.index'.format(before_the_stop['step'])
                if checkpoint_step(str(checkpoints)) == before_the_stop['step'] and index.exists():
                    before_the_stop['mtime'] = os.stat(index).st_mtime_ns
            time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=ctrl_c_once_the_chief_waits_on_the_hung_env, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        launcher.run()
    assert marker.exists(), 'the env never blocked'
    assert 'mtime' in before_the_stop, 'the chief never saved the steps taken before the hang'
    step = before_the_stop['step']
    assert checkpoint_step(str(checkpoints)) == step > 0  # nothing trained past the hang
    index = checkpoints / 'model_parameters-{}.index'.format(step)
    assert os.stat(index).st_mtime_ns > before_the_stop['mtime']  # saved once more at the stop
    assert multiprocessing.active_children() == []


def test_hand_started_cluster_nodes_form_a_working_cluster(tmp_path):
    ports = free_ports(2)
    spec = {'ps': ['127.0.0.1:{}'.format(ports[0])], 'worker': ['127.0.0.1:{}'.format(ports[1])]}
    spec_path = tmp_path / 'cluster.json'
    spec_path.write_text(json.dumps(spec))
    config_path = tmp_path / 'config.py'
    config_path.write_text(textwrap.dedent('''
        from btgym_aac.algorithms import A3C
        from btgym_aac.algorithms.policy import AacDensePolicy
        from btgym_aac.env.gym_wrappers import TestModeEnv
        env_config = {'class_ref': TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}}
        policy_config = {'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (16,), 'lstm_layers': (16,)}}
        trainer_config = {'class_ref': A3C, 'kwargs': {'rollout_length': 20}}
        cluster_config = {'log_dir': %r}
        launcher_config = {'test_mode': True, 'max_env_steps': 1000, 'save_secs': 5}
    ''' % str(tmp_path / 'run')))
    command = [sys.executable, '-m', 'btgym_aac.cli', 'cluster-node', '--cluster', str(spec_path), str(config_path)]
    roles = (('ps', 0), ('worker', 0))  # (several workers: the Launcher tests; the same task code)
    logs = [open(tmp_path / '{}_{}.log'.format(job, task), 'w+') for job, task in roles]
    nodes = [subprocess.Popen(command + ['--job', job, '--task', str(task)], stdout=subprocess.DEVNULL, stderr=log)
             for (job, task), log in zip(roles, logs)]
    try:
        assert nodes[1].wait(timeout=240) == 0
        assert checkpoint_step(str(tmp_path / 'run' / CKPT)) >= 1000
        for port, log in zip(ports, logs):  # a node cannot be isolated: each says its port is open, once
            log.seek(0)
            assert log.read().count('listen on port(s) {} of every network interface'.format(port)) == 1
    finally:
        for node, log in zip(nodes, logs):
            if node.poll() is None:
                node.terminate()
                node.wait(30)
            log.close()


@pytest.mark.parametrize('bad, message', [
    (dict(num_workers=0), 'cluster_config num_workers must be a whole number >= 1, got 0'),
    (dict(cluster={'port': 70000}), 'cluster ports 70000..70001 are outside 1..65535: choose another first port'),
    (dict(max_env_steps=0), 'max_env_steps (env steps to train) must be a whole number >= 1, got 0'),
    (dict(cluster={'num_envs': 0}), 'cluster_config num_envs must be a whole number >= 1, got 0'),
    (dict(cluster={'network_isolation': 'yes'}),
     "cluster_config network_isolation must be 'auto', 'require' or 'off', got 'yes'"),
    (dict(keep_checkpoint_every_steps=0.5), 'keep_checkpoint_every_steps must be a whole number >= 1, got 0.5'),
], ids=['workers', 'port', 'max-steps', 'envs', 'isolation', 'kept-checkpoints'])
def test_bad_settings_are_refused_before_the_log_dir_is_purged(tmp_path, bad, message):
    log_dir = tmp_path / 'run'
    log_dir.mkdir()
    (log_dir / 'keep.txt').write_text('previous run')
    kwargs = dict(dict(num_workers=1, max_env_steps=100), **bad)
    with pytest.raises(ValueError, match=re.escape(message)):
        cartpole_launcher(log_dir, purge_previous=2, **kwargs)
    assert (log_dir / 'keep.txt').read_text() == 'previous run'


def test_purge_empties_a_run_but_refuses_a_folder_with_other_files_or_this_runs_initial_checkpoint(tmp_path):
    log_dir = tmp_path / 'run'
    for folder in (CKPT, 'worker_0', 'worker_12', 'evaluation', KEPT_CHECKPOINT_DIR):
        (log_dir / folder).mkdir(parents=True)
        (log_dir / folder / 'file').write_text('x')
    (log_dir / 'run_config.pkl').write_bytes(b'x')
    cartpole_launcher(log_dir, 100, num_workers=1, purge_previous=2)
    assert os.listdir(str(log_dir)) == [LOCK_FILE]  # kept, as its lock is held while the folder is emptied

    (log_dir / 'notes.txt').write_text('mine')
    (log_dir / 'run_config.pkl').write_bytes(b'x')
    with pytest.raises(ValueError, match=r'refusing to empty .*run: it holds notes.txt besides what a run writes'):
        cartpole_launcher(log_dir, 100, num_workers=1, purge_previous=2)
    assert sorted(os.listdir(str(log_dir))) == [LOCK_FILE, 'notes.txt', 'run_config.pkl']

    os.remove(str(log_dir / 'notes.txt'))
    pretrained = saved_checkpoint_dir(log_dir / 'worker_0' / 'pretrained')
    with pytest.raises(ValueError, match='it holds the initial_ckpt_dir'):
        cartpole_launcher(log_dir, 100, num_workers=1, purge_previous=2, cluster={'initial_ckpt_dir': str(pretrained)})
    assert latest_checkpoint(str(pretrained)) is not None


def test_a_damaged_checkpoint_to_resume_from_is_refused_and_kept(tmp_path):
    ckpt_dir = tmp_path / 'run' / CKPT
    ckpt_dir.mkdir(parents=True)
    (ckpt_dir / 'checkpoint').write_text('model_checkpoint_path: "model_parameters-300"\n')
    (ckpt_dir / 'model_parameters-300.index').write_bytes(b'not a checkpoint index')
    (ckpt_dir / 'model_parameters-300.data-00000-of-00001').write_bytes(b'\0' * 64)
    previous = {name: {'made_by': 'the run that wrote the checkpoint'} for name in RUN_CONFIG_DICTS}
    write_run_config(str(tmp_path / 'run'), pickle_run_config(previous))
    before = {path.name: path.read_bytes() for path in ckpt_dir.iterdir()}
    with pytest.raises(ValueError, match=r"checkpoint '.*model_parameters-300' cannot be read \(its files are "
                                         r"truncated or damaged\)"):
        cartpole_launcher(tmp_path / 'run', 600, num_workers=1)  # refused before any task starts
    assert {path.name: path.read_bytes() for path in ckpt_dir.iterdir()} == before
    assert read_run_config(str(tmp_path / 'run')) == previous
    assert multiprocessing.active_children() == []


def two_listed_checkpoints(ckpt_dir):
    """`ckpt_dir` holding checkpoints model_parameters-100 and -200 of one variable, both listed."""
    graph = tf.Graph()
    with graph.as_default():
        variable = tf.Variable(1.5, name='weight')
        saver = tf.train.Saver([variable], max_to_keep=5)
        with tf.Session() as sess:
            sess.run(variable.initializer)
            for step in (100, 200):
                saver.save(sess, str(ckpt_dir / 'model_parameters'), global_step=step, write_meta_graph=False)


def test_a_damaged_newest_checkpoint_names_the_newest_intact_one_which_resume_from_restores(tmp_path, capsys):
    log_dir = tmp_path / 'run'
    ckpt_dir = log_dir / CKPT
    ckpt_dir.mkdir(parents=True)
    two_listed_checkpoints(ckpt_dir)
    damaged = ckpt_dir / 'model_parameters-200.data-00000-of-00001'
    damaged.write_bytes(damaged.read_bytes()[:-2])  # truncated
    before = {path.name: path.read_bytes() for path in ckpt_dir.iterdir()}
    way_out = (r"the newest intact one is model_parameters-100: `btgym-aac train --resume-from model_parameters-100` "
               r"with the same config and log dir \(Launcher\(\.\.\., resume_from='model_parameters-100'\)\) resumes "
               r"from it, moving the files of the later checkpoints to {}; nothing was changed$".format(
                   re.escape(str(ckpt_dir / 'set_aside'))))
    with pytest.raises(ValueError, match=r"checkpoint '.*model_parameters-200' cannot be read \(its files are "
                                         r"truncated or damaged\): .*; " + way_out):
        cartpole_launcher(log_dir, 600, num_workers=1)
    assert cli_main(['train', str(cartpole_config_file(tmp_path, 600)), '--log-dir', str(log_dir)]) == 2
    assert re.search(way_out, capsys.readouterr().err.strip())
    assert {path.name: path.read_bytes() for path in ckpt_dir.iterdir()} == before

    cartpole_launcher(log_dir, 600, num_workers=1, resume_from='model_parameters-100')
    assert latest_checkpoint(str(ckpt_dir)) == str(ckpt_dir / 'model_parameters-100')
    moved = {name: data for name, data in before.items() if name.startswith('model_parameters-200.')}
    assert {path.name: path.read_bytes() for path in (ckpt_dir / 'set_aside').iterdir()} == moved  # kept as it was
    assert not set(moved) & set(os.listdir(ckpt_dir))
    with pytest.raises(ValueError, match=r"resume_from 'model_parameters-150': .* holds no such checkpoint \(one "
                                         r"of: model_parameters-100\)"):
        cartpole_launcher(log_dir, 600, num_workers=1, resume_from='model_parameters-150')


def constant_price_csv(path):
    bars = make_random_walk_data(num_bars=3000, seed=0)
    bars[['open', 'high', 'low', 'close']] = 1.1
    return write_histdata_csv(bars, str(path))


@pytest.mark.parametrize('content, problem', [
    ('', 'is empty'),
    ('garbage that is not a csv\n', 'has a header line but no data rows'),
    ('20170102 000000;1.1;1.2;1.0;nan;0\n20170102 000100;1.1;1.2;1.0;1.1;0\n', 'has missing, non-numeric or infinite'),
    (constant_price_csv, 'column close is 1.1 in all 3000 bars (zero variance'),
], ids=['empty', 'garbage', 'nan-price', 'constant-prices'])
def test_bad_data_file_stops_the_command_before_any_task_starts(tmp_path, content, problem):
    data = tmp_path / 'data.csv'
    content(data) if callable(content) else data.write_text(content)
    command = [sys.executable, '-m', 'btgym_aac.cli', 'train', '--workers', '1', '--max-steps', '100',
               '--log-dir', str(tmp_path / 'run'), '--data', str(data)]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert finished.returncode == 2, finished.stderr
    assert finished.stderr.startswith('btgym-aac train: data file <{}>'.format(data)) and problem in finished.stderr
    assert 'Traceback' not in finished.stderr and 'worker' not in finished.stderr
    assert not (tmp_path / 'run').exists()  # refused before the log dir was made: no task, no checkpoint


def test_a_second_ctrl_c_cannot_cut_the_cluster_stop_short(tmp_path, monkeypatch):
    launcher = cartpole_launcher(tmp_path / 'run', 100, num_workers=1)
    stopped = []

    def stop_all_interrupted_by_ctrl_c():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        stopped.append(True)

    monkeypatch.setattr(launcher, '_stop_all', stop_all_interrupted_by_ctrl_c)
    handler = signal.getsignal(signal.SIGINT)
    launcher._stop_all_uninterrupted()
    assert stopped == [True]
    assert signal.getsignal(signal.SIGINT) is handler


def cartpole_config_file(tmp_path, max_env_steps):
    config_path = tmp_path / 'config.py'
    config_path.write_text(textwrap.dedent('''
        from btgym_aac.algorithms import A3C
        from btgym_aac.algorithms.policy import AacDensePolicy
        from btgym_aac.env.gym_wrappers import TestModeEnv

        class ConfigFilePolicy(AacDensePolicy):
            """Defined in the config file: its workers must get it."""

        env_config = {{'class_ref': TestModeEnv, 'kwargs': {{'env_id': 'CartPole-v1'}}}}
        policy_config = {{'class_ref': ConfigFilePolicy, 'kwargs': {{'dense_layers': (16,), 'lstm_layers': (16,)}}}}
        trainer_config = {{'class_ref': A3C, 'kwargs': {{'rollout_length': 20}}}}
        launcher_config = {{'test_mode': True, 'max_env_steps': {}, 'save_secs': 3600}}
    '''.format(max_env_steps)))
    return config_path


PROGRESS_LINE = re.compile(r'^env steps (\d+)/', re.MULTILINE)


@contextlib.contextmanager
def cli_train(tmp_path, max_env_steps, workers=2, **popen_kwargs):
    """A `btgym-aac train` process (CartPole) in a session of its own, its output in `tmp_path/train.out`, once it
    has printed a progress line past env step 0; yields (process, log dir, the env step of that line). Whatever of
    its process group still runs at the end of the block is killed."""
    log_dir, output = tmp_path / 'run', tmp_path / 'train.out'
    command = [sys.executable, '-m', 'btgym_aac.cli', 'train', str(cartpole_config_file(tmp_path, max_env_steps)),
               '--log-dir', str(log_dir), '--workers', str(workers)]
    with open(output, 'w') as out:
        cluster = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                   **popen_kwargs)
    try:
        deadline, trained = time.time() + 180, []
        while time.time() < deadline and not trained and cluster.poll() is None:
            trained = [int(step) for step in PROGRESS_LINE.findall(output.read_text()) if int(step) > 0]
            time.sleep(0.1)
        assert trained, 'no progress past env step 0: ' + output.read_text()[-2000:]
        yield cluster, log_dir, trained[0]
    finally:
        if cluster.poll() is None or live_processes_in_group(cluster.pid):
            os.killpg(cluster.pid, signal.SIGKILL)


def forked_tasks(launcher_pid):
    """PIDs of the task processes the launcher's forkserver forked (its children)."""
    forkservers = [pid for pid in live_processes(PARENT, launcher_pid)
                   if b'multiprocessing.forkserver' in command_line(pid)]
    return [task for forkserver in forkservers for task in live_processes(PARENT, forkserver)]


def test_ctrl_c_while_a_task_starts_is_held_back_and_raised_after(tmp_path):
    """The launcher starts tasks inside `ctrl_c_held`: a Ctrl-C then neither cuts the start short nor is lost."""
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with ctrl_c_held():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
            steps.append('the block ran to its end')
    assert steps == ['the block ran to its end']
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())


def ignore_sigterm_then_stop_on_it(ignore_seconds, started):
    """A task that starts slowly: SIGTERM ignored for `ignore_seconds`, then it ends at the next one."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    started.set()
    time.sleep(ignore_seconds)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait(60)


def test_a_stop_sent_while_a_task_still_ignores_sigterm_is_repeated_until_it_ends():
    context = multiprocessing.get_context('fork')
    started = context.Event()
    process = context.Process(target=ignore_sigterm_then_stop_on_it, args=(1.5, started))
    process.start()
    assert started.wait(30)
    assert terminate_and_wait([process], grace_seconds=120) == []
    assert process.exitcode == 0  # ended by a repeated SIGTERM (its handler), not killed when the grace ran out
    stubborn_started = context.Event()
    stubborn = context.Process(target=ignore_sigterm_then_stop_on_it, args=(60, stubborn_started))
    stubborn.start()
    try:
        assert stubborn_started.wait(30)
        assert terminate_and_wait([stubborn], grace_seconds=2) == [stubborn]
    finally:
        stubborn.kill()
        stubborn.join()


def test_ctrl_c_during_start_up_reports_no_saved_checkpoint_and_no_task_traceback(tmp_path):
    """Ctrl-C reaches the whole group while the tasks import TensorFlow: they ignore it (the launcher stops them),
    and the final line says what the checkpoint folder really holds."""
    log_dir = tmp_path / 'run'
    command = [sys.executable, '-m', 'btgym_aac.cli', 'train', str(cartpole_config_file(tmp_path, 10 ** 9)),
               '--log-dir', str(log_dir), '--workers', '1']
    cluster = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and len(forked_tasks(cluster.pid)) < 2:  # ps, worker
            time.sleep(0.05)
        os.killpg(cluster.pid, signal.SIGINT)
        out, err = cluster.communicate(timeout=120)
    finally:
        if cluster.poll() is None or live_processes_in_group(cluster.pid):
            os.killpg(cluster.pid, signal.SIGKILL)
    assert cluster.returncode == 130
    assert 'Traceback' not in err and 'KeyboardInterrupt' not in err
    assert 'did not stop in time' not in err  # the worker saw the stop although it came before its SIGTERM handling
    checkpoint = latest_checkpoint(str(log_dir / CKPT))
    final = out.strip().splitlines()[-1]
    if checkpoint is None:
        assert final == 'interrupted: workers stopped; no checkpoint was written in {}'.format(log_dir / CKPT)
    else:
        assert final == 'interrupted: workers stopped; the latest checkpoint, {}, is in {}'.format(
            os.path.basename(checkpoint), log_dir / CKPT)


def final_checkpoint_named(output):
    """The checkpoint that the last line of a train command's `output` names as the latest, and its step."""
    final = output.read_text().strip().splitlines()[-1]
    named = re.fullmatch(r'(?:interrupted|stopped by SIGTERM): workers stopped; the latest checkpoint, '
                         r'(model_parameters-(\d+)), is in .*', final)
    assert named, final
    return named.group(1), int(named.group(2))


def test_ctrl_c_stops_the_whole_cluster_and_the_chief_saves(tmp_path):
    with cli_train(tmp_path, 10 ** 9) as (cluster, log_dir, trained):
        assert latest_checkpoint(str(log_dir / CKPT)) is None  # save_secs 3600: only the last save writes one
        os.killpg(cluster.pid, signal.SIGINT)
        assert cluster.wait(timeout=120) == 130
        assert wait_until_group_ends(cluster.pid, 30) == []
    name, step = final_checkpoint_named(tmp_path / 'train.out')
    assert os.path.basename(latest_checkpoint(str(log_dir / CKPT))) == name
    assert checkpoint_step(str(log_dir / CKPT)) == step >= trained  # saved at the stop, past the steps seen before
    (tmp_path / 'config.py').unlink()
    script = ('import sys\nfrom btgym_aac.evaluation.loading import read_run_config\n'
              "print(read_run_config(sys.argv[1])['policy_config']['class_ref'].__doc__)")
    policy_doc = subprocess.run([sys.executable, '-c', script, str(log_dir)], capture_output=True, text=True,
                                check=True).stdout.strip()
    assert policy_doc == 'Defined in the config file: its workers must get it.'


def test_sigterm_to_the_process_group_stops_the_cluster_after_the_chiefs_last_save(tmp_path):
    with cli_train(tmp_path, 10 ** 9, workers=1) as (cluster, log_dir, trained):
        assert latest_checkpoint(str(log_dir / CKPT)) is None  # save_secs 3600: only the last save writes one
        os.killpg(cluster.pid, signal.SIGTERM)  # as a service manager stops a run: the parameter server too
        assert cluster.wait(timeout=120) == 143
        assert wait_until_group_ends(cluster.pid, 30) == []
    name, step = final_checkpoint_named(tmp_path / 'train.out')
    assert os.path.basename(latest_checkpoint(str(log_dir / CKPT))) == name
    assert checkpoint_step(str(log_dir / CKPT)) == step >= trained


def test_no_task_outlives_a_killed_train(tmp_path):
    with cli_train(tmp_path, 10 ** 9, workers=1) as (cluster, _, _):
        cluster.kill()
        cluster.wait(timeout=30)
        assert wait_until_group_ends(cluster.pid, 60) == []


def test_run_config_of_a_script_with_its_own_env_class_can_be_read_back(tmp_path):
    script = tmp_path / 'train_script.py'
    script.write_text(textwrap.dedent('''
        import sys
        from btgym_aac.algorithms import A3C, Launcher
        from btgym_aac.algorithms.policy import AacDensePolicy
        from btgym_aac.env.gym_wrappers import TestModeEnv
        from btgym_aac.evaluation.loading import read_run_config


        class ScriptEnv(TestModeEnv):
            """An env class of the script's own __main__."""


        if __name__ == '__main__':
            Launcher(env_config={'class_ref': ScriptEnv, 'kwargs': {'env_id': 'CartPole-v1'}},
                     cluster_config={'num_workers': 1, 'log_dir': sys.argv[1]},
                     policy_config={'class_ref': AacDensePolicy, 'kwargs': {'lstm_layers': (8,)}},
                     trainer_config={'class_ref': A3C, 'kwargs': {'rollout_length': 20}},
                     test_mode=True, max_env_steps=40, show_progress=False).run()
            print('env class', read_run_config(sys.argv[1])['env_config']['class_ref'].__name__)
    '''))
    finished = subprocess.run([sys.executable, str(script), str(tmp_path / 'run')], capture_output=True, text=True,
                              timeout=300)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert finished.stdout.strip().splitlines()[-1] == 'env class ScriptEnv'


@pytest.mark.slow
def test_a_run_started_with_ctrl_c_ignored_trains_to_the_end_through_a_ctrl_c(tmp_path):
    max_env_steps = 8000
    with cli_train(tmp_path, max_env_steps,
                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) as (cluster, log_dir, _):
        assert cluster.poll() is None  # still training when Ctrl-C reaches its whole process group
        os.killpg(cluster.pid, signal.SIGINT)
        assert cluster.wait(timeout=300) == 0
        assert checkpoint_step(str(log_dir / CKPT)) >= max_env_steps


def test_workers_stopped_from_outside_make_train_exit_non_zero(tmp_path, monkeypatch, capsys):
    launchers = []
    make_launcher = cli_commands.make_launcher

    def keep_launcher(*args, **kwargs):
        launchers.append(make_launcher(*args, **kwargs))
        return launchers[-1]

    reported = []

    def stop_the_worker_once_it_trains():
        deadline = time.time() + 180
        while time.time() < deadline and not (launchers and launchers[0].progress):
            time.sleep(0.2)
        reported.append(launchers[0].progress[0]['step'])
        launchers[0].processes[('worker', 0)].terminate()  # a signal from outside the launcher

    monkeypatch.setattr(cli_commands, 'make_launcher', keep_launcher)
    stopper = threading.Thread(target=stop_the_worker_once_it_trains)
    stopper.start()
    code = cli_main(['train', str(cartpole_config_file(tmp_path, 10 ** 9)), '--log-dir', str(tmp_path / 'run'),
                     '--workers', '1'])
    stopper.join()
    assert code == 1
    stopped = re.search(r'training stopped at env step (\d+) of 1000000000: the workers were stopped from outside '
                        r'\(a signal\); the latest checkpoint, model_parameters-(\d+), is in ', capsys.readouterr().err)
    assert stopped, 'no line on the stop and the checkpoint'
    reached, saved = int(stopped.group(1)), int(stopped.group(2))
    assert checkpoint_step(str(tmp_path / 'run' / CKPT)) == saved >= reported[0] > 0  # the chief saved at its stop
    assert saved >= reached >= reported[0]
    assert multiprocessing.active_children() == []


def test_a_new_saver_keeps_rotating_the_checkpoints_a_previous_one_listed(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        variable = tf.Variable(1.0)
        with tf.Session(graph=graph) as sess:
            sess.run(variable.initializer)
            previous = FastSaver(max_to_keep=2)
            for step in (1, 2):
                previous.save(sess, str(tmp_path / 'model_parameters'), global_step=step)
            saver = FastSaver(max_to_keep=2)  # a resumed run's, or a restarted chief's
            checkpoints_module.recover_checkpoints(saver, str(tmp_path))
            saver.save(sess, str(tmp_path / 'model_parameters'), global_step=3)
    state = tf.train.get_checkpoint_state(str(tmp_path))
    listed = [os.path.basename(path) for path in state.all_model_checkpoint_paths]
    assert listed == ['model_parameters-2', 'model_parameters-3']
    assert {name.split('.')[0] for name in os.listdir(str(tmp_path)) if name != 'checkpoint'} == set(listed)


class ChiefDied(BaseException):
    """Stands for the chief's process dying."""


def test_a_chief_that_died_between_initialising_and_restoring_is_followed_by_one_that_restores(tmp_path,
                                                                                                  monkeypatch):
    log_dir = tmp_path / 'run'
    cartpole_launcher(log_dir, 300, num_workers=1).run()
    saved_step, saved_weights = checkpoint_step(str(log_dir / CKPT)), checkpoint_weights(str(log_dir / CKPT))
    launcher = cartpole_launcher(log_dir, saved_step, num_workers=1)  # a restored chief has nothing left to train
    cluster = tf.train.ClusterSpec(launcher.cluster_spec)
    tf.train.Server(cluster, job_name='ps', task_index=0)
    server = tf.train.Server(cluster, job_name='worker', task_index=0)
    config = launcher.task_config('worker', 0)

    def die_before_restoring(*args, **kwargs):
        raise ChiefDied()

    monkeypatch.setattr(checkpoints_module, 'restore_order', die_before_restoring)
    with pytest.raises(ChiefDied):
        worker_module.Worker(config, server, get_logger('Worker')).run()  # global variables initialised, not restored
    monkeypatch.undo()
    worker_module.Worker(config, server, get_logger('Worker')).run()
    assert checkpoint_step(str(log_dir / CKPT)) == saved_step
    restored = checkpoint_weights(str(log_dir / CKPT))
    assert len(saved_weights) > 0 and restored.keys() == saved_weights.keys()
    for name, value in restored.items():
        np.testing.assert_array_equal(value, saved_weights[name], err_msg=name)


def test_worker_session_fails_a_run_that_waits_past_the_timeout(monkeypatch):
    monkeypatch.setattr(worker_module, 'SESSION_RUN_TIMEOUT_SECONDS', 1)
    ps_port, worker_port = free_ports(2)
    cluster = tf.train.ClusterSpec({'ps': ['127.0.0.1:{}'.format(ps_port)],
                                    'worker': ['127.0.0.1:{}'.format(worker_port)]})
    tf.train.Server(cluster, job_name='ps', task_index=0)
    worker_server = tf.train.Server(cluster, job_name='worker', task_index=0)
    graph = tf.Graph()
    with graph.as_default():
        with tf.device('/job:ps/task:0'):
            never_filled = tf.FIFOQueue(1, tf.float32)
        with tf.device('/job:worker/task:0'):
            waiting = never_filled.dequeue() + 1.0
    with tf.Session(worker_server.target, graph=graph, config=worker_module.worker_session_config(0)) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):  # without the timeout the run would wait for ever
            sess.run(waiting)


def test_worker_session_config_sees_only_the_ps_and_itself_with_idle_threads_asleep_and_no_rewrites():
    config = worker_module.worker_session_config(3)
    assert config.graph_options.rewrite_options.disable_meta_optimizer
    assert list(config.device_filters) == ['/job:ps', '/job:worker/task:3/cpu:0']
    assert config.intra_op_parallelism_threads == 1
    assert config.experimental.disable_thread_spinning
    assert config.operation_timeout_in_ms == worker_module.SESSION_RUN_TIMEOUT_SECONDS * 1000


def test_a_killed_parameter_server_is_the_one_cause_the_workers_report(tmp_path, capfd):
    launcher = cartpole_launcher(tmp_path / 'run', 100000, num_workers=2, max_restarts=0)
    killed = []

    def kill_the_parameter_server():
        deadline = time.time() + 120
        while time.time() < deadline and not killed:
            if all(launcher.progress.get(task, {}).get('step', 0) > 300 for task in (0, 1)):
                os.kill(launcher.processes[('ps', 0)].pid, signal.SIGKILL)
                killed.append(True)
            time.sleep(0.2)

    thread = threading.Thread(target=kill_the_parameter_server, daemon=True)
    thread.start()
    with pytest.raises(RuntimeError, match='parameter server 0 died with exit code -9'):
        launcher.run()
    thread.join(5)
    assert killed and multiprocessing.active_children() == []
    output = capfd.readouterr()
    log = output.out + output.err
    assert 'needs a running episode' not in log and 'runner of task' not in log and 'Traceback' not in log
    assert 'no final checkpoint' not in log  # the chief does not try to save without its parameter server
    assert 'did not stop in time' not in log  # no worker waits on the lost parameter server
    for task in (0, 1):
        assert log.count('worker {}: its cluster session failed (UnavailableError: '.format(task)) == 1


class EndingProcess:
    """Stands in for a multiprocessing.Process that ends `after` seconds from now with `exitcode`; records the
    timeouts it was joined with."""

    def __init__(self, after, exitcode):
        self.end_time, self.final_exitcode, self.join_timeouts = time.monotonic() + after, exitcode, []

    def is_alive(self):
        return time.monotonic() < self.end_time

    def join(self, timeout):
        self.join_timeouts.append(timeout)
        time.sleep(max(min(self.end_time - time.monotonic(), timeout), 0))

    @property
    def exitcode(self):
        return None if self.is_alive() else self.final_exitcode


def test_a_worker_that_lost_its_session_waits_for_the_parameter_server_death_that_caused_it(monkeypatch):
    monkeypatch.setattr(supervision_module, 'PS_DEATH_WAIT_SECONDS', 1.0)
    launcher = object.__new__(Launcher)
    launcher.processes = {('ps', 0): EndingProcess(0.3, -9),
                          ('worker', 0): EndingProcess(0, worker_module.SESSION_LOST_EXIT_CODE)}
    assert launcher._dead_parameter_server() == (0, -9)
    launcher.processes[('ps', 0)] = live = EndingProcess(600, 0)
    assert launcher._dead_parameter_server() is None  # a live parameter server: the worker alone is to blame
    assert len(live.join_timeouts) == 1 and 0 < live.join_timeouts[0] <= supervision_module.PS_DEATH_WAIT_SECONDS


def test_a_policy_class_of_the_users_keeps_its_own_defaults_and_the_default_class_gets_the_launchers():
    configs = launcher_configs(policy_config={'class_ref': AacDensePolicy})
    assert configs['policy_config'] == {'class_ref': AacDensePolicy, 'kwargs': {}}
    configs = launcher_configs(policy_config={'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (8,)}},
                               trainer_config={'kwargs': {'rollout_length': 5}})
    assert configs['policy_config']['kwargs'] == {'dense_layers': (8,)}
    assert configs['trainer_config'] == {'class_ref': A3C, 'kwargs': {'rollout_length': 5}}
    assert launcher_configs(policy_config={'kwargs': {'lstm_2_init_period': 3}})['policy_config'] == {
        'class_ref': launcher_configs()['policy_config']['class_ref'], 'kwargs': {'lstm_2_init_period': 3}}


def test_two_parameter_servers_share_the_global_variables_with_their_adam_slots():
    env = gym_wrappers.TestModeEnv(env_id='CartPole-v1', seed=0)
    cluster = {'ps': ['127.0.0.1:1', '127.0.0.1:2'], 'worker': ['127.0.0.1:3']}
    with tf.Graph().as_default():
        trainer = A3C(env=env, task=0, policy_config={'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (16,),
                                                                                            'lstm_layers': (16,)}},
                      test_mode=True, cluster_spec=cluster)
        placed = {variable.op.name: variable.device for variable in tf.global_variables()}
        slots = [(variable, trainer.optimizer.get_slot(variable, name)) for variable in trainer.network.var_list
                 for name in ('m', 'v')]
        slots = [(variable, slot) for variable, slot in slots if slot is not None]  # (trained variables only)
    trainer.stop()
    env.close()
    global_devices = {device for name, device in placed.items() if not name.startswith('A3C/local')}
    assert global_devices == {'/job:ps/task:0', '/job:ps/task:1'}
    on_each = [sum(1 for variable in trainer.network.var_list if variable.device == device)
               for device in sorted(global_devices)]
    assert min(on_each) >= len(trainer.network.var_list) // 3  # round-robin: neither server gets them all
    assert len(slots) >= 16 and all(slot.device == variable.device for variable, slot in slots)
    assert all(device.startswith('/job:worker/task:0') for name, device in placed.items()
               if name.startswith('A3C/local'))


def test_a_run_on_two_parameter_servers_trains_saves_and_resumes_every_variable(tmp_path):
    log_dir = tmp_path / 'run'
    result = cartpole_launcher(log_dir, 600, cluster={'num_ps': 2}).run()
    assert result['completed'] and set(result['peak_rss_mb']) == {'worker_0', 'worker_1', 'ps_0', 'ps_1'}
    first_step = checkpoint_step(str(log_dir / CKPT))
    saved = tf.train.load_checkpoint(latest_checkpoint(str(log_dir / CKPT)))
    before = {name: saved.get_tensor(name) for name in saved.get_variable_to_shape_map()}

    cartpole_launcher(log_dir, first_step + 100, learn_rate=1e-12, cluster={'num_ps': 2}).run()
    resumed = tf.train.load_checkpoint(latest_checkpoint(str(log_dir / CKPT)))
    after = {name: resumed.get_tensor(name) for name in resumed.get_variable_to_shape_map()}
    assert after.keys() == before.keys()
    assert first_step + 100 <= after['global/global_step'] < first_step + 600  # counted on from the saved step
    weights = [name for name in before if name.startswith('global/') and 'Adam' not in name
               and name not in ('global/global_step', 'global/global_episode')]
    assert len(weights) >= 6
    for name in weights:  # restored from both servers' variables, then moved by a learn rate of 1e-12 only
        np.testing.assert_allclose(after[name], before[name], atol=1e-6, err_msg=name)


def test_a_killed_parameter_server_is_restarted_and_training_goes_on_from_the_weights_the_workers_held(tmp_path,
                                                                                                       capfd):
    """The parameter server is killed a second after the first checkpoint (half the time to the next, some 1,500
    env steps): the workers write the weights of their last sync before they exit, and the restarted chief takes the
    freshest over the checkpoint, so the run goes on from a step far past the checkpoint's; it saves them at its
    first step, which removes the rescued files."""
    ckpt_dir = str(tmp_path / 'run' / CKPT)
    launcher = cartpole_launcher(tmp_path / 'run', 10000, num_workers=2, save_secs=2)
    killed, reports = [], []
    drain = launcher._drain

    def drain_and_keep(progress, start):
        drain(progress, start)
        reports.extend(dict(report) for report in launcher.progress.values())

    def kill_the_parameter_server_a_second_after_the_first_checkpoint():
        deadline = time.time() + 120
        while time.time() < deadline and not latest_checkpoint(ckpt_dir):
            time.sleep(0.05)
        time.sleep(1.0)
        killed.append((checkpoint_step(ckpt_dir), time.time()))
        os.kill(launcher.processes[('ps', 0)].pid, signal.SIGKILL)

    launcher._drain = drain_and_keep
    thread = threading.Thread(target=kill_the_parameter_server_a_second_after_the_first_checkpoint, daemon=True)
    thread.start()
    with logbook.TestHandler(level=logbook.NOTICE) as handler:
        result = launcher.run()
    thread.join(5)
    assert killed and result['completed'] and result['global_step'] >= 10000
    (saved, killed_at), = killed
    reached = max(report['step'] for report in reports if report['startup']['started'] < killed_at)  # (final reports)
    assert result['ps_restarts'] == {0: 1} and result['restarts'] == {}  # the workers' restarts are not counted
    warnings = [record.message for record in handler.records if 'parameter server 0 died' in record.message]
    assert len(warnings) == 1, warnings
    assert 'died with exit code -9: restarting it (restart 1 of 3 allowed within 10 minutes); training goes on ' \
           'from the freshest of: the checkpoint at step {}, the weights the workers held at their last ' \
           'sync'.format(saved) in warnings[0], warnings
    log = capfd.readouterr().err
    assert len(re.findall(r'Worker_\d: rescued the weights of its last sync, at step \d+, to ', log)) == 2, log
    took = re.findall(r'took the weights worker (\d) held at step (\d+) \(.*worker_\1\.npz\) over the checkpoint '
                      r'at step (\d+): (\d+) env steps saved', log)
    assert len(took) == 1, log
    rescued_step, over = int(took[0][1]), int(took[0][2])
    assert over == saved and reached - rescued_step < 0.1 * (reached - saved), (saved, rescued_step, reached)
    after_taking = log[log.index('took the weights'):]
    first_save = int(re.search(r'Worker_0: saved checkpoint at step (\d+)', after_taking).group(1))
    assert rescued_step < first_save <= rescued_step + 100  # saved at its first step: no checkpoint held them
    restarted_chief = {report['start_step'] for report in reports
                       if report['task'] == 0 and report['startup']['started'] > killed_at}
    assert restarted_chief == {rescued_step}  # the restarted chief went on from the rescued step
    assert rescued_files(str(tmp_path / 'run')) == {}  # the final checkpoint caught up with them
    assert multiprocessing.active_children() == []
