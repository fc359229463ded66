"""The data hierarchy Domain -> Trial -> Episode and the ready-made datasets built on it.

Typical use::

    dataset = BTgymDataset(filename='DAT_ASCII_EURUSD_M1_2017.csv', episode_duration={'days': 1},
                           target_period={'days': 5})
    dataset.seed(0)
    dataset.reset()
    trial = dataset.sample(sample_type=0)      # a Trial holding a slice of the data
    trial.reset()                              # computes the trial's own intervals from its slice
    episode = trial.sample(sample_type=0)      # an Episode
    feeds = episode.to_btfeed()                # {'default_asset': backtrader PandasDirectData}
"""
from btgym_aac.data.base import BTgymBaseData
from btgym_aac.data.sampling import TRAIN, as_timedelta, check_sample_type
from btgym_aac.logs import WARNING, get_logger

DEFAULT_EPISODE_DURATION = dict(days=0, hours=23, minutes=55)
DEFAULT_TIME_GAP = dict(days=0, hours=6)
_REQUIRED_LEVEL_KEYS = ('sample_duration', 'time_gap')
_DEPRECATED_KWARGS = dict(
    episode_len_days=('episode_duration', 'days'),
    episode_len_hours=('episode_duration', 'hours'),
    episode_len_minutes=('episode_duration', 'minutes'),
    time_gap_days=('time_gap', 'days'),
    time_gap_hours=('time_gap', 'hours'),
)


class BTgymEpisode(BTgymBaseData):
    """Lowest level: the bars of one episode, turned into a backtrader feed by `to_btfeed()`.

    It cannot be reset or sampled further.
    """

    def reset(self, **kwargs):
        raise RuntimeError('an episode cannot be reset; sample a new one from its trial')

    def sample(self, **kwargs):
        raise RuntimeError('an episode cannot be sampled; it is the lowest data level')


class BTgymDataTrial(BTgymBaseData):
    """Middle level: a window of the domain's bars; `reset()` splits it into its own train/test intervals
    (by its `test_period`) and `sample()` draws episodes from them."""


class BTgymSimpleTrial(BTgymDataTrial):
    """Trial that always samples its train interval and labels the episode with the requested `sample_type`.

    Used by `BTgymDataset`, where a trial is exactly one episode long (Trial = Episode), so an episode inherits
    the train/test origin of its trial through the requested type.
    """

    def sample(self, get_new=True, sample_type=TRAIN, b_alpha=1.0, b_beta=1.0, force_interval=False, interval=None,
               **ignored):
        check_sample_type(sample_type)
        episode = self._sample(get_new, TRAIN, b_alpha, b_beta, force_interval, interval)
        episode.metadata['type'] = sample_type
        return episode


def _level_params(params, name):
    """Copies trial / episode params, checking that the keys every level needs are there."""
    if not isinstance(params, dict):
        raise TypeError('{} must be a dict, got {!r}'.format(name, params))
    missing = [key for key in _REQUIRED_LEVEL_KEYS if key not in params]
    if missing:
        raise TypeError('{} must contain {}; missing: {}'.format(name, list(_REQUIRED_LEVEL_KEYS), missing))
    return dict(params)


class BTgymRandomDataDomain(BTgymBaseData):
    """Top level: the whole dataset, split into a source (train) part and a final target (test) part of length
    `target_period`; samples Trials at random (Beta-skewed starts for train), which sample Episodes.

    Pipe: Domain.sample() -> Trial.reset(); Trial.sample() -> Episode.to_btfeed() -> backtrader strategy.
    """
    trial_class_ref = BTgymDataTrial
    episode_class_ref = BTgymEpisode

    def __init__(self, trial_params, episode_params, filename=None, dataframe=None, parsing_params=None,
                 target_period=None, use_target_backshift=False, frozen_time_split=None, name='RndDataDomain',
                 task=0, data_names=('default_asset',), log_level=WARNING):
        """
        Args:
            trial_params: trial sampling params (see `sampling.resolve_sampling_params`); must contain
                `sample_duration` and `time_gap`. Its `test_period` is the trial's own train/test split.
            episode_params: episode sampling params; must contain `sample_duration` and `time_gap`.
            filename: CSV path or list of paths.
            dataframe: DataFrame used instead of files.
            parsing_params: see `parsing.resolve_parsing_params`.
            target_period: duration of the target (test) part at the end of the data; None: no target part.
            use_target_backshift: shift the target part back by (trial duration - trial test period), so that
                target trials may start in source data and train on the bars nearest the split.
            frozen_time_split: see `BTgymBaseData`.
            name: instance name.
            task: worker number.
            data_names: data line names.
            log_level: logbook level.
        """
        trial_params = _level_params(trial_params, 'trial_params')
        episode_params = _level_params(episode_params, 'episode_params')
        trial_test_period = trial_params.pop('test_period', None)
        episode_params['test_period'] = trial_test_period
        trial_params['test_period'] = target_period
        self.target_period = target_period
        episode_config = dict(
            class_ref=self.episode_class_ref,
            kwargs=dict(parsing_params=parsing_params, sampling_params=None, name='episode', task=task,
                        data_names=data_names, log_level=log_level, _config_stack=None),
        )
        trial_config = dict(
            class_ref=self.trial_class_ref,
            kwargs=dict(parsing_params=parsing_params, sampling_params=episode_params, name='trial', task=task,
                        data_names=data_names, frozen_time_split=frozen_time_split, log_level=log_level,
                        _config_stack=[episode_config]),
        )
        super().__init__(filename=filename, dataframe=dataframe, parsing_params=parsing_params,
                         sampling_params=trial_params, name=name, data_names=data_names, task=task,
                         frozen_time_split=frozen_time_split, log_level=log_level,
                         _config_stack=[episode_config, trial_config])
        if use_target_backshift:
            self._test_period_backshift_delta = (as_timedelta(trial_params['sample_duration'], 'sample_duration')
                                                 - as_timedelta(trial_test_period, 'test_period'))


def _duration_dict(value, default, name):
    """Editable dict form of setting `name`, a duration given as a dict, a timedelta or None (-> default)."""
    if value is None:
        return dict(default)
    if isinstance(value, dict):
        return dict(value)
    return dict(seconds=as_timedelta(value, name).total_seconds())


class BTgymDataset(BTgymRandomDataDomain):
    """The dataset of the examples: samples episodes straight from the data (Trial = Episode).

    The domain samples a window of `episode_duration` from the source (train) part or, with `target_period`, from
    the target (test) part; the trial returns it whole as the episode, labelled with the requested type. Test
    episodes need `target_period` (DataError otherwise); the trial has no test period of its own. Data come from
    `filename` (CSV files) or `dataframe`. The deprecated duration kwargs are mapped with a logged warning; any
    other unknown kwarg raises TypeError.
    """
    trial_class_ref = BTgymSimpleTrial

    def __init__(self, filename=None, dataframe=None, episode_duration=None, time_gap=None, start_00=False,
                 start_weekdays=None, parsing_params=None, target_period=None, name='SimpleDataSet',
                 data_names=('default_asset',), task=0, log_level=WARNING, **kwargs):
        """
        Args:
            filename: CSV path or list of paths.
            dataframe: DataFrame used instead of files.
            episode_duration: episode length, default {'days': 0, 'hours': 23, 'minutes': 55}.
            time_gap: most missing time inside an episode, default {'days': 0, 'hours': 6}.
            start_00: start episodes at the first bar of a day.
            start_weekdays: weekdays (0=Monday) episodes may start on, default all.
            parsing_params: see `parsing.resolve_parsing_params`.
            target_period: duration of the test part at the end of the data; needed for test episodes.
            name: instance name.
            data_names: data line names.
            task: worker number.
            log_level: logbook level.
            **kwargs: deprecated `episode_len_days/hours/minutes`, `time_gap_days/hours` only.
        """
        unknown = sorted(set(kwargs) - set(_DEPRECATED_KWARGS))
        if unknown:
            raise TypeError('{}() got unexpected keyword argument(s): {}'.format(type(self).__name__, unknown))
        durations = dict(episode_duration=_duration_dict(episode_duration, DEFAULT_EPISODE_DURATION,
                                                         'episode_duration'),
                         time_gap=_duration_dict(time_gap, DEFAULT_TIME_GAP, 'time_gap'))
        log = get_logger(name, task, log_level=log_level)
        for key, value in kwargs.items():
            group, field = _DEPRECATED_KWARGS[key]
            log.warning('`{}` is deprecated, use `{}={{"{}": {}}}` instead'.format(key, group, field, value))
            durations[group][field] = value
        trial_params = dict(
            sample_duration=durations['episode_duration'],
            start_weekdays=list(range(7)) if start_weekdays is None else list(start_weekdays),
            start_00=start_00,
            time_gap=durations['time_gap'],
            test_period=None,
            expanding=False,
        )
        super().__init__(trial_params=trial_params, episode_params=dict(trial_params), filename=filename,
                         dataframe=dataframe, parsing_params=parsing_params, target_period=target_period,
                         name=name, task=task, data_names=data_names, log_level=log_level)
        self.episode_duration = durations['episode_duration']


class BTgymDataset2(BTgymDataset):
    """`BTgymDataset` with full trial semantics: the trial samples its episode from the interval matching the
    requested `sample_type`. Its trials are one episode long and have no test interval of their own, so only
    train episodes can be requested from them (test ones raise DataError); use `BTgymRandomDataDomain` with a
    trial `test_period` for train/test splits inside trials.
    """
    trial_class_ref = BTgymDataTrial
