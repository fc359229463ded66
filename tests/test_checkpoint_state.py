"""The checkpoint state file read without TensorFlow gives what TensorFlow's own readers give."""
import os

import pytest

from btgym_aac.compat import tf
from btgym_aac.distributed.checkpoints import (CheckpointStateError, latest_checkpoint, read_checkpoint_state,
                                               resumable_checkpoint)

NAMES = ['model_parameters-20', 'model parameters "quoted" \\ back-slashed', 'modèle-ünïcode-7', "it's-9"]


def write_state(directory, latest, listed, index_files=True):
    """A state file written by TensorFlow, and an empty index file per listed checkpoint."""
    tf.train.update_checkpoint_state(str(directory), latest, all_model_checkpoint_paths=listed,
                                     all_model_checkpoint_timestamps=[1.7e9 + i for i in range(len(listed))])
    if index_files:
        for name in listed:
            path = name if os.path.isabs(name) else os.path.join(str(directory), name)
            open(path + '.index', 'w').close()


@pytest.mark.parametrize('absolute', [False, True], ids=['relative', 'absolute'])
@pytest.mark.parametrize('name', NAMES)
def test_state_and_latest_checkpoint_match_tensorflows(tmp_path, name, absolute):
    listed = ['model_parameters-10', name]
    if absolute:
        listed = [str(tmp_path / entry) for entry in listed]
    write_state(tmp_path, listed[-1], listed)
    want = tf.train.get_checkpoint_state(str(tmp_path))
    got = read_checkpoint_state(str(tmp_path))
    assert got.model_checkpoint_path == want.model_checkpoint_path
    assert got.all_model_checkpoint_paths == list(want.all_model_checkpoint_paths)
    assert latest_checkpoint(str(tmp_path)) == want.model_checkpoint_path
    if '\\' not in name:  # (TensorFlow matches the index file as a glob pattern, where a backslash escapes)
        assert tf.train.latest_checkpoint(str(tmp_path)) == want.model_checkpoint_path
    assert resumable_checkpoint(str(tmp_path)) == want.model_checkpoint_path


def test_a_latest_checkpoint_without_its_files_is_none_as_for_tensorflow(tmp_path):
    write_state(tmp_path, 'model_parameters-30', ['model_parameters-30'], index_files=False)
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert latest_checkpoint(str(tmp_path)) is None
    with pytest.raises(CheckpointStateError, match=r'\(model_parameters-30\) has lost its files'):
        resumable_checkpoint(str(tmp_path))


@pytest.mark.parametrize('text', [
    'garbage that is no state\n',
    'model_checkpoint_path: unquoted\n',
    'model_checkpoint_path: "a"\nunknown_field: "b"\n',
    'model_checkpoint_path: "a"\nall_model_checkpoint_timestamps: "not a number"\n',
], ids=['garbage', 'unquoted', 'unknown-field', 'bad-number'])
def test_a_state_file_tensorflow_cannot_parse_reads_as_none(tmp_path, text):
    (tmp_path / 'checkpoint').write_text(text)
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    assert read_checkpoint_state(str(tmp_path)) is None
    assert latest_checkpoint(str(tmp_path)) is None
    with pytest.raises(CheckpointStateError, match='cannot be read'):
        resumable_checkpoint(str(tmp_path))


def test_a_state_without_a_latest_checkpoint_raises_as_for_tensorflow(tmp_path):
    (tmp_path / 'checkpoint').write_text('all_model_checkpoint_paths: "model_parameters-1"\n')
    with pytest.raises(ValueError):
        tf.train.get_checkpoint_state(str(tmp_path))
    with pytest.raises(ValueError, match='invalid checkpoint state'):
        read_checkpoint_state(str(tmp_path))


def test_no_folder_or_no_state_file_holds_no_checkpoint(tmp_path):
    assert read_checkpoint_state(str(tmp_path)) is None
    assert latest_checkpoint(str(tmp_path)) is None and latest_checkpoint(str(tmp_path / 'missing')) is None
    assert latest_checkpoint(None) is None and resumable_checkpoint(None) is None
    assert resumable_checkpoint(str(tmp_path)) is None
