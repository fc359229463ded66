"""Bars with both sides of the market: separate bid and ask bar files merged by time, and bid/ask ticks (HistData's
tick files among them) resampled to bars.

Both give the canonical frame of `parsing.read_ohlcv` with a spread: open ... close are mid prices (the mean of the
bid and the ask) and `spread` is the ask minus the bid at the bar's open, which the env's broker charges with
`spread='data'` (`btgym_aac.env.costs`: buys fill on the ask, sells on the bid). Write the frame with
`write_bars_csv` and read it back as any data file.
"""
import os

import numpy as np
import pandas as pd

from btgym_aac.data.columns import (OHLCV_COLUMNS, PRICE_COLUMNS, SIDES, SPREAD_COLUMN, match_columns,
                                    normalize_name)
from btgym_aac.data.datetimes import parse_datetimes
from btgym_aac.data.errors import DataError
from btgym_aac.data.locations import FileLines, bar_at
from btgym_aac.data.parsing import check_bars, mid_prices, read_ohlcv
from btgym_aac.logs import get_logger

_log = get_logger('bid_ask')


def merge_bid_ask(bid, ask, parsing_params=None):
    """Merges bars of the bid and bars of the ask of one instrument by their times.

    Args:
        bid, ask: sources of `read_ohlcv` (paths, DataFrames or lists of them), e.g. HistData's bid and ask files.
        parsing_params: for both (see `parsing.resolve_parsing_params`).

    Returns:
        canonical DataFrame: mid OHLC, the bid's volume and the spread at the open, on the times both sides have
        (a warning counts the bars of one side only, which are left out).

    Raises:
        DataError: the sides have no time in common, or a bar's ask open lies below its bid open.
    """
    bid_bars, ask_bars = read_ohlcv(bid, parsing_params), read_ohlcv(ask, parsing_params)
    common = bid_bars.index.intersection(ask_bars.index)
    if common.empty:
        raise DataError('bid bars ({} to {}) and ask bars ({} to {}) have no bar time in common'.format(
            bid_bars.index[0], bid_bars.index[-1], ask_bars.index[0], ask_bars.index[-1]))
    one_sided = len(bid_bars) + len(ask_bars) - 2 * len(common)
    if one_sided:
        _log.warning('left out {} bar(s) that only the bid or only the ask has ({} bars merged)'.format(
            one_sided, len(common)))
    bid_bars, ask_bars = bid_bars.loc[common], ask_bars.loc[common]
    columns = mid_prices({price: bid_bars[price].to_numpy() for price in PRICE_COLUMNS},
                         {price: ask_bars[price].to_numpy() for price in PRICE_COLUMNS})
    columns['volume'] = bid_bars['volume'].to_numpy()
    frame = pd.DataFrame(columns, index=common, columns=list(OHLCV_COLUMNS) + [SPREAD_COLUMN])
    check_bars(frame, 'bid and ask bars')
    return frame


def read_ticks(path):
    """Reads bid/ask ticks: HistData's tick files (`YYYYMMDD HHMMSSfff,bid,ask,volume`, no header) or a CSV with a
    header naming datetime (or date and time), bid and ask columns.

    Args:
        path: file path.

    Returns:
        DataFrame with a DatetimeIndex in file order and float64 columns bid and ask.

    Raises:
        FileNotFoundError, DataError: no such file; no bid or ask column; a time or price that cannot be read.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError('tick file <{}> not found'.format(path))
    where = 'tick file <{}>'.format(path)
    with open(path, encoding='utf-8-sig') as handle:
        first = handle.readline()
    sep = ';' if ';' in first else ','
    header = first.strip().split(sep)
    names = [normalize_name(name) for name in header]
    has_header = 'bid' in names
    table = pd.read_csv(path, sep=sep, header=None, skiprows=1 if has_header else 0, dtype={0: str},
                        encoding='utf-8-sig')
    if has_header:
        if 'ask' not in names:
            raise DataError('{}: has a bid column but no ask column'.format(where))
        positions = {side: names.index(side) for side in SIDES}
        raw = _tick_times(table, match_columns(header))
    elif table.shape[1] >= 3:
        positions, raw = {'bid': 1, 'ask': 2}, table.iloc[:, 0].astype(str)
    else:
        raise DataError('{}: expected datetime, bid, ask[, volume] fields, found {} per line'.format(
            where, table.shape[1]))
    rows = FileLines(path, sep, 1 if has_header else 0)
    times = parse_datetimes(raw, where, rows=rows)
    ticks = pd.DataFrame({side: pd.to_numeric(table.iloc[:, position], errors='coerce').to_numpy(np.float64)
                          for side, position in positions.items()}, index=times)
    bad = ~np.isfinite(ticks.to_numpy())
    if bad.any():
        raise DataError('{}: tick at {} has a missing or non-numeric price'.format(
            where, bar_at(ticks, int(np.flatnonzero(bad.any(axis=1))[0]), rows)))
    return ticks


def _tick_times(table, roles):
    """The raw time strings of a tick table with a header (datetime, or date and time, else the first column)."""
    if 'datetime' in roles:
        return table.iloc[:, roles['datetime']].astype(str)
    if 'date' in roles and 'time' in roles:
        return table.iloc[:, roles['date']].astype(str) + ' ' + table.iloc[:, roles['time']].astype(str)
    return table.iloc[:, 0].astype(str)


def tick_bars(ticks, minutes=1):
    """Resamples bid/ask ticks to bars of `minutes` minutes (bars without a tick are left out).

    Args:
        ticks: DataFrame with a DatetimeIndex and bid and ask columns (`read_ticks`).
        minutes: bar size in whole minutes (>= 1).

    Returns:
        canonical DataFrame: mid OHLC of the bid's and the ask's OHLC, volume = the number of ticks (HistData's
        tick volumes are 0), spread = the first tick's ask minus bid; each bar stamped with its start.
    """
    if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes < 1:
        raise ValueError('minutes must be a whole number >= 1, got {!r}'.format(minutes))
    ticks = ticks.sort_index(kind='stable')
    bars = {side: ticks[side].resample('{}min'.format(minutes), label='left', closed='left') for side in SIDES}
    sides = {side: bars[side].ohlc().dropna() for side in SIDES}
    columns = mid_prices(sides['bid'], sides['ask'])
    columns['volume'] = bars['bid'].count().loc[sides['bid'].index]
    frame = pd.DataFrame(columns, columns=list(OHLCV_COLUMNS) + [SPREAD_COLUMN]).astype(np.float64)
    frame.index = frame.index.rename('datetime')
    check_bars(frame, 'tick bars')
    return frame


def write_bars_csv(frame, path):
    """Writes bars (with their spread where they have one) as a CSV file with a header line, which `read_ohlcv`
    reads back to the same frame.

    Args:
        frame: canonical DataFrame (`read_ohlcv`, `merge_bid_ask`, `tick_bars`).
        path: file path to write.

    Returns:
        `path`.
    """
    names = list(OHLCV_COLUMNS) + ([SPREAD_COLUMN] if SPREAD_COLUMN in frame.columns else [])
    table = frame.loc[:, names]
    table.index = frame.index.strftime('%Y-%m-%d %H:%M:%S')
    table.to_csv(path, index_label='datetime', float_format='%.17g', lineterminator='\n')
    return path
