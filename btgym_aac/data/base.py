"""BTgymBaseData: holds OHLCV bars, splits them into train/test intervals and samples time windows from them.

Data objects form a hierarchy (Domain -> Trial -> Episode) through a "config stack": a list of
``{'class_ref': cls, 'kwargs': dict}``; an object pops the last entry to learn what its samples are and passes the
rest down to them. A sample holds a slice (not a copy) of its parent's DataFrame and shares its parent's random
generator, so a seeded top-level object yields the same sequence of samples every time.

Timestamps (`start_timestamp`, `global_timestamp`, ...) are POSIX seconds of the naive bar times read as UTC.
"""
import copy
import datetime

import backtrader as bt
import numpy as np
import pandas as pd

from btgym_aac.data.backtrader_feeds import ColumnPreloadedData, SpreadPreloadedData
from btgym_aac.data.columns import OHLCV_COLUMNS, SPREAD_COLUMN
from btgym_aac.data.datetimes import infer_timeframe
from btgym_aac.data.errors import DataError
from btgym_aac.data.parsing import read_ohlcv, resolve_parsing_params
from btgym_aac.data.sampling import (TEST, TRAIN, ZERO_DURATION, as_timedelta, check_sample_type, duration_to_records,
                                     first_row_of_day, missing_time, resolve_sampling_params)
from btgym_aac.logs import WARNING, get_logger

FEED_COLUMNS = dict(datetime=0, open=1, high=2, low=3, close=4, volume=5, openinterest=-1)
MAX_SAMPLING_ATTEMPTS = 100
MINUTES_PER_DAY = 1440
DESCRIBE_ROWS = ('count', 'mean', 'std', 'min', '25%', '50%', '75%', 'max')


def _as_datetime(value, name):
    if value is None or isinstance(value, datetime.datetime):
        return value
    if isinstance(value, dict):
        return datetime.datetime(**value)
    raise TypeError('{} must be a dict of datetime kwargs or a datetime, got {!r}'.format(name, value))


def bt_timeframe(minutes):
    """backtrader (timeframe, compression) for bars of `minutes`: whole days -> Days, otherwise Minutes."""
    if minutes % MINUTES_PER_DAY == 0:
        return bt.TimeFrame.Days, minutes // MINUTES_PER_DAY
    return bt.TimeFrame.Minutes, minutes


def describe_bars(frame):
    """Count, mean, std (ddof 1), min, quartiles (linear interpolation) and max of every column, as pandas
    `describe()` gives them, computed with numpy (faster than pandas).

    Args:
        frame: DataFrame of numeric columns with at least one row.

    Returns:
        float64 DataFrame with the rows of `DESCRIBE_ROWS` and the columns of `frame`, equal to `frame.describe()`.
    """
    values = frame.to_numpy(np.float64)
    rows = [np.full(values.shape[1], float(len(values))), values.mean(axis=0), values.std(axis=0, ddof=1),
            values.min(axis=0)]
    rows.extend(np.percentile(values, [25, 50, 75], axis=0))
    rows.append(values.max(axis=0))
    return pd.DataFrame(np.array(rows), index=list(DESCRIBE_ROWS), columns=frame.columns)


class BTgymBaseData:
    """Core loader / splitter / sampler of OHLCV bars; see the module docstring for the hierarchy.

    Attributes (besides the constructor args): `data` (DataFrame or None), `is_ready`, `timeframe` (minutes per
    bar), `rng` (numpy Generator), `metadata`, `sample_num`, `sample_instance`, `train_interval`,
    `test_interval` (row pairs [start, stop)), `sample_num_records`, `max_gap_num_records`, `train_num_records`,
    `test_num_records`, `start_timestamp`, `final_timestamp`, `global_timestamp`, `params` (legacy merged dict).
    """
    names = OHLCV_COLUMNS

    def __init__(self, filename=None, dataframe=None, parsing_params=None, sampling_params=None, name='base_data',
                 data_names=('default_asset',), task=0, frozen_time_split=None, log_level=WARNING,
                 _config_stack=None):
        """
        Args:
            filename: CSV path or list of paths (concatenated in order), read by `reset()`; see `read_ohlcv`.
            dataframe: DataFrame used as the data instead of files (converted by `read_ohlcv` right away).
            parsing_params: see `parsing.resolve_parsing_params`.
            sampling_params: see `sampling.resolve_sampling_params`.
            name: instance name (logger name is '<name>_<task>').
            data_names: names of the data lines; the first is the backtrader feed name.
            task: worker number.
            frozen_time_split: dict of datetime kwargs (or datetime): `reset()` sets the global time to the last
                bar at or before it.
            log_level: logbook level.
            _config_stack: list of {'class_ref', 'kwargs'} describing samples and their samples.
        """
        self.filename = filename
        self.name = name
        self.task = task
        self.log_level = log_level
        self.set_logger(log_level, task)
        self.parsing_params = resolve_parsing_params(parsing_params)
        self.sampling_params = resolve_sampling_params(sampling_params)
        self.set_params(self.sampling_params)
        self.params = dict(self.parsing_params, **self.sampling_params)
        self.data_names = tuple(data_names)
        if not self.data_names:
            raise ValueError('data_names must hold at least one name')
        self.data_name = self.data_names[0]
        self.frozen_time_split = _as_datetime(frozen_time_split, 'frozen_time_split')
        self.frozen_split_timestamp = None
        self.timeframe = self.parsing_params['timeframe']
        self.rng = np.random.default_rng()
        self._test_period_backshift_delta = ZERO_DURATION
        self.metadata = {'sample_num': 0, 'type': None}
        self._clear_state()
        self._set_nested_config(_config_stack)
        self.data = None
        if dataframe is not None:
            self.data = read_ohlcv(dataframe, self.parsing_params)
            self._resolve_timeframe()

    def _clear_state(self):
        """Forgets intervals, counters and the last sample (not `metadata`, which the parent stamped)."""
        self.is_ready = False
        self.sample_num = 0
        self.sample_instance = None
        self.data_stat = None
        self.start_timestamp = self.final_timestamp = self.global_timestamp = None
        self.data_range_delta = None
        self.train_interval = [0, 0]
        self.test_interval = [0, 0]
        self.sample_num_records = self.max_gap_num_records = self.backshift_num_records = 0
        self.train_num_records = self.test_num_records = self.total_num_records = 0

    def _set_nested_config(self, config_stack):
        """Pops the class and kwargs of this object's samples off the config stack."""
        stack = copy.deepcopy(config_stack) or []
        if stack:
            nested = stack.pop()
            self.nested_class_ref = nested['class_ref']
            self.nested_params = dict(nested['kwargs'])
        else:
            self.nested_class_ref = None
            self.nested_params = dict(name='data_stream')
        self.nested_params['_config_stack'] = stack
        self.sample_name = '{}_w_{}_'.format(self.nested_params.get('name', 'sample'), self.task)

    def set_logger(self, level=None, task=None):
        """(Re)creates the logbook logger '<name>_<task>'.

        Args:
            level: logbook level (None keeps the current one).
            task: task number (None keeps the current one).
        """
        if task is not None:
            self.task = task
        if level is not None:
            self.log_level = level
        self.log = get_logger(self.name, self.task, log_level=self.log_level)

    def set_params(self, params_dict):
        """Sets every item of `params_dict` as an instance attribute."""
        for key, value in params_dict.items():
            setattr(self, key, value)

    def seed(self, seed=None):
        """Sets this object's random generator `rng` (samples made afterwards share it).

        Args:
            seed: int, SeedSequence or None (fresh OS entropy).
        """
        self.rng = np.random.default_rng(seed)

    def set_global_timestamp(self, timestamp=None):
        """Sets `global_timestamp` (POSIX seconds) to `timestamp`, or to the first bar's time when it is None.

        Args:
            timestamp: float POSIX seconds or None.
        """
        if timestamp is not None:
            self.global_timestamp = float(timestamp)
        elif self.data is not None:
            self.global_timestamp = self.data.index[0].timestamp()

    def _resolve_timeframe(self):
        timeframe = self.parsing_params['timeframe']
        if timeframe is None:
            timeframe = infer_timeframe(self.data.index)
        if int(timeframe) != timeframe or timeframe < 1:
            raise ValueError('timeframe must be a positive whole number of minutes, got {!r}'.format(timeframe))
        self.timeframe = int(timeframe)

    @property
    def bar_delta(self):
        """pandas Timedelta of one bar."""
        return pd.Timedelta(minutes=self.timeframe)

    def read_csv(self, data_filename=None, force_reload=False):
        """Loads `filename` (or `data_filename`, which then replaces it) into `data` unless data is present.

        Args:
            data_filename: path or list of paths, optional.
            force_reload: reload even when data is present.
        """
        if self.data is not None and not force_reload and not data_filename:
            return
        if data_filename:
            self.filename = data_filename
        if self.filename is None:
            raise DataError('{}: no data source: give `filename` or `dataframe`'.format(self.name))
        self.data = read_ohlcv(self.filename, self.parsing_params)
        self._resolve_timeframe()
        self.log.info('loaded {} bars of {} min from {}'.format(len(self.data), self.timeframe, self.filename))

    def replace_data(self, source, load=True):
        """Takes `source` in place of the data; the object must be reset again before it samples.

        Args:
            source: path or list of paths (read with `parsing_params`, concatenated in time), or a DataFrame.
            load: read the files now (else at the next `read_csv` or `reset`); a DataFrame is always read.
        """
        is_frame = isinstance(source, pd.DataFrame)
        self.filename = None if is_frame else source
        self.data = read_ohlcv(source, self.parsing_params) if load or is_frame else None
        self.is_ready = False
        if self.data is not None:
            self._resolve_timeframe()

    def reset(self, data_filename=None, timestamp=None, **ignored):
        """Gets the object ready to sample: loads data if needed, computes intervals and record counts.

        A sampled Trial already holds its data slice; `reset()` only computes its own intervals from it.

        Args:
            data_filename: optional new data source (path or list of paths).
            timestamp: optional global time (POSIX seconds); default: the first bar's time.
            **ignored: other keys of a reset config (accepted and ignored).

        Raises:
            DataError: no data source, or the data cannot hold one sample in its train / test interval.
        """
        self._reset(data_filename=data_filename, timestamp=timestamp)

    def _reset(self, data_filename=None, timestamp=None):
        self.read_csv(data_filename)
        if self.timeframe is None:
            self._resolve_timeframe()
        self._clear_state()
        index = self.data.index
        self.total_num_records = len(index)
        self.data_range_delta = (index[-1] - index[0]).to_pytimedelta()
        self.start_timestamp = index[0].timestamp()
        self.final_timestamp = index[-1].timestamp()
        self._set_time_split(timestamp)
        self.max_time_gap = as_timedelta(self.time_gap, 'time_gap')
        self.max_gap_num_records = duration_to_records(self.max_time_gap, self.timeframe)
        self.max_sample_len_delta = as_timedelta(self.sample_duration, 'sample_duration')
        self.sample_num_records = duration_to_records(self.max_sample_len_delta, self.timeframe)
        self.backshift_num_records = round(self._test_period_backshift_delta.total_seconds() / (60 * self.timeframe))
        self._set_intervals()
        self.is_ready = True

    def _set_time_split(self, timestamp):
        """Global time: the last bar at or before `frozen_time_split` (the first bar when the split precedes the
        data, e.g. in a trial sampled after it), else `timestamp`."""
        if self.frozen_time_split is None:
            self.frozen_split_timestamp = None
            self.set_global_timestamp(timestamp)
            return
        row = max(0, int(self.data.index.searchsorted(pd.Timestamp(self.frozen_time_split), side='right')) - 1)
        self.frozen_split_timestamp = self.data.index[row].timestamp()
        self.set_global_timestamp(self.frozen_split_timestamp)

    def _set_intervals(self):
        """Train rows first, test rows (the last `test_period`, optionally shifted back) at the end."""
        num_rows = len(self.data)
        self.test_num_records = round(as_timedelta(self.test_period, 'test_period').total_seconds()
                                      / (60 * self.timeframe))
        self.train_num_records = num_rows - self.test_num_records
        if self.test_num_records > 0:
            self.train_interval = [0, self.train_num_records]
            self.test_interval = [max(0, self.train_num_records - self.backshift_num_records), num_rows]
        else:
            self.train_interval = [0, num_rows]
            self.test_interval = [0, 0]
        if self.nested_class_ref is None:
            return
        if self.sample_num_records < 1:
            raise DataError('{}: sample_duration {} is shorter than one bar of {} min'.format(
                self.name, self.sample_duration, self.timeframe))
        if self.train_num_records < 1:
            raise DataError('{}: test period of {} bars leaves no train bars out of {}'.format(
                self.name, self.test_num_records, num_rows))
        self._check_interval_fits('train', self.train_interval)
        if self.test_num_records > 0:
            self._check_interval_fits('test', self.test_interval)

    def _check_interval_fits(self, kind, interval):
        available = interval[1] - interval[0]
        required = self.sample_num_records - self.max_gap_num_records
        if available < required:
            raise DataError(
                '{}{}: {} interval has {} bars of {} min, too short for one sample: sample_duration {} needs {} '
                'bars ({} required after the time_gap tolerance of {} bars)'.format(
                    self.name, '' if self.filename is None else ' (data {})'.format(self.filename), kind, available,
                    self.timeframe, self.max_sample_len_delta, self.sample_num_records, required,
                    self.max_gap_num_records))

    def describe(self):
        """Statistics of the data as pandas `describe()` gives them (loading and then unloading the data if it was not
        loaded).

        Returns:
            DataFrame of count, mean, std, min, 25%, 50%, 75%, max per column.
        """
        loaded_here = self.data is None
        self.read_csv()
        self.data_stat = describe_bars(self.data)
        if loaded_here:
            self.data = None
        return self.data_stat

    def to_btfeed(self):
        """Converts the data to a backtrader feed.

        Returns:
            {data_name: `backtrader_feeds.ColumnPreloadedData` (a backtrader PandasDirectData)} with timeframe Days
            (compression = days per bar) for whole-day bars, else Minutes with compression = minutes per bar; column
            indices datetime=0 (index), open=1, high=2, low=3, close=4, volume=5, no openinterest; bars with a
            spread column get a `backtrader_feeds.SpreadPreloadedData`, whose `spread` line is column 6.
        """
        if self.data is None or self.data.empty:
            raise DataError('{}: holds no data; call reset() or sample it from a parent first'.format(self.name))
        if self.timeframe is None:
            self._resolve_timeframe()
        timeframe, compression = bt_timeframe(self.timeframe)
        feed_class = SpreadPreloadedData if SPREAD_COLUMN in self.data.columns else ColumnPreloadedData
        feed = feed_class(dataname=self.data, timeframe=timeframe, compression=compression, **FEED_COLUMNS)
        feed.numrecords = len(self.data)
        return {self.data_name: feed}

    def sample(self, get_new=True, sample_type=TRAIN, b_alpha=1.0, b_beta=1.0, force_interval=False, interval=None,
               **ignored):
        """Samples a window of bars as an instance of the nested class (or returns the previous sample).

        Args:
            get_new: False reuses the previous sample when there is one.
            sample_type: 0 train (start drawn from Beta(b_alpha, b_beta) over the train interval) or 1 test
                (uniform start over the test interval).
            b_alpha: Beta alpha > 0 (train only); alpha > beta favours later starts.
            b_beta: Beta beta > 0 (train only).
            force_interval: take exactly `interval` (row pair) as the sample.
            interval: [first_row, stop_row) used with `force_interval`.
            **ignored: other sample-config keys such as `timestamp` (accepted and ignored).

        Returns:
            sample object whose `metadata` holds type, sample_num, parent_sample_num, parent_sample_type,
            first_row, last_row.
        """
        return self._sample(get_new, sample_type, b_alpha, b_beta, force_interval, interval)

    def _sample(self, get_new=True, sample_type=TRAIN, b_alpha=1.0, b_beta=1.0, force_interval=False,
                interval=None):
        if not self.is_ready:
            raise RuntimeError('{}: not ready to sample; call reset() first'.format(self.name))
        check_sample_type(sample_type)
        if self.nested_class_ref is None:
            raise RuntimeError('{}: its samples are not configured (empty config stack)'.format(self.name))
        if self.sample_instance is not None and not get_new:
            self.log.debug('reusing sample {}'.format(self.sample_instance.filename))
            return self.sample_instance
        name = ('test_' if sample_type == TEST else 'train_') + self.sample_name
        if force_interval:
            sample = self._sample_exact_interval(interval, name)
        elif sample_type == TRAIN:
            sample = self._sample_interval(self.train_interval, b_alpha, b_beta, name)
        else:
            sample = self._sample_interval(self._nonempty_test_interval(), 1.0, 1.0, name)
        sample.metadata.update(
            type=sample_type,
            sample_num=self.sample_num,
            parent_sample_num=self.metadata['sample_num'],
            parent_sample_type=self.metadata['type'],
        )
        self.sample_num += 1
        self.sample_instance = sample
        return sample

    def _nonempty_test_interval(self):
        """The test interval; DataError when it is empty (no test data to sample from)."""
        if self.test_interval[1] <= self.test_interval[0]:
            raise DataError('{}: no test interval to sample from; set `target_period` (dataset / domain) or '
                            '`test_period` in trial_params to enable test samples'.format(self.name))
        return self.test_interval

    def _sample_interval(self, interval, b_alpha, b_beta, name):
        """Samples a window inside `interval` whose start is drawn from Beta(b_alpha, b_beta).

        The window has `sample_num_records` rows (fewer only when the interval is shorter). An attempt is
        rejected when the start's weekday is not in `start_weekdays`, when `start_00` snapping moves the window
        out of the interval, or when the window misses more than `time_gap` of time (inside gaps plus rows short
        of a full window); at most `MAX_SAMPLING_ATTEMPTS` attempts. `start_00` snapping (`first_row_of_day`)
        never leaves the interval.

        Returns:
            nested-class instance holding the window.

        Raises:
            ValueError: non-positive Beta params. RuntimeError: no acceptable window found.
        """
        if b_alpha <= 0 or b_beta <= 0:
            raise ValueError('Beta parameters must be positive, got b_alpha={}, b_beta={}'.format(b_alpha, b_beta))
        lower, upper = interval
        num_rows = min(self.sample_num_records, upper - lower)
        free_rows = upper - lower - num_rows
        index = self.data.index
        rejected = dict(weekday=0, interval=0, gap=0)
        for _ in range(MAX_SAMPLING_ATTEMPTS):
            first = lower + int(free_rows * self.rng.beta(b_alpha, b_beta))
            if self.start_00:
                first = first_row_of_day(index, first, lower)
            if first + num_rows > upper:
                rejected['interval'] += 1
            elif index[first].weekday() not in self.start_weekdays:
                rejected['weekday'] += 1
            elif missing_time(index, first, first + num_rows, self.sample_num_records, self.bar_delta) \
                    > self.max_time_gap:
                rejected['gap'] += 1
            else:
                return self._make_sample(first, first + num_rows, name)
        hint = '; raise time_gap to admit the gaps (nights, weekends, holidays) a window may span' \
            if rejected['gap'] else ''
        raise RuntimeError(
            '{}: no acceptable {}-bar window in rows {} after {} attempts (rejected: {} by start weekday {}, {} by '
            'start_00 leaving the interval, {} by missing time over time_gap {}); check sampling params against '
            'the data{}'.format(self.name, num_rows, interval, MAX_SAMPLING_ATTEMPTS, rejected['weekday'],
                                self.start_weekdays, rejected['interval'], rejected['gap'], self.max_time_gap, hint))

    def _sample_exact_interval(self, interval, name):
        """Samples exactly the rows [interval[0], interval[1])."""
        if interval is None or len(interval) != 2 or not 0 <= interval[0] < interval[1] <= len(self.data):
            raise ValueError('{}: force_interval needs interval=[first, stop] inside 0..{}, got {!r}'.format(
                self.name, len(self.data), interval))
        return self._make_sample(int(interval[0]), int(interval[1]), name)

    def _make_sample(self, first, last, name):
        """Builds the nested-class instance holding rows [first, last) (a slice, not a copy)."""
        sample = self.nested_class_ref(**self.nested_params)
        sample.filename = '{}num_{}_at_{}'.format(name, self.sample_num, self.data.index[first])
        sample.data = self.data.iloc[first:last]
        sample.timeframe = self.timeframe
        sample.rng = self.rng
        sample.metadata.update(type='interval_sample', first_row=first, last_row=last)
        self.log.debug('new sample {}'.format(sample.filename))
        return sample

