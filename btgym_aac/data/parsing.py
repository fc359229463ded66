"""Reads OHLCV bars from HistData ASCII files, generic CSV files or DataFrames into one canonical DataFrame.

The canonical frame is sorted by time, has a DatetimeIndex and float64 columns open, high, low, close, volume, and
a `spread` column (the ask minus the bid at each bar's open) when the source gives one or gives bid and ask prices.
"""
import csv
import os
import re

import numpy as np
import pandas as pd

from btgym_aac.data.columns import (BID_ASK_COLUMNS, OHLCV_COLUMNS, PRICE_COLUMNS, SIDES, SPREAD_COLUMN,
                                    has_bid_ask, match_columns, require_prices)
from btgym_aac.data.datetimes import infer_timeframe, looks_like_datetime, parse_datetimes
from btgym_aac.data.errors import DataError
from btgym_aac.data.locations import FileLines, bar_at, frame_rows, kept_rows
from btgym_aac.data.sanity import check_series, check_source, report_check, resolve_checks
from btgym_aac.data.shared import lookup
from btgym_aac.logs import error_summary

COLUMN_INDEX_KEYS = ('datetime', 'open', 'high', 'low', 'close', 'volume')
DEFAULT_PARSING_PARAMS = dict(sep=None, datetime_format=None, timeframe=None, names=None, checks=None,
                              **{key: None for key in COLUMN_INDEX_KEYS})
# Keys of the original's parsing params that the reader does not need: accepted for compatibility and ignored,
# because header lines, the datetime column and its parsing are detected.
IGNORED_LEGACY_PARSING_KEYS = frozenset(['header', 'index_col', 'parse_dates', 'openinterest'])
_ENCODING = 'utf-8-sig'
_FIELD_COUNT = re.compile(r'Expected (\d+) fields in line (\d+), saw (\d+)')
"""What pandas' C parser says of a line with more fields than the lines before it."""


def resolve_parsing_params(parsing_params=None):
    """Merges user parsing params into the defaults.

    Args:
        parsing_params: dict or None. Keys:
            `sep`: field separator; None: detect ';', ',' or tab from the first line.
            `datetime_format`: strptime format; None: HistData, YYYYMMDD or day-first DD.MM.YYYY when it fits,
                else inferred.
            `timeframe`: minutes per bar; None: inferred from the data.
            `names`: names of a file's fields after the first (datetime) one, as the original read files with
                `index_col=0`, or of all fields; matched like a header line (which they replace).
            `datetime`, `open`, `high`, `low`, `close`, `volume`: field positions as in the original (datetime
                0, open 1, ...; -1: the file has no such field, volume then 0); each one given overrides the
                header / `names` / positional mapping.
            `checks`: {check name: 'error', 'warn' or 'off'} overriding the data sanity checks' defaults (see
                `sanity`).
            The original's `header`, `index_col`, `parse_dates`, `openinterest` are accepted and ignored.
            `names` and field positions apply to files, not DataFrames (whose columns are matched by name).

    Returns:
        new dict with all default keys.

    Raises:
        TypeError: on unknown keys.
    """
    params = dict(DEFAULT_PARSING_PARAMS)
    if parsing_params:
        unknown = sorted(set(parsing_params) - set(DEFAULT_PARSING_PARAMS) - IGNORED_LEGACY_PARSING_KEYS)
        if unknown:
            raise TypeError('unknown parsing_params key(s): {}; known: {}'.format(unknown, sorted(params)))
        params.update({key: parsing_params[key] for key in DEFAULT_PARSING_PARAMS if key in parsing_params})
    resolve_checks(params['checks'])
    return params


def _first_line_fields(path, sep):
    with open(path, encoding=_ENCODING) as handle:
        line = handle.readline().strip()
    if not line:
        raise DataError('data file <{}> is empty'.format(path))
    if sep is None:
        sep = next((candidate for candidate in (';', ',', '\t') if candidate in line), ',')
    return next(csv.reader([line], delimiter=sep)), sep


def _assemble(table, roles, datetime_values, where):
    """Builds the canonical frame from a raw table, the column roles and parsed datetimes (no volume -> 0). Bars
    given as bid and ask prices become mid prices and the spread at the open (see `mid_prices`)."""
    def column(role):
        return pd.to_numeric(table.iloc[:, roles[role]], errors='coerce').to_numpy(np.float64)

    if has_bid_ask(roles, where):
        sides = {side: {price: column('{}_{}'.format(side, price)) for price in PRICE_COLUMNS} for side in SIDES}
        columns = mid_prices(sides['bid'], sides['ask'])
    else:
        require_prices(roles, where)
        columns = {name: column(name) for name in PRICE_COLUMNS}
        if SPREAD_COLUMN in roles:
            columns[SPREAD_COLUMN] = column(SPREAD_COLUMN)
    columns['volume'] = column('volume') if 'volume' in roles else np.zeros(len(table))
    names = list(OHLCV_COLUMNS) + ([SPREAD_COLUMN] if SPREAD_COLUMN in columns else [])
    return pd.DataFrame(columns, index=pd.DatetimeIndex(datetime_values, name='datetime'), columns=names)


def mid_prices(bid, ask):
    """The mid OHLC prices of bars given on both sides, and the spread at the open.

    Args:
        bid, ask: dicts 'open', 'high', 'low', 'close' -> arrays (or Series) of the same bars.

    Returns:
        dict of the four mid prices (the mean of bid and ask, the highs and lows too) and 'spread' (ask open -
        bid open).
    """
    columns = {price: (bid[price] + ask[price]) / 2.0 for price in PRICE_COLUMNS}
    columns[SPREAD_COLUMN] = ask['open'] - bid['open']
    return columns


def _datetime_column(table, roles, rows, params, where):
    """Parses the datetime of each row: a datetime column, or date + time columns, or the first column (`rows`:
    the source's locator, naming a bad value's line)."""
    if 'datetime' in roles:
        raw = table.iloc[:, roles['datetime']].astype(str)
    elif 'date' in roles and 'time' in roles:
        raw = table.iloc[:, roles['date']].astype(str) + ' ' + table.iloc[:, roles['time']].astype(str)
    elif 'date' in roles or 'time' in roles:
        raw = table.iloc[:, roles.get('date', roles.get('time'))].astype(str)
    else:
        raw = table.iloc[:, 0].astype(str)
    return parse_datetimes(raw, where, params['datetime_format'], rows)


def _positional_roles(num_columns, where):
    """Roles of a header-less (HistData-style) table: datetime, open, high, low, close[, volume]."""
    if num_columns < 5:
        raise DataError('{}: expected at least 5 fields per line (datetime, open, high, low, close), found {}'
                        .format(where, num_columns))
    roles = {'datetime': 0}
    roles.update({name: position + 1 for position, name in enumerate(OHLCV_COLUMNS[:min(5, num_columns - 1)])})
    return roles


def _header_roles(header, num_columns, where):
    """Roles from a header line; a header one field shorter than the rows names the columns after the index."""
    if len(header) == num_columns - 1:
        header = [''] + list(header)
    elif len(header) != num_columns:
        raise DataError('{}: header has {} fields but data lines have {}'.format(where, len(header), num_columns))
    roles = match_columns(header)
    if not any(name in roles for name in OHLCV_COLUMNS + BID_ASK_COLUMNS):
        return _positional_roles(num_columns, where)
    return roles


def _named_roles(names, num_columns, where):
    """Roles from the `names` parsing param: names of the fields after the datetime one, or of all fields."""
    if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) for name in names):
        raise DataError('{}: parsing_params names must be a list of column names, got {!r}'.format(where, names))
    if len(names) == num_columns - 1:
        names = ['datetime'] + names
    elif len(names) != num_columns:
        raise DataError('{}: parsing_params names {} name {} fields, but data lines have {} (datetime first)'
                        .format(where, names, len(names), num_columns))
    return match_columns(names)


def _override_positions(roles, params, num_columns, where):
    """Applies the field positions given in the parsing params (-1: no such field) over `roles`."""
    roles = dict(roles)
    for key in COLUMN_INDEX_KEYS:
        position = params[key]
        if position is None:
            continue
        if isinstance(position, bool) or not isinstance(position, int) or not -1 <= position < num_columns:
            raise DataError('{}: parsing_params {}={!r} is not a field position in 0..{} or -1 (absent)'.format(
                where, key, position, num_columns - 1))
        roles.pop(key, None)
        if position >= 0:
            roles[key] = position
    return roles


def _csv_error(where, error):
    """DataError for a file pandas cannot split into rows of equal width: the line and its field count where pandas
    names them."""
    found = _FIELD_COUNT.search(str(error))
    if found:
        expected, line, seen = found.groups()
        return DataError('{}: line {} has {} fields, expected {} as in the lines before it (a line cut short, or two '
                         'lines run together?)'.format(where, line, seen, expected))
    return DataError('{} cannot be split into CSV rows ({})'.format(where, error_summary(error)))


def read_file(path, parsing_params=None):
    """Reads one CSV file (HistData `;` without or with a header line, or generic OHLCV CSV with a header).

    A header is detected when the first field of the first line is not a date. Header names are matched
    case-insensitively (Date/Datetime/Time or Date+Time, Open, High, Low, Close, Volume; '1_O;2_H;...' style too);
    without a header the columns are datetime, open, high, low, close[, volume]. The `names` and field position
    parsing params override this mapping. Missing volume becomes 0. Every bar of a header-less file is kept. A
    `Spread` column, or bid and ask prices in place of OHLC (Bid_Open ... Ask_Close, see `columns.match_columns`),
    give the frame its spread column.

    Args:
        path: file path.
        parsing_params: see `resolve_parsing_params`.

    Returns:
        (canonical OHLCV DataFrame, not yet sorted or de-duplicated; its locator, a `locations.FileLines` naming the
        line of each of its bars).

    Raises:
        FileNotFoundError: the file does not exist.
        DataError: empty file, unparsable dates (the line named), missing price columns.
    """
    params = resolve_parsing_params(parsing_params)
    path = os.fspath(path)
    if os.path.isdir(path):
        raise FileNotFoundError('data file <{}> is a directory, not a CSV file'.format(path))
    if not os.path.isfile(path):
        raise FileNotFoundError('data file <{}> not found'.format(path))
    if os.path.getsize(path) == 0:
        raise DataError('data file <{}> is empty'.format(path))
    where = 'data file <{}>'.format(path)
    try:
        first_fields, sep = _first_line_fields(path, params['sep'])
        has_header = not looks_like_datetime(first_fields[0], params['datetime_format'])
        table = pd.read_csv(path, sep=sep, header=None, skiprows=1 if has_header else 0, dtype={0: str},
                            encoding=_ENCODING, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        table = pd.DataFrame()
    except UnicodeDecodeError as error:
        raise DataError('{} cannot be read as UTF-8 CSV text ({})'.format(where, error_summary(error))) from error
    except pd.errors.ParserError as error:
        raise _csv_error(where, error) from error
    if table.empty:
        raise DataError('{} has a header line but no data rows'.format(where))
    if params['names'] is not None:
        roles = _named_roles(params['names'], table.shape[1], where)
    elif has_header:
        roles = _header_roles(first_fields, table.shape[1], where)
    else:
        roles = _positional_roles(table.shape[1], where)
    roles = _override_positions(roles, params, table.shape[1], where)
    rows = FileLines(path, sep, 1 if has_header else 0, _ENCODING)
    datetimes = _datetime_column(table, roles, rows, params, where)
    return _assemble(table, roles, datetimes, where), rows


def from_dataframe(frame, parsing_params=None):
    """Converts a user DataFrame (DatetimeIndex or a date/time column; case-insensitive OHLC[V] names).

    Args:
        frame: pandas DataFrame.
        parsing_params: see `resolve_parsing_params` (only `datetime_format` is used).

    Returns:
        canonical OHLCV DataFrame (not yet sorted or de-duplicated).
    """
    params = resolve_parsing_params(parsing_params)
    where = 'DataFrame'
    if frame.empty:
        raise DataError('DataFrame holds no rows')
    roles = match_columns(frame.columns)
    if isinstance(frame.index, pd.DatetimeIndex):
        datetimes = frame.index.tz_convert('UTC').tz_localize(None) if frame.index.tz is not None else frame.index
    elif {'datetime', 'date', 'time'} & set(roles):
        datetimes = _datetime_column(frame, roles, frame_rows, params, where)
    else:
        raise DataError('DataFrame has neither a DatetimeIndex nor a date/time column (columns: {})'
                        .format(list(frame.columns)))
    return _assemble(frame, roles, datetimes, where)


def _drop_duplicates(frame, rows):
    """`frame` without the bars whose timestamp an earlier bar has, and the locator of the bars kept."""
    duplicated = frame.index.duplicated(keep='first')
    if not duplicated.any():
        return frame, rows
    return frame[~duplicated], kept_rows(rows, np.flatnonzero(~duplicated))


def check_bars(frame, where, rows=None):
    """Raises DataError for bars with missing or infinite values, high < low or a negative spread (an ask below the
    bid), naming the first bad bar.

    Args:
        frame: canonical OHLCV DataFrame (with or without a spread column).
        where: source description for messages.
        rows: the locator of `frame`'s source (see `locations`), naming a bar's line; None: bars are named by
            their time alone.
    """
    names = list(frame.columns)
    missing = ~np.isfinite(frame.to_numpy(np.float64))
    if missing.any():
        first = np.flatnonzero(missing.any(axis=1))[0]
        columns = [name for name, bad in zip(names, missing[first]) if bad]
        raise DataError('{}: bar at {} has missing, non-numeric or infinite {}'.format(
            where, bar_at(frame, first, rows), columns))
    if SPREAD_COLUMN in names:
        crossed = (frame[SPREAD_COLUMN] < 0).to_numpy()
        if crossed.any():
            first = np.flatnonzero(crossed)[0]
            raise DataError('{}: bar at {} has a negative spread {} (its ask is below its bid)'.format(
                where, bar_at(frame, first, rows), frame[SPREAD_COLUMN].iloc[first]))
    inverted = (frame['high'] < frame['low']).to_numpy()
    if inverted.any():
        first = np.flatnonzero(inverted)[0]
        raise DataError('{}: bar at {} has high < low ({} < {})'.format(
            where, bar_at(frame, first, rows), frame['high'].iloc[first], frame['low'].iloc[first]))


def _describe_source(source):
    if isinstance(source, pd.DataFrame):
        return 'DataFrame'
    if isinstance(source, (str, os.PathLike)):
        return 'data file <{}>'.format(os.fspath(source))
    raise TypeError('data source must be a path, a DataFrame or a list of them, got {}'.format(type(source)))


def _read_one(source, parsing_params, checks):
    """The bars of one source, checked, without those of a repeated timestamp, and their locator."""
    where = _describe_source(source)
    if isinstance(source, pd.DataFrame):
        frame, rows = from_dataframe(source, parsing_params), frame_rows
    else:
        frame, rows = read_file(source, parsing_params)
    check_bars(frame, where, rows)
    check_source(frame, where, checks, rows)
    return _drop_duplicates(frame, rows)


def _check_same_bar_size(frames, sources):
    """Raises DataError when the sources' bar sizes (median time steps, see `infer_timeframe`) differ: concatenated,
    they would make one dataset of mixed bars. Sources of fewer than two bars are not compared."""
    sizes = [(infer_timeframe(frame.index), _describe_source(source))
             for frame, source in zip(frames, sources) if len(frame) > 1]
    if len({size for size, _ in sizes}) > 1:
        raise DataError('data sources have different bar sizes: {}; read bars of one size together'.format(
            ', '.join('{} has {}-minute bars'.format(where, size) for size, where in sizes)))


def _check_same_columns(frames, sources):
    """Raises DataError when some sources give a spread (or bid and ask prices) and others do not."""
    with_spread = [SPREAD_COLUMN in frame.columns for frame in frames]
    if any(with_spread) and not all(with_spread):
        raise DataError('of the data sources, {} give a spread (or bid and ask prices) and {} do not; read bars '
                        'with the same columns together'.format(
                            *(', '.join(_describe_source(item) for item, spread in zip(sources, with_spread)
                                        if spread is kind) for kind in (True, False))))


def _repeat_across_sources(frames, locators, sources, repeats):
    """The message of bars that repeat the time of a bar of an earlier source, naming the first of them.

    Args:
        frames, locators, sources: each source's bars (each without repeats of its own), their locator, the source.
        repeats: positions of the repeating bars in the concatenated frames.
    """
    ends = np.cumsum([len(frame) for frame in frames])
    index = int(np.searchsorted(ends, repeats[0], side='right'))
    position = int(repeats[0] - (ends[index - 1] if index else 0))
    return ('{}: the bar at {} repeats the time of a bar in an earlier source; dropped {} bar(s) with duplicated '
            'timestamps across the sources, keeping the first'.format(
                _describe_source(sources[index]), bar_at(frames[index], position, locators[index]), len(repeats)))


def read_ohlcv(source, parsing_params=None):
    """Reads OHLCV bars from a path, a DataFrame or a list of them (concatenated in order).

    Files that this process's launcher published (see `shared`) come from its memory-mapped copy, read-only.
    Duplicated timestamps (inside a file or across files) are dropped keeping the first. The data sanity checks
    (`sanity`: non-positive or out-of-scale prices, constant close prices, unsorted or duplicated timestamps) raise
    or warn as `parsing_params['checks']` say. The `attrs` of a DataFrame source (such as a known-edge market's
    recipe, see `markets`) are kept.

    Args:
        source: str / os.PathLike or pandas DataFrame, or a list / tuple of them.
        parsing_params: see `resolve_parsing_params`.

    Returns:
        DataFrame sorted by time with a DatetimeIndex and float64 columns open, high, low, close, volume, and
        spread where the source gives a spread or bid and ask prices (then open ... close are the mid prices).

    Raises:
        FileNotFoundError: a file does not exist.
        DataError: empty file, unparsable date, missing price columns (named), bar with missing values or high <
            low, sources with different bar sizes, a sanity check set to 'error' that fails (`DataCheckError`).
            A bad bar or value is named by its file and line (1-based, the header and blank lines counted, as an
            editor shows them) or its DataFrame row, and its time.
    """
    params = resolve_parsing_params(parsing_params)
    cached = lookup(source, params)
    if cached is not None:
        return cached
    checks = resolve_checks(params['checks'])
    if isinstance(source, (list, tuple)):
        if not source:
            raise DataError('empty list of data files')
        frames, locators = zip(*(_read_one(item, parsing_params, checks) for item in source))
        _check_same_bar_size(frames, source)
        _check_same_columns(frames, source)
        where = ', '.join(_describe_source(item) for item in source)
        frame = pd.concat(frames)
        duplicated = frame.index.duplicated(keep='first')
        if duplicated.any():
            report_check(checks, 'duplicated_timestamps', _repeat_across_sources(
                frames, locators, source, np.flatnonzero(duplicated)))
            frame = frame[~duplicated]
    else:
        where = _describe_source(source)
        frame, _ = _read_one(source, parsing_params, checks)
        if isinstance(source, pd.DataFrame):
            frame.attrs = dict(source.attrs)
    if not frame.index.is_monotonic_increasing:
        frame = frame.sort_index(kind='stable')
    check_series(frame, where, checks)
    return frame
