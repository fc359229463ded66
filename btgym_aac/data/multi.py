"""BTgymMultiData: several single-stream data objects ("data lines") aligned in time and sampled in lock-step.

Typical use::

    data_config = collections.OrderedDict([
        ('usd', {'filename': 'DAT_ASCII_EURUSD_M1_2017.csv'}),
        ('gbp', {'filename': 'DAT_ASCII_EURGBP_M1_2017.csv', 'config': {'parsing_params': {'sep': ','}}}),
    ])
    data = BTgymMultiData(data_class_ref=BTgymRandomDataDomain, data_config=data_config,
                          trial_params=trial_params, episode_params=episode_params, target_period={'days': 5})
    data.seed(0)
    data.reset()                            # loads, aligns, then resets every stream
    trial = data.sample(sample_type=0)      # a BTgymMultiData of trials covering the same bars
    trial.reset()
    episode = trial.sample(sample_type=0)   # a BTgymMultiData of episodes
    feeds = episode.to_btfeed()             # OrderedDict('usd': feed, 'gbp': feed)
"""
import collections
import collections.abc
import copy
import functools

import numpy as np
import pandas as pd

from btgym_aac.data.errors import DataError
from btgym_aac.logs import WARNING, get_logger

SPEC_KEYS = frozenset(['filename', 'dataframe', 'config', 'base'])
STREAM_ARGS = frozenset(['filename', 'dataframe', 'data_names', 'task', 'name', 'log_level'])
"""Stream constructor arguments BTgymMultiData sets itself: not allowed in shared kwargs or a stream's `config`."""


def _checked_spec(key, spec):
    """Validates the data_config entry of data line `key`.

    Returns:
        the spec as a new dict.

    Raises:
        ValueError: naming `key`, for a spec that is not a dict, has unknown keys, has neither `filename` nor
            `dataframe`, or has a `config` that is not a dict.
    """
    if not isinstance(spec, collections.abc.Mapping):
        raise ValueError("data_config[{!r}] must be a dict with 'filename' and / or 'dataframe' (optional 'config', "
                         "'base'), got {!r}".format(key, spec))
    unknown = sorted(set(spec) - SPEC_KEYS)
    if unknown:
        raise ValueError('data_config[{!r}] has unknown key(s) {}; known: {}'.format(key, unknown, sorted(SPEC_KEYS)))
    if spec.get('filename') is None and spec.get('dataframe') is None:
        raise ValueError("data_config[{!r}] needs a 'filename' or a 'dataframe'".format(key))
    if spec.get('config') is not None and not isinstance(spec['config'], collections.abc.Mapping):
        raise ValueError("data_config[{!r}]['config'] must be a dict of the stream's kwargs, got {!r}".format(
            key, spec['config']))
    return dict(spec)


def _stream_kwargs(key, shared, own):
    """A data line's constructor kwargs: a deep copy of the shared kwargs updated with (a deep copy of) its own
    `config`, which wins for the keys both set.

    Raises:
        ValueError: naming `key`, when they set an argument BTgymMultiData sets itself (`STREAM_ARGS`).
    """
    kwargs = copy.deepcopy(shared)
    kwargs.update(copy.deepcopy(dict(own or {})))
    reserved = sorted(set(kwargs) & STREAM_ARGS)
    if reserved:
        raise ValueError('data line {!r}: {} must not be given as shared kwargs or in its config: BTgymMultiData '
                         'sets them (filename / dataframe go in the data_config entry)'.format(key, reserved))
    return kwargs


def _master_name(specs):
    """The data line marked `base` (the first one when none is)."""
    bases = [key for key, spec in specs.items() if spec.get('base')]
    if len(bases) > 1:
        raise ValueError('only one data line may be the base (master) stream, got base=True for {}'.format(bases))
    return bases[0] if bases else next(iter(specs))


def _per_stream_filenames(data_filename, keys):
    """Validates `data_filename` of `read_csv` / `reset`: None or a dict data line -> new source."""
    if data_filename is None:
        return {}
    if not isinstance(data_filename, collections.abc.Mapping):
        raise ValueError('data_filename must be a dict data line -> file(s) for BTgymMultiData, got {!r}'.format(
            data_filename))
    unknown = sorted(set(data_filename) - set(keys))
    if unknown:
        raise ValueError('data_filename names unknown data line(s) {}; data lines: {}'.format(unknown, list(keys)))
    return dict(data_filename)


class BTgymMultiData:
    """Several single-stream data objects sampled together: every sample covers the same timestamps in all streams.

    One stream, the master (`base=True` in its data_config entry, else the first one), chooses each sample's rows
    (train / test, Beta-distributed start, global time, ...); every other stream then takes exactly those rows
    (`interval=[first_row, last_row]`, `force_interval=True`). Samples are `BTgymMultiData` objects of the streams'
    samples (trials, then episodes), sampled again the same way.

    Alignment rule (applied by `read_csv()` and by `reset()` before any stream computes its intervals): all streams
    must have the same bar size (timeframe); each stream is cut to the common span, from the latest first bar to
    the earliest last bar; then a bar whose timestamp is missing in any stream is dropped from every stream, so all
    streams keep exactly the same timestamps (the intersection of their indexes). The counts are logged per stream
    (WARNING when bars inside the common span were dropped) and kept in `alignment`. DataError, naming the
    streams, when the bar sizes differ, there is no common span, or some stream keeps fewer than
    `min_aligned_fraction` of its bars in the common span (none at all always fails; e.g. streams offset by 30
    seconds): the message names that stream, the other stream and the first timestamp of the former absent from
    the latter.

    Attributes: `data` (OrderedDict data line -> stream, data_config order), `data_names` (tuple of the data lines),
    `master_name`, `master_data`, `metadata` ({'sample_num': 0, 'type': None}; in samples a copy of the master
    sample's metadata), `is_ready`, `global_timestamp` (the master's), `names` (the master's column names), `params`
    ({}), `filename` (dict data line -> its stream's filename), `sample_num` (samples made), `alignment`
    (OrderedDict data line -> {'bars', 'outside_span', 'missing', 'kept'} of the last alignment), `task`, `name`,
    `log`; properties `frame`, `frames`, `timeframe`, `bar_delta`.
    """

    def __init__(self, data_class_ref=None, data_config=None, name='multi_data', data_names=None, task=0,
                 log_level=WARNING, min_aligned_fraction=0.5, **kwargs):
        """
        Args:
            data_class_ref: the single-stream class of every data line (e.g. BTgymDataset, BTgymRandomDataDomain,
                BTgymCausalDataDomain, BTgymSequentialDataDomain).
            data_config: mapping data line name -> {'filename': path or list of paths (may be None with a
                dataframe), 'dataframe': DataFrame (optional), 'config': dict of this stream's own kwargs
                (optional; they win over the shared kwargs), 'base': True for the master stream (optional)}.
                Its order is the stream order everywhere (feeds, strategy datas). Not modified.
            name: instance name; streams are named '<name>_<data line>'.
            data_names: the data line names, for the original's signature: must equal the data_config keys.
            task: worker number.
            log_level: logbook level.
            min_aligned_fraction: the least fraction of each stream's bars in the common span that alignment must
                keep (see the class docstring).
            **kwargs: kwargs shared by all streams (`trial_params`, `episode_params`, `target_period`,
                `parsing_params`, `frozen_time_split`, `episode_duration`, ...); each stream gets a deep copy.
                Not modified.

        Raises:
            ValueError: no data line, no `data_class_ref`, `data_names` other than the data_config keys, a bad
                data_config entry (named), several base streams, `min_aligned_fraction` outside [0, 1].
        """
        if data_config is not None and not isinstance(data_config, collections.abc.Mapping):
            raise ValueError('data_config must be a mapping data line name -> spec, got {!r}'.format(data_config))
        specs = collections.OrderedDict((key, _checked_spec(key, spec)) for key, spec in (data_config or {}).items())
        if not specs:
            raise ValueError('BTgymMultiData needs at least one data line: data_config is empty')
        if data_class_ref is None:
            raise ValueError('BTgymMultiData needs data_class_ref, the class of every data line (e.g. '
                             'BTgymRandomDataDomain)')
        if data_names is not None and tuple(data_names) != tuple(specs):
            raise ValueError('data_names {!r} must equal the data_config keys {!r} (the names of the data lines)'
                             .format(tuple(data_names), tuple(specs)))
        if not 0 <= min_aligned_fraction <= 1:
            raise ValueError('min_aligned_fraction must lie in [0, 1], got {}'.format(min_aligned_fraction))
        self._init_state(name, task, log_level, min_aligned_fraction, tuple(specs), _master_name(specs))
        self.data_class_ref = data_class_ref
        for key, spec in specs.items():
            self.data[key] = data_class_ref(
                filename=spec.get('filename'), dataframe=spec.get('dataframe'), data_names=(key,), task=task,
                name='{}_{}'.format(name, key), log_level=log_level,
                **_stream_kwargs(key, kwargs, spec.get('config')))
        self.master_data = self.data[self.master_name]

    def _init_state(self, name, task, log_level, min_aligned_fraction, data_names, master_name):
        """State of a new object whose streams are not set yet (shared by the constructor and `_wrap`)."""
        self.name = name
        self.task = task
        self.log_level = log_level
        self.min_aligned_fraction = min_aligned_fraction
        self.data_class_ref = None
        self.data = collections.OrderedDict()
        self.data_names = data_names
        self.master_name = master_name
        self.master_data = None
        self.metadata = {'sample_num': 0, 'type': None}
        self.is_ready = False
        self.global_timestamp = 0
        self.names = []
        self.params = {}
        self.sample_num = 0
        self.sample_instance = None
        self.alignment = collections.OrderedDict()
        self.set_logger()

    def _wrap(self, samples, metadata):
        """A BTgymMultiData of the streams' samples (OrderedDict data line -> sample) with the master's metadata."""
        wrapper = type(self).__new__(type(self))
        wrapper._init_state('sub_' + self.name, self.task, self.log_level, self.min_aligned_fraction,
                            self.data_names, self.master_name)
        wrapper.data.update(samples)
        wrapper.master_data = wrapper.data[self.master_name]
        wrapper.metadata = copy.deepcopy(metadata)
        wrapper.global_timestamp = self.global_timestamp
        wrapper.names = wrapper.master_data.names
        return wrapper

    # ------------------------------------------------------------------------------------------------ settings

    def set_logger(self, level=None, task=None):
        """(Re)creates the loggers of the streams and of this object.

        Args:
            level: logbook level (None keeps the current one).
            task: task number (None keeps the current one).
        """
        if task is not None:
            self.task = task
        if level is not None:
            self.log_level = level
        for stream in self.data.values():
            stream.set_logger(level, task)
        self.log = get_logger(self.name, self.task, log_level=self.log_level)

    def set_params(self, params_dict):
        """Sets every item of `params_dict` as an attribute of every stream (not of this object)."""
        for stream in self.data.values():
            for key, value in params_dict.items():
                setattr(stream, key, value)

    def seed(self, seed=None):
        """Seeds every stream's generator from one seed (the same seed gives the same sequence of samples).

        Args:
            seed: int, SeedSequence or None (fresh OS entropy).
        """
        for stream, child in zip(self.data.values(), np.random.SeedSequence(seed).spawn(len(self.data))):
            stream.seed(child)

    def set_global_timestamp(self, timestamp):
        """Sets the global time of every stream, then takes the master's.

        Args:
            timestamp: POSIX seconds (or None, as the streams take it).
        """
        for stream in self.data.values():
            stream.set_global_timestamp(timestamp)
        self.global_timestamp = self.master_data.global_timestamp

    # ----------------------------------------------------------------------------------------------- properties

    @property
    def filename(self):
        """dict data line -> its stream's filename (a sample's name in samples)."""
        return {key: stream.filename for key, stream in self.data.items()}

    @property
    def frame(self):
        """The master stream's DataFrame of bars (None before loading)."""
        return self.master_data.data

    @property
    def frames(self):
        """OrderedDict data line -> the stream's DataFrame of bars."""
        return collections.OrderedDict((key, stream.data) for key, stream in self.data.items())

    @property
    def timeframe(self):
        """Minutes per bar of the master stream (all streams share it once aligned)."""
        return self.master_data.timeframe

    @property
    def bar_delta(self):
        """pandas Timedelta of one bar of the master stream."""
        return self.master_data.bar_delta

    # ----------------------------------------------------------------------------------------- loading, aligning

    def with_data(self, sources, load=True):
        """A copy of this object (its settings, its streams' settings) reading other data.

        Args:
            sources: dict data line -> path, list of paths (concatenated in time) or DataFrame, for every line.
            load: read and align the data now (else at the copy's `read_csv` or `reset`, as a config's dataset).

        Returns:
            BTgymMultiData, to be reset before it samples.

        Raises:
            ValueError: `sources` does not name exactly this object's data lines (naming both).
            DataError: as `read_csv`.
        """
        if set(sources) != set(self.data_names):
            raise ValueError('data for the lines {} must name exactly the data lines {}'.format(
                ', '.join(sources), ', '.join(self.data_names)))
        replaced = copy.deepcopy(self)
        for key, source in sources.items():
            replaced.data[key].replace_data(source, load)
        replaced.is_ready = False
        if load:
            replaced._align()
        return replaced

    def read_csv(self, data_filename=None, force_reload=False):
        """Loads every stream that is not loaded (all with `force_reload`), then aligns them.

        Args:
            data_filename: None, or a dict data line -> new file(s) of those streams.
            force_reload: reload every stream from its files.

        Raises:
            DataError: the streams cannot be aligned (see the class docstring), or as the streams' `read_csv`.
        """
        filenames = _per_stream_filenames(data_filename, self.data)
        for key, stream in self.data.items():
            stream.read_csv(filenames.get(key), force_reload=force_reload)
        self._align()

    def reset(self, data_filename=None, **kwargs):
        """Loads and aligns the streams, then resets each one (their row intervals come from the aligned bars).

        Args:
            data_filename: None, or a dict data line -> new file(s) of those streams.
            **kwargs: passed to every stream's `reset()` (`timestamp`, `global_step`, `total_steps`, ...).

        Raises:
            DataError: as `read_csv`, or as the streams' `reset`.
        """
        self.read_csv(data_filename)
        for stream in self.data.values():
            stream.reset(**kwargs)
        self.global_timestamp = self.master_data.global_timestamp
        self.names = self.master_data.names
        self.sample_num = 0
        self.sample_instance = None
        self.is_ready = True

    def _align(self):
        """Applies the alignment rule of the class docstring to the loaded streams."""
        indexes = collections.OrderedDict((key, stream.data.index) for key, stream in self.data.items())
        self._check_timeframes()
        first = next(iter(indexes.values()))
        if all(index.equals(first) for index in indexes.values()):
            common, in_span = first, indexes
        else:
            in_span = self._in_common_span(indexes)
            common = functools.reduce(pd.Index.intersection, in_span.values()).sort_values()
            self._check_kept(in_span, common)
        self.alignment = collections.OrderedDict()
        for key, stream in self.data.items():
            index = indexes[key]
            self.alignment[key] = report = dict(bars=len(index), outside_span=len(index) - len(in_span[key]),
                                                missing=len(in_span[key]) - len(common), kept=len(common))
            if not index.equals(common):
                stream.data = stream.data.loc[common]
            log = self.log.warning if report['missing'] else self.log.info
            log('{}: kept {kept} of {bars} bars ({outside_span} outside the common span, {missing} missing in another '
                'stream dropped)'.format(key, **report))

    def _check_timeframes(self):
        timeframes = collections.OrderedDict((key, stream.timeframe) for key, stream in self.data.items())
        master = timeframes[self.master_name]
        for key, timeframe in timeframes.items():
            if timeframe != master:
                raise DataError('cannot align data lines {!r} ({}-minute bars) and {!r} ({}-minute bars): different '
                                'bar sizes'.format(self.master_name, master, key, timeframe))

    def _in_common_span(self, indexes):
        """Each index cut to the common span [latest first bar, earliest last bar]; DataError when it is empty."""
        latest_start = max(indexes, key=lambda key: indexes[key][0])
        earliest_end = min(indexes, key=lambda key: indexes[key][-1])
        start, end = indexes[latest_start][0], indexes[earliest_end][-1]
        if start > end:
            raise DataError('cannot align data lines {!r} and {!r}: no common time span ({!r} starts at {}, after '
                            '{!r} ends at {})'.format(latest_start, earliest_end, latest_start, start, earliest_end,
                                                      end))
        return collections.OrderedDict((key, index[(index >= start) & (index <= end)])
                                       for key, index in indexes.items())

    def _check_kept(self, in_span, common):
        """DataError when some stream keeps fewer than `min_aligned_fraction` of its bars in the common span (or
        when no bar is common)."""
        for key, index in in_span.items():
            if len(common) and len(common) >= self.min_aligned_fraction * len(index):
                continue
            if not len(index):
                raise DataError('cannot align data lines: {!r} has no bar in the common time span'.format(key))
            other, absent = self._first_absent(key, in_span)
            raise DataError(
                'cannot align data lines {!r} and {!r}: only {} of the {} bars of {!r} in the common time span {} .. '
                '{} are in every data line (min_aligned_fraction {}); the first bar of {!r} absent from {!r} is at {}'
                .format(key, other, len(common), len(index), key, index[0], index[-1], self.min_aligned_fraction, key,
                        other, absent))

    @staticmethod
    def _first_absent(key, in_span):
        """(other data line, timestamp): the earliest bar of `key` missing in another data line, and that line."""
        index = in_span[key]
        candidates = []
        for other, other_index in in_span.items():
            absent = index[~index.isin(other_index)] if other != key else index[:0]
            if len(absent):
                candidates.append((absent[0], other))
        timestamp, other = min(candidates)
        return other, timestamp

    # ---------------------------------------------------------------------------------------------- sampling

    def describe(self):
        """Per-stream statistics of the (loaded and aligned) bars.

        Returns:
            OrderedDict data line -> the stream's `describe()` DataFrame.
        """
        self.read_csv()
        return collections.OrderedDict((key, stream.describe()) for key, stream in self.data.items())

    def sample(self, **kwargs):
        """Samples every stream over the same rows: the master chooses them, the others follow.

        Args:
            **kwargs: the sample config (`get_new`, `sample_type`, `timestamp`, `b_alpha`, `b_beta`, ...), given
                to the master as it is and to every other stream with `interval=[first_row, last_row]` of the
                master's sample and `force_interval=True`.

        Returns:
            BTgymMultiData of the streams' samples (data line -> sample) with the master sample's metadata; the
            previous one when the master reuses its previous sample (`get_new=False`).

        Raises:
            RuntimeError: before `reset()`.
        """
        if not self.is_ready:
            raise RuntimeError('{}: not ready to sample; call reset() first'.format(self.name))
        previous = self.master_data.sample_instance
        master_sample = self.master_data.sample(**kwargs)
        if master_sample is previous and self.sample_instance is not None:
            return self.sample_instance
        interval = [master_sample.metadata['first_row'], master_sample.metadata['last_row']]
        follow = dict(kwargs, get_new=True, interval=interval, force_interval=True)
        samples = collections.OrderedDict(
            (key, master_sample if key == self.master_name else stream.sample(**follow))
            for key, stream in self.data.items())
        self.global_timestamp = self.master_data.global_timestamp
        self.sample_instance = self._wrap(samples, master_sample.metadata)
        self.sample_num += 1
        self.log.debug('sample #{}: rows {} of every data line'.format(self.sample_num, interval))
        return self.sample_instance

    def to_btfeed(self):
        """The backtrader feeds of the streams, in data_config order.

        Returns:
            OrderedDict data line -> backtrader.feeds.PandasDirectData (each stream's single feed).

        Raises:
            DataError: a stream holds no data or gives more than one feed.
        """
        feeds = collections.OrderedDict()
        for key, stream in self.data.items():
            stream_feeds = stream.to_btfeed()
            if len(stream_feeds) != 1:
                raise DataError('data line {!r} gives {} feeds ({}); expected one'.format(
                    key, len(stream_feeds), list(stream_feeds)))
            feeds[key] = next(iter(stream_feeds.values()))
        return feeds
