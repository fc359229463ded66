"""Weights rescued from a lost parameter server: what a worker whose cluster session failed leaves for the chief
that restores the global variables on the restarted parameter server.

A worker's local policy takes the global weights at every sync (every train step), so when a parameter server dies
the workers hold copies of the global weights a train step old, where the latest checkpoint may be minutes old. A
worker whose session fails writes its local policy's weights, with the global step of the sync they come from, to
`<log_dir>/rescued_weights/worker_<task>.npz` (`write_rescued_weights`). A chief that initialises the global
variables takes the freshest file newer than the checkpoint it restored (`freshest_rescued_weights`, `mismatches`;
see `worker.Worker`), and its saves remove the files that a checkpoint has caught up with (`remove_caught_up`).

The files are numpy archives (no pickle) of `global_step` and `weights/<local variable name>` arrays, written to a
temporary file first and then moved into place (`os.replace`), so a reader never sees half a file. Nothing here
imports TensorFlow.
"""
import collections
import os
import re
import zipfile

import numpy as np

RESCUE_DIR = 'rescued_weights'
"""The folder of the rescued weights in a run's log dir."""
STEP_KEY = 'global_step'
WEIGHTS_PREFIX = 'weights/'
_FILE_NAME = re.compile(r'worker_(\d+)\.npz$')
MISMATCHES_NAMED = 5

RescuedWeights = collections.namedtuple('RescuedWeights', ['path', 'task', 'step', 'weights'])
"""A rescued file: its path, the worker task that wrote it, the global step of the sync its weights come from, and
{local variable name: array}."""


def rescue_dir(log_dir):
    """The folder of the rescued weights of the run in `log_dir`."""
    return os.path.join(log_dir, RESCUE_DIR)


def write_rescued_weights(log_dir, task, step, weights):
    """Writes the weights worker `task` holds to `<log_dir>/rescued_weights/worker_<task>.npz`, replacing its
    earlier file at once (through a temporary file: a failed write leaves the earlier file and no temporary one).

    Args:
        log_dir: the run's log dir.
        task: the worker's task index.
        step: the global step of the sync the weights come from.
        weights: {local variable name: numpy array}.

    Returns:
        the path of the file.

    Raises:
        OSError: the folder or the file cannot be written.
    """
    folder = rescue_dir(log_dir)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, 'worker_{}.npz'.format(task))
    staging = path + '.writing'
    arrays = {WEIGHTS_PREFIX + name: np.asarray(value) for name, value in weights.items()}
    arrays[STEP_KEY] = np.int64(step)
    try:
        with open(staging, 'wb') as staging_file:
            np.savez(staging_file, **arrays)
        os.replace(staging, path)
    finally:
        if os.path.exists(staging):
            os.remove(staging)
    return path


def rescued_files(log_dir):
    """{worker task: path} of the rescued weights files in `log_dir` (none without the folder)."""
    folder = rescue_dir(log_dir)
    if not os.path.isdir(folder):
        return {}
    found = {}
    for name in os.listdir(folder):
        match = _FILE_NAME.match(name)
        if match and os.path.isfile(os.path.join(folder, name)):
            found[int(match.group(1))] = os.path.join(folder, name)
    return found


def rescued_step(path):
    """The global step a rescued weights file was written at (its weights are not read).

    Raises:
        ValueError: the file cannot be read or holds no step.
    """
    try:
        with np.load(path, allow_pickle=False) as archive:
            return int(archive[STEP_KEY])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise ValueError('rescued weights {} cannot be read: {}'.format(path, error)) from None


def read_rescued_weights(path, task):
    """The RescuedWeights in the file at `path`, written by worker `task`.

    Raises:
        ValueError: the file cannot be read or holds no step.
    """
    try:
        with np.load(path, allow_pickle=False) as archive:
            weights = {name[len(WEIGHTS_PREFIX):]: archive[name] for name in archive.files
                       if name.startswith(WEIGHTS_PREFIX)}
            step = int(archive[STEP_KEY])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise ValueError('rescued weights {} cannot be read: {}'.format(path, error)) from None
    return RescuedWeights(path, task, step, weights)


def freshest_rescued_weights(log_dir, newer_than, log):
    """The freshest rescued weights in `log_dir` whose step is past `newer_than`, or None; files that cannot be
    read are warned of and passed over.

    Args:
        log_dir: the run's log dir.
        newer_than: the global step the weights must be past (the restored checkpoint's).
        log: logbook logger.

    Returns:
        RescuedWeights or None.
    """
    paths, fresher = rescued_files(log_dir), {}
    for task, path in sorted(paths.items()):
        try:
            step = rescued_step(path)
        except ValueError as error:
            log.warning('{}; it is passed over'.format(error))
            continue
        if step > newer_than:
            fresher[task] = step
    if not fresher:
        return None
    task = max(fresher, key=lambda candidate: (fresher[candidate], -candidate))  # (a tie: the lowest task)
    try:
        return read_rescued_weights(paths[task], task)
    except ValueError as error:
        log.warning('{}; it is passed over'.format(error))
        return None


def mismatches(weights, shapes):
    """What keeps rescued `weights` from fitting a policy whose variables have `shapes`.

    Args:
        weights: {local variable name: array}, as rescued.
        shapes: {local variable name: shape as a list} of the policy that would take them.

    Returns:
        a list of problems in words (empty when every variable is there with its shape and there is nothing else),
        the first MISMATCHES_NAMED named and the rest counted.
    """
    problems = ['{} missing'.format(name) for name in shapes if name not in weights]
    problems += ['{} rescued as {}, the policy has {}'.format(name, list(np.shape(weights[name])), shape)
                 for name, shape in shapes.items() if name in weights and list(np.shape(weights[name])) != shape]
    problems += ['{} is not a variable of the policy'.format(name) for name in weights if name not in shapes]
    if len(problems) > MISMATCHES_NAMED:
        problems = problems[:MISMATCHES_NAMED] + ['and {} more'.format(len(problems) - MISMATCHES_NAMED)]
    return problems


def remove_caught_up(log_dir, saved_step, log):
    """Removes the rescued weights files whose step a checkpoint saved at `saved_step` has reached (nothing else),
    logging each; a file that cannot be read or removed is left as it is (warned of, for the latter).

    Args:
        log_dir: the run's log dir.
        saved_step: the global step of the checkpoint just saved.
        log: logbook logger.

    Returns:
        the paths removed.
    """
    removed = []
    for path in rescued_files(log_dir).values():
        try:
            step = rescued_step(path)
        except ValueError:
            continue
        if step > saved_step:
            continue
        try:
            os.remove(path)
        except OSError as error:
            log.warning('cannot remove {}, caught up with by the checkpoint at step {}: {}'.format(
                path, saved_step, error))
            continue
        log.info('removed {} (step {}): the checkpoint at step {} has caught up with it'.format(
            path, step, saved_step))
        removed.append(path)
    return removed
