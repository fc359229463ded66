"""BTgymMultiData: data lines aligned in time, sampled in lock-step by the master stream, over every domain class."""
import collections
import copy
import re

import backtrader as bt
import logbook
import numpy as np
import pandas as pd
import pytest

from btgym_aac.data import (BTgymCausalDataDomain, BTgymDataset, BTgymMultiData, BTgymRandomDataDomain,
                            BTgymSequentialDataDomain, DataError, make_correlated_walks, write_histdata_csv)

NUM_BARS = 6000
TRIAL = dict(sample_duration={'hours': 10}, time_gap={'hours': 0}, test_period={'hours': 2})
EPISODE = dict(sample_duration={'hours': 1}, time_gap={'hours': 0})
TARGET = {'hours': 12}
S_TR, R_TE, N_EP, N_TARGET = 600, 120, 60, 720  # rows of 1-minute bars: trial, trial test part, episode, target


def walks(names=('A', 'B', 'C'), num_bars=NUM_BARS, seed=0, **kwargs):
    return make_correlated_walks(num_bars=num_bars, names=names, seed=seed, **kwargs)


def config_of(frames):
    return collections.OrderedDict((key, {'dataframe': frame}) for key, frame in frames.items())


def multi(frames=None, data_class_ref=BTgymRandomDataDomain, seed=0, reset=True, **kwargs):
    kwargs = kwargs or dict(trial_params=TRIAL, episode_params=EPISODE, target_period=TARGET)
    data = BTgymMultiData(data_class_ref=data_class_ref, data_config=config_of(walks() if frames is None else frames),
                          **kwargs)
    data.seed(seed)
    if reset:
        data.reset()
    return data


def assert_same_bars(frame, expected):
    """Equal bars (values and timestamps; the index name and freq may differ)."""
    pd.testing.assert_frame_equal(frame, expected, check_names=False, check_freq=False)


def assert_synchronised(sample, sources):
    """Every stream of `sample` holds the master's timestamps, and its own source's bars at them."""
    index = sample.frame.index
    assert len(index) > 0
    for key, stream in sample.data.items():
        assert stream.data.index.equals(index), key
        assert_same_bars(stream.data, sources[key].loc[index])
        assert stream.metadata['first_row'] == sample.metadata['first_row']
        assert stream.metadata['last_row'] == sample.metadata['last_row']
    closes = [stream.data['close'].to_numpy() for stream in sample.data.values()]
    assert not np.array_equal(closes[0], closes[1])  # the streams hold different series


# ------------------------------------------------------------------------------------------ synchronised sampling

def test_random_domain_trials_and_episodes_cover_the_same_timestamps_in_every_stream():
    frames = walks()
    data = multi(frames)
    for k in range(16):
        trial_type = k % 2
        trial = data.sample(sample_type=trial_type)
        assert_synchronised(trial, frames)
        assert trial.metadata == trial.master_data.metadata and trial.metadata['type'] == trial_type
        if trial_type:
            assert trial.metadata['first_row'] >= NUM_BARS - N_TARGET
        else:
            assert trial.metadata['last_row'] <= NUM_BARS - N_TARGET
        trial.reset()
        for episode_type in (0, 1, 0):
            episode = trial.sample(sample_type=episode_type)
            assert_synchronised(episode, trial.frames)
            assert len(episode.frame) == N_EP and episode.metadata['parent_sample_num'] == k
            if episode_type:
                assert episode.metadata['first_row'] >= S_TR - R_TE
    # the master is sampled once per call (the original sampled it twice), and every stream kept pace
    assert data.sample_num == 16
    assert [stream.sample_num for stream in data.data.values()] == [16, 16, 16]


def test_dataset_episodes_are_synchronised_and_test_ones_come_from_the_target_part():
    frames = walks()
    data = multi(frames, data_class_ref=BTgymDataset, episode_duration={'hours': 1}, time_gap={'hours': 0},
                 target_period=TARGET)
    first_rows = set()
    for k in range(20):
        trial = data.sample(sample_type=k % 2)
        trial.reset()
        episode = trial.sample(sample_type=k % 2)
        assert episode.metadata['type'] == k % 2
        assert_synchronised(episode, trial.frames)
        absolute = pd.Index(frames['A'].index).get_loc(episode.frame.index[0])
        assert (absolute >= NUM_BARS - N_TARGET) == bool(k % 2)
        first_rows.add(absolute)
        assert_same_bars(episode.data['B'].data, frames['B'].iloc[absolute:absolute + N_EP])
    assert len(first_rows) > 15  # random starts, not one window


def test_causal_domain_source_and_target_trials_and_their_episodes_are_synchronised():
    frames = walks()
    data = multi(frames, data_class_ref=BTgymCausalDataDomain, trial_params=dict(TRIAL, expanding=True),
                 episode_params=EPISODE)
    start = data.global_timestamp
    assert start == frames['A'].index[S_TR].timestamp()
    for k in range(8):
        now = start + 1800.0 * k
        trial = data.sample(sample_type=k % 2, timestamp=now)
        assert data.global_timestamp == now and all(s.global_timestamp == now for s in data.data.values())
        assert_synchronised(trial, frames)
        if k % 2:
            assert trial.frame.index[-N_EP] == pd.Timestamp(now, unit='s')  # the target trial ends 1 episode after now
        else:
            assert trial.frame.index[-1] < pd.Timestamp(now, unit='s')
        trial.reset()
        for episode_type in (0, 1):
            episode = trial.sample(sample_type=episode_type)
            assert_synchronised(episode, trial.frames)
            if k % 2 and episode_type:
                assert episode.frame.index[0] == pd.Timestamp(now, unit='s')  # test episode starts at global time
            elif k % 2:
                assert episode.frame.index[-1] < pd.Timestamp(now, unit='s')


def test_sequential_domain_streams_follow_the_masters_sweep():
    frames = walks()
    data = multi(frames, data_class_ref=BTgymSequentialDataDomain, trial_params=TRIAL, episode_params=EPISODE)
    for k in range(10):
        trial = data.sample(sample_type=1)  # sample_type is ignored by the sweep
        assert (trial.metadata['first_row'], trial.metadata['last_row']) == (k * R_TE, k * R_TE + S_TR)
        assert_synchronised(trial, frames)
        assert [stream.metadata['sample_num'] for stream in trial.data.values()] == [k, k, k]
        trial.reset()
        episode = trial.sample(sample_type=1)
        assert_synchronised(episode, trial.frames)
        assert episode.metadata['first_row'] >= S_TR - R_TE
    assert [stream.sample_num for stream in data.data.values()] == [10, 10, 10]


def test_base_stream_is_the_master_at_every_level_and_get_new_false_reuses_the_sample():
    frames = walks()
    specs = config_of(frames)
    specs['B']['base'] = True
    data = BTgymMultiData(BTgymRandomDataDomain, specs, trial_params=TRIAL, episode_params=EPISODE,
                          target_period=TARGET)
    data.seed(1)
    data.reset()
    assert data.master_name == 'B' and data.master_data is data.data['B'] and data.frame is data.data['B'].data
    trial = data.sample()
    assert trial.master_name == 'B' and trial.metadata == trial.data['B'].metadata
    assert data.sample(get_new=False) is trial
    assert data.data['A'].sample_num == data.data['B'].sample_num == 1
    trial.reset()
    episode = trial.sample()
    assert trial.sample(get_new=False) is episode
    assert trial.sample() is not episode and trial.data['C'].sample_num == 2
    assert_synchronised(trial.sample_instance, trial.frames)


def test_unready_wrappers_refuse_to_sample():
    data = multi(reset=False)
    with pytest.raises(RuntimeError, match='reset'):
        data.sample()
    data.reset()
    with pytest.raises(RuntimeError, match='reset'):
        data.sample().sample()


# ------------------------------------------------------------------------------------------------- alignment

def test_bars_missing_in_one_stream_are_dropped_from_all_and_streams_are_cut_to_the_common_span():
    frames = walks()
    missing = frames['B'].index[[500, 501, 502, 2000, 4321] + list(range(3000, 3032))]  # 37 bars
    frames['B'] = frames['B'].drop(missing)
    frames['C'] = frames['C'].iloc[100:-50]
    expected = frames['A'].index[100:-50].difference(missing)
    data = multi(frames, reset=False, trial_params=dict(TRIAL, time_gap={'hours': 1}), episode_params=EPISODE,
                 target_period=TARGET)
    with logbook.TestHandler() as handler:
        data.read_csv()
    for key, frame in data.frames.items():
        assert frame.index.equals(expected), key
        assert_same_bars(frame, frames[key].loc[expected])
    assert len(expected) == 5813
    assert data.alignment['A'] == dict(bars=6000, outside_span=150, missing=37, kept=5813)
    assert data.alignment['B'] == dict(bars=5963, outside_span=150, missing=0, kept=5813)
    assert data.alignment['C'] == dict(bars=5850, outside_span=0, missing=37, kept=5813)
    warnings = [record.message for record in handler.records if record.level == logbook.WARNING]
    assert len(warnings) == 2 and warnings[0].startswith('A: kept 5813 of 6000') and '37 missing' in warnings[1]


def test_reset_aligns_before_the_streams_compute_their_row_intervals():
    frames = walks()
    frames['B'] = frames['B'].iloc[:-300]
    frames['C'] = frames['C'].drop(frames['C'].index[1000:1010])
    data = multi(frames, trial_params=dict(TRIAL, time_gap={'hours': 1}), episode_params=EPISODE,
                 target_period=TARGET)  # reset() straight away, no read_csv() first
    rows = NUM_BARS - 300 - 10
    for stream in data.data.values():
        assert stream.total_num_records == rows
        assert stream.train_interval == [0, rows - N_TARGET] and stream.test_interval == [rows - N_TARGET, rows]
    for k in range(10):
        trial = data.sample(sample_type=k % 2)
        assert_synchronised(trial, data.frames)


def test_streams_offset_by_30_seconds_cannot_be_aligned():
    frames = walks(('A', 'B'))
    frames['B'].index = frames['B'].index + pd.Timedelta(seconds=30)
    data = multi(frames, reset=False)
    message = "data lines 'A' and 'B': only 0 of the 5999 bars of 'A'"
    with pytest.raises(DataError, match=re.escape(message)) as error:
        data.reset()
    assert "the first bar of 'A' absent from 'B' is at 2017-01-01 00:01:00" in str(error.value)


def test_too_few_common_bars_name_the_stream_the_other_stream_and_the_first_missing_bar():
    frames = walks(('A', 'B'))
    frames['B'] = frames['B'].iloc[np.arange(NUM_BARS) % 5 >= 3]  # keeps rows 3, 4, 8, 9, ...: 40 %
    with pytest.raises(DataError, match=re.escape("'A' and 'B': only 2400 of the 5997 bars of 'A'")) as error:
        multi(frames)
    assert "the first bar of 'A' absent from 'B' is at 2017-01-01 00:05:00" in str(error.value)
    data = multi(frames, min_aligned_fraction=0.3, trial_params=TRIAL, episode_params=EPISODE)
    assert data.alignment['A'] == dict(bars=6000, outside_span=3, missing=3597, kept=2400)
    assert data.frame.index.equals(frames['B'].index)


def test_different_bar_sizes_and_no_common_span_are_data_errors_naming_the_streams():
    frames = walks(('A', 'B'))
    frames['B'] = walks(('B',), freq='5min')['B']
    with pytest.raises(DataError, match=r"'A' \(1-minute bars\) and 'B' \(5-minute bars\): different bar sizes"):
        multi(frames)
    frames['B'] = walks(('B',), start='2018-01-01 00:00')['B']
    message = "'B' and 'A': no common time span ('B' starts at 2018-01-01 00:00:00, after 'A' ends at " \
              "2017-01-05 03:59:00)"
    with pytest.raises(DataError, match=re.escape(message)):
        multi(frames)
    assert issubclass(DataError, ValueError)


# ------------------------------------------------------------------------------------------ construction, config

def test_shared_kwargs_are_copied_per_stream_and_the_callers_dicts_are_kept():
    frames = walks()
    specs = config_of(frames)
    specs['B']['config'] = {'target_period': {'hours': 14}}
    trial_params, episode_params = copy.deepcopy(TRIAL), copy.deepcopy(EPISODE)
    specs_before = {key: {k: v for k, v in spec.items() if k != 'dataframe'} for key, spec in specs.items()}
    data = BTgymMultiData(BTgymRandomDataDomain, specs, trial_params=trial_params, episode_params=episode_params,
                          target_period=TARGET)
    data.seed(0)
    data.reset()
    assert trial_params == TRIAL and episode_params == EPISODE
    assert {key: {k: v for k, v in spec.items() if k != 'dataframe'} for key, spec in specs.items()} == specs_before
    assert all(spec['dataframe'] is frames[key] for key, spec in specs.items())
    # the stream's own config wins over the shared kwargs
    assert [stream.target_period for stream in data.data.values()] == [TARGET, {'hours': 14}, TARGET]
    assert [stream.test_interval[1] - stream.test_interval[0] for stream in data.data.values()] == [720, 840, 720]
    # every stream's trials get the user's trial test period (the original gave later streams the target period)
    trial = data.sample()
    trial.reset()
    assert [stream.test_interval for stream in trial.data.values()] == [[S_TR - R_TE, S_TR]] * 3
    assert data.data['A'].nested_params is not data.data['C'].nested_params


def test_bad_configurations_are_refused_with_clear_messages():
    frames = walks(('A', 'B'))
    shared = dict(trial_params=TRIAL, episode_params=EPISODE)
    with pytest.raises(ValueError, match=re.escape("data_names ('B', 'A') must equal the data_config keys ('A', 'B')")):
        BTgymMultiData(BTgymRandomDataDomain, config_of(frames), data_names=('B', 'A'), **shared)
    assert BTgymMultiData(BTgymRandomDataDomain, config_of(frames), data_names=['A', 'B'], **shared).data_names \
        == ('A', 'B')
    with pytest.raises(ValueError, match='at least one data line'):
        BTgymMultiData(BTgymRandomDataDomain, {}, **shared)
    with pytest.raises(ValueError, match='at least one data line'):
        BTgymMultiData(BTgymRandomDataDomain)
    with pytest.raises(ValueError, match='needs data_class_ref'):
        BTgymMultiData(data_config=config_of(frames), **shared)
    with pytest.raises(ValueError, match=r"data_config\['B'\] must be a dict"):
        BTgymMultiData(BTgymRandomDataDomain, {'A': {'dataframe': frames['A']}, 'B': 'b.csv'}, **shared)
    with pytest.raises(ValueError, match=r"data_config\['B'\] needs a 'filename' or a 'dataframe'"):
        BTgymMultiData(BTgymRandomDataDomain, {'A': {'dataframe': frames['A']}, 'B': {'filename': None}}, **shared)
    with pytest.raises(ValueError, match=r"data_config\['A'\] has unknown key\(s\) \['frame'\]"):
        BTgymMultiData(BTgymRandomDataDomain, {'A': {'frame': frames['A']}}, **shared)
    with pytest.raises(ValueError, match=r"data_config\['A'\]\['config'\] must be a dict"):
        BTgymMultiData(BTgymRandomDataDomain, {'A': {'dataframe': frames['A'], 'config': 3}}, **shared)
    with pytest.raises(ValueError, match=r"data line 'A': \['name'\] must not be given"):
        BTgymMultiData(BTgymRandomDataDomain, {'A': {'dataframe': frames['A'], 'config': {'name': 'x'}}}, **shared)
    specs = config_of(frames)
    specs['A']['base'] = specs['B']['base'] = True
    with pytest.raises(ValueError, match=r"only one data line may be the base.*\['A', 'B'\]"):
        BTgymMultiData(BTgymRandomDataDomain, specs, **shared)


def test_target_trials_of_causal_streams_only_follow_their_own_rows():
    domain = BTgymCausalDataDomain(trial_params=TRIAL, episode_params=EPISODE, dataframe=walks(('A',))['A'])
    domain.reset()
    current = domain.get_global_index()
    target = [current - (S_TR - N_EP), current + N_EP]
    with pytest.raises(ValueError, match='exactly those rows'):
        domain.sample(sample_type=1, interval=[target[0] + 1, target[1] + 1], force_interval=True)
    trial = domain.sample(sample_type=1, interval=target, force_interval=True)
    assert (trial.metadata['first_row'], trial.metadata['last_row']) == tuple(target)
    trial.reset()
    split = S_TR - N_EP
    with pytest.raises(ValueError, match=re.escape('must lie in the train part, rows [0, {}]'.format(split))):
        trial.sample(sample_type=0, interval=[split - 30, split + 30], force_interval=True)
    with pytest.raises(ValueError, match='needs force_interval=True'):
        trial.sample(sample_type=1, interval=[split, split + N_EP])
    episode = trial.sample(sample_type=1, interval=[split, split + N_EP], force_interval=True)
    assert episode.data.index[0] == trial.data.index[split] and episode.metadata['type'] == 1


# ------------------------------------------------------------------------------------------- feeds, stats, seeds

def test_feeds_are_named_by_the_data_lines_in_config_order_and_describe_is_per_stream():
    frames = walks(('C', 'A', 'B'))
    data = multi(frames)
    stats = data.describe()
    assert list(stats) == ['C', 'A', 'B']
    for key, stat in stats.items():
        pd.testing.assert_frame_equal(stat, frames[key].describe(), rtol=1e-9)
    assert len({stat.loc['mean', 'close'] for stat in stats.values()}) == 3
    trial = data.sample()
    trial.reset()
    episode = trial.sample()
    feeds = episode.to_btfeed()
    assert list(feeds) == ['C', 'A', 'B'] and data.data_names == ('C', 'A', 'B')
    for key, feed in feeds.items():
        assert isinstance(feed, bt.feeds.PandasDirectData)
        assert feed.p.dataname is episode.data[key].data and feed.numrecords == N_EP
    assert list(episode.describe()) == ['C', 'A', 'B']
    assert episode.describe()['A'].loc['count', 'close'] == N_EP
    assert episode.timeframe == 1 and episode.bar_delta == pd.Timedelta(minutes=1)


def test_the_same_seed_gives_the_same_samples_and_another_seed_others():
    def sample_rows(seed):
        data = multi(seed=seed)
        rows = []
        for k in range(8):
            trial = data.sample(sample_type=k % 2)
            trial.reset()
            episode = trial.sample()
            rows.append((trial.metadata['first_row'], episode.metadata['first_row']))
        return rows
    assert sample_rows(5) == sample_rows(5)
    assert sample_rows(5) != sample_rows(6)


def test_a_single_stream_works_as_its_own_master():
    frames = walks(('A',))
    data = multi(frames, data_class_ref=BTgymDataset, episode_duration={'hours': 1}, time_gap={'hours': 0})
    assert data.master_name == 'A' and data.global_timestamp == frames['A'].index[0].timestamp()
    assert tuple(data.names) == ('open', 'high', 'low', 'close', 'volume')
    trial = data.sample()
    trial.reset()
    episode = trial.sample()
    assert list(episode.to_btfeed()) == ['A'] and len(episode.frame) == N_EP
    assert_same_bars(episode.frames['A'], frames['A'].loc[episode.frame.index])


def test_params_loggers_global_time_and_files_reach_every_stream(tmp_path):
    frames = walks(('A', 'B'))
    files = {key: str(write_histdata_csv(frame, tmp_path / '{}.csv'.format(key))) for key, frame in frames.items()}
    data = BTgymMultiData(BTgymCausalDataDomain, {key: {'filename': path} for key, path in files.items()},
                          trial_params=TRIAL, episode_params=EPISODE, task=3)
    assert data.filename == files and data.frame is None
    data.reset()
    assert data.data['B'].name == 'multi_data_B' and data.data['B'].task == 3
    data.set_params({'custom': 7})
    assert [stream.custom for stream in data.data.values()] == [7, 7] and not hasattr(data, 'custom')
    data.set_logger(level=logbook.DEBUG, task=5)
    assert data.log.name == 'multi_data_5' and data.data['A'].log.name == 'multi_data_A_5'
    assert data.data['A'].log.level == logbook.DEBUG
    later = frames['A'].index[2000].timestamp()
    data.set_global_timestamp(later)
    assert data.global_timestamp == later and data.data['B'].global_timestamp == later
    shorter = str(write_histdata_csv(frames['B'].iloc[:4000], tmp_path / 'short.csv'))
    data.reset(data_filename={'B': shorter})
    assert data.filename == dict(files, B=shorter) and len(data.frames['A']) == 4000
    with pytest.raises(ValueError, match='unknown data line'):
        data.reset(data_filename={'Z': shorter})
