"""A run's checkpoints: the saver that writes them, the state file that lists them, the order a worker restores
from, checks of their contents, resuming from an earlier one when the latest is damaged, and exporting a trained
model.

TensorFlow's Saver writes the checkpoint files first and then replaces the `checkpoint` state file atomically,
so a process killed while saving leaves the previous checkpoint as the latest usable one. The launcher process
checks and reports checkpoints without importing TensorFlow: the state file is read as text
(`read_checkpoint_state`), and TensorFlow is imported only by the functions that read or write checkpoint files.
"""
import codecs
import collections
import os
import re
import shutil
import tempfile

from btgym_aac.distributed.run_config import RUN_CONFIG_FILE
from btgym_aac.paths import file_in_the_way

CHECKPOINT_PREFIX = 'model_parameters'
STATE_FILE = 'checkpoint'
MISMATCHES_NAMED = 5
SET_ASIDE_DIR = 'set_aside'
"""Folder of the checkpoint folder that `resume_from_checkpoint` moves the later checkpoints' files into."""
KEPT_CHECKPOINT_DIR = 'kept_checkpoints'
"""Folder of a run's log dir where the chief keeps a checkpoint every `keep_checkpoint_every_steps` env steps
(`Launcher`)."""
_STRING_FIELDS = ('model_checkpoint_path', 'all_model_checkpoint_paths')
_NUMBER_FIELDS = ('all_model_checkpoint_timestamps', 'last_preserved_timestamp')
_FIELD = re.compile(r'\s*(\w+)\s*:\s*(.*?)\s*$')
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"$|\'((?:[^\'\\]|\\.)*)\'$')


# ------------------------------------------------------------------------------------------------------ the state file

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
    """The state of the checkpoint folder `directory`, as `tf.train.get_checkpoint_state` reads it, without
    TensorFlow.

    The state file is the text form of TensorFlow's CheckpointState message: `model_checkpoint_path: "..."` (the
    latest checkpoint), repeated `all_model_checkpoint_paths: "..."` and, from newer savers, their timestamps. Paths
    are kept relative to the folder when the saver was made with `save_relative_paths`; they are returned joined to
    it.

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


# ------------------------------------------------------------------------------------------------ saving and restoring

class FastSaver:
    """The saver of a run's checkpoints: it holds a `tf.train.Saver` (made on construction, so that importing this
    module imports no TensorFlow) and never writes the meta-graph (writing it stalls the saving worker, and
    restoring needs only the variables, since every process builds its graph in code).

    Args:
        var_list: what to save and restore, a list of variables or {checkpoint name: variable} (None: every
            global variable).
        **kwargs: the other arguments of `tf.train.Saver`.

    Attributes:
        variables: {checkpoint name: variable} of what it saves and restores.
    """

    def __init__(self, var_list=None, **kwargs):
        from btgym_aac.compat import tf

        self._saver = tf.train.Saver(var_list=var_list, **kwargs)
        variables = tf.global_variables() if var_list is None else var_list
        self.variables = dict(variables) if isinstance(variables, dict) else {v.op.name: v for v in variables}

    def save(self, sess, save_path, global_step=None):
        """Saves the variables as `tf.train.Saver.save` does, without the meta-graph.

        Returns:
            the path prefix of the checkpoint written.
        """
        return self._saver.save(sess, save_path, global_step=global_step, write_meta_graph=False)

    def restore(self, sess, save_path):
        """Restores the variables from the checkpoint at path prefix `save_path`."""
        self._saver.restore(sess, save_path)

    def recover_last_checkpoints(self, checkpoint_paths):
        """Takes over `checkpoint_paths` (oldest first) as the checkpoints it keeps rotating (`max_to_keep`)."""
        self._saver.recover_last_checkpoints(checkpoint_paths)

def restore_order(sess, saver, reset_global_step, initial_ckpt_dir, current_ckpt_dir, log, resume_step=None):
    """Restores the model from, in this order: a pre-trained model, else the current run, else nothing (scratch).

    Args:
        sess: session whose global variables are initialised.
        saver: `FastSaver` of the global variables.
        reset_global_step: op setting the global step to 0 (a pre-trained model starts counting anew).
        resume_step: op run after resuming from the current run's checkpoint (a saver that restores the stored
            step into a snapshot variable sets the global step from it), or None.
        initial_ckpt_dir: directory of a pre-trained model, or None.
        current_ckpt_dir: this run's checkpoint directory.
        log: logbook logger.

    Returns:
        'pre-trained', 'resumed' or 'scratch'.

    Raises:
        FileNotFoundError: `initial_ckpt_dir` is given but holds no checkpoint.
        CheckpointStateError: the current run's checkpoints cannot be resumed from.
        ValueError: the checkpoint lacks a variable of the model, or holds one with another shape.
    """
    if initial_ckpt_dir:
        path = latest_checkpoint(initial_ckpt_dir)
        if path is None:
            raise FileNotFoundError('initial_ckpt_dir {!r} holds no checkpoint (expected a `checkpoint` file '
                                    'written by btgym-aac export or a previous run)'.format(initial_ckpt_dir))
        check_checkpoint_fits(path, saver.variables, "the model of this run's configs")
        saver.restore(sess, path)
        sess.run(reset_global_step)
        log.notice('pre-trained model restored from {}; global step reset to 0'.format(path))
        return 'pre-trained'
    path = resumable_checkpoint(current_ckpt_dir)
    if path is not None:
        check_checkpoint_fits(path, saver.variables, "the model of this run's configs")
        saver.restore(sess, path)
        if resume_step is not None:
            sess.run(resume_step)
        log.notice('resumed from {}'.format(path))
        return 'resumed'
    log.notice('training from scratch')
    return 'scratch'


def recover_checkpoints(saver, ckpt_dir):
    """Has `saver` take over the checkpoints listed in `ckpt_dir`'s state file, so its saves keep rotating them
    (`max_to_keep`) instead of leaving them on disk unlisted (a resumed run, a restarted chief)."""
    state = read_checkpoint_state(ckpt_dir)
    if state is not None:
        saver.recover_last_checkpoints(list(state.all_model_checkpoint_paths))


def remove_save_leftovers(ckpt_dir, log, prefix=CHECKPOINT_PREFIX):
    """Removes what an interrupted save of a run left in its checkpoint folder, logging each file: temporary files
    of TensorFlow's writers (`<prefix>-<step>.*.tempstate<n>`, `checkpoint.tmp<hex>`) and the files of checkpoints
    `<prefix>-<step>` that the state file does not list. Nothing else is touched.

    Args:
        ckpt_dir: the run's checkpoint folder.
        log: logbook logger.
        prefix: the run's checkpoint name prefix.

    Returns:
        the names of the removed files.
    """
    if not os.path.isdir(ckpt_dir):
        return []
    state = read_checkpoint_state(ckpt_dir)
    listed = {os.path.basename(path) for path in (state.all_model_checkpoint_paths if state else [])}
    checkpoint_file = re.compile(r'({}-\d+)\.(index|meta|data-\d{{5}}-of-\d{{5}})$'.format(re.escape(prefix)))
    temporary_file = re.compile(r'({}-\d+\..*\.tempstate\d+|checkpoint\.tmp[0-9a-f]+)$'.format(re.escape(prefix)))
    removed = []
    for name in sorted(os.listdir(ckpt_dir)):
        path = os.path.join(ckpt_dir, name)
        match = checkpoint_file.match(name)
        if os.path.isfile(path) and (temporary_file.match(name) or (match and match.group(1) not in listed)):
            os.remove(path)
            log.notice('removed {}, left by an interrupted save'.format(path))
            removed.append(name)
    return removed


# ------------------------------------------------------------------------------------------------- reading checkpoints

def unreadable_checkpoint_error(path, error):
    """ValueError saying that the checkpoint at `path` cannot be read, with the first line of `error`'s reason."""
    reason = (getattr(error, 'message', None) or str(error) or type(error).__name__).strip().splitlines()[0]
    return ValueError('checkpoint {!r} cannot be read (its files are truncated or damaged): {}'.format(path, reason))


def check_checkpoint_readable(path):
    """Reads every tensor of the checkpoint at `path` (TensorFlow checks each one's checksum).

    Raises:
        ValueError: a file of the checkpoint is truncated or damaged, naming the checkpoint and TensorFlow's
            reason.
    """
    from btgym_aac.compat import tf

    try:
        reader = tf.train.load_checkpoint(path)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
    except (tf.errors.OpError, ValueError, IndexError) as error:
        raise unreadable_checkpoint_error(path, error) from None


def check_checkpoint_fits(path, variables, model):
    """Raises ValueError naming the variables the checkpoint at `path` lacks or holds with another shape.

    Args:
        path: checkpoint path prefix.
        variables: the variables to restore from it, a list or a dict {checkpoint name: variable}.
        model: what they belong to, for the message (e.g. 'the policy of this run's configs').

    Raises:
        ValueError: a variable is missing or has another shape; the checkpoint cannot be read.
    """
    from btgym_aac.compat import tf

    named = variables if isinstance(variables, dict) else {variable.op.name: variable for variable in variables}
    try:
        saved = tf.train.load_checkpoint(path).get_variable_to_shape_map()
    except tf.errors.OpError as error:
        raise unreadable_checkpoint_error(path, error) from None
    problems = []
    for name, variable in named.items():
        shape = variable.get_shape().as_list()
        if name not in saved:
            problems.append('{} missing'.format(name))
        elif list(saved[name]) != shape:
            problems.append('{} saved as {}, {} has {}'.format(name, list(saved[name]), model, shape))
    if problems:
        more = len(problems) - MISMATCHES_NAMED
        named = '; '.join(problems[:MISMATCHES_NAMED]) + ('; and {} more'.format(more) if more > 0 else '')
        raise ValueError('checkpoint {!r} does not fit {}: {}'.format(path, model, named))


# ---------------------------------------------------------------------------------------- resuming from an earlier one

def checkpoints_on_disk(ckpt_dir):
    """{step: path prefix} of the run's checkpoints whose index file lies in `ckpt_dir`."""
    pattern = re.compile(r'{}-(\d+)\.index$'.format(re.escape(CHECKPOINT_PREFIX)))
    found = {}
    for name in os.listdir(ckpt_dir):
        match = pattern.match(name)
        if match:
            found[int(match.group(1))] = os.path.join(ckpt_dir, name[:-len('.index')])
    return found


def newest_intact_checkpoint(ckpt_dir, before_step):
    """Path prefix of the newest checkpoint in `ckpt_dir` saved before `before_step` whose files read in full, or
    None."""
    for step, path in sorted(checkpoints_on_disk(ckpt_dir).items(), reverse=True):
        if step < before_step:
            try:
                check_checkpoint_readable(path)
            except ValueError:
                continue
            return path
    return None


def damaged_checkpoint_error(ckpt_dir, path, error):
    """ValueError for a run whose checkpoint to resume from, `path`, cannot be read (`error`): it names the newest
    intact earlier checkpoint and how to resume from it."""
    intact = newest_intact_checkpoint(ckpt_dir, checkpoint_step(path))
    if intact is None:
        way_out = ('no earlier checkpoint of the run is intact; nothing was changed: train in another log dir, or '
                   'start fresh (--fresh)')
    else:
        name = os.path.basename(intact)
        way_out = ('the newest intact one is {name}: `btgym-aac train --resume-from {name}` with the same config and '
                   'log dir (Launcher(..., resume_from={name!r})) resumes from it, moving the files of the later '
                   'checkpoints to {aside}; nothing was changed'.format(
                       name=name, aside=os.path.join(ckpt_dir, SET_ASIDE_DIR)))
    return ValueError('{}; {}'.format(error, way_out))


def resume_from_checkpoint(ckpt_dir, name, log):
    """Makes checkpoint `name` of `ckpt_dir` the one the run resumes from: checks that it reads in full, moves the
    files of every later checkpoint of the run into `<ckpt_dir>/set_aside/` and lists `name` as the latest in the
    state file, with the earlier checkpoints it listed.

    Args:
        ckpt_dir: the run's checkpoint folder.
        name: a checkpoint's name, `model_parameters-<step>`.
        log: logbook logger told of each file moved.

    Raises:
        ValueError: `ckpt_dir` holds no checkpoint `name`, or its files cannot be read (nothing is changed).
    """
    from btgym_aac.compat import tf

    path = os.path.join(ckpt_dir, name)
    step = checkpoint_step(path)
    if step is None or not os.path.isfile(path + '.index'):
        raise ValueError('resume_from {!r}: {} holds no such checkpoint (one of: {})'.format(
            name, ckpt_dir, ', '.join(os.path.basename(other) for _, other in
                                      sorted(checkpoints_on_disk(ckpt_dir).items())) or 'none'))
    check_checkpoint_readable(path)
    later = [os.path.basename(other) for other_step, other in checkpoints_on_disk(ckpt_dir).items()
             if other_step > step]
    aside = os.path.join(ckpt_dir, SET_ASIDE_DIR)
    for entry in sorted(os.listdir(ckpt_dir)):
        if any(entry.startswith(other + '.') for other in later):
            os.makedirs(aside, exist_ok=True)
            os.replace(os.path.join(ckpt_dir, entry), os.path.join(aside, entry))
            log.notice('moved {} to {}: the run resumes from {}'.format(entry, aside, name))
    state = read_checkpoint_state(ckpt_dir)
    listed = [other for other in (state.all_model_checkpoint_paths if state else [])
              if (checkpoint_step(other) or 0) < step and os.path.isfile(other + '.index')]
    tf.train.update_checkpoint_state(ckpt_dir, path, all_model_checkpoint_paths=listed + [path])


# -------------------------------------------------------------------------------------------------------------- export

def is_within(path, directory):
    """True if `path` is `directory` or lies inside it (symbolic links resolved)."""
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory + os.sep)


def _holds_only_an_export(directory, extra_entries=()):
    """True when every entry of `directory` is a file of a checkpoint its state file lists (an earlier export), or
    one of `extra_entries` (what else an export writes)."""
    state = read_checkpoint_state(directory)
    if state is None:
        return False
    names = {os.path.basename(path) for path in state.all_model_checkpoint_paths}
    names.add(os.path.basename(state.model_checkpoint_path))
    return all(entry in extra_entries
               or (os.path.isfile(os.path.join(directory, entry))
                   and (entry == 'checkpoint' or any(entry.startswith(name + '.') for name in names)))
               for entry in os.listdir(directory))


def check_export_target(checkpoint_dir, target_dir, extra_entries):
    """Raises unless `target_dir` can be replaced by an export of `checkpoint_dir`'s latest checkpoint.

    Args:
        checkpoint_dir: the checkpoint folder exported.
        target_dir: the export's folder (absolute).
        extra_entries: names besides checkpoint files that an earlier export in `target_dir` may hold.

    Raises:
        NotADirectoryError: the target, or a folder above it, is a file.
        ValueError: the target holds the exported checkpoints, or lies in a run's log dir.
        FileExistsError: the target holds files other than an earlier export's.
    """
    blocking = file_in_the_way(target_dir)
    if blocking == target_dir:
        raise NotADirectoryError('export target {!r} is a file'.format(target_dir))
    if blocking is not None:
        raise NotADirectoryError('export target {!r} cannot be made: {!r} is a file'.format(target_dir, blocking))
    if is_within(checkpoint_dir, target_dir):
        raise ValueError('export target {!r} holds the checkpoints being exported; choose another folder'.format(
            target_dir))
    if os.path.isfile(os.path.join(os.path.dirname(os.path.realpath(target_dir)), RUN_CONFIG_FILE)):
        raise ValueError('export target {!r} lies in the log dir of a run; choose a folder outside it'.format(
            target_dir))
    if os.path.isdir(target_dir) and os.listdir(target_dir) and not _holds_only_an_export(target_dir, extra_entries):
        raise FileExistsError('export target {!r} is not empty and does not hold an exported checkpoint; '
                              'refusing to replace it (choose a new or empty folder)'.format(target_dir))


def checkpoint_to_export(source_dir):
    """Path prefix of the latest checkpoint in `source_dir`, the checkpoint folder an export reads.

    Raises:
        FileNotFoundError: `source_dir` is missing (the folders beside it are named) or holds no checkpoint.
    """
    path = latest_checkpoint(source_dir)
    if path is not None:
        return path
    if os.path.isdir(source_dir):
        raise FileNotFoundError('no checkpoint to export in {!r}'.format(source_dir))
    parent = os.path.dirname(os.path.abspath(source_dir))
    if not os.path.isdir(parent):
        raise FileNotFoundError('no checkpoint folder {!r}: its log dir {!r} does not exist'.format(source_dir, parent))
    folders = sorted(entry for entry in os.listdir(parent)
                     if os.path.isdir(os.path.join(parent, entry)) and not entry.startswith('.'))
    raise FileNotFoundError('no checkpoint folder {!r}: {!r} holds {}'.format(
        source_dir, parent, 'the folders {}'.format(', '.join(folders)) if folders else 'no folder'))


def export_checkpoint(source_dir, target_dir, add_files=None, extra_entries=()):
    """Copies the latest checkpoint of `source_dir` into `target_dir`, usable as an `initial_ckpt_dir`.

    The files are copied into a temporary folder next to the target (its missing parent folders are made), which
    then replaces the target. Only a missing or empty target, or one holding nothing but an earlier export, is
    replaced.

    The checkpoint is read in full first, so a damaged one is never exported.

    Args:
        source_dir: the run's checkpoint folder.
        target_dir: the export's folder.
        add_files: optional callable(staging folder) writing more files into the export before it replaces the
            target (an exception from it leaves the target as it was).
        extra_entries: names of the entries `add_files` writes, which an earlier export in the target may hold.

    Returns:
        path prefix of the exported checkpoint.

    Raises:
        FileNotFoundError: `source_dir` is missing or holds no checkpoint, or its latest one has lost its index or
            data files.
        FileExistsError: `target_dir` holds other files.
        NotADirectoryError: `target_dir`, or a folder it would be made in, is a file.
        ValueError: `target_dir` is, or contains, `source_dir`, or lies in a run's log dir; the checkpoint's
            files are truncated or damaged.
    """
    from btgym_aac.compat import tf

    path = checkpoint_to_export(source_dir)
    checkpoint_dir, name = os.path.split(path)
    files = [entry for entry in os.listdir(checkpoint_dir) if entry.startswith(name + '.')]
    if name + '.index' not in files or not any(entry.startswith(name + '.data-') for entry in files):
        raise FileNotFoundError('checkpoint {!r} misses its .index or .data files; nothing exported'.format(path))
    target_dir = os.path.abspath(target_dir)
    check_export_target(checkpoint_dir, target_dir, extra_entries)
    check_checkpoint_readable(path)
    os.makedirs(os.path.dirname(target_dir), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=os.path.basename(target_dir) + '.exporting-', dir=os.path.dirname(target_dir))
    try:
        for file_name in files:
            shutil.copy2(os.path.join(checkpoint_dir, file_name), staging)
        tf.train.update_checkpoint_state(staging, name, all_model_checkpoint_paths=[name])
        if add_files is not None:
            add_files(staging)
        if os.path.exists(target_dir):
            shutil.rmtree(target_dir)
        os.replace(staging, target_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return os.path.join(target_dir, name)
