"""Every error (and warning) about a bar of a data file names the file and the line an editor shows for it: 1-based,
counting the header line and blank lines (empty or only spaces and tabs, which the reader skips)."""
import logbook
import pytest

from btgym_aac.data import make_random_walk_data, write_histdata_csv
from btgym_aac.data.bid_ask import read_ticks
from btgym_aac.data.errors import DataError
from btgym_aac.data.parsing import read_ohlcv

BAD_LINE = 40
"""The line of the broken bar in `with_blank_lines`."""


def with_blank_lines(tmp_path, change, name='bars.csv'):
    """A HistData file with a header, an empty line (line 5) and a line of spaces and a tab (line 12), whose bar on
    line `BAD_LINE` is `change`d ({field position: new text}); returns (its path, the bar's time)."""
    clean = write_histdata_csv(make_random_walk_data(num_bars=100, seed=3), tmp_path / 'clean.csv', header=True)
    lines = clean.read_text().splitlines()
    lines.insert(4, '')
    lines.insert(11, '  \t ')
    fields = lines[BAD_LINE - 1].split(';')
    time = fields[0]
    for position, text in change.items():
        fields[position] = text
    lines[BAD_LINE - 1] = ';'.join(fields)
    path = tmp_path / name
    path.write_text('\n'.join(lines) + '\n')
    return path, '{}-{}-{} {}:{}:{}'.format(time[:4], time[4:6], time[6:8], time[9:11], time[11:13], time[13:])


@pytest.mark.parametrize('change, message', [
    ({0: '2017x'}, r"cannot parse date/time value '2017x' at line {line}$"),
    ({2: 'abc'}, r"bar at line {line} \({time}\) has missing, non-numeric or infinite \['high'\]"),
    ({2: ''}, r"bar at line {line} \({time}\) has missing, non-numeric or infinite \['high'\]"),
    ({1: '-1.05'}, r"open -1.05 is not positive at line {line} \({time}\); 1 bar\(s\) like it"),
    ({2: '0.5', 3: '0.9'}, r'bar at line {line} \({time}\) has high < low \(0.5 < 0.9\)'),
], ids=['date', 'text', 'empty', 'negative', 'high-below-low'])
def test_an_error_names_the_file_and_the_line_past_blank_lines(tmp_path, change, message):
    path, time = with_blank_lines(tmp_path, change)
    with pytest.raises(DataError, match=r'data file <{}>: '.format(path)) as refused:
        read_ohlcv(path)
    assert refused.match(message.format(line=BAD_LINE, time=time))


def test_a_dataframe_error_names_the_row(tmp_path):
    frame = make_random_walk_data(num_bars=50, seed=3)
    frame.iloc[6, frame.columns.get_loc('close')] = float('nan')
    with pytest.raises(DataError, match=r"DataFrame: bar at row 7 \({}\) has missing, non-numeric or infinite "
                                        r"\['close'\]".format(frame.index[6])):
        read_ohlcv(frame)


def test_a_timestamp_warning_names_the_line_of_the_bar(tmp_path):
    path, _ = with_blank_lines(tmp_path, {})
    lines = path.read_text().splitlines()
    lines[BAD_LINE] = lines[BAD_LINE - 2]  # the line after line BAD_LINE repeats the bar before it
    path.write_text('\n'.join(lines) + '\n')
    with logbook.TestHandler() as handler:
        read_ohlcv(path)
    warnings = [record.message for record in handler.records if record.level == logbook.WARNING]
    assert len(warnings) == 2
    assert 'datetime of line {} ('.format(BAD_LINE + 1) in warnings[0] and 'earlier' in warnings[0]
    assert 'datetime of line {} ('.format(BAD_LINE + 1) in warnings[1] and 'repeats' in warnings[1]


def test_a_bar_repeating_one_of_an_earlier_file_is_named_by_its_file_and_line(tmp_path):
    first, _ = with_blank_lines(tmp_path, {}, name='first.csv')
    lines = first.read_text().splitlines()
    second = tmp_path / 'second.csv'
    second.write_text('\n'.join([lines[0], ''] + lines[60:]) + '\n')  # line 3 on: the bars of first.csv's line 61 on
    with logbook.TestHandler() as handler:
        read_ohlcv([first, str(second)])
    warnings = [record.message for record in handler.records if record.level == logbook.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith('data file <{}>: the bar at line 3 ('.format(second))
    assert 'repeats the time of a bar in an earlier source' in warnings[0]


def test_a_tick_file_error_names_the_line_past_blank_lines(tmp_path):
    path = tmp_path / 'ticks.csv'
    path.write_text('20170102 000000000,1.05,1.06,0\n\n20170102 000001000,1.05,1.06,0\n \n'
                    '20170102 000002000,1.05,x,0\n')
    with pytest.raises(DataError, match=r'tick file <{}>: tick at line 5 \(2017-01-02 00:00:02\) has a missing or '
                                        r'non-numeric price'.format(path)):
        read_ticks(path)
    path.write_text('20170102 000000000,1.05,1.06,0\n\n20170102 0000x1000,1.05,1.06,0\n')
    with pytest.raises(DataError, match=r"tick file <{}>: cannot parse date/time value '20170102 0000x1000' at "
                                        r'line 3'.format(path)):
        read_ticks(path)
