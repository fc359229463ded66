"""The data of a walk-forward: its time span cut into K+1 consecutive blocks of equal duration, the folds' files
and the checks that every block can hold an episode."""
import dataclasses
import os

import pandas as pd

from btgym_aac.data import BTgymDataset, write_histdata_csv
from btgym_aac.data.datetimes import infer_timeframe
from btgym_aac.data.errors import DataError
from btgym_aac.data.markets import write_market_spec
from btgym_aac.env.base import DATASET_KWARGS
from btgym_aac.evaluation.episodes import DATA_SOURCE_KWARGS, tile_windows
from btgym_aac.paths import written_in_place_of
from btgym_aac.validation import check_whole_number

KEPT_PARSING_PARAMS = ('timeframe', 'checks')


@dataclasses.dataclass
class Block:
    """Bars from `start` (inclusive) to `stop` (exclusive)."""
    number: int
    start: pd.Timestamp
    stop: pd.Timestamp
    frame: pd.DataFrame

    def describe(self):
        """JSON-ready {'first_bar', 'last_bar', 'bars'} (None bar times for an empty block)."""
        index = self.frame.index
        return {'first_bar': index[0].isoformat() if len(index) else None,
                'last_bar': index[-1].isoformat() if len(index) else None, 'bars': int(len(index))}


def whole_block(number, frame):
    """Block `number` of all the bars of `frame`: from its first bar to the end of its last."""
    bar = pd.Timedelta(minutes=infer_timeframe(frame.index))
    return Block(number, frame.index[0], frame.index[-1] + bar, frame)


def split_blocks(frame, folds):
    """Cuts the bars' time span into `folds` + 1 blocks of equal duration.

    Args:
        frame: OHLCV DataFrame sorted by time (from `read_ohlcv`).
        folds: K >= 1.

    Returns:
        list of K + 1 `Block`s.

    Raises:
        ValueError: `folds` is not a whole number >= 1, or a gap between bars is longer than a block.
    """
    folds = check_whole_number('folds', folds, 1)
    index = frame.index
    whole = whole_block(0, frame)
    start, end = whole.start, whole.stop
    span = (end - start) / (folds + 1)
    edges = [start + span * number for number in range(folds + 1)] + [end]
    gaps = index[1:] - index[:-1]
    if len(gaps) and gaps.max() >= span:
        at = int(gaps.argmax())
        raise ValueError('the data have no bars from {} to {} ({}), longer than a block of {} with --folds {}: '
                         'use fewer folds or data without such a gap'.format(index[at], index[at + 1], gaps[at],
                                                                             span, folds))
    return [Block(number, edges[number], edges[number + 1],
                  frame[(index >= edges[number]) & (index < edges[number + 1])]) for number in range(folds + 1)]


def parse_embargo(embargo, blocks):
    """The embargo as a Timedelta (None or '0': none).

    Args:
        embargo: a duration pandas reads ('2h', '90min', '1D'), a timedelta, or None.
        blocks: the walk-forward's blocks (the embargo must be shorter than one).

    Raises:
        ValueError: not a duration, negative, or not shorter than a block.
    """
    if embargo is None:
        return pd.Timedelta(0)
    try:
        duration = pd.Timedelta(embargo)
    except (ValueError, TypeError):
        raise ValueError('embargo {!r} is not a duration (e.g. 2h, 90min, 1D)'.format(embargo)) from None
    span = blocks[0].stop - blocks[0].start
    if duration < pd.Timedelta(0) or duration >= span:
        raise ValueError('embargo {} must be >= 0 and shorter than a block ({})'.format(duration, span))
    return duration


def train_frames(blocks, number, embargo=pd.Timedelta(0)):
    """The training bars of fold `number`: blocks 0 .. number, less the bars within `embargo` of the first bar
    time of its test block (`blocks[number + 1].start`), so that training ends `embargo` before testing starts.

    Returns:
        list of DataFrames (the last one cut short by the embargo).
    """
    cut = blocks[number + 1].start - embargo
    return [block.frame[block.frame.index < cut] for block in blocks[:number + 1]]


def fold_env_kwargs(env_kwargs, filename):
    """The run's env kwargs reading `filename` (a fold's HistData file) instead of the run's data source; only
    the bar size and the data checks of its parsing params are kept."""
    kwargs = {key: value for key, value in env_kwargs.items() if key not in DATA_SOURCE_KWARGS}
    parsing = {key: value for key, value in (env_kwargs.get('parsing_params') or {}).items()
               if key in KEPT_PARSING_PARAMS}
    kwargs['parsing_params'] = parsing or None
    kwargs['filename'] = filename
    return kwargs


def block_windows(block, env_kwargs, max_windows=None):
    """Evaluation windows of a block (`evaluation.episodes.tile_windows`) under the env's dataset settings.

    Raises:
        ValueError: the block holds no window.
    """
    settings = {key: value for key, value in env_kwargs.items()
                if key in DATASET_KWARGS and key not in DATA_SOURCE_KWARGS + ('target_period', 'parsing_params')}
    where = 'block {} ({} to {}, {} bars)'.format(block.number, block.start, block.stop, len(block.frame))
    windows = []
    if len(block.frame):
        dataset = BTgymDataset(dataframe=block.frame, parsing_params=env_kwargs.get('parsing_params'), **settings)
        try:
            dataset.reset()
        except DataError as error:
            raise ValueError('{} is too short for an episode ({}): use fewer --folds or shorter episodes'.format(
                where, error)) from error
        windows = tile_windows(dataset, max_windows)
    if not windows:
        raise ValueError('{} holds no episode window of episode_duration {} missing at most time_gap {}: use fewer '
                         '--folds or shorter episodes'.format(where, settings.get('episode_duration', 'default'),
                                                               settings.get('time_gap', 'default')))
    return windows


def write_block_file(frames, path, market=None):
    """Writes the bars of `frames` (in order) as a HistData CSV at `path`, atomically; kept when it exists.

    Args:
        frames: OHLCV DataFrames.
        path: the CSV file.
        market: the `MarketSpec` of the bars' known-edge market (written next to the file), or None.

    Returns:
        `path`.
    """
    if not os.path.exists(path):
        with written_in_place_of(path) as f:
            write_histdata_csv(pd.concat(frames), f.name)
    if market is not None:
        write_market_spec(market, path)
    return path
