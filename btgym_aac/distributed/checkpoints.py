"""Checkpoints: the restore order of a worker, checks of a checkpoint's contents, and exporting a trained model.

TensorFlow's Saver writes the checkpoint files first and then replaces the `checkpoint` state file atomically,
so a process killed while saving leaves the previous checkpoint as the latest usable one. TensorFlow is imported
only by the functions that read or write checkpoint files (the state file is read without it, see
`checkpoint_state`), so that the launcher process can check a log dir without importing it.
"""
import os
import re
import shutil
import tempfile

from btgym_aac.distributed.checkpoint_state import latest_checkpoint, read_checkpoint_state, resumable_checkpoint
from btgym_aac.distributed.run_config import RUN_CONFIG_FILE
from btgym_aac.paths import file_in_the_way

CHECKPOINT_PREFIX = 'model_parameters'
MISMATCHES_NAMED = 5


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
