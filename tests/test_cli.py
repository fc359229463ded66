"""`btgym-aac` commands given bad input: one line naming the problem, a non-zero exit, nothing of the user's lost."""
import os

import pytest

from btgym_aac.cli import main as cli_main
from btgym_aac.compat import tf
from btgym_aac.distributed.checkpoints import FastSaver, latest_checkpoint

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
    assert cli_main(['export', str(run), str(dest)]) == 0
    assert latest_checkpoint(str(dest)).endswith('model_parameters-20')
    saved_run(run, steps=(30,))
    assert cli_main(['export', str(run), str(dest)]) == 0
    assert files_under(dest) == ['checkpoint', 'model_parameters-30.data-00000-of-00001',
                                 'model_parameters-30.index']
    assert [name for name in os.listdir(tmp_path) if 'exporting' in name] == []


def test_export_refuses_a_folder_with_other_files_and_keeps_them(tmp_path, capsys):
    run = saved_run(tmp_path / 'run')
    dest = tmp_path / 'precious'
    dest.mkdir()
    (dest / 'notes.txt').write_text('important')
    assert cli_main(['export', str(run), str(dest)]) == 2
    assert 'is not empty and does not hold an exported checkpoint' in capsys.readouterr().err
    assert files_under(dest) == ['notes.txt']


@pytest.mark.parametrize('target', ['run', '.', 'run/' + CKPT], ids=['log-dir', 'parent', 'checkpoint-dir'])
def test_export_refuses_a_folder_holding_the_run_being_exported(tmp_path, capsys, target):
    run = saved_run(tmp_path / 'run')
    (tmp_path / 'other_run').mkdir()
    (tmp_path / 'other_run' / 'events').write_text('summaries')
    before = files_under(tmp_path)
    assert cli_main(['export', str(run), str(tmp_path / target)]) == 2
    assert 'holds the checkpoints being exported' in capsys.readouterr().err
    assert files_under(tmp_path) == before


def test_export_into_a_file_or_of_a_checkpoint_without_data_fails_and_leaves_nothing_behind(tmp_path, capsys):
    run = saved_run(tmp_path / 'run')
    (tmp_path / 'afile').write_text('x')
    assert cli_main(['export', str(run), str(tmp_path / 'afile')]) == 2
    assert 'is a file' in capsys.readouterr().err
    os.remove(str(run / CKPT / 'model_parameters-20.data-00000-of-00001'))
    assert cli_main(['export', str(run), str(tmp_path / 'exported')]) == 2
    assert 'misses its .index or .data files' in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ['afile', 'run']
