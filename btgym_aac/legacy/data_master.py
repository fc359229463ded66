"""A data master env's dataset, shared with the `data_master=False` envs of other processes on the host.

The original started a data server on the master env's `data_port` and sent every other env its episodes over
it. Here no server runs: a data master env writes its dataset to a file named by its `data_port`, in a folder of
this user's own (`<XDG_RUNTIME_DIR or the temp dir>/btgym_aac-<uid>`, mode 0700); an env made with
`data_master=False` and the same `data_port` loads a copy of it and samples its episodes itself, from a random
generator of its own (the copies would otherwise draw the same windows). The file is removed when the master env
is closed or its process ends. Loading it unpickles it, so it is read only when the folder and the file are this
user's and no other user can write them (`paths`).
"""
import os
import pickle
import tempfile
import weakref

from btgym_aac.paths import written_in_place_of
from btgym_aac.paths import check_trusted

DEFAULT_DATA_PORT = 4999


class DataMasterError(LookupError):
    """No data master env serves the requested `data_port`."""


def registry_folder():
    """This user's folder of data master files (created, mode 0700, when missing)."""
    base = os.environ.get('XDG_RUNTIME_DIR') or tempfile.gettempdir()
    folder = os.path.join(base, 'btgym_aac-{}'.format(os.getuid()))
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder


def _record_path(data_port):
    return os.path.join(registry_folder(), 'data_master_{}.pkl'.format(int(data_port)))


def _process_alive(pid):
    try:
        os.kill(pid, 0)  # signal 0: an existence check, nothing is sent
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_record(path, with_dataset=True):
    """The (owner pid, dataset) of a data master's file; the dataset is not read (None) without `with_dataset`:
    the file holds the pid first, so that checking the owner does not unpickle the whole dataset."""
    check_trusted(path, os.path.dirname(path), 'unpickling it')
    with open(path, 'rb') as f:
        pid = pickle.load(f)
        return pid, pickle.load(f) if with_dataset else None


class PublishedDataset:
    """The file of a data master env's dataset; `close()` (or the end of the process) removes it."""

    def __init__(self, dataset, data_port):
        """
        Args:
            dataset: the master env's dataset (picklable).
            data_port: the original's data server port, here the name of the file.

        Raises:
            ValueError: a live data master env (of any process, this one included) already serves `data_port`.
        """
        self.data_port = int(data_port)
        self.path = _record_path(self.data_port)
        if os.path.exists(self.path):
            owner, _ = _read_record(self.path, with_dataset=False)
            if _process_alive(owner):
                raise ValueError('data_port {} already has a data master env (process {}): give each data master '
                                 'its own data_port'.format(self.data_port, owner))
        with written_in_place_of(self.path, mode=0o600) as f:
            pickle.dump(os.getpid(), f, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(dataset, f, protocol=pickle.HIGHEST_PROTOCOL)
        self._inode = os.stat(self.path).st_ino
        self._finalizer = weakref.finalize(self, _remove_own_file, self.path, self._inode, os.getpid())

    def close(self):
        """Removes the file (only this process's own, still in place)."""
        self._finalizer()


def _remove_own_file(path, inode, pid):
    """Removes `path` if this process published it and it is still that file (a forked child leaves it)."""
    if os.getpid() != pid:
        return
    try:
        if os.stat(path).st_ino == inode:
            os.remove(path)
    except FileNotFoundError:
        pass


def fetch_dataset(data_port, random_seed=None):
    """A copy of the dataset that a data master env of this host serves on `data_port`.

    Args:
        data_port: the master env's `data_port`.
        random_seed: seed of the copy's sampling (None: fresh entropy).

    Returns:
        the dataset, with a random generator of its own.

    Raises:
        DataMasterError: no live data master env serves `data_port`.
    """
    path = _record_path(data_port)
    hint = ('a data_master=False env takes its data from the data master env (data_master=True, same data_port) '
            'of a process on this host; start that env first, or give this env its data with `dataset=`')
    if not os.path.exists(path):
        raise DataMasterError('no data master env serves data_port {}: {}'.format(data_port, hint))
    owner, _ = _read_record(path, with_dataset=False)
    if not _process_alive(owner):
        raise DataMasterError('the data master env of data_port {} (process {}) has ended: {}'.format(
            data_port, owner, hint))
    _, dataset = _read_record(path)
    dataset.seed(random_seed)
    return dataset
