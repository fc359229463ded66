"""What a data object samples and how its windows are cut: the sampling params it is built with, the sample config
of each `sample()` call (`DataSampleConfig`) or env reset (`EnvResetConfig`), and the row arithmetic of the time
windows sampled out of a DatetimeIndex (durations, day starts, missing time)."""
import copy
import datetime

import pandas as pd

TRAIN, TEST = 0, 1
"""Sample types: train samples come from the train interval, test samples from the test interval."""

DataSampleConfig = dict(get_new=True, sample_type=0, timestamp=None, b_alpha=1.0, b_beta=1.0)
"""Keyword template for any data object's ``sample(**DataSampleConfig)``."""

EnvResetConfig = dict(episode_config=copy.deepcopy(DataSampleConfig), trial_config=copy.deepcopy(DataSampleConfig))
"""Keyword template for ``env.reset(**EnvResetConfig)``."""

ALL_WEEKDAYS = (0, 1, 2, 3, 4, 5, 6)
DEFAULT_SAMPLING_PARAMS = dict(
    start_weekdays=list(ALL_WEEKDAYS),
    start_00=False,
    sample_duration=dict(days=0, hours=0, minutes=0),
    time_gap=dict(days=0, hours=0),
    test_period=dict(days=0, hours=0, minutes=0),
    expanding=False,
)
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


def resolve_sampling_params(sampling_params=None):
    """Merges user sampling params into the defaults and validates them.

    Args:
        sampling_params: dict or None with keys `start_weekdays` (weekdays 0=Monday..6 a sample may start on),
            `start_00` (snap a sample's start to the first bar of its day), `sample_duration` (sample length),
            `time_gap` (most missing time tolerated inside a sample), `test_period` (length of the test interval
            at the end of the data; zero or None: no test interval), `expanding` (reserved, unused).
            Durations are dicts of `datetime.timedelta` kwargs or timedeltas. `start_weekdays` defaults to all
            days.

    Returns:
        new dict with all default keys.

    Raises:
        TypeError: unknown keys or badly typed durations. ValueError: weekdays outside 0..6.
    """
    params = copy.deepcopy(DEFAULT_SAMPLING_PARAMS)
    if sampling_params:
        unknown = sorted(set(sampling_params) - set(params))
        if unknown:
            raise TypeError('unknown sampling param(s): {}; known: {}'.format(unknown, sorted(params)))
        params.update(sampling_params)
    weekdays = sorted(set(params['start_weekdays']))
    if not weekdays or any(day not in ALL_WEEKDAYS for day in weekdays):
        raise ValueError('start_weekdays must be a non-empty collection of 0 (Monday) .. 6 (Sunday), got {!r}'
                         .format(params['start_weekdays']))
    params['start_weekdays'] = weekdays
    params['start_00'] = bool(params['start_00'])
    for key in ('sample_duration', 'time_gap', 'test_period'):
        as_timedelta(params[key], key)
    return params


def check_sample_type(sample_type):
    """Raises ValueError unless `sample_type` is 0 (train) or 1 (test)."""
    if sample_type not in (TRAIN, TEST):
        raise ValueError('sample_type must be 0 (train) or 1 (test), got {!r}'.format(sample_type))


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
