"""Checkpoint hygiene: a chief removes what an interrupted save of its run left (temporary files, checkpoints the
state file does not list) and nothing else, and every checkpoint is named after the global step stored in it."""
import os
import re
import shutil

import logbook

from btgym_aac.compat import tf
from btgym_aac.distributed.checkpoints import remove_save_leftovers
from btgym_aac.logs import get_logger
from test_launcher import cartpole_launcher

CKPT = 'current_train_checkpoint'
LEFTOVERS = ['model_parameters-40.index', 'model_parameters-40.data-00000-of-00001',
             'model_parameters-50.data-00000-of-00001.tempstate8315468730493761542', 'checkpoint.tmp3f9c2a0b7d1e']
FOREIGN = ['notes.txt', 'model_parameters_backup.index', 'other-5.index', 'model_parameters-40.index.bak']


def listed_checkpoint(directory, step):
    """`directory` with one checkpoint `model_parameters-<step>` of one variable, listed in its state file."""
    graph = tf.Graph()
    with graph.as_default():
        variable = tf.Variable(1.5, name='weight')
        saver = tf.train.Saver([variable])
        with tf.Session() as sess:
            sess.run(variable.initializer)
            saver.save(sess, os.path.join(str(directory), 'model_parameters'), global_step=step, write_meta_graph=False)


def add_files(directory, names):
    for name in names:
        (directory / name).write_text('left here')


def test_leftovers_of_an_interrupted_save_are_removed_and_logged_and_nothing_else(tmp_path):
    listed_checkpoint(tmp_path, 30)
    before = set(os.listdir(tmp_path))
    add_files(tmp_path, LEFTOVERS + FOREIGN)
    with logbook.TestHandler() as handler:
        removed = remove_save_leftovers(str(tmp_path), get_logger('Hygiene', 0))
    assert sorted(removed) == sorted(LEFTOVERS)
    assert set(os.listdir(tmp_path)) == before | set(FOREIGN)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model_parameters-30')
    assert sorted(record.message for record in handler.records) == sorted(
        'removed {}, left by an interrupted save'.format(tmp_path / name) for name in LEFTOVERS)


def test_without_a_state_file_every_checkpoint_of_the_run_is_a_leftover(tmp_path):
    listed_checkpoint(tmp_path, 30)
    os.remove(tmp_path / 'checkpoint')  # killed in the first save: the state file was never written
    add_files(tmp_path, FOREIGN)
    removed = remove_save_leftovers(str(tmp_path), get_logger('Hygiene', 0))
    assert sorted(removed) == ['model_parameters-30.data-00000-of-00001', 'model_parameters-30.index']
    assert sorted(os.listdir(tmp_path)) == sorted(FOREIGN)


def stored_steps(ckpt_dir):
    """{step in the checkpoint's name: global step stored in it} of every checkpoint in `ckpt_dir`."""
    steps = {}
    for name in os.listdir(ckpt_dir):
        match = re.fullmatch(r'model_parameters-(\d+)\.index', name)
        if match:
            reader = tf.train.load_checkpoint(os.path.join(ckpt_dir, name[:-len('.index')]))
            key = next(key for key in reader.get_variable_to_shape_map() if key.endswith('global_step'))
            steps[int(match.group(1))] = int(reader.get_tensor(key))
    return steps


def test_a_resuming_chief_removes_the_leftovers_and_names_checkpoints_by_their_stored_step(tmp_path):
    log_dir = tmp_path / 'run'
    assert cartpole_launcher(log_dir, 1500, num_workers=2, save_secs=1).run()['completed']
    ckpt_dir = log_dir / CKPT
    first = stored_steps(str(ckpt_dir))
    assert first and all(name == stored for name, stored in first.items())
    latest = max(first)
    for suffix in ('index', 'data-00000-of-00001'):  # a complete checkpoint that no state file lists
        shutil.copy(ckpt_dir / 'model_parameters-{}.{}'.format(latest, suffix),
                    ckpt_dir / 'model_parameters-7.{}'.format(suffix))
    add_files(ckpt_dir, ['model_parameters-8.index.tempstate123', 'notes.txt'])
    result = cartpole_launcher(log_dir, 3000, num_workers=2, save_secs=1).run()
    assert result['completed'] and result['global_step'] >= 3000
    names = set(os.listdir(ckpt_dir))
    assert 'notes.txt' in names and not {'model_parameters-7.index', 'model_parameters-8.index.tempstate123'} & names
    second = stored_steps(str(ckpt_dir))
    assert all(name == stored for name, stored in second.items()) and max(second) >= 3000
    # the resumed saver rotates the first run's checkpoints too (max_to_keep 2): none older than the one resumed
    # stays; that one may, where the second run saved once only (a fast machine, 1,500 steps in about a second)
    assert len(second) <= 2 and min(second) >= latest
