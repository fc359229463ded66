"""Data layer: reading OHLCV sources, bar sizes, the Domain -> Trial -> Episode sampler and the backtrader feed."""
import datetime

import backtrader as bt
import logbook
import numpy as np
import pandas as pd
import pytest

from btgym_aac.data import (BTgymBaseData, BTgymDataset, BTgymDataset2, BTgymDataTrial, BTgymEpisode,
                            BTgymRandomDataDomain, DataError, DataSampleConfig, EnvResetConfig, make_random_walk_data,
                            make_sine_data, read_ohlcv, write_histdata_csv)

OHLCV = ['open', 'high', 'low', 'close', 'volume']


def _bars(num_bars=3000, freq='1min', start='2017-01-02 00:00', seed=0):
    return make_random_walk_data(num_bars=num_bars, freq=freq, start=start, seed=seed)


def _episode(dataset, sample_type=0, **sample_kwargs):
    trial = dataset.sample(sample_type=sample_type, **sample_kwargs)
    trial.reset()
    return trial, trial.sample(sample_type=sample_type)


def _write(path, text):
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------------------------------- reading


@pytest.mark.parametrize('header', [False, True])
def test_histdata_file_keeps_every_bar_including_the_first(tmp_path, header):
    bars = _bars(500)
    path = write_histdata_csv(bars, tmp_path / 'histdata.csv', header=header)
    frame = read_ohlcv(path)
    assert len(frame) == 500
    assert frame.index[0] == pd.Timestamp('2017-01-02 00:00')
    assert list(frame.columns) == OHLCV
    assert all(dtype == np.float64 for dtype in frame.dtypes)
    np.testing.assert_array_equal(frame.to_numpy(), bars.to_numpy())
    np.testing.assert_array_equal(frame.index.values, bars.index.values)


def test_histdata_dates_parse_like_strptime(tmp_path):
    stamps = ['20161231 235900', '20170101 000000', '20170228 120102', '20200229 235959']
    lines = ['{};1.0;1.2;0.9;{};7'.format(stamp, 1.1 + 0.01 * index) for index, stamp in enumerate(stamps)]
    frame = read_ohlcv(_write(tmp_path / 'd.csv', '\n'.join(lines) + '\n'))
    expected = [datetime.datetime.strptime(stamp, '%Y%m%d %H%M%S') for stamp in stamps]
    assert list(frame.index.to_pydatetime()) == expected
    assert frame['volume'].tolist() == [7.0] * 4


@pytest.mark.parametrize('text, second_time, volumes', [
    ('DateTime,OPEN,High,low,Close\n2017-03-01 10:00:00,1.5,1.7,1.4,1.6\n2017-03-01 10:01:00,1.6,1.8,1.5,1.7\n',
     '10:01', [0.0, 0.0]),
    ('Date,Time,Open,High,Low,Close,Volume\n'
     '2017-03-01,10:00,1.5,1.7,1.4,1.6,100\n2017-03-01,10:05,1.6,1.8,1.5,1.7,200\n', '10:05', [100.0, 200.0]),
])
def test_generic_csv_with_header(tmp_path, text, second_time, volumes):
    """Case-insensitive names, optional volume (-> 0), a datetime column or separate Date and Time columns."""
    frame = read_ohlcv(_write(tmp_path / 'generic.csv', text))
    assert list(frame.index) == [pd.Timestamp('2017-03-01 10:00'), pd.Timestamp('2017-03-01 ' + second_time)]
    assert frame.loc[:, OHLCV].to_numpy().tolist() == [[1.5, 1.7, 1.4, 1.6, volumes[0]],
                                                       [1.6, 1.8, 1.5, 1.7, volumes[1]]]


def test_dataframe_inputs_index_or_column_unsorted():
    bars = _bars(50)
    by_column = bars.reset_index(names='Datetime').rename(columns=str.upper).iloc[::-1]
    for source in (bars, by_column):
        frame = read_ohlcv(source)
        assert list(frame.columns) == OHLCV
        np.testing.assert_array_equal(frame.to_numpy(), bars.to_numpy())
        np.testing.assert_array_equal(frame.index.values, bars.index.values)


def test_file_list_concatenates_and_drops_duplicates_with_warning(tmp_path):
    bars = _bars(300)
    first = write_histdata_csv(bars.iloc[:200], tmp_path / 'a.csv')
    shifted = bars.iloc[150:].copy()
    shifted.loc[shifted.index[:50], 'close'] += 1.0
    second = write_histdata_csv(shifted, tmp_path / 'b.csv')
    with logbook.TestHandler() as handler:
        frame = read_ohlcv([first, second])
    assert len(frame) == 300
    np.testing.assert_array_equal(frame['close'].to_numpy(), bars['close'].to_numpy())
    assert any('50' in record.message and 'duplicated' in record.message for record in handler.records
               if record.level == logbook.WARNING)


def test_file_list_of_different_bar_sizes_is_refused_naming_each_file(tmp_path):
    minutes = write_histdata_csv(_bars(300), tmp_path / 'm1.csv')
    hours = write_histdata_csv(_bars(300, freq='1h', start='2017-02-01 00:00'), tmp_path / 'h1.csv')
    single = write_histdata_csv(_bars(1, start='2017-03-01 00:00'), tmp_path / 'one.csv')
    with pytest.raises(DataError, match=r'different bar sizes: data file <{}> has 1-minute bars, data file <{}> has '
                                        r'60-minute bars;'.format(minutes, hours)):
        read_ohlcv([minutes, single, hours])
    assert len(read_ohlcv([minutes, single])) == 301


def test_large_histdata_file_parses_to_the_bars_written(tmp_path):
    """Parsing speed is measured by benchmarks/data_speed.py; here the 90,000 bars must come back as written."""
    written = _bars(90000)
    frame = read_ohlcv(write_histdata_csv(written, tmp_path / 'big.csv'))
    assert frame.index.equals(written.index)
    np.testing.assert_array_equal(frame[OHLCV].to_numpy(), written[OHLCV].to_numpy())


# ---------------------------------------------------------------------------------------------- read errors


def test_missing_file_error_names_the_file(tmp_path):
    missing = tmp_path / 'nope.csv'
    with pytest.raises(FileNotFoundError, match='nope.csv'):
        read_ohlcv(missing)


def test_directory_given_as_a_data_file_is_named_as_such(tmp_path):
    with pytest.raises(FileNotFoundError, match='is a directory, not a CSV file'):
        read_ohlcv(tmp_path)


def test_empty_file_error(tmp_path):
    with pytest.raises(DataError, match=r'empty.csv.*empty'):
        read_ohlcv(_write(tmp_path / 'empty.csv', ''))


def test_header_without_rows_error(tmp_path):
    with pytest.raises(DataError, match=r'head.csv.*no data rows'):
        read_ohlcv(_write(tmp_path / 'head.csv', 'Date,Open,High,Low,Close\n'))


def test_unparsable_date_error_names_value_and_line(tmp_path):
    lines = ['20170101 000000;1;1;1;1;0', '20170101 000100;1;1;1;1;0', '2017-01-01 nonsense;1;1;1;1;0']
    with pytest.raises(DataError, match=r"bad.csv.*'2017-01-01 nonsense'.*line 3"):
        read_ohlcv(_write(tmp_path / 'bad.csv', '\n'.join(lines)))


def test_impossible_histdata_date_error(tmp_path):
    with pytest.raises(DataError, match='20170230 000000'):
        read_ohlcv(_write(tmp_path / 'feb30.csv', '20170101 000000;1;1;1;1;0\n20170230 000000;1;1;1;1;0\n'))


def test_missing_price_columns_error_names_them(tmp_path):
    text = 'Date,Open,High,Close\n2017-01-01,1,2,1.5\n'
    with pytest.raises(DataError, match=r'cols.csv.*missing price column\(s\) low'):
        read_ohlcv(_write(tmp_path / 'cols.csv', text))
    with pytest.raises(DataError, match='missing price column'):
        read_ohlcv(_bars(5).drop(columns=['open', 'high']))


def test_nan_bar_error_names_first_bad_timestamp(tmp_path):
    text = 'Date,Open,High,Low,Close\n2017-01-01 00:00,1,2,0.5,1.5\n2017-01-01 00:01,1,,0.5,1.5\n' \
           '2017-01-01 00:02,1,x,0.5,1.5\n'
    with pytest.raises(DataError, match=r"nan.csv.*2017-01-01 00:01:00.*\['high'\]"):
        read_ohlcv(_write(tmp_path / 'nan.csv', text))
    text = 'Date,Open,High,Low,Close\n2017-01-01 00:00,1,2,0.5,1.5\n2017-01-01 00:01,1,2,0.5,inf\n'
    with pytest.raises(DataError, match=r"inf.csv>: bar at line 3 \(2017-01-01 00:01:00\) has missing, non-numeric or "
                                        r"infinite \['close'\]"):
        read_ohlcv(_write(tmp_path / 'inf.csv', text))


def test_high_below_low_error_names_timestamp():
    bars = _bars(10)
    bars.loc[bars.index[4], 'high'] = bars['low'].iloc[4] - 0.1
    with pytest.raises(DataError, match=r'{}.*high < low'.format(bars.index[4])):
        read_ohlcv(bars)


def test_too_few_fields_and_unknown_parsing_param(tmp_path):
    with pytest.raises(DataError, match='at least 5 fields'):
        read_ohlcv(_write(tmp_path / 'short.csv', '20170101 000000;1;1;1\n'))
    with pytest.raises(TypeError, match='colour'):
        read_ohlcv(_bars(5), parsing_params={'colour': 'red'})


def test_names_and_field_positions_map_the_columns(tmp_path):
    """The `names` parsing param (fields after the datetime) and field positions decide which field is which."""
    path = _write(tmp_path / 'reordered.csv', '20170102 000000;1.1;1.2;0.9;1.0;5\n20170102 000100;1.3;1.4;1.0;1.1;6\n')
    by_names = read_ohlcv(path, parsing_params=dict(names=['close', 'high', 'low', 'open', 'volume'], header=0))
    assert by_names.loc[:, OHLCV].to_numpy().tolist() == [[1.0, 1.2, 0.9, 1.1, 5.0], [1.1, 1.4, 1.0, 1.3, 6.0]]
    by_positions = read_ohlcv(path, parsing_params=dict(open=4, close=1, volume=-1))
    assert by_positions.loc[:, OHLCV].to_numpy().tolist() == [[1.0, 1.2, 0.9, 1.1, 0.0], [1.1, 1.4, 1.0, 1.3, 0.0]]
    with pytest.raises(DataError, match=r"parsing_params names must be a list of column names, got 'close'"):
        read_ohlcv(path, parsing_params=dict(names='close'))
    with pytest.raises(DataError, match=r'names .* name 3 fields, but data lines have 6'):
        read_ohlcv(path, parsing_params=dict(names=['close', 'high', 'low']))
    with pytest.raises(DataError, match=r'parsing_params close=9 is not a field position in 0..5'):
        read_ohlcv(path, parsing_params=dict(close=9))
    with pytest.raises(DataError, match=r'missing price column\(s\) open'):
        read_ohlcv(path, parsing_params=dict(open=-1))


def test_dotted_dates_are_day_first(tmp_path):
    """DD.MM.YYYY (Dukascopy's 'Gmt time') is read day first, also when no day exceeds 12."""
    text = ('Gmt time,Open,High,Low,Close,Volume\n'
            '02.01.2017 00:00:00.000,1,2,0.5,1.5,3\n03.01.2017 00:00:00.000,1,2,0.5,1.6,3\n')
    frame = read_ohlcv(_write(tmp_path / 'duka.csv', text))
    assert list(frame.index) == [pd.Timestamp('2017-01-02'), pd.Timestamp('2017-01-03')]
    frame = read_ohlcv(_write(tmp_path / 'days.csv', 'Date,Open,High,Low,Close\n13.01.2017,1,2,0.5,1.5\n'))
    assert list(frame.index) == [pd.Timestamp('2017-01-13')]


def test_ragged_binary_and_latin1_files_are_named(tmp_path):
    ragged = '20170101 000000;1;1;1;1;0\n' * 3 + '20170101 000300;1;1;1;1;0;7;8;9\n'
    with pytest.raises(DataError, match=r'ragged.csv>: line 4 has 9 fields, expected 6 as in the lines before it'):
        read_ohlcv(_write(tmp_path / 'ragged.csv', ragged))
    cut = ('Date;Open;High;Low;Close;Volume\n' + '20170101 000000;1;1;1;1;0\n' * 91  # lines 1-92
           + '20170101 0001;1;1;20170101 000200;1;1;1;1\n')  # line 93: cut short, the next line run into it
    with pytest.raises(DataError, match=r'cut.csv>: line 93 has 8 fields, expected 6 .*\(a line cut short, or two '
                                        r'lines run together\?\)$') as refused:
        read_ohlcv(_write(tmp_path / 'cut.csv', cut))
    assert 'UTF-8' not in str(refused.value)
    (tmp_path / 'binary.csv').write_bytes(bytes(range(256)) * 4)
    with pytest.raises(DataError, match=r'binary.csv> cannot be read as UTF-8 CSV text \(UnicodeDecodeError'):
        read_ohlcv(tmp_path / 'binary.csv')
    (tmp_path / 'latin.csv').write_bytes('d\xe4tum;open;high;low;close\n'.encode('latin-1'))
    with pytest.raises(DataError, match=r'latin.csv> cannot be read as UTF-8 CSV text'):
        read_ohlcv(tmp_path / 'latin.csv')


# --------------------------------------------------------------------------------------------------- bar sizes


@pytest.mark.parametrize('freq, timeframe, duration, rows, bt_frame, compression', [
    ('1min', 1, {'hours': 2}, 120, bt.TimeFrame.Minutes, 1),
    ('5min', 5, {'hours': 10}, 120, bt.TimeFrame.Minutes, 5),
    ('1h', 60, {'days': 2}, 48, bt.TimeFrame.Minutes, 60),
    ('1D', 1440, {'days': 20}, 20, bt.TimeFrame.Days, 1),
])
def test_bar_size_inferred_and_episode_rows(tmp_path, freq, timeframe, duration, rows, bt_frame, compression):
    path = write_histdata_csv(_bars(400, freq=freq), tmp_path / 'bars.csv')
    dataset = BTgymDataset(filename=str(path), episode_duration=duration, time_gap={'hours': 0})
    dataset.reset()
    assert dataset.timeframe == timeframe
    assert dataset.sample_num_records == rows
    trial, episode = _episode(dataset)
    assert len(trial.data) == rows and len(episode.data) == rows
    assert (np.diff(episode.data.index.values) == np.timedelta64(timeframe, 'm')).all()
    feed = episode.to_btfeed()['default_asset']
    assert (feed.p.timeframe, feed.p.compression) == (bt_frame, compression)


def test_explicit_timeframe_overrides_inference():
    dataset = BTgymDataset(dataframe=_bars(600), episode_duration={'hours': 10}, parsing_params={'timeframe': 5})
    dataset.reset()
    assert dataset.timeframe == 5
    assert dataset.sample_num_records == 120


# ---------------------------------------------------------------------------------------------------- sampling


def test_train_and_test_episodes_never_mix():
    bars = _bars(6000)
    dataset = BTgymDataset(dataframe=bars, episode_duration={'hours': 3}, target_period={'hours': 20})
    dataset.seed(1)
    dataset.reset()
    split = len(bars) - 20 * 60
    assert dataset.train_interval == [0, split] and dataset.test_interval == [split, 6000]
    split_time = bars.index[split]
    for sample_type in [0, 1] * 60:
        trial, episode = _episode(dataset, sample_type)
        assert episode.metadata['type'] == sample_type == trial.metadata['type']
        if sample_type == 0:
            assert episode.data.index[-1] < split_time
        else:
            assert episode.data.index[0] >= split_time


def test_trial_level_test_period_splits_episodes_inside_trials():
    bars = _bars(8000)
    domain = BTgymRandomDataDomain(
        trial_params=dict(sample_duration={'hours': 24}, time_gap={'hours': 0}, test_period={'hours': 6}),
        episode_params=dict(sample_duration={'hours': 2}, time_gap={'hours': 0}),
        dataframe=bars, target_period={'hours': 30},
    )
    domain.seed(2)
    domain.reset()
    for _ in range(30):
        trial = domain.sample(sample_type=1)
        trial.reset()
        assert trial.train_interval == [0, 18 * 60] and trial.test_interval == [18 * 60, 24 * 60]
        split_time = trial.data.index[18 * 60]
        assert trial.data.index[0] >= bars.index[8000 - 30 * 60]
        assert trial.sample(sample_type=0).data.index[-1] < split_time
        assert trial.sample(sample_type=1).data.index[0] >= split_time


def test_start_weekdays_respected():
    dataset = BTgymDataset(dataframe=_bars(24 * 60, freq='1h'), episode_duration={'hours': 30},
                           start_weekdays=[2], time_gap={'hours': 0})
    dataset.seed(3)
    dataset.reset()
    starts = [_episode(dataset)[1].data.index[0] for _ in range(40)]
    assert {start.weekday() for start in starts} == {2}
    assert len(set(starts)) > 5


def test_start_00_snaps_to_day_start_and_stays_in_interval():
    bars = _bars(12 * 24 * 60, start='2017-01-02 13:37')
    target_period = {'days': 3, 'hours': 5}
    dataset = BTgymDataset(dataframe=bars, episode_duration={'hours': 20}, start_00=True,
                           target_period=target_period)
    dataset.seed(4)
    dataset.reset()
    split_time = bars.index[dataset.test_interval[0]]
    assert split_time.time() != datetime.time(0, 0)
    starts = []
    for sample_type in [0, 1] * 25:
        episode = _episode(dataset, sample_type)[1]
        start = episode.data.index[0]
        starts.append(start)
        assert start.time() == datetime.time(0, 0) or start == bars.index[0]
        assert len(episode.data) == 20 * 60
        if sample_type == 0:
            assert episode.data.index[-1] < split_time
        else:
            assert episode.data.index[0] >= split_time
    assert len(set(starts)) > 4


def test_time_gap_rejects_windows_over_a_gap():
    bars = _bars(3000)
    with_gap = pd.concat([bars.iloc[:1500], bars.iloc[1500:].shift(12, freq='h')])
    dataset = BTgymDataset(dataframe=with_gap, episode_duration={'hours': 10}, time_gap={'hours': 1})
    dataset.seed(5)
    dataset.reset()
    for _ in range(40):
        steps = np.diff(dataset.sample().data.index.values)
        assert steps.max() == np.timedelta64(1, 'm')


def test_beta_skew_moves_mean_train_start_and_test_stays_uniform():
    dataset = BTgymDataset(dataframe=_bars(10000), episode_duration={'hours': 2}, target_period={'hours': 40})
    dataset.seed(6)
    dataset.reset()
    free_rows = dataset.train_interval[1] - 120

    def mean_start(sample_type, b_alpha, b_beta):
        rows = [dataset.sample(sample_type=sample_type, b_alpha=b_alpha, b_beta=b_beta).metadata['first_row']
                for _ in range(300)]
        return np.mean(rows)

    late, early = mean_start(0, 5.0, 1.0), mean_start(0, 1.0, 5.0)
    assert late > early
    assert late == pytest.approx(free_rows * 5 / 6, rel=0.05)
    assert early == pytest.approx(free_rows * 1 / 6, rel=0.1)
    test_low, test_high = dataset.test_interval
    assert mean_start(1, 5.0, 1.0) == pytest.approx((test_low + test_high - 120) / 2, rel=0.02)


def test_seeded_datasets_repeat_the_episode_sequence():
    def sequence(seed):
        dataset = BTgymRandomDataDomain(
            trial_params=dict(sample_duration={'hours': 10}, time_gap={'hours': 0}, start_weekdays=[0, 2, 4]),
            episode_params=dict(sample_duration={'hours': 2}, time_gap={'hours': 0}),
            dataframe=_bars(8000),
        )
        dataset.seed(seed)
        dataset.reset()
        return [(trial.metadata['first_row'], episode.metadata['first_row'])
                for trial, episode in (_episode(dataset) for _ in range(15))]

    assert sequence(7) == sequence(7)
    assert sequence(7) != sequence(8)
    assert sequence(None) != sequence(None)


def test_metadata_fields_and_slices():
    bars = _bars(5000)
    dataset = BTgymDataset(dataframe=bars, episode_duration={'hours': 3}, target_period={'hours': 10})
    dataset.reset()
    for number, sample_type in enumerate([0, 1, 0]):
        trial, episode = _episode(dataset, sample_type)
        first, last = trial.metadata['first_row'], trial.metadata['last_row']
        assert trial.metadata == dict(type=sample_type, sample_num=number, parent_sample_num=0,
                                      parent_sample_type=None, first_row=first, last_row=last)
        assert episode.metadata == dict(type=sample_type, sample_num=0, parent_sample_num=number,
                                        parent_sample_type=sample_type, first_row=0, last_row=180)
        assert trial.data.equals(bars.iloc[first:last])
        assert np.shares_memory(trial.data.to_numpy(), dataset.data.to_numpy())
    assert dataset.sample_num == 3
    assert isinstance(trial, BTgymDataTrial) and isinstance(episode, BTgymEpisode)


def test_get_new_false_reuses_the_last_sample():
    dataset = BTgymDataset(dataframe=_bars(3000), episode_duration={'hours': 2})
    dataset.reset()
    trial = dataset.sample()
    assert dataset.sample(get_new=False) is trial
    assert dataset.sample(**DataSampleConfig) is not trial
    assert set(EnvResetConfig) == {'episode_config', 'trial_config'}


def test_sampled_trials_and_episodes_are_views_of_the_parsed_bars():
    """A sample slices its source's frame instead of copying it (what keeps sampling cheap on a large dataset; the
    time of a draw is measured by benchmarks/data_speed.py)."""
    dataset = BTgymDataset(dataframe=_bars(90000), target_period={'days': 5})
    dataset.reset()
    source = dataset.data['close'].to_numpy()
    for sample_type in [0, 1] * 5:
        trial, episode = _episode(dataset, sample_type)
        for sample in (trial, episode):
            closes = sample.data['close'].to_numpy()
            assert np.shares_memory(closes, source)
            first = dataset.data.index.get_loc(sample.data.index[0])
            np.testing.assert_array_equal(closes, source[first:first + len(closes)])


def test_sampled_trial_works_without_its_source_file(tmp_path):
    path = write_histdata_csv(_bars(3000), tmp_path / 'gone.csv')
    dataset = BTgymDataset(filename=str(path), episode_duration={'hours': 2})
    dataset.reset()
    path.unlink()
    trial = dataset.sample()
    trial.reset()
    assert trial.train_interval == [0, 120]
    assert len(trial.sample().data) == 120
    assert trial.describe().loc['count', 'close'] == 120


def test_target_backshift_and_frozen_time_split():
    bars = _bars(5000)
    domain = BTgymRandomDataDomain(
        trial_params=dict(sample_duration={'hours': 10}, time_gap={'hours': 0}, test_period={'hours': 4}),
        episode_params=dict(sample_duration={'hours': 1}, time_gap={'hours': 0}),
        dataframe=bars, target_period={'hours': 20}, use_target_backshift=True,
        frozen_time_split={'year': 2017, 'month': 1, 'day': 3, 'hour': 5, 'minute': 30, 'second': 30},
    )
    domain.reset()
    assert domain.test_interval == [5000 - 20 * 60 - 6 * 60, 5000]
    assert domain.global_timestamp == pd.Timestamp('2017-01-03 05:30').timestamp()
    domain.set_global_timestamp(123.0)
    assert domain.global_timestamp == 123.0


# ------------------------------------------------------------------------------------------- dataset errors


def test_data_too_short_names_required_and_available_bars(tmp_path):
    dataset = BTgymDataset(dataframe=_bars(1000), episode_duration={'hours': 23, 'minutes': 55})
    with pytest.raises(DataError, match=r'train interval has 1000 bars.*needs 1435 bars.*1075 required'):
        dataset.reset()
    path = write_histdata_csv(_bars(1000), tmp_path / 'short.csv')
    dataset = BTgymDataset(filename=str(path), episode_duration={'hours': 23, 'minutes': 55})
    with pytest.raises(DataError, match=r'\(data .*short.csv\): train interval has 1000 bars'):
        dataset.reset()


def test_test_episode_without_target_period_is_a_clear_error():
    dataset = BTgymDataset(dataframe=_bars(3000), episode_duration={'hours': 2})
    dataset.reset()
    with pytest.raises(DataError, match='target_period'):
        dataset.sample(sample_type=1)


def test_dataset2_trials_give_train_episodes_only():
    dataset = BTgymDataset2(dataframe=_bars(3000), episode_duration={'hours': 2}, target_period={'hours': 10})
    dataset.reset()
    trial = dataset.sample(sample_type=1)
    trial.reset()
    assert len(trial.sample(sample_type=0).data) == 120
    with pytest.raises(DataError, match='no test interval'):
        trial.sample(sample_type=1)


def test_deprecated_kwargs_are_mapped_with_warning_and_unknown_ones_rejected():
    with logbook.TestHandler() as handler:
        dataset = BTgymDataset(dataframe=_bars(3000), episode_len_days=0, episode_len_hours=3,
                               episode_len_minutes=20, time_gap_hours=2)
    dataset.reset()
    assert dataset.sample_num_records == 200
    assert dataset.max_gap_num_records == 120
    assert any('episode_len_hours' in record.message for record in handler.records)
    with pytest.raises(TypeError, match='episode_lenght'):
        BTgymDataset(dataframe=_bars(100), episode_lenght=5)


def test_state_errors():
    dataset = BTgymDataset(dataframe=_bars(3000), episode_duration={'hours': 2})
    with pytest.raises(RuntimeError, match='reset'):
        dataset.sample()
    dataset.reset()
    with pytest.raises(ValueError, match='sample_type'):
        dataset.sample(sample_type=2)
    with pytest.raises(ValueError, match='Beta'):
        dataset.sample(b_alpha=0)
    episode = _episode(dataset)[1]
    with pytest.raises(RuntimeError, match='an episode cannot be reset; sample a new one from its trial'):
        episode.reset()
    with pytest.raises(RuntimeError, match='an episode cannot be sampled; it is the lowest data level'):
        episode.sample()
    with pytest.raises(DataError, match='filename'):
        BTgymDataset().reset()
    with pytest.raises(ValueError, match='start_weekdays'):
        BTgymDataset(dataframe=_bars(100), start_weekdays=[7])
    with pytest.raises(ValueError, match='start_weekdays'):
        BTgymDataset(dataframe=_bars(100), start_weekdays=[])


def test_episodes_may_start_on_any_weekday_by_default():
    """The default `start_weekdays` is every day of the week."""
    bars = _bars(7 * 24 * 60, start='2017-01-02 00:00')
    dataset = BTgymDataset(dataframe=bars, episode_duration={'days': 0, 'hours': 2, 'minutes': 0},
                           time_gap={'hours': 1})
    dataset.reset()
    assert dataset.start_weekdays == list(range(7))
    starts = {_episode(dataset)[1].data.index[0].weekday() for _ in range(60)}
    assert starts == set(range(7))


def test_describe_loads_and_unloads(tmp_path):
    bars = _bars(400)
    data = BTgymBaseData(filename=str(write_histdata_csv(bars, tmp_path / 'd.csv')))
    stat = data.describe()
    assert data.data is None
    pd.testing.assert_frame_equal(stat, bars.describe())


# ------------------------------------------------------------------------------------------------ backtrader


class _BarCounter(bt.Strategy):
    def __init__(self):
        self.closes = []
        self.times = []

    def next(self):
        self.closes.append(self.data.close[0])
        self.times.append(self.data.datetime.datetime(0))


@pytest.mark.parametrize('freq, duration', [('1min', {'hours': 5}), ('1h', {'days': 10}), ('1D', {'days': 300})])
def test_btfeed_runs_in_cerebro(freq, duration):
    dataset = BTgymDataset(dataframe=make_sine_data(num_bars=600, freq=freq), episode_duration=duration,
                           time_gap={'hours': 0})
    dataset.reset()
    episode = _episode(dataset)[1]
    feeds = episode.to_btfeed()
    assert list(feeds) == ['default_asset'] and feeds['default_asset'].numrecords == len(episode.data)
    cerebro = bt.Cerebro(stdstats=False)
    for name, feed in feeds.items():
        cerebro.adddata(feed, name=name)
    cerebro.addstrategy(_BarCounter)
    strategy = cerebro.run()[0]
    assert len(strategy.closes) == len(episode.data)
    np.testing.assert_allclose(strategy.closes, episode.data['close'].to_numpy())
    assert strategy.times[0] == episode.data.index[0].to_pydatetime()
    assert strategy.times[-1] == episode.data.index[-1].to_pydatetime()
