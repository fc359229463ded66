"""One read-only copy of a run's data per host: the launcher parses the data files once and writes the bars as
memory-mapped arrays under the log dir; every env of every worker then maps those arrays instead of parsing its own
copy, so the operating system keeps the bars in memory once, whatever the number of workers and envs.

A worker registers the cache entries its launcher published (`register`); `read_ohlcv` consults them (`lookup`)
for a source read with the same parsing params, and parses as before otherwise. Episode sampling is unchanged: it
slices the same frame.
"""
import hashlib
import json
import os

import numpy as np
import pandas as pd

from btgym_aac.paths import written_in_place_of

CACHE_DIR = '.data_cache'
_registered = {}


def source_key(source, parsing_params):
    """Identity of a data source read with `parsing_params`: its absolute paths, sizes and modification times, and
    the params; None for sources that are not files (DataFrames)."""
    paths = [source] if isinstance(source, (str, os.PathLike)) else source
    if not isinstance(paths, (list, tuple)) or not all(isinstance(path, (str, os.PathLike)) for path in paths):
        return None
    files = []
    for path in paths:
        info = os.stat(path)
        files.append([os.path.abspath(os.fspath(path)), info.st_size, info.st_mtime_ns])
    return json.dumps([files, sorted((parsing_params or {}).items(), key=str)], default=repr)


def publish(frame, key, log_dir):
    """Writes `frame`'s bars as memory-mappable arrays under `<log_dir>/.data_cache` (atomically: a reader never
    sees half a file).

    Args:
        frame: canonical DataFrame of bars (from `read_ohlcv`).
        key: its `source_key`.
        log_dir: the run's log dir.

    Returns:
        the cache entry (a dict of `key`, `values` and `index` paths) for `register`.
    """
    folder = os.path.join(log_dir, CACHE_DIR)
    os.makedirs(folder, exist_ok=True)
    stem = os.path.join(folder, hashlib.sha256(key.encode()).hexdigest()[:16])
    arrays = {'values': np.ascontiguousarray(frame.to_numpy(np.float64)),
              'index': frame.index.to_numpy('datetime64[ns]').view(np.int64)}
    entry = {'key': key, 'columns': list(frame.columns)}
    for name, array in arrays.items():
        path = '{}.{}.npy'.format(stem, name)
        with written_in_place_of(path) as f:
            np.save(f, array)
        entry[name] = path
    return entry


def register(entries):
    """Makes this process read the published sources from their cache entries."""
    for entry in entries or []:
        _registered[entry['key']] = entry


def lookup(source, parsing_params):
    """The bars of `source` from a registered cache entry, as a DataFrame over read-only memory maps, or None."""
    if not _registered:
        return None
    try:
        key = source_key(source, parsing_params)
    except OSError:
        return None
    entry = _registered.get(key)
    if entry is None:
        return None
    values = np.load(entry['values'], mmap_mode='r')
    index = pd.DatetimeIndex(np.load(entry['index'], mmap_mode='r').view('datetime64[ns]'), copy=False)
    return pd.DataFrame(values, index=index, columns=entry['columns'], copy=False)
