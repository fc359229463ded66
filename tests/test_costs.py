"""Costs on backtrader's broker (`env.costs`): fill prices with a spread and slippage computed by hand on small bar
series, commissions per scheme, costs recorded per fill and summed per episode, and the env and evaluation
settings."""
import backtrader as bt
import numpy as np
import pandas as pd
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.data import make_sine_data
from btgym_aac.env.costs import COST_DEFAULTS, check_costs, cost_broker
from btgym_aac.evaluation.metrics import episode_metrics
from btgym_aac.evaluation.trade_log import TRADE_LOG_NAME, TradeLog
from btgym_aac.strategy import DevStrat_4_11

BARS = pd.DataFrame({
    'open': [1.1000, 1.1010, 1.1020, 1.1015, 1.1030, 1.1040, 1.1035],
    'high': [1.1012, 1.1025, 1.1030, 1.1032, 1.1045, 1.1050, 1.1041],
    'low': [1.0995, 1.1005, 1.1011, 1.1010, 1.1026, 1.1031, 1.1020],
    'close': [1.1010, 1.1020, 1.1015, 1.1030, 1.1040, 1.1035, 1.1025],
    'volume': 0.0,
}, index=pd.date_range('2017-01-02 09:00', periods=7, freq='1min'))
SIZE = 1000


class Scripted(bt.Strategy):
    """Market orders of SIZE units: a buy on the first bar, a sell of twice the size on the third, a buy back on
    the fifth; they fill at the opens of the bars after (rows 1, 3 and 5)."""
    params = (('orders', {1: SIZE, 3: -2 * SIZE, 5: SIZE}), ('exectype', None))

    def next(self):
        size = self.p.orders.get(len(self))
        if size:
            (self.buy if size > 0 else self.sell)(size=abs(size), exectype=self.p.exectype)


def run(costs, commission=0.0, exectype=None):
    """Runs `Scripted` over BARS with a `cost_broker(costs)`; returns (strategy, trade log analysis)."""
    cerebro = bt.Cerebro(stdstats=False)
    cerebro.setbroker(cost_broker(dict(COST_DEFAULTS, **costs)))
    cerebro.broker.setcash(10000.0)
    cerebro.broker.apply_commission(commission)
    cerebro.adddata(bt.feeds.PandasData(dataname=BARS))
    cerebro.addstrategy(Scripted, exectype=exectype)
    cerebro.addanalyzer(TradeLog, _name=TRADE_LOG_NAME)
    strategy = cerebro.run()[0]
    return strategy, strategy.analyzers.getbyname(TRADE_LOG_NAME).get_analysis()


def expected_fills(spread=0.0, slippage=0.0, slippage_fixed=0.0):
    """(fill price, side's open) of the three fills, computed from the bars by hand: a buy fills at the ask's open
    (the open plus half the spread), a sell at the bid's; backtrader moves that price by its slippage and caps it at
    the side's high (buys) or low (sells)."""
    fills = []
    for row, sign in ((1, 1), (3, -1), (5, 1)):
        half = sign * spread / 2
        reference = BARS['open'].iloc[row] + half
        moved = reference * (1 + sign * slippage) if slippage else reference + sign * slippage_fixed
        fill = min(moved, BARS['high'].iloc[row] + half) if sign > 0 else max(moved, BARS['low'].iloc[row] + half)
        fills.append((fill, reference))
    return fills


@pytest.mark.parametrize('costs', [
    {}, {'spread': 0.0002}, {'slippage': 0.0005}, {'slippage_fixed': 0.0003}, {'spread': 0.0002, 'slippage': 0.0005},
    {'spread': 0.0004, 'slippage': 0.002},  # slippage beyond the bars' range: capped at the high / low
])
def test_fill_prices_and_recorded_costs_match_a_hand_computation(costs):
    strategy, log = run(costs)
    fills = expected_fills(**costs)
    sizes = [SIZE, 2 * SIZE, SIZE]
    assert [fill['price'] for fill in log['fills']] == pytest.approx([price for price, _ in fills], abs=1e-12)
    assert [fill['order'] for fill in log['fills']] == ['market'] * 3
    spread_costs = [costs.get('spread', 0.0) / 2 * size for size in sizes]
    slippage_costs = [abs(price - reference) * size for (price, reference), size in zip(fills, sizes)]
    assert [fill['spread_cost'] for fill in log['fills']] == pytest.approx(spread_costs, abs=1e-9)
    assert [fill['slippage_cost'] for fill in log['fills']] == pytest.approx(slippage_costs, abs=1e-9)
    costs_paid = strategy.broker.costs
    assert costs_paid['spread'] == pytest.approx(sum(spread_costs), abs=1e-9)
    assert costs_paid['slippage'] == pytest.approx(sum(slippage_costs), abs=1e-9)
    if costs.get('spread'):
        assert costs_paid['spread'] == pytest.approx(costs['spread'] / 2 * 4 * SIZE)
    # the broker's value is the cash after the fills at those prices plus the position at the last close
    cash = 10000.0 - fills[0][0] * SIZE + fills[1][0] * 2 * SIZE - fills[2][0] * SIZE
    assert strategy.broker.getvalue() == pytest.approx(cash, abs=1e-9)


@pytest.mark.parametrize('scheme,commission,per_fill', [
    ('percent', 0.0001, lambda price, size: 0.0001 * price * size),
    ('per_unit', 0.00002, lambda price, size: 0.00002 * size),
])
def test_commission_schemes(scheme, commission, per_fill):
    strategy, log = run({'commission_scheme': scheme, 'spread': 0.0002}, commission=commission)
    expected = [per_fill(fill['price'], abs(fill['size'])) for fill in log['fills']]
    assert [fill['commission'] for fill in log['fills']] == pytest.approx(expected, rel=1e-12)
    assert strategy.broker.costs['commission'] == pytest.approx(sum(expected), rel=1e-12)
    metrics = episode_metrics([0.0], [10000.0, strategy.broker.getvalue()], [10000.0], log)
    assert metrics['commission'] == pytest.approx(strategy.broker.costs['commission'], rel=1e-12)
    assert metrics['spread_cost'] == pytest.approx(strategy.broker.costs['spread'], rel=1e-12)
    assert metrics['slippage_cost'] == 0.0


class Placed(bt.Strategy):
    """Places `orders`: {bar number: (size (> 0 buy, < 0 sell), exectype, price)}."""
    params = (('orders', {}),)

    def next(self):
        placed = self.p.orders.get(len(self))
        if placed:
            size, exectype, price = placed
            (self.buy if size > 0 else self.sell)(size=abs(size), exectype=exectype, price=price)


def placed_fills(orders, spread):
    """[(bar number, price, order type)] of the fills of `Placed(orders)` over BARS with a spread, and the broker's
    costs."""
    cerebro = bt.Cerebro(stdstats=False)
    cerebro.setbroker(cost_broker(dict(COST_DEFAULTS, spread=spread)))
    cerebro.broker.setcash(10000.0)
    cerebro.adddata(bt.feeds.PandasData(dataname=BARS))
    cerebro.addstrategy(Placed, orders=orders)
    cerebro.addanalyzer(TradeLog, _name=TRADE_LOG_NAME)
    strategy = cerebro.run()[0]
    fills = strategy.analyzers.getbyname(TRADE_LOG_NAME).get_analysis()['fills']
    rows = {time: row for row, time in enumerate(BARS.index)}
    return [(rows[pd.Timestamp(fill['time'])], fill['price'], fill['order']) for fill in fills], strategy.broker.costs


@pytest.mark.parametrize('spread,expected', [
    (0.0, [(1, 1.1006, 'limit'), (4, 1.1030, 'stop')]),  # the limit fills at its price on bar 1's low; the stop
    (0.0004, [(3, 1.1009, 'stop'), (4, 1.1032, 'stop')]),  # at bar 4's open. The ask's low (low + 0.0002) never
])  # reaches the buy limit; the bid's low on bar 3 triggers the sell stop; the buy stop fills at the ask's open
def test_limit_and_stop_orders_are_matched_against_the_ask_for_buys_and_the_bid_for_sells(spread, expected):
    orders = {1: (SIZE, bt.Order.Limit, 1.1006), 3: (-SIZE, bt.Order.Stop, 1.1009), 4: (SIZE, bt.Order.Stop, 1.1025)}
    fills, costs_paid = placed_fills(orders, spread)
    assert [(row, order) for row, _, order in fills] == [(row, order) for row, _, order in expected]
    assert [price for _, price, _ in fills] == pytest.approx([price for _, price, _ in expected], abs=1e-12)
    assert costs_paid['spread'] == pytest.approx(spread / 2 * SIZE * len(fills), abs=1e-12)
    assert costs_paid['slippage'] == 0.0


@pytest.mark.parametrize('costs,message', [
    ({'spread': -1e-4}, 'spread must be a finite number >= 0'),
    ({'spread': 'bid/ask'}, "spread must be a finite number >= 0 or 'data' .* got 'bid/ask'"),
    ({'slippage': 1.5}, r'slippage must be a finite number in \[0, 1\]'),
    ({'slippage_fixed': float('nan')}, 'slippage_fixed must be a finite number >= 0'),
    ({'slippage': 1e-4, 'slippage_fixed': 1e-4}, 'not both'),
    ({'commission_scheme': 'per_pip'}, "commission_scheme must be one of .*'per_pip'"),
])
def test_bad_cost_settings_are_refused_naming_them(costs, message):
    with pytest.raises(ValueError, match=message):
        check_costs(dict(COST_DEFAULTS, **costs))
    with pytest.raises(ValueError, match=message):
        BTgymEnv(strategy=DevStrat_4_11, render_enabled=False, **costs)


def test_env_costs_lower_the_broker_value_by_what_the_fills_paid():
    """The same seeded episode with and without costs: same trades, and the final value lower by the costs paid."""
    def episode(**costs):
        env = BTgymEnv(strategy=DevStrat_4_11, render_enabled=False,
                       start_cash=2000, broker_commission=0.0, fixed_stake=100, drawdown_call=90, target_call=90,
                       **costs)
        env.engine.addanalyzer(TradeLog, _name=TRADE_LOG_NAME)
        rng = np.random.default_rng(5)
        _, info = env.reset(seed=5)
        values, done = [info['broker_value']], False
        while not done:
            _, _, done, _, info = env.step(int(rng.integers(4)))
            values.append(info['broker_value'])
        log = env.get_stat()[TRADE_LOG_NAME]
        costs_paid = env._finished_strategy.broker.costs
        env.close()
        return values, log, costs_paid

    plain_values, plain_log, plain_costs = episode()
    values, log, costs_paid = episode(spread=0.01, slippage=0.0005)
    assert len(log['fills']) == len(plain_log['fills']) > 4
    assert [fill['size'] for fill in log['fills']] == [fill['size'] for fill in plain_log['fills']]
    assert plain_costs == {'commission': 0.0, 'spread': 0.0, 'slippage': 0.0}
    assert costs_paid['spread'] == pytest.approx(0.005 * sum(abs(fill['size']) for fill in log['fills']))
    assert costs_paid['slippage'] > 0
    assert sum(fill['spread_cost'] + fill['slippage_cost'] for fill in log['fills']) == pytest.approx(
        costs_paid['spread'] + costs_paid['slippage'])
    # every position is closed at the end: the difference in value is exactly what the fills paid
    assert plain_values[-1] - values[-1] == pytest.approx(costs_paid['spread'] + costs_paid['slippage'], rel=1e-9)


# ----------------------------------------------------------------------------------- costs against the prices

EURUSD_LIKE = make_sine_data(num_bars=2000, base=1.0523)
"""Bars whose median close is 1.0523 (the sine swings symmetrically about it)."""


@pytest.mark.parametrize('costs, message', [
    ({'spread': 1}, 'spread 1 is 95 % of the median close 1.0523 of a DataFrame: the spread is in price units (one '
                    'pip of EURUSD is 0.0001); costs above 1 % of the price are refused'),
    ({'slippage': 0.5}, 'slippage 0.5 is 50 % of the price: slippage is a fraction of the price, not a percent '
                        '(0.0001 is 0.01 %)'),
    ({'slippage_fixed': 0.05}, 'slippage_fixed 0.05 is 4.75 % of the median close 1.0523 of a DataFrame: '
                               'slippage_fixed is in price units'),
    ({'commission': 0.05, 'commission_scheme': 'per_unit'},
     'commission 0.05 (per_unit scheme) is 4.75 % of the median close 1.0523 of a DataFrame: a per_unit commission '
     'is money per unit traded, in price units'),
    ({'broker_commission': 0.02}, 'commission 0.02 (percent scheme) is 2 % of the traded value: a percent commission '
                                  'is a fraction of the traded value, not a percent'),
])
def test_costs_out_of_all_proportion_to_the_price_are_refused_naming_the_price_and_the_unit(costs, message):
    with pytest.raises(ValueError) as refused:
        BTgymEnv(strategy=DevStrat_4_11, dataframe=EURUSD_LIKE, render_enabled=False, **costs)
    assert message in str(refused.value)


def test_large_costs_are_warned_of_and_usual_ones_pass_in_silence(capfd):
    """A spread of 20 pips on EURUSD (0.19 % of the price) builds the env with a warning naming it (from task 0's env
    alone: a run's other envs keep quiet); a 1-pip spread, a spread from the data and a typical slippage and
    commission build it without a word."""
    BTgymEnv(strategy=DevStrat_4_11, dataframe=EURUSD_LIKE, render_enabled=False, spread=0.002)
    err = capfd.readouterr().err
    assert 'WARNING BTgymEnv_0: spread 0.002 is 0.19 % of the median close 1.0523 of a DataFrame, a large cost ' \
           '(above 0.1 % of the price): the spread is in price units (one pip of EURUSD is 0.0001)' in err
    BTgymEnv(strategy=DevStrat_4_11, dataframe=EURUSD_LIKE, render_enabled=False, spread=0.002, task=1)
    assert capfd.readouterr().err == ''
    for costs in ({'spread': 0.0001, 'slippage': 0.0001, 'commission': 0.0001},
                  {'spread': 'data', 'slippage_fixed': 0.00002, 'commission': 0.00005,
                   'commission_scheme': 'per_unit'}):
        BTgymEnv(strategy=DevStrat_4_11, dataframe=EURUSD_LIKE.assign(spread=0.0001), render_enabled=False, **costs)
        assert capfd.readouterr().err == ''


def test_the_env_reports_the_costs_its_broker_charges():
    """`cost_settings` holds the broker's settings, with the strategy's commission over the broker's."""
    env = BTgymEnv(strategy=DevStrat_4_11, dataframe=EURUSD_LIKE, render_enabled=False, spread=0.0002,
                   slippage_fixed=0.00001, broker_commission=0.0003, commission_scheme='per_unit')
    assert env.cost_settings() == {'spread': 0.0002, 'slippage': 0.0, 'slippage_fixed': 0.00001,
                                   'commission': 0.0003, 'commission_scheme': 'per_unit'}
    env = BTgymEnv(strategy=DevStrat_4_11, dataframe=EURUSD_LIKE, render_enabled=False, slippage=0.0001,
                   commission=0.0001)
    assert env.cost_settings() == {'spread': 0.0, 'slippage': 0.0001, 'slippage_fixed': 0.0, 'commission': 0.0001,
                                   'commission_scheme': 'percent'}


def test_a_multi_asset_env_weighs_a_spread_against_its_lowest_priced_data_line():
    from btgym_aac.distributed.run_config import multi_asset_env_config

    config = multi_asset_env_config()
    with pytest.raises(ValueError, match=r"spread 0.05 is 4\.\d+ % of the median close 1\.0957 of data line 'Y' \(a "
                                         r'DataFrame\): the spread is in price units'):
        config['class_ref'](**dict(config['kwargs'], spread=0.05))


def test_a_launcher_weighs_the_costs_against_the_env_dataframe_or_dataset():
    """`check_data_costs` (the Launcher's check before any task starts) reads the prices of the env's `dataframe`,
    or of its `dataset` made from DataFrames (the lowest-priced data line of a multi-asset one)."""
    from btgym_aac.data import BTgymDataset
    from btgym_aac.distributed.run_config import check_data_costs, multi_asset_env_config

    with pytest.raises(ValueError, match="spread 1 is 95 % of the median close 1.0523 of the env's dataframe"):
        check_data_costs({'kwargs': {'dataframe': EURUSD_LIKE, 'spread': 1}}, [])
    check_data_costs({'kwargs': {'dataframe': EURUSD_LIKE, 'spread': 0.0001}}, [])
    with pytest.raises(ValueError, match='spread 1 is 95 % of the median close 1.0523 of a DataFrame'):
        check_data_costs({'kwargs': {'dataset': BTgymDataset(dataframe=EURUSD_LIKE), 'spread': 1}}, [])
    pair = multi_asset_env_config()
    with pytest.raises(ValueError, match=r"slippage_fixed 0.02 is 1\.\d+ % of the median close 1\.0957 of data line "
                                         r"'Y' \(a DataFrame\)"):
        check_data_costs(dict(pair, kwargs=dict(pair['kwargs'], slippage_fixed=0.02)), [])
