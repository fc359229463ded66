"""A run's log dir: the lock that keeps two launchers from training into (or emptying) the same folder, and the
folder before and after the run: emptying it when asked (only of what runs write), checking that its checkpoint can
be resumed from, and telling what it holds.

The lock is an advisory `flock` on `<log_dir>/.launcher.lock`, which also holds the PID of its holder. The
operating system drops it when the holder exits, however it ends, so a killed launcher leaves no stale lock.
"""
import fcntl
import os
import re
import shutil
import sys

from btgym_aac.data.shared import CACHE_DIR
from btgym_aac.distributed.checkpoints import (KEPT_CHECKPOINT_DIR, check_checkpoint_readable,
                                               damaged_checkpoint_error, is_within, latest_checkpoint,
                                               resumable_checkpoint, resume_from_checkpoint)
from btgym_aac.distributed.rescued_weights import RESCUE_DIR
from btgym_aac.distributed.run_config import RUN_CONFIG_FILE

LOCK_FILE = '.launcher.lock'


class LogDirInUseError(OSError):
    """Another process holds the log dir's lock."""


class LogDirLock:
    """Exclusive lock on a log dir (made if missing); usable as a context manager.

    Args:
        log_dir: the run's log dir.
    """

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.path = os.path.join(log_dir, LOCK_FILE)
        self._file = None

    def acquire(self):
        """Takes the lock at once.

        Raises:
            LogDirInUseError: another process holds it (its PID is named).
        """
        os.makedirs(self.log_dir, exist_ok=True)
        lock_file = open(self.path, 'a+')
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock_file.seek(0)
            holder = lock_file.read().strip() or 'unknown'
            lock_file.close()
            raise LogDirInUseError('log dir {} is in use by another run (process {}); wait for it to end or choose '
                                   'another log dir'.format(self.log_dir, holder)) from None
        lock_file.seek(0)
        lock_file.truncate()
        lock_file.write(str(os.getpid()))
        lock_file.flush()
        self._file = lock_file

    def release(self):
        """Drops the lock (the file stays, empty of meaning until the next holder writes its PID)."""
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc_info):
        self.release()


def prepare_log_dir(log_dir, current_ckpt_dir, initial_ckpt_dir, purge_previous, log, resume_from=None):
    """Creates the log dir; empties it when `purge_previous` says so, else checks its checkpoints can be resumed
    from (after making `resume_from` the latest, see `checkpoints.resume_from_checkpoint`).

    Args:
        log_dir: the run's log dir.
        current_ckpt_dir: the run's checkpoint folder inside it.
        initial_ckpt_dir: the run's pre-trained model folder, or None.
        purge_previous: 0 keep, 1 ask (on a terminal), 2 delete.
        log: logger told of the purge.
        resume_from: name of an earlier checkpoint of the run to resume from, or None (the latest).

    Returns:
        True when the log dir was emptied.

    Raises:
        RuntimeError: `purge_previous` is 1 and there is no terminal to ask.
        ValueError: the log dir cannot be emptied (see `check_purgeable`), its checkpoint state is damaged, or the
            checkpoint to resume from cannot be read (naming the newest intact one).
    """
    os.makedirs(log_dir, exist_ok=True)
    purged = False
    if set(os.listdir(log_dir)) - {LOCK_FILE}:
        purge = purge_previous == 2
        if purge_previous == 1:
            if not sys.stdin or not sys.stdin.isatty():
                raise RuntimeError('purge_previous=1 asks before deleting {} but there is no terminal to ask; '
                                   'use purge_previous=0 (keep, resume) or 2 (delete)'.format(log_dir))
            purge = input('{} already exists. Delete its contents [y/N]? '.format(log_dir)).strip() == 'y'
        if purge:
            check_purgeable(log_dir, current_ckpt_dir, initial_ckpt_dir)
            purged = True
            for entry in set(os.listdir(log_dir)) - {LOCK_FILE}:
                path = os.path.join(log_dir, entry)
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
            log.notice('purged {}'.format(log_dir))
    if not purged:
        if resume_from is not None:
            resume_from_checkpoint(current_ckpt_dir, resume_from, log)
        resumable = resumable_checkpoint(current_ckpt_dir)  # raises for a damaged state before any task starts
        if resumable is not None and resume_from is None:  # (resume_from_checkpoint read its checkpoint in full)
            try:
                check_checkpoint_readable(resumable)
            except ValueError as error:
                raise damaged_checkpoint_error(current_ckpt_dir, resumable, error) from None
    return purged


def check_purgeable(log_dir, current_ckpt_dir, initial_ckpt_dir):
    """Raises ValueError unless the log dir holds only what runs write, and no input of this run."""
    ckpt_subdir = os.path.relpath(current_ckpt_dir, log_dir).split(os.sep)[0]
    run_entries = {RUN_CONFIG_FILE, RUN_CONFIG_FILE + '.writing', ckpt_subdir, 'evaluation', LOCK_FILE, CACHE_DIR,
                   RESCUE_DIR, KEPT_CHECKPOINT_DIR}
    foreign = sorted(entry for entry in os.listdir(log_dir)
                     if entry not in run_entries and not re.fullmatch(r'worker_\d+', entry))
    if foreign:
        raise ValueError('refusing to empty {}: it holds {} besides what a run writes (run_config.pkl, {}, '
                         'worker_N, evaluation, {}, {}); choose another log dir or move them'.format(
                             log_dir, ', '.join(foreign[:5]) + (', ...' if len(foreign) > 5 else ''), ckpt_subdir,
                             KEPT_CHECKPOINT_DIR, RESCUE_DIR))
    if initial_ckpt_dir and is_within(initial_ckpt_dir, log_dir):
        raise ValueError('refusing to empty {}: it holds the initial_ckpt_dir {} of this run'.format(
            log_dir, initial_ckpt_dir))


def log_dir_state(purged, current_ckpt_dir):
    """What a failed run leaves to resume from: an emptied log dir, no checkpoint, or the kept one."""
    if purged:
        return 'the log dir was emptied at start, as purge_previous asked'
    checkpoint = latest_checkpoint(current_ckpt_dir)
    if checkpoint is None:
        return 'the log dir holds no checkpoint'
    return 'the checkpoint in the log dir ({}) is kept'.format(os.path.basename(checkpoint))


def checkpoint_report(current_ckpt_dir):
    """One line on the latest checkpoint in `current_ckpt_dir`: where it is and its step, or that none was
    written."""
    try:
        path = latest_checkpoint(current_ckpt_dir)
    except ValueError:
        path = None
    if path is None:
        return 'no checkpoint was written in {}'.format(current_ckpt_dir)
    return 'the latest checkpoint, {}, is in {}'.format(os.path.basename(path), current_ckpt_dir)
