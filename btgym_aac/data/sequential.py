"""BTgymSequentialDataDomain: trials taken in time order (sliding or expanding window), no source/target split.

With trial duration S_tr rows, trial test period R_te rows and train period R_tr rows (the trial duration less
its test period), trial k of a sliding sweep holds rows [k * R_te, k * R_te + S_tr): consecutive trials move by
R_te rows, so their train parts overlap and their test parts (the last R_te rows of each) partition the data
after the first train part. An expanding sweep keeps the start at row 0: trial k holds rows [0, k * R_te + S_tr)
and grows by R_te rows per trial; its test part is the same as the sliding trial's. Only trials that fit the data
are made; once every trial is used the sweep starts again at trial 0 with a NOTICE log line. A trial's
`metadata['sample_num']` is its position k in the sweep. Invalid settings raise ValueError naming the setting.
"""
import datetime
import math

from btgym_aac.data.dataset import BTgymRandomDataDomain
from btgym_aac.data.sampling import TRAIN, as_timedelta, duration_to_records, first_row_of_day


class BTgymSequentialDataDomain(BTgymRandomDataDomain):
    """Top-level domain whose `sample()` returns the next trial of a sliding or expanding sweep over the data.

    Trials are exact row windows (see the module docstring): the `start_weekdays` and `time_gap` tests of random
    sampling do not apply to them (a window fixed by its position can only pass or fail them). `start_00` moves
    the row k * R_te (and so the trial's end) back to the first bar of its day. Episodes are sampled inside a
    trial as usual: train episodes from its train part, test episodes from its test part (trial `test_period`).
    Every trial has `metadata['type'] == 0`; `sample()` ignores `sample_type` and `timestamp` and honours
    `force_interval` + `interval` (exact rows) for synchronised streams.

    Attributes set by `reset()`: `total_samples` (cardinality K), `sample_stride` (R_te rows),
    `trial_test_range_row` (R_te), `trial_train_range_row` (R_tr), `trial_test_range_delta`,
    `trial_train_range_delta`, `global_step`, `total_steps`, `skip_frame`, `sweep_num` (completed sweeps);
    `sample_num` is the position of the next trial.
    """

    def __init__(self, name='SeqDataDomain', **kwargs):
        """
        Args:
            name: instance name.
            **kwargs: as `BTgymRandomDataDomain` (`trial_params` must hold a positive `test_period`, the sweep's
                stride; `expanding=True` in `trial_params` selects the expanding sweep).
        """
        self.global_step = 0
        self.total_steps = -1
        self.skip_frame = 10
        self.total_samples = -1
        self.sample_stride = -1
        self.sweep_num = 0
        super().__init__(name=name, **kwargs)

    # ------------------------------------------------------------------------------------------ decay helpers

    @staticmethod
    def _lin_decay(step, p0, max_steps):
        """Linear move from `p0` (step 0) to 1 (step `max_steps`); 1.0 after, `p0` when `max_steps` <= 0.

        Args:
            step: current step.
            p0: value at step 0.
            max_steps: step at which the value reaches 1.

        Returns:
            float.
        """
        if max_steps <= 0:
            return p0
        if step > max_steps:
            return 1.0
        return p0 + (1.0 - p0) * step / max_steps

    @staticmethod
    def _exp_decay(step, p0, max_steps, gamma=3.5):
        """Exponential move from `p0` (step 0) towards 1: exp((2 - step/max_steps)**gamma - 2**gamma) * (p0 - 1) + 1;
        1.0 after `max_steps`, `p0` when `max_steps` <= 0.

        Args:
            step: current step.
            p0: value at step 0.
            max_steps: last step of the curve.
            gamma: steepness.

        Returns:
            float.
        """
        if max_steps <= 0:
            return p0
        if step > max_steps:
            return 1.0
        return math.exp((2.0 - step / max_steps) ** gamma - 2.0 ** gamma) * (p0 - 1.0) + 1.0

    # ---------------------------------------------------------------------------------------------- sweeping

    def reset(self, global_step=0, total_steps=None, skip_frame=10, data_filename=None, **kwargs):
        """Loads the data and (re)starts the sweep at the trial matching the training progress.

        Args:
            global_step: training steps done; the sweep starts at trial int(K * global_step / total_steps).
            total_steps: training steps of one full sweep (None: start at trial 0).
            skip_frame: kept for the original's signature (unused).
            data_filename: optional new data source.
            **kwargs: `timestamp` (global time, as `BTgymBaseData.reset`); other keys are ignored.

        Raises:
            ValueError: `global_step` outside [0, total_steps), a missing or non-positive trial `test_period`, a
                trial `sample_duration` not longer than its `test_period`, or data too short for one trial.
            DataError: as `BTgymBaseData.reset`.
        """
        self._reset(data_filename=data_filename, timestamp=kwargs.get('timestamp'))
        self.skip_frame = skip_frame
        if total_steps is not None:
            if not 0 <= global_step < total_steps:
                raise ValueError('{}: global_step must lie in [0, total_steps), got global_step={}, total_steps={}'
                                 .format(self.name, global_step, total_steps))
            self.global_step, self.total_steps = global_step, total_steps
        else:
            self.global_step, self.total_steps = 0, -1
        self._set_sweep()
        self.sample_num = 0 if total_steps is None else int(self.total_samples * self.global_step / self.total_steps)
        self.sweep_num = 0
        self.log.notice('{} sweep: train period {}, test period {} ({} rows, the stride); {} trials; starting at '
                        'trial {}'.format('EXPANDING' if self.expanding else 'SLIDING', self.trial_train_range_delta,
                                          self.trial_test_range_delta, self.trial_test_range_row, self.total_samples,
                                          self.sample_num))

    def _set_sweep(self):
        """Stride, train / test rows of a trial and the number of trials K from the trial params."""
        test_period = self.nested_params['sampling_params'].get('test_period')
        self.trial_test_range_delta = as_timedelta(test_period, 'trial_params test_period')
        self.trial_test_range_row = duration_to_records(self.trial_test_range_delta, self.timeframe)
        if self.trial_test_range_row < 1:
            raise ValueError('{}: trial_params test_period must be at least one bar of {} min (it is the stride of '
                             'the sweep), got {}'.format(self.name, self.timeframe, test_period))
        self.trial_train_range_delta = self.max_sample_len_delta - self.trial_test_range_delta
        if self.trial_train_range_delta <= datetime.timedelta(0):
            raise ValueError('{}: trial_params sample_duration ({}) must be longer than its test_period ({})'.format(
                self.name, self.max_sample_len_delta, self.trial_test_range_delta))
        self.trial_train_range_row = duration_to_records(self.trial_train_range_delta, self.timeframe)
        self.sample_stride = self.trial_test_range_row
        num_rows = len(self.data)
        # the trials that fit: k * stride + S_tr <= N; equals the original's int((N - R_tr) / R_te) whenever the
        # durations are whole numbers of bars (S_tr = R_tr + R_te)
        self.total_samples = max(0, (num_rows - self.sample_num_records) // self.sample_stride + 1)
        if num_rows < self.sample_num_records or self.total_samples < 1:
            raise ValueError('{}: trial_params sample_duration of {} rows does not fit the {} rows of data: no trial '
                             'to sweep'.format(self.name, self.sample_num_records, num_rows))

    def get_interval(self, trial_num):
        """Rows of trial `trial_num` of the sweep.

        Args:
            trial_num: position k in [0, total_samples).

        Returns:
            [first_row, stop_row) pair.
        """
        if not 0 <= trial_num < self.total_samples:
            raise ValueError('{}: trial number must lie in [0, {}), got {}'.format(
                self.name, self.total_samples, trial_num))
        first = trial_num * self.sample_stride
        if self.start_00:
            first = first_row_of_day(self.data.index, first, 0)
        stop = first + self.sample_num_records
        return [0 if self.expanding else first, stop]

    def sample(self, get_new=True, force_interval=False, interval=None, **ignored):
        """The next trial of the sweep (trial 0 again, with a NOTICE log line, once all are used).

        Args:
            get_new: False returns the last trial again when there is one.
            force_interval: the trial is exactly the rows `interval` instead of the sweep's window; the sweep still
                moves on by one trial (how a stream follows another stream's sweep, see `BTgymMultiData`).
            interval: [first, stop) rows, used with `force_interval`.
            **ignored: other sample-config keys (`sample_type`, `timestamp`, ...): the sweep alone decides.

        Returns:
            trial (nested-class instance) with metadata type 0, sample_num k, parent_sample_num,
            parent_sample_type, first_row, last_row.
        """
        if not self.is_ready:
            raise RuntimeError('{}: not ready to sample; call reset() first'.format(self.name))
        if self.sample_instance is not None and not get_new:
            return self.sample_instance
        if self.sample_num >= self.total_samples:
            self.sweep_num += 1
            self.log.notice('all {} trials used: the sweep starts again at trial 0 (sweep {})'.format(
                self.total_samples, self.sweep_num))
            self.sample_num = 0
        if force_interval:
            trial = self._sample_exact_interval(interval, 'sequential_trial_')
            first, stop = trial.metadata['first_row'], trial.metadata['last_row']
        else:
            first, stop = self.get_interval(self.sample_num)
            trial = self._make_sample(first, stop, 'sequential_trial_')
        trial.metadata.update(type=TRAIN, sample_num=self.sample_num, parent_sample_num=self.metadata['sample_num'],
                              parent_sample_type=self.metadata['type'])
        self.log.info('trial #{}: {} <--> {}'.format(self.sample_num, self.data.index[first],
                                                     self.data.index[stop - 1]))
        self.sample_num += 1
        self.sample_instance = trial
        return trial
