"""Date/time parsing of bar timestamps and bar-size inference."""
import re

import numpy as np
import pandas as pd

from btgym_aac.data.errors import DataError
from btgym_aac.data.locations import frame_rows

HISTDATA_DATETIME_FORMAT = '%Y%m%d %H%M%S'
HISTDATA_TICK_FORMAT = '%Y%m%d %H%M%S%f'
"""HistData's tick times: milliseconds after the seconds."""
DEFAULT_TIMEFRAME = 1
_KNOWN_FORMATS = (
    (re.compile(r'^\d{8} \d{6}$'), HISTDATA_DATETIME_FORMAT),
    (re.compile(r'^\d{8} \d{9}$'), HISTDATA_TICK_FORMAT),
    (re.compile(r'^\d{8}$'), '%Y%m%d'),
    # Dotted dates are day first (DD.MM.YYYY, e.g. Dukascopy's 'Gmt time'); pandas would read them month first.
    (re.compile(r'^\d{2}\.\d{2}\.\d{4} \d{2}:\d{2}:\d{2}\.\d{1,6}$'), '%d.%m.%Y %H:%M:%S.%f'),
    (re.compile(r'^\d{2}\.\d{2}\.\d{4} \d{2}:\d{2}:\d{2}$'), '%d.%m.%Y %H:%M:%S'),
    (re.compile(r'^\d{2}\.\d{2}\.\d{4} \d{2}:\d{2}$'), '%d.%m.%Y %H:%M'),
    (re.compile(r'^\d{2}\.\d{2}\.\d{4}$'), '%d.%m.%Y'),
)
_HISTDATA_WIDTH = 15
_HISTDATA_DIGITS = [position for position in range(_HISTDATA_WIDTH) if position != 8]
_ASCII_ZERO = 48


def datetime_format_for(sample_value, datetime_format=None):
    """The strptime format to use: the given one, else HistData (bars or ticks) / YYYYMMDD / day-first
    DD.MM.YYYY[ HH:MM[:SS[.f]]] when `sample_value` fits, else None (pandas infers it)."""
    if datetime_format:
        return datetime_format
    for pattern, known_format in _KNOWN_FORMATS:
        if pattern.match(str(sample_value).strip()):
            return known_format
    return None


def looks_like_datetime(value, datetime_format=None):
    """True when `value` parses as a date/time (used to tell a header line from a data line)."""
    fmt = datetime_format_for(value, datetime_format)
    try:
        return not pd.isna(pd.to_datetime(str(value).strip(), format=fmt, errors='coerce'))
    except (ValueError, TypeError):
        return False


def _digits_to_int(digits, first, last):
    number = np.zeros(len(digits), dtype=np.int64)
    for column in range(first, last):
        number = number * 10 + digits[:, column]
    return number


def _parse_histdata_fast(raw):
    """Vectorised 'YYYYMMDD HHMMSS' parser (strptime per value is much slower: `benchmarks/data_speed.py` times
    parsing); None when any value does not fit."""
    try:
        chars = raw.to_numpy().astype('S{}'.format(_HISTDATA_WIDTH + 1)).view(np.uint8)
    except (UnicodeEncodeError, ValueError, TypeError):
        return None
    chars = chars.reshape(len(raw), _HISTDATA_WIDTH + 1)
    digits = chars[:, :_HISTDATA_WIDTH].astype(np.int64) - _ASCII_ZERO
    well_formed = (
        (chars[:, _HISTDATA_WIDTH] == 0).all() and (chars[:, 8] == ord(' ')).all()
        and ((digits[:, _HISTDATA_DIGITS] >= 0) & (digits[:, _HISTDATA_DIGITS] <= 9)).all()
    )
    if not well_formed:
        return None
    year, month, day = _digits_to_int(digits, 0, 4), _digits_to_int(digits, 4, 6), _digits_to_int(digits, 6, 8)
    hour, minute, second = _digits_to_int(digits, 9, 11), _digits_to_int(digits, 11, 13), _digits_to_int(digits, 13, 15)
    if not ((month >= 1) & (month <= 12) & (day >= 1) & (hour < 24) & (minute < 60) & (second < 60)).all():
        return None
    month_start = (year - 1970).astype('M8[Y]').astype('M8[M]') + (month - 1).astype('m8[M]')
    dates = month_start.astype('M8[D]') + (day - 1).astype('m8[D]')
    if (dates.astype('M8[M]') != month_start).any():
        return None
    times = (hour * 3600 + minute * 60 + second).astype('m8[s]')
    return pd.DatetimeIndex((dates.astype('M8[s]') + times).astype('M8[ns]'))


def parse_datetimes(raw, where, datetime_format=None, rows=frame_rows):
    """Parses a column of date/time strings.

    Args:
        raw: pandas Series of strings.
        where: source description for error messages.
        datetime_format: strptime format or None (HistData / YYYYMMDD detected, otherwise inferred by pandas).
        rows: the locator of `raw`'s source (see `locations`), naming the place of a bad value: its line in a file,
            by default its row ('row 3').

    Returns:
        naive DatetimeIndex (time-zone aware values are converted to UTC).

    Raises:
        DataError: naming the first value that cannot be parsed and its line.
    """
    first = raw.iloc[0] if len(raw) else ''
    fmt = datetime_format_for(first, datetime_format)
    if fmt == HISTDATA_DATETIME_FORMAT:
        fast = _parse_histdata_fast(raw)
        if fast is not None:
            return fast
    try:
        parsed = pd.to_datetime(raw, format=fmt, errors='coerce')
    except (ValueError, TypeError) as error:
        raise DataError('{}: cannot parse date/time values (first value {!r}): {}'.format(where, first, error))
    bad = np.flatnonzero(parsed.isna().to_numpy())
    if len(bad):
        position = int(bad[0])
        raise DataError('{}: cannot parse date/time value {!r} at {}'.format(where, raw.iloc[position], rows(position)))
    index = pd.DatetimeIndex(parsed)
    if index.tz is not None:
        index = index.tz_convert('UTC').tz_localize(None)
    return index


def infer_timeframe(index):
    """Bar size in whole minutes: the median step of a DatetimeIndex (1 when fewer than two bars).

    Args:
        index: sorted DatetimeIndex.

    Returns:
        int >= 1.
    """
    if len(index) < 2:
        return DEFAULT_TIMEFRAME
    steps_ns = np.diff(index.as_unit('ns').asi8)
    return max(1, int(round(float(np.median(steps_ns)) / 60e9)))
