"""Training through repeated process deaths: restart budgets over a sliding window of time (per worker, per
parameter server), the weights a worker rescues from a lost parameter server and the chief's choice among them,
the flags that set the budget, and (slow) a run whose tasks are killed at random until it ends."""
import importlib.util
import os
import pathlib
import types

import logbook
import numpy as np
import pytest

from btgym_aac.algorithms import A3C, Launcher
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac.cli import build_parser
from btgym_aac.cli.config_files import _configs_from_args
from btgym_aac.compat import tf
from btgym_aac.distributed import rescued_weights
from btgym_aac.distributed.cluster import free_ports
from btgym_aac.distributed.launcher import make_launcher
from btgym_aac.distributed.rescued_weights import (freshest_rescued_weights, mismatches, read_rescued_weights,
                                                   remove_caught_up, rescued_files, write_rescued_weights)
from btgym_aac.distributed.supervision import RestartBudget, RestartBudgetSpent
from btgym_aac.distributed.worker import Worker, load_values, quiet_threads_config
from btgym_aac.env import gym_wrappers
from small_runs import small_configs

CHAOS_SCRIPT = pathlib.Path(__file__).resolve().parents[1] / 'benchmarks' / 'chaos_training.py'


class Clock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


# ------------------------------------------------------------------------------------------------- restart budgets

def test_a_task_may_restart_max_restarts_times_within_any_window_and_again_once_the_oldest_leaves_it():
    clock = Clock()
    budget = RestartBudget(3, 10, clock=clock)
    counts = []
    for minute in (0, 5, 8):
        clock.now = minute * 60
        counts.append(budget.spend(('worker', 0)))
    assert counts == [1, 2, 3]
    clock.now = 9.9 * 60
    with pytest.raises(RestartBudgetSpent, match=r'^4 restarts within 10 minutes, more than --max-restarts 3 '
                                                 r'allows$'):
        budget.spend(('worker', 0))
    assert budget.spend(('worker', 1)) == 1 and budget.spend(('ps', 0)) == 1  # every task has a budget of its own
    clock.now = 10.1 * 60  # the restart at minute 0 has left the window (the refused one was not recorded)
    assert budget.spend(('worker', 0)) == 3
    clock.now = 14.9 * 60  # minutes 5, 8 and 10.1 are within the window
    with pytest.raises(RestartBudgetSpent, match='^4 restarts within'):
        budget.spend(('worker', 0))
    clock.now = 100 * 60  # a run that lives long survives any number of restarts spaced out enough
    assert budget.spend(('worker', 0)) == 1
    assert budget.spent_in_words(2) == 'restart 2 of 3 allowed within 10 minutes'


def test_no_restart_is_allowed_with_max_restarts_0_and_a_fractional_window_is_named_as_given():
    with pytest.raises(RestartBudgetSpent, match=r'^1 restart within 0.5 minutes, more than --max-restarts 0 allows$'):
        RestartBudget(0, 0.5, clock=Clock()).spend(('ps', 0))


def budget_launcher(clock, max_restarts=3, window_minutes=10):
    """A Launcher's supervision state without processes: its restarts start nothing."""
    launcher = object.__new__(Launcher)
    launcher.log = logbook.Logger('launcher')
    launcher.restart_budget = RestartBudget(max_restarts, window_minutes, clock=clock)
    launcher.restarts, launcher.last_errors, launcher.error_before_restart = {}, {}, {}
    launcher.progress, launcher.last_report_time, launcher.episodes_before_restart = {}, {}, {}
    launcher.purged, launcher.current_ckpt_dir = False, '/no/such/folder'
    launcher._start = lambda *args: None
    return launcher


def test_the_launcher_counts_a_workers_restarts_within_the_window_not_over_the_run():
    """The run the issue reports (a worker killed again and again, once its 3 restarts of the run were used up the
    run ended) goes on while the deaths are spaced out; four within the window stop it, naming count and window."""
    clock = Clock()
    launcher = budget_launcher(clock)
    for minute in range(0, 60, 4):  # 15 deaths of worker 0, 4 minutes apart: never more than 3 in 10 minutes
        clock.now = minute * 60
        launcher._restart(None, 0, 'died with exit code -9', None)
    assert launcher.restarts == {0: 15}
    for minute in (61, 62):  # with the one at minute 56, three within the window
        clock.now = minute * 60
        launcher._restart(None, 0, 'died with exit code -9', None)
    clock.now = 63 * 60
    with pytest.raises(RuntimeError, match=r'^worker 0 died with exit code -9: 4 restarts within 10 minutes, more '
                                           r'than --max-restarts 3 allows; the log dir holds no checkpoint$'):
        launcher._restart(None, 0, 'died with exit code -9', None)
    launcher._restart(None, 1, 'lost its cluster session to the parameter server\'s restart', None, counted=False)
    assert launcher.restarts == {0: 17}  # a restart after a parameter server's loss spends nothing


# ------------------------------------------------------------------------------------------------- rescued weights

WEIGHTS = {'A3C/local/dense/w': np.arange(6, dtype=np.float32).reshape(2, 3),
           'A3C/local/dense/b': np.array([0.5, -1.5, 2.0], np.float32)}
SHAPES = {name: list(value.shape) for name, value in WEIGHTS.items()}


def scaled(factor):
    return {name: value * factor for name, value in WEIGHTS.items()}


def test_rescued_weights_are_written_whole_read_back_and_replaced_by_a_later_rescue(tmp_path, monkeypatch):
    path = write_rescued_weights(str(tmp_path), 1, 1500, WEIGHTS)
    assert path == str(tmp_path / 'rescued_weights' / 'worker_1.npz')
    assert os.listdir(str(tmp_path / 'rescued_weights')) == ['worker_1.npz']
    rescued = read_rescued_weights(path, 1)
    assert (rescued.task, rescued.step, sorted(rescued.weights)) == (1, 1500, sorted(WEIGHTS))
    for name, value in WEIGHTS.items():
        np.testing.assert_array_equal(rescued.weights[name], value)

    def failing_savez(target, **arrays):
        target.write(b'half a file')
        raise OSError('disk full')

    monkeypatch.setattr(rescued_weights.np, 'savez', failing_savez)
    with pytest.raises(OSError, match='disk full'):
        write_rescued_weights(str(tmp_path), 1, 1600, scaled(2))
    assert os.listdir(str(tmp_path / 'rescued_weights')) == ['worker_1.npz']  # the earlier file, and nothing else
    assert read_rescued_weights(path, 1).step == 1500


def test_the_freshest_rescue_newer_than_the_checkpoint_is_chosen_and_older_or_unreadable_ones_passed_over(tmp_path):
    write_rescued_weights(str(tmp_path), 0, 1400, scaled(1))
    write_rescued_weights(str(tmp_path), 1, 1500, scaled(2))
    (tmp_path / 'rescued_weights' / 'worker_2.npz').write_bytes(b'not an archive')
    (tmp_path / 'rescued_weights' / 'notes.txt').write_text('kept')
    with logbook.TestHandler() as handler:
        freshest = freshest_rescued_weights(str(tmp_path), 1000, logbook.Logger('chief'))
        assert (freshest.task, freshest.step) == (1, 1500)
        np.testing.assert_array_equal(freshest.weights['A3C/local/dense/w'], WEIGHTS['A3C/local/dense/w'] * 2)
        assert freshest_rescued_weights(str(tmp_path), 1450, logbook.Logger('chief')).task == 1
        assert freshest_rescued_weights(str(tmp_path), 1500, logbook.Logger('chief')) is None  # not newer
    assert any('worker_2.npz cannot be read' in record.message and 'passed over' in record.message
               for record in handler.records)
    assert freshest_rescued_weights(str(tmp_path / 'elsewhere'), 0, logbook.Logger('chief')) is None


def test_weights_that_do_not_fit_the_policy_are_named():
    assert mismatches(WEIGHTS, SHAPES) == []
    wrong = dict(WEIGHTS, **{'A3C/local/dense/w': np.zeros((3, 2)), 'A3C/local/other': np.zeros(1)})
    del wrong['A3C/local/dense/b']
    assert mismatches(wrong, SHAPES) == ['A3C/local/dense/b missing',
                                         'A3C/local/dense/w rescued as [3, 2], the policy has [2, 3]',
                                         'A3C/local/other is not a variable of the policy']


def test_a_checkpoint_removes_the_rescues_it_caught_up_with_and_nothing_else(tmp_path):
    write_rescued_weights(str(tmp_path), 0, 1400, WEIGHTS)
    write_rescued_weights(str(tmp_path), 1, 1500, WEIGHTS)
    (tmp_path / 'rescued_weights' / 'worker_2.npz').write_bytes(b'not an archive')
    (tmp_path / 'rescued_weights' / 'notes.txt').write_text('kept')
    removed = remove_caught_up(str(tmp_path), 1400, logbook.Logger('chief'))
    assert removed == [str(tmp_path / 'rescued_weights' / 'worker_0.npz')]
    assert sorted(os.listdir(str(tmp_path / 'rescued_weights'))) == ['notes.txt', 'worker_1.npz', 'worker_2.npz']
    assert sorted(rescued_files(str(tmp_path))) == [1, 2]


class PolicyPair:
    """A local and a global copy of the WEIGHTS variables and a global step, in a graph of their own (on the
    device of the local job's task 0 for the local copy when `device` is given)."""

    def __init__(self, device=None):
        self.graph = tf.Graph()
        with self.graph.as_default():
            with tf.device(device), tf.variable_scope('A3C/local'):
                self.local = [tf.get_variable(name.split('/', 2)[2], value.shape, initializer=tf.zeros_initializer())
                              for name, value in WEIGHTS.items()]
            with tf.variable_scope('global'):
                self.global_ = [tf.get_variable(name.split('/', 2)[2], value.shape,
                                                initializer=tf.constant_initializer(-1.0))
                                for name, value in WEIGHTS.items()]
                self.global_step = tf.get_variable('global_step', [], tf.int32, initializer=tf.zeros_initializer())
            self.init_op = tf.global_variables_initializer()
        self.graph.finalize()

    def worker(self, log_dir, task=0, synced_global_step=None, server=None):
        """A Worker of these variables, with only what rescuing and taking rescued weights read."""
        worker = object.__new__(Worker)
        worker.task, worker.config, worker.server = task, {'log_dir': str(log_dir)}, server
        worker.log = logbook.Logger('Worker_{}'.format(task))
        worker.policy_pairs = list(zip(self.local, self.global_))
        worker.took_rescued_weights = False
        worker.trainer = types.SimpleNamespace(global_step=self.global_step,
                                               learner=types.SimpleNamespace(synced_global_step=synced_global_step))
        return worker


def test_a_worker_whose_session_failed_writes_the_weights_of_its_local_policy_with_the_step_of_their_sync(tmp_path):
    """Read in a session of their own, through the worker's server (which keeps them for all its sessions)."""
    address = '127.0.0.1:{}'.format(free_ports(1)[0])
    server = tf.train.Server(tf.train.ClusterSpec({'worker': [address]}), job_name='worker', task_index=0,
                             config=quiet_threads_config())
    pair = PolicyPair(device='/job:worker/task:0/cpu:0')
    with tf.Session(server.target, graph=pair.graph, config=quiet_threads_config()) as sess:
        sess.run(pair.init_op)
        load_values(sess, list(zip(pair.local, WEIGHTS.values())))
        with logbook.TestHandler() as handler:
            pair.worker(tmp_path, synced_global_step=None, server=server)._rescue_weights()
            assert rescued_files(str(tmp_path)) == {}  # nothing synced yet: nothing to rescue
            pair.worker(tmp_path, synced_global_step=1234, server=server)._rescue_weights()
    rescued = read_rescued_weights(rescued_files(str(tmp_path))[0], 0)
    assert rescued.step == 1234 and sorted(rescued.weights) == sorted(WEIGHTS)
    for name, value in WEIGHTS.items():
        np.testing.assert_array_equal(rescued.weights[name], value)
    assert [record.message for record in handler.records] == [
        'no weights synced from the global policy yet: nothing rescued',
        'rescued the weights of its last sync, at step 1234, to {}'.format(rescued.path)]


@pytest.fixture()
def chief(tmp_path):
    """(PolicyPair, its session with the global step at 1000 as a restored checkpoint's, a chief Worker)."""
    pair = PolicyPair()
    with tf.Session(graph=pair.graph) as sess:
        sess.run(pair.init_op)
        load_values(sess, [(pair.global_step, 1000)])
        yield pair, sess, pair.worker(tmp_path)


def global_values(pair, sess):
    """{name: the global copy's value as a list} and the global step."""
    return dict(zip(WEIGHTS, (value.tolist() for value in sess.run(pair.global_))),
                global_step=int(sess.run(pair.global_step)))


def test_the_chief_takes_the_freshest_rescued_weights_newer_than_its_checkpoint(tmp_path, chief):
    pair, sess, worker = chief
    write_rescued_weights(str(tmp_path), 0, 1200, scaled(3))
    write_rescued_weights(str(tmp_path), 1, 1500, scaled(2))
    with logbook.TestHandler() as handler:
        worker._take_rescued_weights(sess, 'resumed')
    assert global_values(pair, sess) == dict({name: value.tolist() for name, value in scaled(2).items()},
                                             global_step=1500)
    assert worker.took_rescued_weights  # (it saves them at its first step)
    assert [record.message for record in handler.records] == [
        'took the weights worker 1 held at step 1500 ({}) over the checkpoint at step 1000: 500 env steps '
        'saved'.format(tmp_path / 'rescued_weights' / 'worker_1.npz')]


def test_the_chief_keeps_its_checkpoint_over_older_rescued_weights_and_refuses_weights_that_do_not_fit(tmp_path,
                                                                                                       chief):
    pair, sess, worker = chief
    before = global_values(pair, sess)
    write_rescued_weights(str(tmp_path), 1, 900, scaled(2))
    worker._take_rescued_weights(sess, 'resumed')
    assert global_values(pair, sess) == before  # older than the checkpoint: ignored
    write_rescued_weights(str(tmp_path), 1, 1500, dict(WEIGHTS, **{'A3C/local/dense/w': np.zeros((3, 2))}))
    with logbook.TestHandler() as handler:
        worker._take_rescued_weights(sess, 'scratch')
    assert global_values(pair, sess) == before and not worker.took_rescued_weights
    assert [record.message for record in handler.records] == [
        'the weights worker 1 rescued at step 1500 ({}) do not fit this run\'s policy: A3C/local/dense/w rescued as '
        '[3, 2], the policy has [2, 3]; they are ignored and training goes on from scratch'.format(
            tmp_path / 'rescued_weights' / 'worker_1.npz')]


def test_the_learner_knows_the_global_step_of_the_weights_its_local_policy_holds():
    """After the start's sync, the step read with it; a step that writes the model summary syncs before its update
    (the local policy keeps the weights of that sync); one that ends with the sync, the step it fetched."""
    env = gym_wrappers.TestModeEnv(env_id='CartPole-v1', seed=0)
    graph = tf.Graph()
    with graph.as_default():
        trainer = A3C(env=env, task=0, policy_config={'class_ref': AacDensePolicy, 'kwargs': {
            'dense_layers': (8,), 'lstm_layers': (8,)}}, test_mode=True, rollout_length=10, model_summary_freq=2,
            random_seed=0)
        init_op = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    try:
        sess.run(init_op)
        load_values(sess, [(trainer.global_step, 700)])
        trainer.start(sess, None)
        learner = trainer.learner
        assert learner.synced_global_step == 700

        def local_holds_global():
            return all(np.array_equal(local, global_) for local, global_ in
                       zip(sess.run(trainer.local_network.var_list), sess.run(trainer.network.var_list)))

        trainer.process(sess)  # step 0 writes the summary: no sync after its update
        assert learner.synced_global_step == 700 and not local_holds_global()
        trainer.process(sess)  # step 1: synced before (with the step of step 0), ends with the sync
        assert learner.synced_global_step == trainer.last_global_step > 700 and local_holds_global()
    finally:
        trainer.stop()
        sess.close()
        env.close()


# ------------------------------------------------------------------------------------------------- flags and configs

def test_restart_flags_set_the_launcher_config_over_a_config_files_on_train_and_cluster_node(tmp_path):
    config = tmp_path / 'config.py'
    config.write_text('launcher_config = {"max_restarts": 7, "restart_window_minutes": 30}\n')
    parser = build_parser()
    launcher_config = _configs_from_args(parser.parse_args(['train', str(config)]))['launcher_config']
    assert (launcher_config['max_restarts'], launcher_config['restart_window_minutes']) == (7, 30)
    for command in (['train'], ['cluster-node', '--cluster', 'spec.json', '--job', 'worker', '--task', '0']):
        args = parser.parse_args(command + [str(config), '--max-restarts', '0', '--restart-window', '2.5'])
        launcher_config = _configs_from_args(args)['launcher_config']
        assert (launcher_config['max_restarts'], launcher_config['restart_window_minutes']) == (0, 2.5)
    configs = _configs_from_args(parser.parse_args(['train', '--restart-window', '0.5',
                                                    '--log-dir', str(tmp_path / 'run')]))
    launcher = make_launcher(configs, show_progress=False)
    assert (launcher.max_restarts, launcher.restart_window_minutes) == (3, 0.5)  # the default count
    assert (launcher.restart_budget.max_restarts, launcher.restart_budget.window_minutes) == (3, 0.5)


@pytest.mark.parametrize('flags, message', [
    (['--max-restarts', '-1'], "argument --max-restarts: must be a whole number >= 0, got '-1'"),
    (['--max-restarts', 'many'], "argument --max-restarts: must be a whole number >= 0, got 'many'"),
    (['--restart-window', '0'], 'argument --restart-window: must be a number > 0, got 0'),
])
def test_bad_restart_flags_are_refused_naming_the_flag_and_the_value(capsys, flags, message):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(['train'] + flags)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize('window', [0, -1, float('inf'), '10'])
def test_a_launcher_refuses_a_restart_window_that_is_not_a_positive_number_of_minutes(tmp_path, window):
    with pytest.raises(ValueError, match='^restart_window_minutes must be a positive number of minutes, got '):
        Launcher(cluster_config={'log_dir': str(tmp_path / 'run'), 'network_isolation': 'off'},
                 restart_window_minutes=window)
    assert not (tmp_path / 'run').exists()


# ------------------------------------------------------------------------------------------------------ chaos run

@pytest.mark.slow
def test_a_run_whose_tasks_are_killed_at_random_ends_at_its_target_keeping_the_steps_the_workers_held(tmp_path):
    """Two workers and a parameter server of a small reference run, one of them SIGKILLed every 20-40 s (seeded
    choice of target and interval) until the run ends (some 3 minutes, 6 kills): it reaches its step target, its
    checkpoint restores and holds finite weights only, and a parameter server's death loses far fewer env steps
    than those trained since the last checkpoint (save_secs 60)."""
    spec = importlib.util.spec_from_file_location('chaos_training', str(CHAOS_SCRIPT))
    chaos = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chaos)
    configs = small_configs()
    configs['cluster_config'] = dict(configs['cluster_config'], num_workers=2, log_dir=str(tmp_path / 'run'))
    result = chaos.chaos_run(configs, max_steps=40000, seed=4, interval=(20, 40), max_restarts=20)
    faults = result['faults']  # (seed 4: the parameter server first, then worker 0, ...)
    assert result['completed'] and result['final_step'] >= 40000, result
    assert {fault['target'] for fault in faults[:2]} == {'ps_0', 'worker_0'}, faults
    assert all(fault['survived'] for fault in faults), faults
    ps_faults = [fault for fault in faults if fault['target'] == 'ps_0']
    for fault in ps_faults:
        assert fault['env_steps_lost'] <= 0.1 * fault['env_steps_since_checkpoint'] + 200, fault
    assert sum(fault['env_steps_lost'] for fault in ps_faults) * 10 < \
        sum(fault['env_steps_since_checkpoint'] for fault in ps_faults), ps_faults
    assert result['checkpoint']['restores'] is True and result['checkpoint']['all_finite'], result['checkpoint']
    assert result['checkpoint']['step'] >= 40000
