"""The data of a walk-forward: its time span cut into K+1 consecutive blocks of equal duration, the folds' files
and the checks that every block can hold an episode.

The data of several assets (a multi-asset env's, `--assets`) is one wide frame of their aligned bars: columns
(asset, field), so that every cut in time cuts every asset at the same bar; its files are one per asset.
"""
import collections.abc
import dataclasses
import os
import re

import pandas as pd

from btgym_aac.data import BTgymDataset, write_histdata_csv
from btgym_aac.data.datetimes import infer_timeframe
from btgym_aac.data.errors import DataError
from btgym_aac.data.markets import read_market_spec, write_market_spec
from btgym_aac.data.parsing import read_ohlcv
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


def read_data(env_kwargs, data):
    """The bars of a walk-forward's data.

    Args:
        env_kwargs: the run's env kwargs (its `parsing_params`; for several assets its multi-line `dataset`).
        data: CSV path(s) of one asset, or a dict asset -> CSV path(s) naming the env's assets in its order.

    Returns:
        DataFrame: one asset's bars, or the assets' bars aligned as training aligns them, columns (asset, field).

    Raises:
        ValueError: a dict for an env of one asset, or assets other than the env's (naming both).
    """
    if not isinstance(data, collections.abc.Mapping):
        return read_ohlcv(data, env_kwargs.get('parsing_params'))
    names = list(getattr(env_kwargs.get('dataset'), 'data_names', ()))
    if not names:
        raise ValueError('data of several assets needs a multi-asset env (--assets); this env trades one asset')
    if list(data) != names:
        raise ValueError('the data must name the env\'s assets in its order: {} (given: {})'.format(
            ' '.join(names), ' '.join(data)))
    return pd.concat(env_kwargs['dataset'].with_data(dict(data)).frames, axis=1)


def data_market(paths):
    """The known-edge market of the data files (`markets.read_market_spec`): its `MarketSpec` when the data is one
    file, for several assets a dict asset -> the spec of its one file (None where an asset has several files or
    no spec); None for several files of one asset."""
    if isinstance(paths, collections.abc.Mapping):
        return {asset: data_market(files) for asset, files in paths.items()}
    return read_market_spec(paths[0]) if len(paths) == 1 else None


def asset_frames(frame):
    """{asset: its bars} of a wide frame of several assets (`read_data`), or None for one asset's bars."""
    if not isinstance(frame.columns, pd.MultiIndex):
        return None
    return {asset: frame[asset] for asset in frame.columns.unique(0)}


def fold_env_kwargs(env_kwargs, filename):
    """The run's env kwargs reading `filename` (a fold's HistData file; for several assets, a dict asset -> file,
    read by a copy of the env's dataset) instead of the run's data source; only the bar size and the data checks
    of a single asset's parsing params are kept."""
    if isinstance(filename, collections.abc.Mapping):
        return dict(env_kwargs, dataset=env_kwargs['dataset'].with_data(dict(filename), load=False))
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
        assets = asset_frames(block.frame)
        dataset = env_kwargs['dataset'].with_data(assets) if assets else BTgymDataset(
            dataframe=block.frame, parsing_params=env_kwargs.get('parsing_params'), **settings)
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
    """Writes the bars of `frames` (in order) as a HistData CSV at `path`, atomically; kept when it exists. Frames
    of several assets (`read_data`) are written one file per asset, `<path stem>_<asset>.csv`.

    Args:
        frames: OHLCV DataFrames.
        path: the CSV file.
        market: the `MarketSpec` of the bars' known-edge market (written next to the file), for several assets a
            dict asset -> spec (`data_market`), or None.

    Returns:
        `path`, or for several assets a dict asset -> its file.
    """
    assets = asset_frames(frames[0])
    if assets:
        stem = os.path.splitext(path)[0]
        return {asset: write_block_file([frame[asset] for frame in frames], '{}_{}.csv'.format(
            stem, re.sub(r'[^A-Za-z0-9_.-]', '_', asset)), (market or {}).get(asset)) for asset in assets}
    if not os.path.exists(path):
        with written_in_place_of(path) as f:
            write_histdata_csv(pd.concat(frames), f.name)
    if market is not None:
        write_market_spec(market, path)
    return path
