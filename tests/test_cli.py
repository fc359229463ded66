"""`btgym-aac` commands given bad input: one line naming the problem, a non-zero exit, nothing of the user's lost."""
import json
import os
import pickle
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from btgym_aac import cli as cli_module
from btgym_aac.cli import main as cli_main
from btgym_aac.compat import tf
from btgym_aac.data import make_random_walk_data, write_histdata_csv
from btgym_aac.distributed.checkpoints import (CheckpointStateError, FastSaver, check_checkpoint_fits,
                                               latest_checkpoint, restore_order)
from btgym_aac.distributed.cluster import free_ports, port_is_free
from btgym_aac.distributed.log_dir import LOCK_FILE, LogDirLock
from btgym_aac.distributed.run_config import pickle_run_config, write_run_config
from btgym_aac.evaluation.loading import resolve_checkpoint
from btgym_aac.paths import UntrustedFileError

CKPT = 'current_train_checkpoint'


def saved_run(log_dir, steps=(10, 20)):
    """A log dir whose checkpoint dir holds checkpoints of one variable at `steps`."""
    (log_dir / CKPT).mkdir(parents=True, exist_ok=True)
    graph = tf.Graph()
    with graph.as_default(), tf.Session(graph=graph) as sess:
        variable = tf.Variable(3.0, name='global/weight')
        sess.run(variable.initializer)
        saver = FastSaver(max_to_keep=len(steps))
        for step in steps:
            saver.save(sess, str(log_dir / CKPT / 'model_parameters'), global_step=step)
    return log_dir


def files_under(directory):
    return sorted(os.path.relpath(os.path.join(root, name), directory)
                  for root, _, names in os.walk(directory) for name in names)


def test_export_copies_the_latest_checkpoint_and_replaces_an_earlier_export(tmp_path):
    run = saved_run(tmp_path / 'run')
    dest = tmp_path / 'exported'
    assert cli_main(['export', '--checkpoint-only', str(run), str(dest)]) == 0
    assert latest_checkpoint(str(dest)).endswith('model_parameters-20')
    saved_run(run, steps=(30,))
    assert cli_main(['export', '--checkpoint-only', str(run), str(dest)]) == 0
    assert files_under(dest) == ['checkpoint', 'model_parameters-30.data-00000-of-00001',
                                 'model_parameters-30.index']
    assert [name for name in os.listdir(tmp_path) if 'exporting' in name] == []


def test_export_makes_the_missing_parent_folders_of_its_target(tmp_path):
    run = saved_run(tmp_path / 'run')
    dest = tmp_path / 'models' / 'eurusd' / 'exported'
    assert cli_main(['export', '--checkpoint-only', str(run), str(dest)]) == 0
    assert latest_checkpoint(str(dest)).endswith('model_parameters-20')
    assert os.listdir(dest.parent) == ['exported']


def assert_export_refused(capsys, run, target, message, watched):
    """`export run target` exits 2 with `message` and leaves the files under `watched` as they were."""
    before = files_under(watched)
    assert cli_main(['export', '--checkpoint-only', str(run), str(target)]) == 2
    assert message in capsys.readouterr().err
    assert files_under(watched) == before


def test_export_refuses_a_folder_with_other_files_and_keeps_them(tmp_path, capsys):
    run = saved_run(tmp_path / 'run')
    dest = tmp_path / 'precious'
    dest.mkdir()
    (dest / 'notes.txt').write_text('important')
    assert_export_refused(capsys, run, dest, 'is not empty and does not hold an exported checkpoint', dest)
    assert files_under(dest) == ['notes.txt']


@pytest.mark.parametrize('target', ['run', '.', 'run/' + CKPT], ids=['log-dir', 'parent', 'checkpoint-dir'])
def test_export_refuses_a_folder_holding_the_run_being_exported(tmp_path, capsys, target):
    run = saved_run(tmp_path / 'run')
    (tmp_path / 'other_run').mkdir()
    (tmp_path / 'other_run' / 'events').write_text('summaries')
    assert_export_refused(capsys, run, tmp_path / target, 'holds the checkpoints being exported', tmp_path)


def test_export_refuses_a_folder_in_another_runs_log_dir(tmp_path, capsys):
    run = saved_run(tmp_path / 'run')
    other = saved_run(tmp_path / 'other', steps=(5,))
    (other / 'run_config.pkl').write_bytes(b'configs')
    assert_export_refused(capsys, run, other / CKPT, 'lies in the log dir of a run', other)


def test_export_into_a_file_or_of_a_checkpoint_without_data_fails_and_leaves_nothing_behind(tmp_path, capsys):
    run = saved_run(tmp_path / 'run')
    (tmp_path / 'afile').write_text('x')
    assert cli_main(['export', '--checkpoint-only', str(run), str(tmp_path / 'afile')]) == 2
    assert 'is a file' in capsys.readouterr().err
    os.remove(str(run / CKPT / 'model_parameters-20.data-00000-of-00001'))
    assert cli_main(['export', '--checkpoint-only', str(run), str(tmp_path / 'exported')]) == 2
    assert 'misses its .index or .data files' in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ['afile', 'run']


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def _flip_first_byte(path):
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize('suffix, damage', [
    ('.data-00000-of-00001', _truncate), ('.data-00000-of-00001', _flip_first_byte), ('.index', _truncate)],
    ids=['truncated-data', 'changed-data', 'truncated-index'])
def test_export_of_a_damaged_checkpoint_fails_naming_it_and_leaves_nothing_behind(tmp_path, capsys, suffix, damage):
    run = saved_run(tmp_path / 'run')
    damage(run / CKPT / ('model_parameters-20' + suffix))
    assert cli_main(['export', '--checkpoint-only', str(run), str(tmp_path / 'exported')]) == 2
    assert "checkpoint '{}' cannot be read".format(run / CKPT / 'model_parameters-20') in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ['run']


def test_export_below_a_file_fails_naming_the_file(tmp_path, capsys):
    run = saved_run(tmp_path / 'run')
    (tmp_path / 'afile').write_text('x')
    assert cli_main(['export', '--checkpoint-only', str(run), str(tmp_path / 'afile' / 'models' / 'exported')]) == 2
    assert "cannot be made: '{}' is a file".format(tmp_path / 'afile') in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ['afile', 'run']
    assert (tmp_path / 'afile').read_text() == 'x'


@pytest.mark.parametrize('pretrained', [False, True], ids=['resume', 'pre-trained'])
def test_restoring_a_checkpoint_of_another_model_names_the_variables_that_do_not_fit(tmp_path, pretrained):
    run = saved_run(tmp_path / 'run')
    graph = tf.Graph()
    with graph.as_default(), tf.Session(graph=graph) as sess:
        variables = [tf.Variable(np.zeros(3, np.float32), name='global/weight'),
                     tf.Variable(np.zeros((2, 2), np.float32), name='global/bias')]
        sess.run(tf.variables_initializer(variables))
        saver = FastSaver(var_list=variables)
        checkpoint_dirs = (str(run / CKPT), None) if pretrained else (None, str(run / CKPT))
        with pytest.raises(ValueError, match=r"checkpoint '\S+model_parameters-20' does not fit the model of this "
                                             r"run's configs: global/weight saved as \[\], the model of this run's "
                                             r"configs has \[3\]; global/bias missing$"):
            restore_order(sess, saver, None, *checkpoint_dirs, log=None)
        np.testing.assert_array_equal(sess.run(variables[0]), np.zeros(3))


def test_a_checkpoint_that_misses_many_variables_names_the_first_five_and_counts_the_rest(tmp_path):
    run = saved_run(tmp_path / 'run')
    with tf.Graph().as_default():
        variables = [tf.Variable(0.0, name='global/v{}'.format(index)) for index in range(7)]
        with pytest.raises(ValueError, match=r"does not fit the test model: global/v0 missing; global/v1 missing; "
                                             r"global/v2 missing; global/v3 missing; global/v4 missing; and 2 more$"):
            check_checkpoint_fits(str(run / CKPT / 'model_parameters-20'), variables, 'the test model')


def config_file(tmp_path, text):
    path = tmp_path / 'config.py'
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize('text, message', [
    ('env_config = {\n', 'config.py line 1: '),
    ('x = 1\nenv_config = undefined_name\n', "config.py line 2 failed: NameError: name 'undefined_name'"),
    ('import no_such_module_xyz\n', "config.py line 1 failed: ModuleNotFoundError: No module named"),
    ('env_config = 5\n', 'config.py: env_config must be a dict, got int'),
    ('launcher_config = {"bogus_key": 1}\n', 'launcher_config has unknown key(s) bogus_key; Launcher takes'),
    ('launcher_config = {"max_env_steps": "abc"}\n', "max_env_steps (env steps to train) must be a whole number"),
    ('launcher_config = {"save_secs": "soon"}\n', "save_secs must be a positive number of seconds, got 'soon'"),
    ('cluster_config = {"num_workers": "two"}\n', "cluster_config num_workers must be a whole number >= 1, got 'two'"),
    ('cluster_config = {"port": "abc"}\n', "cluster_config port must be a whole number >= 1, got 'abc'"),
    ('import sys\nsys.exit(0)\n', 'config.py exited (exit status 0) instead of defining its configs'),
    ('cluster_config = {"num_wrkers": 2}\n', "unknown cluster_config key(s) ['num_wrkers']; known: ["),
    ('cluster_config = {"host": "no.such.host.invalid"}\n',
     "cluster_config host 'no.such.host.invalid' does not resolve to an address"),
    ('cluster_config = {"num_workers": 10 ** 6}\n', 'a cluster of 1000001 tasks (num_workers 1000000 + num_ps 1) '
                                                     'is more than the 1024 one launcher runs on one host'),
    ('cluster_config = {"log_ckpt_subdir": "../escape"}\n',
     "cluster_config log_ckpt_subdir must be a folder name inside the log dir, got '../escape'"),
    ('launcher_config = {"max_restarts": "3"}\n', "max_restarts must be a whole number >= 0, got '3'"),
    ('launcher_config = {"restart_window_minutes": 0}\n',
     'restart_window_minutes must be a positive number of minutes, got 0'),
    ('launcher_config = {"stall_seconds": "x"}\n', "stall_seconds must be a positive number of seconds, got 'x'"),
    ('launcher_config = {"save_secs": float("inf")}\n', 'save_secs must be a positive number of seconds, got inf'),
], ids=['syntax', 'name', 'import', 'not-a-dict', 'unknown-key', 'steps', 'save-secs', 'workers', 'port', 'exit',
        'unknown-cluster-key', 'host', 'huge-cluster', 'ckpt-subdir', 'restarts', 'restart-window', 'stall',
        'infinite-save-secs'])
def test_bad_config_file_gives_one_line_naming_the_problem(tmp_path, capsys, text, message):
    assert cli_main(['train', config_file(tmp_path, text), '--log-dir', str(tmp_path / 'run')]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and 'Traceback' not in err
    assert not (tmp_path / 'run').exists()


def test_missing_data_file_or_empty_log_dir_is_refused_before_fresh_empties_the_log_dir(tmp_path, capsys,
                                                                                         monkeypatch):
    run = saved_run(tmp_path / 'run')
    before = files_under(run)
    missing = str(tmp_path / 'nonexist.csv')
    assert cli_main(['train', '--fresh', '--data', missing, '--log-dir', str(run)]) == 2
    assert "data file '{}' (env_config filename) does not exist".format(missing) in capsys.readouterr().err
    assert files_under(run) == before
    monkeypatch.chdir(run)
    assert cli_main(['train', '--fresh', '--log-dir', '']) == 2
    assert 'log_dir is empty' in capsys.readouterr().err
    assert files_under(run) == before


@pytest.mark.parametrize('folder', [CKPT, 'worker_1'])
def test_a_checkpoint_or_summary_folder_that_is_a_file_is_named(tmp_path, capsys, folder):
    (tmp_path / 'run').mkdir()
    (tmp_path / 'run' / folder).write_text('not a folder')
    assert cli_main(['train', '--log-dir', str(tmp_path / 'run')]) == 2
    assert '{} is a file, not a folder'.format(tmp_path / 'run' / folder) in capsys.readouterr().err


def test_a_log_dir_below_a_file_names_the_file(tmp_path, capsys):
    (tmp_path / 'afile').write_text('not a folder')
    assert cli_main(['train', '--log-dir', str(tmp_path / 'afile' / 'runs' / 'run')]) == 2
    assert '{} is a file, not a folder for logs and checkpoints'.format(tmp_path / 'afile') in \
        capsys.readouterr().err
    assert os.listdir(tmp_path) == ['afile']


def test_a_folder_given_as_data_file_is_named_as_such(tmp_path, capsys):
    assert cli_main(['train', '--data', str(tmp_path), '--log-dir', str(tmp_path / 'run')]) == 2
    assert "data file '{}' (env_config filename) is a folder, not a file".format(tmp_path) in capsys.readouterr().err


@pytest.mark.parametrize('spec, message', [
    ('{"ps": [', 'is not valid JSON'),
    ('["a"]', 'must be a JSON object'),
    ('{"ps": "127.0.0.1:2222", "worker": ["127.0.0.1:2223"]}', 'non-empty list of "host:port" addresses under "ps"'),
    ('{"ps": ["nohostport"], "worker": ["127.0.0.1:2223"]}', "ps address 'nohostport' is not \"host:port\""),
    ('{"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2222"]}',
     'ps 0 and worker 1 share the address 127.0.0.1:2222'),
], ids=['json', 'list', 'string', 'address', 'shared address'])
def test_bad_cluster_spec_is_named(tmp_path, capsys, spec, message):
    (tmp_path / 'cluster.json').write_text(spec)
    code = cli_main(['cluster-node', '--cluster', str(tmp_path / 'cluster.json'), '--job', 'ps', '--task', '0'])
    assert code == 2
    err = capsys.readouterr().err
    assert str(tmp_path / 'cluster.json') in err and message in err


@pytest.mark.parametrize('interface', ['127.0.0.1', '127.0.0.2'])
def test_a_port_taken_on_any_interface_is_named(tmp_path, capsys, interface):
    with socket.socket() as holder:
        holder.bind((interface, 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        spec = {'ps': ['127.0.0.1:{}'.format(port)], 'worker': ['127.0.0.1:{}'.format(free_ports(1)[0])]}
        (tmp_path / 'cluster.json').write_text(json.dumps(spec))
        code = cli_main(['cluster-node', '--cluster', str(tmp_path / 'cluster.json'), '--job', 'ps', '--task', '0'])
        assert code == 2 and 'port {} of this task'.format(port) in capsys.readouterr().err
        assert cli_main(['train', '--port', str(port), '--log-dir', str(tmp_path / 'run')]) == 2
        err = capsys.readouterr().err
        assert 'cluster port(s) [{}] are in use'.format(port) in err and '--port of btgym-aac train' in err


def one_ps_one_worker_spec(tmp_path):
    """Writes `cluster.json` of one parameter server and one worker on free loopback ports; returns the ps port."""
    ps_port, worker_port = free_ports(2)
    (tmp_path / 'cluster.json').write_text(json.dumps(
        {'ps': ['127.0.0.1:{}'.format(ps_port)], 'worker': ['127.0.0.1:{}'.format(worker_port)]}))
    return ps_port


def test_a_ctrl_c_handed_to_another_thread_still_ends_a_serving_parameter_server():
    """The kernel may deliver a process's SIGINT to any thread; a parameter server's main thread must still see it
    (it slept for an hour at a time, and a Ctrl-C taken by one of TensorFlow's threads went unseen)."""
    code = ('import signal, threading, time\n'
            'from btgym_aac.distributed.worker import _serve_until_interrupted\n'
            'other = threading.Thread(target=time.sleep, args=(120,), daemon=True)\n'
            'other.start()\n'
            'threading.Timer(0.5, signal.pthread_kill, (other.ident, signal.SIGINT)).start()\n'
            'try:\n'
            '    _serve_until_interrupted(object())\n'
            'except KeyboardInterrupt:\n'
            '    print("interrupted")\n')
    finished = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=90)
    assert finished.stdout.strip() == 'interrupted', finished.stderr


def test_ctrl_c_ends_a_hand_started_parameter_server(tmp_path):
    ps_port = one_ps_one_worker_spec(tmp_path)
    node = subprocess.Popen([sys.executable, '-m', 'btgym_aac.cli', 'cluster-node', '--cluster',
                             str(tmp_path / 'cluster.json'), '--job', 'ps', '--task', '0', '--log-dir',
                             str(tmp_path / 'run')], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and port_is_free(ps_port) and node.poll() is None:
            time.sleep(0.2)
        assert not port_is_free(ps_port), 'the parameter server never listened'
        node.send_signal(signal.SIGINT)
        assert node.wait(timeout=30) == 130
        assert 'ps 0 stopped by Ctrl-C' in node.stderr.read()
    finally:
        if node.poll() is None:
            node.kill()
            node.wait()


def test_a_worker_says_it_waits_for_an_absent_parameter_server_and_stops_at_ctrl_c(tmp_path):
    """Nodes of a hand-started cluster share the log dir: one is never refused for another's lock (the ps node
    that lost that race left its workers waiting forever). A node takes no lock, so a worker started beside a
    holder of the lock covers one started alone."""
    ps_port = one_ps_one_worker_spec(tmp_path)
    lock = LogDirLock(str(tmp_path / 'run'))
    lock.acquire()
    (tmp_path / 'config.py').write_text(
        'from btgym_aac.algorithms.policy import AacDensePolicy\n'
        'from btgym_aac.env.gym_wrappers import TestModeEnv\n'
        "env_config = {'class_ref': TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}}\n"
        "policy_config = {'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (8,), 'lstm_layers': (8,)}}\n"
        "launcher_config = {'test_mode': True, 'max_env_steps': 100}\n")
    log = tmp_path / 'stderr.txt'
    with open(str(log), 'w') as stderr:
        node = subprocess.Popen([sys.executable, '-m', 'btgym_aac.cli', 'cluster-node', '--cluster',
                                 str(tmp_path / 'cluster.json'), '--job', 'worker', '--task', '0',
                                 str(tmp_path / 'config.py'), '--log-dir', str(tmp_path / 'run')],
                                stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        waiting = "waiting for parameter server(s) ['127.0.0.1:{}']".format(ps_port)
        deadline = time.time() + 120
        while time.time() < deadline and waiting not in log.read_text() and node.poll() is None:
            time.sleep(0.2)
        assert waiting in log.read_text()
        node.send_signal(signal.SIGINT)
        assert node.wait(timeout=30) == 130
        assert 'stop requested while waiting for the parameter servers' in log.read_text()
        assert 'worker 0 stopped by Ctrl-C or SIGTERM' in log.read_text()
        assert 'never used' not in log.read_text()  # no TensorFlow dump about the unrun readiness op
    finally:
        lock.release()
        if node.poll() is None:
            node.kill()
            node.wait()


@pytest.mark.parametrize('content, message', [
    (b'', 'EOFError'),
    (pickle.dumps({'env_config': {}})[:10], 'UnpicklingError'),
    (b'garbage\n', 'cannot be read'),
    (pickle.dumps([1, 2]), 'holds a list, not the dict of configs'),
    (pickle.dumps({}), "has no env_config dict (got 'NoneType')"),
    (pickle.dumps({'env_config': 5}), "has no env_config dict (got 'int')"),
], ids=['empty', 'truncated', 'text', 'list', 'no-keys', 'not-a-dict'])
def test_evaluate_names_a_damaged_run_config(tmp_path, capsys, content, message):
    run = saved_run(tmp_path / 'run')
    (run / 'run_config.pkl').write_bytes(content)
    assert cli_main(['evaluate', str(run)]) == 2
    err = capsys.readouterr().err
    assert str(run / 'run_config.pkl') in err and message in err and 'Traceback' not in err


def test_negative_seed_is_refused_naming_the_flag(capsys):
    with pytest.raises(SystemExit) as exited:
        cli_main(['evaluate', 'run', '--seed', '-1'])
    assert exited.value.code == 2
    assert "argument --seed: must be a whole number >= 0, got '-1'" in capsys.readouterr().err


def test_a_checkpoint_whose_files_are_gone_is_named_as_such(tmp_path):
    run = saved_run(tmp_path / 'run')
    os.remove(str(run / CKPT / 'model_parameters-20.index'))
    with pytest.raises(CheckpointStateError, match=r'\(model_parameters-20\) has lost its files'):
        resolve_checkpoint(str(run), {'cluster_config': {}})


def test_a_misspelt_config_name_is_warned_about(tmp_path, capsys):
    path = config_file(tmp_path, 'env_config = {}\ntrainer_confg = {}\nhelper_value = 3\n')
    assert set(cli_module.load_config_file(path)) == {'env_config'}
    assert capsys.readouterr().err.strip() == (
        'btgym-aac: warning: config file {} defines `trainer_confg`, not `trainer_config`: it is ignored'.format(path))


def test_a_config_files_cluster_and_launcher_dicts_fill_in_the_command_defaults(tmp_path):
    path = config_file(tmp_path, "cluster_config = {'num_envs': 3}\nlauncher_config = {'save_secs': 5}\n")
    configs = cli_module._configs_from_args(cli_module.build_parser().parse_args(['train', path, '--workers', '4']))
    expected = dict(cli_module.default_configs(import_classes=False)['cluster_config'], num_workers=4, num_envs=3)
    assert configs['cluster_config'] == expected and expected['log_dir'] == cli_module.DEFAULT_LOG_DIR
    assert configs['launcher_config'] == {'max_env_steps': cli_module.DEFAULT_MAX_STEPS, 'save_secs': 5,
                                         'preset': 'tuned'}


def test_initial_checkpoint_folder_flag_reaches_the_launcher(tmp_path, capsys):
    (tmp_path / 'empty').mkdir()
    assert cli_main(['train', '--initial-ckpt-dir', str(tmp_path / 'empty'), '--log-dir', str(tmp_path / 'run')]) == 2
    assert "initial_ckpt_dir '{}' holds no checkpoint".format(tmp_path / 'empty') in capsys.readouterr().err
    run = saved_run(tmp_path / 'exported')
    args = cli_module.build_parser().parse_args(['train', '--initial-ckpt-dir', str(run / CKPT)])
    assert cli_module._configs_from_args(args)['cluster_config']['initial_ckpt_dir'] == str(run / CKPT)


def test_cluster_node_takes_no_worker_count_or_port_its_spec_fixes(capsys):
    for flag in ('--workers', '--port'):
        with pytest.raises(SystemExit) as exited:
            cli_main(['cluster-node', '--cluster', 'spec.json', '--job', 'ps', '--task', '0', flag, '2'])
        assert exited.value.code == 2
        assert 'unrecognized arguments: {}'.format(flag) in capsys.readouterr().err


@pytest.mark.parametrize('algo, trainer', [('a3c', 'A3C'), ('unreal', 'Unreal'), ('ppo', 'PPO')])
def test_algo_flag_picks_the_trainer_also_over_a_config_file(tmp_path, algo, trainer):
    parser = cli_module.build_parser()
    configs = cli_module._configs_from_args(parser.parse_args(['train', '--algo', algo]))
    assert configs['trainer_config']['class_ref'].__name__ == trainer
    assert configs['trainer_config']['kwargs']['opt_learn_rate'] == 1e-3  # the default preset's (fast)
    configs = cli_module._configs_from_args(parser.parse_args(['train', '--algo', algo, '--preset', 'reference']))
    assert configs['trainer_config']['class_ref'].__name__ == trainer
    assert configs['trainer_config']['kwargs']['model_beta'] == 0.05
    path = config_file(tmp_path, "from btgym_aac.algorithms.aac import A3C\n"
                                 "trainer_config = {'class_ref': A3C, 'kwargs': {'rollout_length': 7}}\n")
    configs = cli_module._configs_from_args(parser.parse_args(['train', path, '--algo', algo]))
    assert configs['trainer_config']['class_ref'].__name__ == trainer
    assert configs['trainer_config']['kwargs'] == {'rollout_length': 7}


def test_demo_writes_four_non_blank_renderings(tmp_path, capsys):
    import matplotlib.image

    out = tmp_path / 'demo'
    assert cli_main(['demo', '--out', str(out), '--seed', '3']) == 0
    assert sorted(os.listdir(out)) == ['episode.png', 'external.png', 'human.png', 'internal.png']
    for name in os.listdir(out):
        image = matplotlib.image.imread(str(out / name))
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
        assert image[..., :3].std() > 0.01
    printed = capsys.readouterr().out
    assert 'renderings written: ' in printed and 'agent steps' in printed


def test_a_log_dir_in_use_by_another_run_is_refused_and_left_as_it_is(tmp_path, capsys):
    run = saved_run(tmp_path / 'run')
    with LogDirLock(str(run)):
        before = files_under(run)
        for flags in ([], ['--fresh']):
            assert cli_main(['train', '--log-dir', str(run), '--workers', '1'] + flags) == 2
            assert 'log dir {} is in use by another run (process {}); wait for it to end or choose another log ' \
                   'dir'.format(run, os.getpid()) in capsys.readouterr().err
        assert files_under(run) == before


@pytest.mark.parametrize('damage, message', [
    ('garbage', r'the checkpoint state file \S+/checkpoint cannot be read; it is left as it is'),
    ('lost', r'the latest checkpoint listed in \S+/checkpoint \(model_parameters-20\) has lost its files; it is '
             r'left as it is'),
])
def test_a_damaged_checkpoint_state_stops_train_instead_of_starting_over(tmp_path, capsys, damage, message):
    """TensorFlow reads both as 'no checkpoint': training would start from scratch and abandon the checkpoints."""
    run = saved_run(tmp_path / 'run')
    if damage == 'garbage':
        (run / CKPT / 'checkpoint').write_text('garbage {')
    else:
        os.remove(str(run / CKPT / 'model_parameters-20.index'))
    before = files_under(run)
    assert cli_main(['train', '--log-dir', str(run), '--workers', '1']) == 2
    assert re.search(message, capsys.readouterr().err)
    assert [name for name in files_under(run) if name != LOCK_FILE] == before
    with pytest.raises(CheckpointStateError, match=message):
        resolve_checkpoint(str(run), {'cluster_config': {}})


def test_relative_data_paths_are_stored_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = cli_module.build_parser().parse_args(['train', '--data', 'a.csv', 'sub/b.csv'])
    assert cli_module._configs_from_args(args)['env_config']['kwargs']['filename'] == [
        str(tmp_path / 'a.csv'), str(tmp_path / 'sub' / 'b.csv')]


def test_resuming_with_other_data_is_warned_about(tmp_path, capsys):
    run = saved_run(tmp_path / 'run')
    trained_on = write_histdata_csv(make_random_walk_data(num_bars=4000, seed=1), str(tmp_path / 'old.csv'))
    configs = cli_module._configs_from_args(cli_module.build_parser().parse_args(['train', '--data', trained_on]))
    write_run_config(str(run), pickle_run_config(dict(configs, test_mode=False)))
    new_data = write_histdata_csv(make_random_walk_data(num_bars=4000, seed=2), str(tmp_path / 'new.csv'))
    args = cli_module.build_parser().parse_args(['train', '--data', new_data, '--log-dir', str(run)])
    cli_module._warn_of_changed_data(cli_module.make_launcher(cli_module._configs_from_args(args)))
    expected = 'btgym-aac: warning: resuming {}, trained on data {}, with data {}'.format(run, trained_on, new_data)
    assert capsys.readouterr().err.strip() == expected
    args = cli_module.build_parser().parse_args(['train', '--data', trained_on, '--log-dir', str(run)])
    launcher = cli_module.make_launcher(cli_module._configs_from_args(args))
    cli_module._warn_of_changed_data(launcher)
    assert capsys.readouterr().err == ''
    os.chmod(run / 'run_config.pkl', 0o666)  # now any user could have written it: it is not unpickled
    with pytest.raises(UntrustedFileError, match='--allow-untrusted-config'):
        cli_module._warn_of_changed_data(launcher)
    cli_module._warn_of_changed_data(launcher, allow_untrusted=True)
    assert capsys.readouterr().err == ''


def test_data_flag_refuses_to_replace_a_configs_dataset_object(tmp_path, capsys):
    path = config_file(tmp_path, 'from btgym_aac import BTgymSequentialDataDomain\n'
                                 'from btgym_aac.data import make_sine_data\n'
                                 'env_config = {"class_ref": __import__("btgym_aac").BTgymEnv, "kwargs": {"dataset": '
                                 'BTgymSequentialDataDomain(trial_params={"sample_duration": {"days": 1}, '
                                 '"time_gap": {"hours": 1}, "test_period": {"hours": 2}}, episode_params={'
                                 '"sample_duration": {"hours": 2}, "time_gap": {"hours": 1}}, '
                                 'dataframe=make_sine_data())}}\n')
    data = tmp_path / 'bars.csv'
    data.write_text('20170102 000000;1.0;1.0;1.0;1.0;0\n')
    assert cli_main(['train', path, '--data', str(data), '--log-dir', str(tmp_path / 'run')]) == 2
    assert '--data would replace the config\'s `dataset` (a BTgymSequentialDataDomain)' in capsys.readouterr().err
    assert not (tmp_path / 'run').exists()


def test_train_runs_its_launcher_without_tensorflow_and_saves_the_real_classes(tmp_path):
    from btgym_aac.algorithms.aac import A3C
    from btgym_aac.algorithms.policy import AacDensePolicy
    from btgym_aac.evaluation.loading import read_run_config

    run = tmp_path / 'run'
    code = ('import sys\n'
            'from btgym_aac.cli import main\n'
            'status = main(["train", "--workers", "1", "--max-steps", "40", "--log-dir", sys.argv[1]])\n'
            'print("imported:", [name for name in ("tensorflow", "matplotlib") if name in sys.modules])\n'
            'sys.exit(status)\n')
    finished = subprocess.run([sys.executable, '-c', code, str(run)], capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert 'imported: []' in finished.stdout
    timed = re.search(r'first trained step ([\d.]+) s after the command started \(worker 0: configs and TensorFlow '
                      r'imported at ([\d.]+) s, graph built at ([\d.]+) s, session ready at ([\d.]+) s\)',
                      finished.stdout)
    assert timed, finished.stdout
    first_step, *phases = [float(seconds) for seconds in timed.groups()]
    assert 0 < phases[0] <= phases[1] <= phases[2] <= first_step
    saved = read_run_config(str(run))
    assert saved['trainer_config']['class_ref'] is A3C
    assert saved['policy_config']['class_ref'] is AacDensePolicy
    done = re.search(r'^done: (\d+) env steps', finished.stdout, re.MULTILINE)
    assert done and int(done.group(1)) >= 40, finished.stdout
    assert latest_checkpoint(str(run / CKPT)).endswith('model_parameters-{}'.format(done.group(1)))


def test_the_command_is_timed_from_its_process_start():
    """STARTED lies between the moment before the process was started and its first line (to the 10 ms of the
    kernel's clock ticks), so the script's 0.5 s sleep before the import counts."""
    code = ('import time\n'
            'first_line = time.time()\n'
            'time.sleep(0.5)\n'
            'from btgym_aac.cli import STARTED\n'
            'print(first_line, STARTED)\n')
    before_start = time.time()
    finished = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    first_line, started = map(float, finished.stdout.split())
    assert before_start - 0.02 <= started <= first_line


def test_cost_flags_set_the_env_costs_of_every_command_that_builds_configs(tmp_path):
    parser = cli_module.build_parser()
    flags = ['--spread', '0.0002', '--slippage', '0.0001', '--commission', '0.5', '--commission-scheme', 'per_unit']
    for command in (['train'], ['walk-forward', '--data', 'a.csv', '--folds', '1'],
                    ['sweep', '--data', 'a.csv', '--trials', '2'], ['train', '--assets']):
        kwargs = cli_module._configs_from_args(parser.parse_args(command + flags))['env_config']['kwargs']
        assert {key: kwargs[key] for key in ('spread', 'slippage', 'commission', 'commission_scheme')} == {
            'spread': 0.0002, 'slippage': 0.0001, 'commission': 0.5, 'commission_scheme': 'per_unit'}, command
    from_data = cli_module._configs_from_args(parser.parse_args(['train', '--spread', 'data']))
    assert from_data['env_config']['kwargs']['spread'] == 'data'
    plain = cli_module._configs_from_args(parser.parse_args(['train']))['env_config']['kwargs']
    assert not {'spread', 'slippage', 'slippage_fixed', 'commission_scheme'} & set(plain)
    assert plain['commission'] == 0.0001  # the reference configuration's own


@pytest.mark.parametrize('flags, message', [
    (['--spread', '-1'], 'spread must be a finite number >= 0, got -1.0'),
    (['--slippage', '0.1', '--slippage-fixed', '0.1'], 'not both'),
    (['--commission-scheme', 'per_pip'], "commission_scheme must be one of ('percent', 'per_unit'), got 'per_pip'"),
    (['--commission', '-0.1'], 'commission must be a finite number >= 0'),
])
def test_bad_cost_flags_stop_before_anything_runs(tmp_path, capsys, flags, message):
    assert cli_main(['train', '--log-dir', str(tmp_path / 'run')] + flags) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / 'run').exists()


PIP_HINT = 'the spread is in price units (one pip of EURUSD is 0.0001); costs above 1 % of the price are refused'


SPREAD_OF_5 = "env_config = {'kwargs': {'spread': 5}}"
"""A config file setting a spread of 5 on the built-in data."""


@pytest.mark.parametrize('command, config, message', [
    (['train', '--spread', '1'], None, r'spread 1 is 9[\d.]+ % of the median close 1\.\d+ of {data}: ' +
     re.escape(PIP_HINT)),
    (['train', '--slippage', '0.5'], None, re.escape('slippage 0.5 is 50 % of the price: slippage is a fraction of '
                                                     'the price, not a percent (0.0001 is 0.01 %)')),
    (['train'], SPREAD_OF_5, r'spread 5 is 45\d % of the median close 1\.1 of the built-in sine data: ' +
     re.escape(PIP_HINT)),
    (['walk-forward', '--folds', '1', '--spread', '1'], 'small', r'spread 1 is 9[\d.]+ % of the median close 1\.\d+ '
     r'of the bars from 2017-01-01 00:00:00 to 2017-01-03 23:59:00: ' + re.escape(PIP_HINT)),
    (['sweep', '--trials', '1', '--folds', '1', '--slippage-fixed', '0.05'], 'small',
     r'slippage_fixed 0.05 is 4\.\d+ % of the median close 1\.\d+ of the bars from 2017-01-01 00:00:00 to'),
], ids=['train-spread', 'train-slippage', 'train-config-file', 'walk-forward', 'sweep'])
def test_costs_out_of_all_proportion_to_the_data_stop_a_run_before_it_starts(tmp_path, capsys, monkeypatch, command,
                                                                              config, message):
    """A cost a unit mistake gives (a spread of 1 meant as one pip, a slippage of 0.5 meant as half a percent) is
    refused, flag or config file, naming the data's median price and the unit, before anything is written (the
    walk-forward and the sweep with the tests' small configuration, whose episodes fit the data)."""
    from btgym_aac.distributed import launcher as launcher_module
    from btgym_aac.sweep import runner as sweep_runner
    from small_runs import CONFIG_FILE, three_days_csv

    def started(*_, **__):
        pytest.fail('the run started')

    monkeypatch.setattr(launcher_module.Launcher, 'run', started)
    monkeypatch.setattr(sweep_runner, 'LogDirLock', started)
    out = tmp_path / 'out'
    arguments, data = list(command), None
    if config is not None:
        (tmp_path / 'config.py').write_text(CONFIG_FILE if config == 'small' else config)
        arguments.insert(1, str(tmp_path / 'config.py'))
    if config != SPREAD_OF_5:
        data = three_days_csv(tmp_path)
        arguments += ['--data', data]
    arguments += ['--log-dir' if command[0] == 'train' else '--out', str(out)]
    assert cli_main(arguments) == 2
    assert re.search(message.format(data=re.escape(str(data))), capsys.readouterr().err)
    assert not out.exists()


def test_a_spread_that_is_no_number_nor_data_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        cli_main(['train', '--log-dir', str(tmp_path / 'run'), '--spread', 'wide'])
    assert stopped.value.code == 2
    assert "argument --spread: a number >= 0 or 'data', got 'wide'" in capsys.readouterr().err
    assert not (tmp_path / 'run').exists()
