"""BTgymCausalDataDomain and BTgymCausalTrial: sampling against a monotone global time ("now").

The domain imitates an online stream: bars before the global time are known, the others are not. Notation (rows
of the data, timeframe t): S_tr = trial duration / t (floor), N_te = episode duration / t (rounded),
N_tr = S_tr - N_te, N rows of data, c = the global row, the first bar at or after the global time.

* source (sample_type 0) trials lie before c: the S_tr rows ending at c, or with `expanding=True` (trial_params)
  S_tr rows whose start is Beta-distributed in [0, c - S_tr]; their episodes come from their own train / test
  parts (trial `test_period`) and so also lie before c;
* the target (sample_type 1) trial is rows [c - N_tr, c + N_te): its train episodes lie before c and its test
  episode starts at c (left-aligned, the first acceptable window at or after c; `align_left=False`: uniform).

The global time starts at the bar of row S_tr (or at the bar at or before `frozen_time_split`, which then pins it
for every call) and only moves forward, when told: `sample(timestamp=...)`, `set_global_timestamp(...)` or
`reset(timestamp=...)` (a `reset()` starts it over, as the env's `reset(seed=...)` does). The original also moved
it from the bar times its strategies broadcast during target test episodes, through its data server; no such
broadcast exists here: a loop that evaluates target test episodes passes the last bar time it evaluated (e.g. the
env's `info['time']`) as the next `timestamp`. Envs given the same domain object share its clock. Timestamps are
POSIX seconds of the naive bar times read as UTC. Trials are numbered (`sample_num` increments); a frozen split
before row S_tr, and running out of data, are DataErrors; a trial is reused (`get_new=False`) only for the same
sample type.
"""
import numpy as np
import pandas as pd

from btgym_aac.data.dataset import BTgymDataTrial, BTgymEpisode, BTgymRandomDataDomain
from btgym_aac.data.errors import DataError
from btgym_aac.data.sampling import TEST, TRAIN, as_timedelta, check_sample_type, duration_to_records, missing_time


def bar_seconds(index):
    """POSIX seconds (float64 array) of the bar times of `index`, naive times read as UTC."""
    return index.values.astype('datetime64[ns]').astype(np.int64) / 1e9


def posix_seconds(timestamp):
    """POSIX seconds of a number, or of a datetime / pandas Timestamp (naive read as UTC)."""
    if isinstance(timestamp, (int, float, np.integer, np.floating)):
        return float(timestamp)
    return pd.Timestamp(timestamp).timestamp()


def _first_row_at_or_after(seconds, timestamp):
    return int(np.searchsorted(seconds, timestamp, side='left'))


def _last_row_at_or_before(seconds, timestamp):
    return int(np.searchsorted(seconds, timestamp, side='right')) - 1


def _moved_forward(clock, start, timestamp):
    """A clock after a move to `timestamp` (None: no move): `start` while unset, never backwards."""
    clock = start if clock is None else clock
    return timestamp if timestamp is not None and timestamp > clock else clock


def _global_row(seconds, timestamp):
    """Row of the first bar at or after `timestamp` (0 before the data are read)."""
    if seconds is None or timestamp is None:
        return 0
    return _first_row_at_or_after(seconds, timestamp)


def _stamp(sample, sample_type, sample_num, parent_metadata):
    sample.metadata.update(type=int(sample_type), sample_num=sample_num,
                           parent_sample_num=parent_metadata['sample_num'],
                           parent_sample_type=parent_metadata['type'])


class BTgymCausalTrial(BTgymDataTrial):
    """Trial of `BTgymCausalDataDomain`; its intervals depend on its type (`metadata['type']`, stamped by the domain).

    Source trial (type 0): train part [0, N'), test part [N', N) with N' = N - trial test period rows; train
    episodes Beta-distributed, test episodes uniform (as `BTgymDataTrial`). Target trial (type 1): its own clock
    starts at the domain's global time when it was sampled (`split_timestamp`) and moves forward only with
    `sample(timestamp=...)`; train part [0, c_t), test part [c_t, N) with c_t the first trial row at or after its
    clock; train episodes end before c_t, test episodes start at c_t (`align_left`) or uniformly after it.
    """

    def __init__(self, name='TimeTrial', **kwargs):
        """
        Args:
            name: instance name.
            **kwargs: as `BTgymBaseData`.
        """
        self.split_timestamp = None
        self._seconds = None
        super().__init__(name=name, **kwargs)

    def _is_target(self):
        return bool(self.metadata.get('type'))

    def _reset(self, data_filename=None, timestamp=None):
        self._seconds = None
        super()._reset(data_filename=data_filename, timestamp=timestamp)
        self._seconds = bar_seconds(self.data.index)
        if self._is_target():
            self.train_interval, self.test_interval = self.get_intervals()

    def set_global_timestamp(self, timestamp=None):
        """Moves the trial's clock: frozen split -> the split; source trial -> its first bar; target trial -> the
        later of its clock and `timestamp` (never backwards).

        Args:
            timestamp: POSIX seconds (or a datetime read as UTC) or None.

        Raises:
            DataError: a target trial's clock would leave no room for a test episode.
        """
        if self.data is None:
            return
        if self.frozen_split_timestamp is not None:
            self.global_timestamp = self.frozen_split_timestamp
            return
        if not self._is_target():
            self.global_timestamp = self.start_timestamp
            return
        if timestamp is not None:
            timestamp = posix_seconds(timestamp)
            if self._seconds is not None and self.sample_num_records > 0:
                last_start = len(self._seconds) - self.sample_num_records
                if last_start < 0 or timestamp > self._seconds[last_start]:
                    raise DataError('{}: global time {} leaves too few rows of the target trial for a test episode '
                                    'of {} rows'.format(self.name, pd.Timestamp(timestamp, unit='s'),
                                                        self.sample_num_records))
        start = self.start_timestamp if self.split_timestamp is None else self.split_timestamp
        self.global_timestamp = _moved_forward(self.global_timestamp, start, timestamp)

    def get_global_index(self):
        """Row of the first bar at or after the trial's clock (0 before `reset()`)."""
        return _global_row(self._seconds, self.global_timestamp)

    def get_intervals(self):
        """Train and test row intervals [start, stop) at the trial's clock (see the class docstring).

        Raises:
            DataError: a target trial's clock leaves no room for a test episode.
        """
        if not self._is_target():
            return self.train_interval, self.test_interval
        current, num_rows = self.get_global_index(), len(self.data)
        if current + self.sample_num_records > num_rows:
            raise DataError('{}: global time leaves too few rows: {} rows of the target trial at or after it, a test '
                            'episode needs {}'.format(self.name, num_rows - current, self.sample_num_records))
        return [0, current], [current, num_rows]

    def sample(self, get_new=True, sample_type=TRAIN, timestamp=None, align_left=True, b_alpha=1.0, b_beta=1.0,
               force_interval=False, interval=None, **ignored):
        """Samples an episode.

        Args:
            get_new: False reuses the previous episode when there is one.
            sample_type: 0 train or 1 test.
            timestamp: moves a target trial's clock forward (POSIX seconds).
            align_left: target trial test episodes start at the first acceptable row at or after its clock
                (False: uniform over its test part); source trials sample test episodes uniformly.
            b_alpha: Beta alpha of train starts.
            b_beta: Beta beta of train starts.
            force_interval: take exactly `interval`.
            interval: [first, stop) rows: for source trials rows to sample from (exactly these with
                `force_interval`); for target trials rows inside the part of `sample_type`, with `force_interval`.
            **ignored: other sample-config keys.

        Returns:
            BTgymEpisode with metadata type, sample_num, parent_sample_num, parent_sample_type, first_row, last_row.
        """
        if not self.is_ready:
            raise RuntimeError('{}: not ready to sample; call reset() first'.format(self.name))
        check_sample_type(sample_type)
        if timestamp is not None:
            self.set_global_timestamp(timestamp)
        if not self._is_target():
            return self._sample(get_new, sample_type, b_alpha, b_beta, force_interval, interval)
        if self.sample_instance is not None and not get_new:
            return self.sample_instance
        self.train_interval, self.test_interval = self.get_intervals()
        if force_interval or interval is not None:
            episode = self._sample_exact_part(sample_type, force_interval, interval)
        elif sample_type == TRAIN:
            episode = self._sample_interval(self.train_interval, b_alpha, b_beta, 'train_' + self.sample_name)
        elif align_left:
            episode = self._sample_left_aligned(self.test_interval, 'test_' + self.sample_name)
        else:
            episode = self._sample_interval(self.test_interval, 1.0, 1.0, 'test_' + self.sample_name)
        _stamp(episode, sample_type, self.sample_num, self.metadata)
        self.sample_num += 1
        self.sample_instance = episode
        return episode

    def _sample_exact_part(self, sample_type, force_interval, interval):
        """A target trial's episode of exactly the rows `interval`, which must lie in the part of `sample_type` (train
        before the trial's clock, test at or after it): how a stream follows another's episode (`BTgymMultiData`)."""
        kind, part = ('train', self.train_interval) if sample_type == TRAIN else ('test', self.test_interval)
        if not (force_interval and interval is not None and len(interval) == 2
                and part[0] <= interval[0] < interval[1] <= part[1]):
            raise ValueError('{}: target trial episodes are placed by global time; an `interval` needs '
                             'force_interval=True and must lie in the {} part, rows {}, got interval={!r}, '
                             'force_interval={}'.format(self.name, kind, part, interval, force_interval))
        return self._sample_exact_interval(interval, '{}_{}'.format(kind, self.sample_name))

    def _sample_left_aligned(self, interval, name):
        """The first full window in `interval` whose start weekday and missing time are acceptable."""
        lower, upper = interval
        num_rows, index = self.sample_num_records, self.data.index
        for first in range(lower, upper - num_rows + 1):
            if index[first].weekday() in self.start_weekdays and \
                    missing_time(index, first, first + num_rows, num_rows, self.bar_delta) <= self.max_time_gap:
                return self._make_sample(first, first + num_rows, name)
        raise RuntimeError('{}: no acceptable {}-bar test window in rows {} (start weekdays {}, time_gap {})'.format(
            self.name, num_rows, interval, self.start_weekdays, self.max_time_gap))


class BTgymCausalDataDomain(BTgymRandomDataDomain):
    """Domain of source trials in the known past and target trials starting at the global time; see the module
    docstring for the intervals and the clock.

    Guarantees: no source trial, none of its episodes and no target-trial train episode holds a bar at or after
    the global time it was sampled at; target test episodes start at or after it.
    """
    trial_class_ref = BTgymCausalTrial
    episode_class_ref = BTgymEpisode

    def __init__(self, filename=None, trial_params=None, episode_params=None, frozen_time_split=None,
                 name='TimeDataDomain', data_names=('default_asset',), **kwargs):
        """
        Args:
            filename: CSV path or list of paths (or give `dataframe=`).
            trial_params: trial sampling params: `sample_duration`, `time_gap`, `start_weekdays`, `test_period`
                (the trial's own test part), `expanding` (source trials start anywhere before global time).
                `start_00` is forced False. Not modified.
            episode_params: episode sampling params (`sample_duration`, `time_gap`, ...). Not modified.
            frozen_time_split: dict of datetime kwargs (or datetime): pins the global time at the last bar at or
                before it.
            name: instance name.
            data_names: data line names.
            **kwargs: `dataframe`, `parsing_params`, `task`, `log_level` (as `BTgymRandomDataDomain`);
                `target_period` and `use_target_backshift` are set by the domain and ignored.
        """
        if trial_params is None or episode_params is None:
            raise TypeError('{} needs trial_params and episode_params'.format(type(self).__name__))
        trial_params, episode_params = dict(trial_params), dict(episode_params)
        ignored = [key for key in ('target_period', 'use_target_backshift') if kwargs.pop(key, None) is not None]
        forced_start_00 = bool(trial_params.get('start_00'))
        trial_params['start_00'] = False
        self._seconds = None
        super().__init__(trial_params=trial_params, episode_params=episode_params, filename=filename,
                         target_period=episode_params.get('sample_duration'), use_target_backshift=False,
                         frozen_time_split=frozen_time_split, name=name, data_names=data_names, **kwargs)
        if ignored:
            self.log.warning('{} ignored: the target period is one episode, set by the domain'.format(ignored))
        if forced_start_00:
            self.log.warning('trial_params start_00 ignored: trials are placed by global time')

    def _reset(self, data_filename=None, timestamp=None):
        self.read_csv(data_filename)
        if self.timeframe is None:
            self._resolve_timeframe()
        self._clear_state()
        self.total_num_records = num_rows = len(self.data)
        self.data_range_delta = (self.data.index[-1] - self.data.index[0]).to_pytimedelta()
        self.max_time_gap = as_timedelta(self.time_gap, 'time_gap')
        self.max_gap_num_records = duration_to_records(self.max_time_gap, self.timeframe)
        self.max_sample_len_delta = as_timedelta(self.sample_duration, 'sample_duration')
        self.sample_num_records = duration_to_records(self.max_sample_len_delta, self.timeframe)
        self.test_num_records = round(as_timedelta(self.test_period, 'episode sample_duration').total_seconds()
                                      / (60 * self.timeframe))
        self.train_num_records = self.sample_num_records - self.test_num_records
        self._check_sizes(num_rows)
        self._seconds = bar_seconds(self.data.index)
        self.start_timestamp = float(self._seconds[self.sample_num_records])
        self.final_timestamp = float(self._seconds[num_rows - self.test_num_records])
        self.frozen_split_timestamp = None
        if self.frozen_time_split is not None:
            row = _last_row_at_or_before(self._seconds, pd.Timestamp(self.frozen_time_split).timestamp())
            if not self.sample_num_records <= row <= num_rows - self.test_num_records:
                raise DataError('{}: frozen_time_split {} is at row {}; it must lie in rows [{}, {}] (a source trial '
                                'of {} rows before it, a test episode of {} rows from it)'.format(
                                    self.name, self.frozen_time_split, row, self.sample_num_records,
                                    num_rows - self.test_num_records, self.sample_num_records,
                                    self.test_num_records))
            self.frozen_split_timestamp = float(self._seconds[row])
        self.set_global_timestamp(timestamp)
        self.train_interval, self.test_interval = self.get_intervals()
        self.sample_num = 0
        self.is_ready = True

    def _check_sizes(self, num_rows):
        if self.test_num_records < 1:
            raise DataError('{}: episode sample_duration {} is shorter than one bar of {} min'.format(
                self.name, self.test_period, self.timeframe))
        if self.train_num_records < self.test_num_records:
            raise DataError('{}: trial sample_duration ({} rows) must hold at least two episodes ({} rows each): the '
                            'target trial\'s train part needs one'.format(self.name, self.sample_num_records,
                                                                         self.test_num_records))
        if num_rows < self.sample_num_records + self.test_num_records:
            raise DataError('{}: {} rows of data are too few: global time starts after one trial ({} rows) and a '
                            'target trial needs an episode ({} rows) after it'.format(
                                self.name, num_rows, self.sample_num_records, self.test_num_records))

    def set_global_timestamp(self, timestamp=None):
        """Moves the global time forward to `timestamp` (never backwards; pinned by a frozen split).

        Args:
            timestamp: POSIX seconds (or a datetime read as UTC) or None. Times before the start (row S_tr) are
                ignored.

        Raises:
            RuntimeError: before `reset()`. DataError: `timestamp` leaves too few rows for a target trial.
        """
        if self.start_timestamp is None:
            raise RuntimeError('{}: call reset() before setting the global time'.format(self.name))
        if self.frozen_split_timestamp is not None:
            self.global_timestamp = self.frozen_split_timestamp
            return
        if timestamp is not None:
            timestamp = posix_seconds(timestamp)
            if timestamp > self.final_timestamp:
                raise DataError('{}: end of data: global time {} leaves too few rows: a target trial needs {} rows '
                                'at or after it, the last such time is {}'.format(
                                    self.name, pd.Timestamp(timestamp, unit='s'), self.test_num_records,
                                    pd.Timestamp(self.final_timestamp, unit='s')))
        self.global_timestamp = _moved_forward(self.global_timestamp, self.start_timestamp, timestamp)

    def get_global_index(self):
        """Row c of the first bar at or after the global time (0 before `reset()`)."""
        return _global_row(self._seconds, self.global_timestamp)

    def get_intervals(self):
        """Source and target row intervals [start, stop) at the global time.

        Returns:
            (source, target): source [0, c) if `expanding` else [c - S_tr, c); target [c - N_tr, c + N_te).

        Raises:
            DataError: the global time leaves too few rows before or after it.
        """
        current, num_rows = self.get_global_index(), len(self.data)
        if current < self.sample_num_records:
            raise DataError('{}: global time is at row {}, before row {}: too few rows for a source trial'.format(
                self.name, current, self.sample_num_records))
        if current + self.test_num_records > num_rows:
            raise DataError('{}: end of data: global time leaves too few rows ({} at or after it, a target trial '
                            'needs {})'.format(self.name, num_rows - current, self.test_num_records))
        source = [0, current] if self.expanding else [current - self.sample_num_records, current]
        return source, [current - self.train_num_records, current + self.test_num_records]

    def sample(self, get_new=True, sample_type=TRAIN, timestamp=None, b_alpha=1.0, b_beta=1.0, force_interval=False,
               interval=None, **ignored):
        """Samples a source (0) or target (1) trial at the global time, first moved to `timestamp`.

        Args:
            get_new: False reuses the previous trial when it has the requested type.
            sample_type: 0 source (before global time) or 1 target (its test part starts at global time).
            timestamp: POSIX seconds to move the global time to (never backwards).
            b_alpha: Beta alpha of expanding source starts.
            b_beta: Beta beta of expanding source starts.
            force_interval: take exactly `interval`.
            interval: [first, stop) rows: for source trials any rows with stop at most c (sampled from unless
                `force_interval`); for the target trial only its own rows, with `force_interval`.
            **ignored: other sample-config keys.

        Returns:
            BTgymCausalTrial with metadata type, sample_num, parent_sample_num, parent_sample_type, first_row,
            last_row, and `split_timestamp` = the global time.
        """
        if not self.is_ready:
            raise RuntimeError('{}: not ready to sample; call reset() first'.format(self.name))
        check_sample_type(sample_type)
        self.set_global_timestamp(timestamp)
        last = self.sample_instance
        if last is not None and not get_new and last.metadata['type'] == int(sample_type):
            return last
        self.train_interval, self.test_interval = source, target = self.get_intervals()
        if sample_type == TEST:
            trial = self._sample_target(target, force_interval, interval)
        else:
            trial = self._sample_source(source, b_alpha, b_beta, force_interval, interval)
        trial.split_timestamp = self.global_timestamp
        _stamp(trial, sample_type, self.sample_num, self.metadata)
        self.sample_num += 1
        self.sample_instance = trial
        return trial

    def _sample_target(self, target, force_interval, interval):
        """The target trial: rows `target`; an `interval` must be exactly these rows, with `force_interval` (a stream
        following another's target trial, see `BTgymMultiData`)."""
        exact = force_interval and interval is not None and list(interval) == list(target)
        if (force_interval or interval is not None) and not exact:
            raise ValueError('{}: the target trial is placed by global time at rows {}; `interval` applies to source '
                             'trials, or must be exactly those rows with force_interval=True, got interval={!r}, '
                             'force_interval={}'.format(self.name, target, interval, force_interval))
        return self._make_sample(target[0], target[1], 'target_trial_')

    def _sample_source(self, source, b_alpha, b_beta, force_interval, interval):
        name = 'source_trial_'
        if interval is not None:
            if len(interval) != 2 or not 0 <= interval[0] < interval[1] <= source[1]:
                raise ValueError('{}: a source interval must lie in rows [0, {}) before global time, got {!r}'.format(
                    self.name, source[1], interval))
            if force_interval:
                return self._sample_exact_interval(interval, name)
            return self._sample_interval([int(interval[0]), int(interval[1])], b_alpha, b_beta, name)
        if force_interval:
            raise ValueError('{}: force_interval needs `interval`'.format(self.name))
        if source[1] - source[0] == self.sample_num_records:
            return self._make_sample(source[0], source[1], name)  # one window only: no random start to test
        return self._sample_interval(source, b_alpha, b_beta, name)
