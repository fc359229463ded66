"""An exclusive lock on a run's log dir, so two launchers never train into (or empty) the same folder.

The lock is an advisory `flock` on `<log_dir>/.launcher.lock`, which also holds the PID of its holder. The
operating system drops it when the holder exits, however it ends, so a killed launcher leaves no stale lock.
"""
import fcntl
import os

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
