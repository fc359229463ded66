"""`ColumnPreloadedData` against backtrader's own bar-by-bar preload of the same DataFrame."""
import datetime

import backtrader as bt
import numpy as np
import pandas as pd
import pytest

from btgym_aac.data import BTgymDataset, make_sine_data
from btgym_aac.data.base import FEED_COLUMNS
from btgym_aac.data.backtrader_feeds import ColumnPreloadedData


def preloaded_lines(feed_class, frame, **kwargs):
    """Every line's buffer, index and length after `preload()`, as a Cerebro leaves them."""
    feed = feed_class(dataname=frame, timeframe=bt.TimeFrame.Minutes, compression=1, **dict(FEED_COLUMNS, **kwargs))
    feed.setenvironment(bt.Cerebro())
    feed._start()
    feed.preload()
    return {name: (np.asarray(getattr(feed.lines, name).array), getattr(feed.lines, name).idx, len(feed))
            for name in feed.getlinealiases()}


def episode_frame():
    dataset = BTgymDataset(dataframe=make_sine_data(num_bars=4000), episode_duration={'days': 0, 'hours': 6,
                                                                                      'minutes': 0})
    dataset.seed(0)
    dataset.reset()
    trial = dataset.sample()
    trial.reset()
    return trial.sample().data


@pytest.mark.parametrize('kwargs', [{}, {'openinterest': 5}])
def test_column_preload_leaves_the_lines_as_bar_by_bar_preload(kwargs):
    frame = episode_frame()
    frame.iloc[3, 2] = np.nan  # a missing price travels as NaN both ways
    expected = preloaded_lines(bt.feeds.PandasDirectData, frame, **kwargs)
    got = preloaded_lines(ColumnPreloadedData, frame, **kwargs)
    assert set(got) == set(expected) == {'datetime', 'open', 'high', 'low', 'close', 'volume', 'openinterest'}
    for name, (values, index, length) in expected.items():
        assert len(values) == len(frame) > 300
        np.testing.assert_array_equal(got[name][0], values, err_msg=name)
        assert got[name][1:] == (index, length) == (-1, 0)
    assert np.isnan(got['openinterest'][0]).all() == (not kwargs)


def test_date_bounds_are_applied_bar_by_bar():
    frame = episode_frame()
    start = frame.index[10].to_pydatetime()
    expected = preloaded_lines(bt.feeds.PandasDirectData, frame, fromdate=start)
    got = preloaded_lines(ColumnPreloadedData, frame, fromdate=start)
    np.testing.assert_array_equal(got['datetime'][0], expected['datetime'][0])
    assert len(got['close'][0]) == len(frame) - 10


def test_datetimes_keep_seconds_and_microseconds():
    index = pd.DatetimeIndex([datetime.datetime(2020, 1, 2, 3, 4, 5, 678901),
                              datetime.datetime(2020, 1, 2, 23, 59, 59)])
    frame = pd.DataFrame({'open': [1.0, 2.0], 'high': [1.0, 2.0], 'low': [1.0, 2.0], 'close': [1.0, 2.0],
                          'volume': [0.0, 1.0]}, index=index)
    got = preloaded_lines(ColumnPreloadedData, frame)['datetime'][0]
    np.testing.assert_array_equal(got, preloaded_lines(bt.feeds.PandasDirectData, frame)['datetime'][0])
    assert abs(bt.num2date(got[0]) - index[0].to_pydatetime()) <= datetime.timedelta(microseconds=2)  # float days
