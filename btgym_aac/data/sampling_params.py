"""What a data object samples: the sampling params it is built with, and the sample config of each `sample()` call
(`DataSampleConfig`) or env reset (`EnvResetConfig`)."""
import copy

from btgym_aac.data.windows import as_timedelta

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
