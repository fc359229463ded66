"""Data sanity checks at load: non-positive and out-of-scale prices, constant close prices, unsorted and duplicated
timestamps, each an error or a warning as documented, named by file, column and first offending row, and settable."""
import logbook
import numpy as np
import pytest

from btgym_aac.data import make_random_walk_data, write_histdata_csv
from btgym_aac.data.errors import DataError
from btgym_aac.data.parsing import read_ohlcv
from btgym_aac.data.sanity import resolve_checks


def bars(num_bars=500):
    return make_random_walk_data(num_bars=num_bars, seed=3)


def written(tmp_path, frame, name='bars.csv'):
    return str(write_histdata_csv(frame, tmp_path / name))


def warnings_of(source, **parsing_params):
    with logbook.TestHandler() as handler:
        frame = read_ohlcv(source, parsing_params or None)
    return frame, [record.message for record in handler.records if record.level == logbook.WARNING]


def test_the_defaults_are_as_documented():
    assert resolve_checks() == {'nonpositive_prices': 'error', 'price_scale': 'error', 'constant_prices': 'error',
                                'unsorted_timestamps': 'warn', 'duplicated_timestamps': 'warn'}
    with pytest.raises(ValueError, match=r"unknown data check\(s\) \['negative'\]"):
        resolve_checks({'negative': 'off'})
    with pytest.raises(ValueError, match=r"\['constant_prices'\] must be 'error', 'warn' or 'off', got 'yes'"):
        read_ohlcv(bars(), {'checks': {'constant_prices': 'yes'}})


def test_a_non_positive_price_is_refused_naming_file_column_and_first_row(tmp_path):
    frame = bars()
    frame.iloc[41, frame.columns.get_loc('low')] = -0.5
    frame.iloc[41:45, frame.columns.get_loc('close')] = 0.0  # the low of row 42 comes first (column order)
    frame.iloc[200, frame.columns.get_loc('open')] = -1.0
    path = written(tmp_path, frame)
    with pytest.raises(DataError, match=r'data file <{}>: low -0.5 is not positive at line 42 \({}\); 5 bar\(s\) '
                                        r"like it \(data check 'nonpositive_prices': correct the data, or set "
                                        r"parsing_params\['checks'\]\['nonpositive_prices'\] to 'warn' or 'off' in "
                                        r"the env config to accept it\)$".format(path, frame.index[41])):
        read_ohlcv(path)
    loaded, warnings = warnings_of(path, checks={'nonpositive_prices': 'warn'})
    assert len(loaded) == 500 and any('low -0.5 is not positive at line 42' in text for text in warnings)


@pytest.mark.parametrize('scale', [1e300, 1e-12])
def test_prices_of_a_degenerate_scale_are_refused(tmp_path, scale):
    frame = bars()
    frame[['open', 'high', 'low', 'close']] *= scale
    path = written(tmp_path, frame)
    with pytest.raises(DataError, match=r'data file <{}>: open \S+ lies outside 1e-08 \.\. 1e\+12 at line 1 '
                                        r'.*; 500 bar'.format(path)):
        read_ohlcv(path)


def test_constant_close_prices_are_refused_but_can_be_accepted(tmp_path):
    frame = bars()
    frame[['open', 'high', 'low', 'close']] = 1.25
    path = written(tmp_path, frame)
    with pytest.raises(DataError, match=r'data file <{}>: column close is 1.25 in all 500 bars \(zero variance'.format(
            path)):
        read_ohlcv(path)
    loaded, _ = warnings_of(path, checks={'constant_prices': 'off'})
    assert np.all(loaded['close'].to_numpy() == 1.25)


def test_unsorted_rows_are_sorted_with_a_warning_or_refused(tmp_path):
    frame = bars()
    order = np.arange(500)
    order[[99, 100]] = order[[100, 99]]
    path = written(tmp_path, frame.iloc[order])
    loaded, warnings = warnings_of(path)
    assert list(loaded.index) == list(frame.index)
    assert warnings == ['data file <{}>: datetime of line 101 ({}) is earlier than the bar before it; the bars '
                        'are sorted by time'.format(path, frame.index[99])]
    with pytest.raises(DataError, match=r'datetime of line 101 .* earlier .*unsorted_timestamps'):
        read_ohlcv(path, {'checks': {'unsorted_timestamps': 'error'}})


def test_duplicated_timestamps_keep_the_first_bar_with_a_warning_or_are_refused(tmp_path):
    frame = bars()
    doubled = frame.iloc[np.r_[0:300, 250:260, 300:500]].copy()
    doubled.iloc[300:310, doubled.columns.get_loc('close')] += 0.5  # the repeats differ: the first must be kept
    path = written(tmp_path, doubled.sort_index(kind='stable'))
    loaded, warnings = warnings_of(path)
    np.testing.assert_array_equal(loaded['close'].to_numpy(), frame['close'].to_numpy())
    assert len(warnings) == 1 and 'dropped 10 bar(s) with duplicated timestamps' in warnings[0]
    assert 'line 252 ({})'.format(frame.index[250]) in warnings[0]
    with pytest.raises(DataError, match='duplicated_timestamps'):
        read_ohlcv(path, {'checks': {'duplicated_timestamps': 'error'}})


def test_a_clean_file_passes_every_check_silently(tmp_path):
    frame, warnings = warnings_of(written(tmp_path, bars()))
    assert len(frame) == 500 and warnings == []
