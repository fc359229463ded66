"""Bid/ask data (`btgym_aac.data.bid_ask`, the parser's bid/ask and spread columns) and the broker charging each
bar's spread (`spread='data'`): mid prices and spreads computed by hand, fills on the ask for buys and on the bid
for sells, refusals naming what is wrong."""
import backtrader as bt
import numpy as np
import pandas as pd
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.data import (BTgymDataset, BTgymMultiData, DataError, make_correlated_walks, make_sine_data,
                            read_ohlcv, write_histdata_csv)
from btgym_aac.data.base import BTgymBaseData
from btgym_aac.data.bid_ask import merge_bid_ask, read_ticks, tick_bars, write_bars_csv
from btgym_aac.env import MultiDiscreteEnv
from btgym_aac.env.costs import COST_DEFAULTS, cost_broker
from btgym_aac.evaluation.trade_log import TRADE_LOG_NAME, TradeLog
from btgym_aac.strategy import DevStrat_4_11, MultiAssetStrategy

TIMES = pd.date_range('2017-01-02 09:00', periods=4, freq='1min')
BID = pd.DataFrame({'open': [1.1000, 1.1004, 1.1001, 1.1006], 'high': [1.1006, 1.1008, 1.1007, 1.1009],
                    'low': [1.0998, 1.1000, 1.0999, 1.1003], 'close': [1.1004, 1.1001, 1.1006, 1.1005],
                    'volume': [3.0, 1.0, 4.0, 2.0]}, index=TIMES)
ASK = pd.DataFrame({'open': [1.1002, 1.1005, 1.1004, 1.1007], 'high': [1.1008, 1.1010, 1.1008, 1.1011],
                    'low': [1.1000, 1.1001, 1.1001, 1.1004], 'close': [1.1005, 1.1003, 1.1007, 1.1006],
                    'volume': 0.0}, index=TIMES)
SPREADS = [0.0002, 0.0001, 0.0003, 0.0001]


def expected_mid():
    frame = (BID[['open', 'high', 'low', 'close']] + ASK[['open', 'high', 'low', 'close']]) / 2
    frame['volume'] = BID['volume']
    frame['spread'] = ASK['open'] - BID['open']
    return frame


def bid_ask_csv(path, frame_bid=BID, frame_ask=ASK, drop=()):
    """Writes a CSV with a Date column and Bid_Open ... Ask_Close columns (`drop`: column names left out)."""
    table = pd.DataFrame(index=pd.Index(TIMES.strftime('%Y-%m-%d %H:%M:%S'), name='Date'))
    for side, frame in (('Bid', frame_bid), ('Ask', frame_ask)):
        for price in ('Open', 'High', 'Low', 'Close'):
            table['{}_{}'.format(side, price)] = frame[price.lower()].to_numpy()
    table['Volume'] = BID['volume'].to_numpy()
    table.drop(columns=list(drop)).to_csv(path)
    return str(path)


def test_a_csv_of_bid_and_ask_prices_reads_as_mid_prices_and_the_spread_at_the_open(tmp_path):
    frame = read_ohlcv(bid_ask_csv(tmp_path / 'quotes.csv'))
    assert list(frame.columns) == ['open', 'high', 'low', 'close', 'volume', 'spread']
    pd.testing.assert_frame_equal(frame, expected_mid(), check_names=False, check_freq=False, check_index_type=False,
                                  rtol=0, atol=1e-15)
    assert frame['spread'].to_numpy() == pytest.approx(SPREADS, abs=1e-15)


def test_a_spread_column_is_read_as_given(tmp_path):
    path = tmp_path / 'bars.csv'
    table = BID.copy()
    table['spread'] = SPREADS
    table.to_csv(path, index_label='datetime')
    frame = read_ohlcv(str(path))
    assert frame['spread'].tolist() == SPREADS and frame['close'].tolist() == BID['close'].tolist()


@pytest.mark.parametrize('make, message', [
    (lambda path: bid_ask_csv(path, drop=('Ask_Low',)),
     'has bid/ask price column.*Bid_Open|bid_open.*but not ask_low'),
    (lambda path: bid_ask_csv(path, frame_ask=ASK.assign(open=ASK['open'] - [0, 0, 0.0005, 0])),
     r'bad.csv>: bar at line 4 \(2017-01-02 09:02:00\) has a negative spread -0.000\d+ \(its ask is below its bid\)'),
])
def test_bad_bid_ask_data_is_refused_naming_the_problem(tmp_path, make, message):
    with pytest.raises(DataError, match=message):
        read_ohlcv(make(tmp_path / 'bad.csv'))


def test_files_with_and_without_a_spread_are_not_read_together(tmp_path):
    with_spread = bid_ask_csv(tmp_path / 'quotes.csv')
    plain = write_histdata_csv(BID.set_axis(TIMES + pd.Timedelta(minutes=4)), str(tmp_path / 'plain.csv'))
    with pytest.raises(DataError, match=r'quotes\.csv> give a spread .*plain\.csv> do not'):
        read_ohlcv([with_spread, plain])


def test_bid_and_ask_files_merge_on_their_common_times(tmp_path):
    bid = write_histdata_csv(BID, str(tmp_path / 'bid.csv'))
    extra = pd.DataFrame([[1.1, 1.1, 1.1, 1.1, 0.0]], columns=ASK.columns, index=[TIMES[-1] + pd.Timedelta('1min')])
    ask = write_histdata_csv(pd.concat([ASK, extra]), str(tmp_path / 'ask.csv'))
    frame = merge_bid_ask(bid, ask)
    pd.testing.assert_frame_equal(frame, expected_mid(), check_names=False, check_freq=False, check_index_type=False,
                                  rtol=0, atol=1e-15)
    with pytest.raises(DataError, match='have no bar time in common'):
        merge_bid_ask(bid, write_histdata_csv(extra, str(tmp_path / 'late.csv')))


HISTDATA_TICKS = ['20170102 090000123,1.05150,1.05170,0', '20170102 090020500,1.05160,1.05175,0',
                  '20170102 090059999,1.05140,1.05150,0', '20170102 090100000,1.05130,1.05160,0',
                  '20170102 090310000,1.05200,1.05210,0']


@pytest.mark.parametrize('header', [False, True])
def test_ticks_resample_to_mid_bars_with_the_first_ticks_spread(tmp_path, header):
    path = tmp_path / 'ticks.csv'
    lines = HISTDATA_TICKS if not header else ['DateTime,Bid,Ask,Volume'] + HISTDATA_TICKS
    path.write_text('\n'.join(lines) + '\n')
    ticks = read_ticks(str(path))
    assert ticks.index[1] == pd.Timestamp('2017-01-02 09:00:20.500') and ticks['ask'].iloc[0] == 1.05170
    bars = tick_bars(ticks)
    # 09:00: bid o/h/l/c 1.05150/1.05160/1.05140/1.05140, ask 1.05170/1.05175/1.05150/1.05150
    assert bars.index.tolist() == [pd.Timestamp('2017-01-02 09:00'), pd.Timestamp('2017-01-02 09:01'),
                                   pd.Timestamp('2017-01-02 09:03')]  # no tick, no bar at 09:02
    assert bars.iloc[0].tolist() == pytest.approx([1.0516, 1.051675, 1.05145, 1.05145, 3, 0.0002], abs=1e-12)
    assert bars.iloc[1].tolist() == pytest.approx([1.05145, 1.05145, 1.05145, 1.05145, 1, 0.0003], abs=1e-12)
    assert bars.iloc[2]['spread'] == pytest.approx(0.0001, abs=1e-12)
    assert tick_bars(ticks, minutes=5).iloc[0]['volume'] == 5
    written = write_bars_csv(bars, str(tmp_path / 'bars.csv'))
    pd.testing.assert_frame_equal(read_ohlcv(written), bars, check_freq=False, rtol=0, atol=0)


def test_bad_ticks_and_bar_sizes_are_refused_naming_them(tmp_path):
    path = tmp_path / 'ticks.csv'
    path.write_text('DateTime,Bid,Volume\n20170102 090000123,1.05150,0\n')
    with pytest.raises(DataError, match='ticks.csv>: has a bid column but no ask column'):
        read_ticks(str(path))
    path.write_text('20170102 090000123,1.05150,oops,0\n')
    with pytest.raises(DataError, match=r'tick at line 1 \(2017-01-02 09:00:00.123000\) has a missing or '
                                        r'non-numeric price'):
        read_ticks(str(path))
    with pytest.raises(ValueError, match='minutes must be a whole number >= 1, got 0'):
        tick_bars(pd.DataFrame({'bid': [1.0], 'ask': [1.1]}, index=TIMES[:1]), minutes=0)


class Placed(bt.Strategy):
    """A market buy on bar 1, a sell stop at 1.10015 on bar 2 (both sized 1000)."""

    def next(self):
        if len(self) == 1:
            self.buy(size=1000)
        elif len(self) == 2:
            self.sell(size=1000, exectype=bt.Order.Stop, price=1.10015)


def test_the_broker_charges_each_bars_spread_from_the_data(tmp_path):
    data = BTgymBaseData(filename=bid_ask_csv(tmp_path / 'quotes.csv'))
    data.reset()
    cerebro = bt.Cerebro(stdstats=False)
    cerebro.setbroker(cost_broker(dict(COST_DEFAULTS, spread='data')))
    cerebro.broker.setcash(10000.0)
    cerebro.adddata(data.to_btfeed()['default_asset'])
    cerebro.addstrategy(Placed)
    cerebro.addanalyzer(TradeLog, _name=TRADE_LOG_NAME)
    strategy = cerebro.run()[0]
    fills = strategy.analyzers.getbyname(TRADE_LOG_NAME).get_analysis()['fills']
    # the buy fills at bar 1's ask open; bar 2's bid opens below the sell stop's 1.10015, so it fills at that open:
    # the prices of the ask and bid files
    assert [fill['price'] for fill in fills] == pytest.approx([ASK['open'].iloc[1], BID['open'].iloc[2]], abs=1e-12)
    assert [fill['spread_cost'] for fill in fills] == pytest.approx([0.05, 0.15], abs=1e-12)
    assert strategy.broker.costs['spread'] == pytest.approx(0.2, abs=1e-12)


@pytest.fixture(scope='module')
def sine_with_spread(tmp_path_factory):
    """A sine series whose spread cycles through 1, 2 and 3 pips (0.0001 ... 0.0003), written with its spread."""
    frame = make_sine_data(num_bars=6000)
    frame['spread'] = 0.0001 * (1 + np.arange(len(frame)) % 3)
    return frame, write_bars_csv(frame, str(tmp_path_factory.mktemp('data') / 'sine_spread.csv'))


def test_an_env_episode_fills_buys_on_the_ask_and_sells_on_the_bid_of_each_bar(sine_with_spread):
    frame, path = sine_with_spread
    env = BTgymEnv(filename=path, strategy=DevStrat_4_11, render_enabled=False, spread='data', start_cash=2000,
                   broker_commission=0.0, fixed_stake=100, drawdown_call=90, target_call=90)
    env.engine.addanalyzer(TradeLog, _name=TRADE_LOG_NAME)
    rng = np.random.default_rng(3)
    env.reset(seed=3)
    done = False
    while not done:
        _, _, done, _, _ = env.step(int(rng.integers(4)))
    fills, costs_paid = env.get_stat()[TRADE_LOG_NAME]['fills'], env._finished_strategy.broker.costs
    env.close()
    assert len(fills) > 4
    bars = frame.loc[[pd.Timestamp(fill['time']) for fill in fills]]
    signs = np.sign([fill['size'] for fill in fills])
    assert [fill['price'] for fill in fills] == pytest.approx(bars['open'] + signs * bars['spread'] / 2, abs=1e-12)
    sizes = np.abs([fill['size'] for fill in fills])
    assert costs_paid['spread'] == pytest.approx(float((bars['spread'].to_numpy() / 2 * sizes).sum()), abs=1e-9)


def test_spread_from_data_without_a_spread_is_refused_naming_the_line(tmp_path):
    path = write_histdata_csv(make_sine_data(num_bars=6000), str(tmp_path / 'sine.csv'))
    env = BTgymEnv(filename=path, strategy=DevStrat_4_11, render_enabled=False, spread='data')
    try:
        with pytest.raises(ValueError, match=r"spread='data' .* data line\(s\) \['default_asset'\] have none"):
            env.reset(seed=0)
    finally:
        env.close()


def test_each_asset_of_a_multi_asset_env_pays_its_own_spread():
    frames = make_correlated_walks(num_bars=2 * 1440, names=('A', 'B'), correlation=0.3, seed=0)
    spreads = {'A': 0.0002, 'B': 0.0006}
    data_config = {name: {'filename': None, 'dataframe': frame.assign(spread=spreads[name])}
                   for name, frame in frames.items()}
    dataset = BTgymMultiData(data_class_ref=BTgymDataset, data_config=data_config,
                             episode_duration={'days': 0, 'hours': 5, 'minutes': 0}, time_gap={'hours': 1})
    env = MultiDiscreteEnv(dataset=dataset, strategy=MultiAssetStrategy, asset_names=['A', 'B'], start_cash=10000,
                           broker_commission=0.0, drawdown_call=90, target_call=90, order_size={'A': 100, 'B': 100},
                           spread='data', render_enabled=False)
    env.engine.addanalyzer(TradeLog, _name=TRADE_LOG_NAME)
    rng = np.random.default_rng(1)
    env.reset(seed=1)
    done = False
    while not done:
        _, _, done, _, _ = env.step({'A': int(rng.integers(4)), 'B': int(rng.integers(4))})
    fills = env.get_stat()[TRADE_LOG_NAME]['fills']
    env.close()
    assert {fill['asset'] for fill in fills} == {'A', 'B'}
    for fill in fills:
        bar_open = frames[fill['asset']].loc[pd.Timestamp(fill['time']), 'open']
        assert fill['price'] == pytest.approx(bar_open + np.sign(fill['size']) * spreads[fill['asset']] / 2, abs=1e-12)
        assert fill['spread_cost'] == pytest.approx(abs(fill['size']) * spreads[fill['asset']] / 2, abs=1e-12)
