"""A checkpoint folder's state file (`checkpoint`), read without TensorFlow, so that the launcher process, which
only checks and reports checkpoints, need not import it.

The file is the text form of TensorFlow's CheckpointState message: `model_checkpoint_path: "..."` (the latest
checkpoint), repeated `all_model_checkpoint_paths: "..."` and, from newer savers, their timestamps. Paths are kept
relative to the folder when the saver was made with `save_relative_paths`; they are returned joined to it, as
`tf.train.get_checkpoint_state` returns them.
"""
import codecs
import collections
import os
import re

STATE_FILE = 'checkpoint'
_STRING_FIELDS = ('model_checkpoint_path', 'all_model_checkpoint_paths')
_NUMBER_FIELDS = ('all_model_checkpoint_timestamps', 'last_preserved_timestamp')
_FIELD = re.compile(r'\s*(\w+)\s*:\s*(.*?)\s*$')
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"$|\'((?:[^\'\\]|\\.)*)\'$')

CheckpointState = collections.namedtuple('CheckpointState', ['model_checkpoint_path', 'all_model_checkpoint_paths'])
"""The latest checkpoint's path prefix and those of every checkpoint listed (oldest first)."""


class CheckpointStateError(ValueError):
    """A checkpoint folder a run cannot resume from: its state file is unreadable or lists a checkpoint whose files
    are gone."""


def _unquoted(text):
    """The string of a quoted text-format value (C escapes decoded), or None when `text` is not one."""
    match = _QUOTED.match(text)
    if match is None:
        return None
    body = match.group(1) if match.group(1) is not None else match.group(2)
    return codecs.escape_decode(body.encode('utf-8'))[0].decode('utf-8')


def read_checkpoint_state(directory):
    """The state of the checkpoint folder `directory`, as `tf.train.get_checkpoint_state` reads it.

    Returns:
        CheckpointState, or None when there is no state file or it cannot be parsed (an unknown field, a value of
        the wrong kind, a line that is not `field: value`).

    Raises:
        ValueError: the file parses but names no latest checkpoint.
    """
    path = os.path.join(directory, STATE_FILE)
    try:
        with open(path, encoding='utf-8') as state_file:
            lines = state_file.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    latest, listed = '', []
    for line in lines:
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        match = _FIELD.match(line)
        if match is None:
            return None
        field, value = match.groups()
        if field in _STRING_FIELDS:
            text = _unquoted(value)
            if text is None:
                return None
            if field == 'model_checkpoint_path':
                latest = text
            else:
                listed.append(text)
        elif field not in _NUMBER_FIELDS or not re.fullmatch(r'[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?', value):
            return None
    if not latest:
        raise ValueError('invalid checkpoint state loaded from {}'.format(directory))
    return CheckpointState(os.path.join(directory, latest), [os.path.join(directory, name) for name in listed])


def latest_checkpoint(directory):
    """Path prefix of the latest checkpoint in `directory` whose index file exists (as `tf.train.latest_checkpoint`
    finds it), or None when there is none (or no directory)."""
    if not directory or not os.path.isdir(directory):
        return None
    state = read_checkpoint_state(directory)
    if state is None or not os.path.isfile(state.model_checkpoint_path + '.index'):
        return None
    return state.model_checkpoint_path


def checkpoint_step(path):
    """The global step a checkpoint path prefix `<name>-<step>` was saved at, None for None (or no step)."""
    step = path.rpartition('-')[2] if path else ''
    return int(step) if step.isdigit() else None


def resumable_checkpoint(directory):
    """Path prefix of the latest checkpoint in `directory`, None when there is none; raises CheckpointStateError
    when it holds checkpoints that cannot be resumed from, and changes nothing.

    Without this check a folder whose state file is damaged would read as holding no checkpoint, so a run would
    start from scratch and its saves would abandon the checkpoints there.

    Args:
        directory: a checkpoint folder (one without a state file holds none: a chief killed in its first save
            leaves checkpoint files that no state file lists yet).

    Returns:
        path prefix or None.
    """
    if not directory or not os.path.isfile(os.path.join(directory, STATE_FILE)):
        return None
    state_file = os.path.join(directory, STATE_FILE)
    left = 'it is left as it is: repair or remove it, or train in another log dir (or start fresh)'
    try:
        state = read_checkpoint_state(directory)
    except ValueError:
        state = None
    if state is None:
        raise CheckpointStateError('the checkpoint state file {} cannot be read; {}'.format(state_file, left))
    if not os.path.isfile(state.model_checkpoint_path + '.index'):
        raise CheckpointStateError('the latest checkpoint listed in {} ({}) has lost its files; {}'.format(
            state_file, os.path.basename(state.model_checkpoint_path), left))
    return state.model_checkpoint_path
