"""Row arithmetic for sampling time windows out of a DatetimeIndex: durations, day starts, missing time."""
import datetime

import pandas as pd

ZERO_DURATION = datetime.timedelta(0)
ONE_DAY = pd.Timedelta(days=1)


def as_timedelta(value, name):
    """Converts a duration given as a dict of `datetime.timedelta` kwargs (or a timedelta, or None = zero).

    Args:
        value: dict like {'days': 0, 'hours': 23, 'minutes': 55}, a datetime.timedelta, or None.
        name: parameter name for error messages.

    Returns:
        datetime.timedelta (>= 0).

    Raises:
        TypeError / ValueError: naming `name` when the value is not a valid non-negative duration.
    """
    if value is None:
        return ZERO_DURATION
    if isinstance(value, datetime.timedelta):
        delta = value
    elif isinstance(value, dict):
        try:
            delta = datetime.timedelta(**value)
        except TypeError as error:
            raise TypeError('{} must hold timedelta keys (days, hours, minutes, ...): {}'.format(name, error))
    else:
        raise TypeError('{} must be a dict like {{"days": 1, "hours": 0}} or a timedelta, got {!r}'
                        .format(name, value))
    if delta < ZERO_DURATION:
        raise ValueError('{} must not be negative, got {}'.format(name, delta))
    return delta


def duration_to_records(delta, timeframe):
    """Number of whole bars of `timeframe` minutes in the duration `delta` (floor)."""
    return int(delta.total_seconds() // (60 * timeframe))


def first_row_of_day(index, row, lower):
    """Row of the first bar of the calendar day of bar `row`, kept at or after row `lower`.

    When that day's first bar lies before `lower` (the interval starts mid-day), the first bar of the next day
    is returned instead, so a window never leaves its interval.

    Args:
        index: sorted DatetimeIndex.
        row: a row number.
        lower: smallest allowed row.

    Returns:
        int row (may equal len(index) when there is no later day).
    """
    day_start = index[row].normalize()
    first = int(index.searchsorted(day_start, side='left'))
    if first < lower:
        first = int(index.searchsorted(day_start + ONE_DAY, side='left'))
    return first


def missing_time(index, first, last, requested_rows, bar):
    """Time a window [first, last) lacks against a full window of `requested_rows` contiguous bars.

    It is the gaps inside the window (time between its first and last bar not covered by bars) plus the bars
    the window is shorter than requested.

    Args:
        index: DatetimeIndex.
        first: first row of the window.
        last: row after the last one.
        requested_rows: bars a full window holds.
        bar: pandas Timedelta of one bar.

    Returns:
        pandas Timedelta.
    """
    rows = last - first
    inside_gaps = (index[last - 1] - index[first]) - (rows - 1) * bar
    return inside_gaps + max(0, requested_rows - rows) * bar
