"""A run whose newest checkpoint is damaged: the error names the newest intact one and how to resume from it, and
`resume_from_checkpoint` does so, setting the files of the later checkpoints aside (never deleting them)."""
import os
import re

from btgym_aac.distributed.checkpoint_state import checkpoint_step, read_checkpoint_state
from btgym_aac.distributed.checkpoints import CHECKPOINT_PREFIX, check_checkpoint_readable

SET_ASIDE_DIR = 'set_aside'
"""Folder of the checkpoint folder that `resume_from_checkpoint` moves the later checkpoints' files into."""


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
