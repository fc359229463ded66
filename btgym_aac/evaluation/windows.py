"""Evaluation windows laid end to end over a dataset, for out-of-sample runs that cover a whole stretch of data."""
import numpy as np

from btgym_aac.data.windows import missing_time


def tile_windows(dataset, max_windows=None):
    """Non-overlapping episode windows of `dataset`'s bars, in time order.

    From the first bar on, a window of the dataset's episode length (`sample_num_records` rows) is taken where it
    starts on one of the dataset's `start_weekdays` and misses at most `time_gap` of time (the dataset's own
    sampling rules; `start_00` is not applied); the next one starts at its end. Where a window is refused, the
    start moves on by one bar.

    Args:
        dataset: a reset `BTgymDataset` (or any data object with `data`, `sample_num_records`, `start_weekdays`,
            `max_time_gap` and `bar_delta`), or a `BTgymMultiData` of them (its master line's windows, which are the
            same rows in every line).
        max_windows: keep at most this many, spread evenly over the tiles (None: all).

    Returns:
        list of [first_row, stop_row) pairs.
    """
    dataset = getattr(dataset, 'master_data', dataset)
    index, length = dataset.data.index, dataset.sample_num_records
    weekdays = set(dataset.start_weekdays)
    tiles, first = [], 0
    while first + length <= len(index):
        stop = first + length
        if index[first].weekday() in weekdays and \
                missing_time(index, first, stop, length, dataset.bar_delta) <= dataset.max_time_gap:
            tiles.append([first, stop])
            first = stop
        else:
            first += 1
    if max_windows is not None and len(tiles) > max_windows:
        chosen = np.unique(np.linspace(0, len(tiles) - 1, int(max_windows)).round().astype(int))
        tiles = [tiles[position] for position in chosen]
    return tiles
