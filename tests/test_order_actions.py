"""Orders as actions (`strategy.orders`, `strategy.sizers`): brackets, trailing stops and sizers driven by scripted
actions through the env's engine on a small hand-made bar series, checked against hand computations and against
plain backtrader runs of `buy_bracket` / `sell_bracket` on the same bars."""
import backtrader as bt
import numpy as np
import pandas as pd
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.env import MultiDiscreteEnv
from btgym_aac.env.components import new_engine
from btgym_aac.env.engine import prepare_cerebro, run_episode
from btgym_aac.evaluation.trade_log import TRADE_LOG_NAME, TradeLog
from btgym_aac.strategy import BTgymBaseStrategy, DevStrat_4_11, MultiAssetStrategy

BARS = pd.DataFrame([
    # open, high, low, close
    (1.1000, 1.1006, 1.0995, 1.1002),
    (1.1002, 1.1008, 1.0996, 1.0998),
    (1.0998, 1.1004, 1.0992, 1.1001),
    (1.1001, 1.1007, 1.0996, 1.1000),  # 3: the first decision bar: reference price 1.1000
    (1.1000, 1.1005, 1.0994, 1.1003),  # 4: the strategy submits the orders of that decision
    (1.1004, 1.1009, 1.0997, 1.1006),  # 5: the entry fills at the open
    (1.1006, 1.1040, 1.1001, 1.1032),  # 6: the children are active from here; a spike up
    (1.1031, 1.1045, 1.1022, 1.1038),
    (1.1038, 1.1042, 1.1015, 1.1020),
    (1.1020, 1.1024, 1.0981, 1.0995),  # 9: the low stays 0.0001 above a stop at 1.0980
    (1.0995, 1.1000, 1.0960, 1.0965),  # 10: a drop through 1.0980
    (1.0965, 1.0975, 1.0950, 1.0972),
] + [(1.0972, 1.0976, 1.0968, 1.0971)] * 8, columns=['open', 'high', 'low', 'close'],
    index=pd.date_range('2017-01-02 09:00', periods=20, freq='1min')).assign(volume=0.0)
SIZE = 1000
CASH = 10000.0
ASSET = 'default_asset'


class Recording(BTgymBaseStrategy):
    """Keeps (bar, position, broker value, pos_direction and realized_pnl statistics) of every bar."""

    def next(self):
        super().next()
        self.records = getattr(self, 'records', [])
        self.records.append((len(self) - 1, self.position.size, self.broker.get_value(),
                             self.broker_stat['pos_direction'][-1], self.broker_stat['realized_pnl'][-1]))


def run(script, skip_frame=1, spread=0.0, strategy=Recording, **params):
    """Runs an episode over BARS through the env's engine, the agent's actions from `script`.

    Args:
        script: dict decision number -> action name (others 'hold'); decision 0 is at bar 3.
        skip_frame: bars between decisions.
        spread: the CostBroker's spread.
        params: strategy params.

    Returns:
        (strategy, fills [(bar, side, size, price, spread_cost)], responses).
    """
    params = dict(dict(start_cash=CASH, drawdown_call=90, target_call=90, skip_frame=skip_frame), **params)
    engine = new_engine(strategy, params, dict(start_cash=CASH, broker_commission=0.0, fixed_stake=SIZE,
                                               spread=spread))
    engine.addanalyzer(TradeLog, _name=TRADE_LOG_NAME)
    responses = []

    def decide(response):
        responses.append(response)
        return {ASSET: script.get(len(responses) - 1, 'hold')}

    feed = bt.feeds.PandasData(dataname=BARS)
    feed.numrecords = len(BARS)
    prepare_cerebro(engine, {ASSET: feed}, dict(initial_action={ASSET: 0}, initial_portfolio_action={ASSET: 'hold'}),
                    decide, render_observers=(bt.observers.BuySell,))
    strategy, result = run_episode(engine)
    return strategy, fill_rows(result[TRADE_LOG_NAME]['fills']), responses


def fill_rows(fills):
    rows = {time: row for row, time in enumerate(BARS.index)}
    return [(rows[pd.Timestamp(fill['time'])], fill['side'], fill['size'], round(fill['price'], 10),
             round(fill['spread_cost'], 10)) for fill in fills]


def bracket_orders(strategy):
    """Dict part ('entry', 'stop_loss', 'take_profit') -> the episode's orders of that part, in submission order."""
    parts = {}
    for order in strategy.broker.orders:
        parts.setdefault(order.info.get('bracket'), []).append(order)
    return parts


class PlainBracket(bt.Strategy):
    """Backtrader alone: `buy_bracket` (or `sell_bracket`) of SIZE with a market entry and `bracket` kwargs at bar 4,
    where the env's strategy submits the orders of the first decision."""
    params = (('isbuy', True), ('bracket', {}))

    def next(self):
        if len(self) == 5:
            bracket = self.buy_bracket if self.p.isbuy else self.sell_bracket
            bracket(size=SIZE, exectype=bt.Order.Market, **self.p.bracket)


def plain_fills(isbuy=True, **bracket):
    """[(bar, side, size, price, spread cost)] of a `PlainBracket` run over BARS on backtrader's own broker."""
    cerebro = bt.Cerebro(stdstats=False)
    cerebro.broker.setcash(CASH)
    cerebro.adddata(bt.feeds.PandasData(dataname=BARS))
    cerebro.addstrategy(PlainBracket, isbuy=isbuy, bracket=bracket)
    cerebro.addanalyzer(TradeLog, _name=TRADE_LOG_NAME)
    return fill_rows(cerebro.run()[0].analyzers.getbyname(TRADE_LOG_NAME).get_analysis()['fills'])


def test_take_profit_fill_cancels_the_stop_as_backtrader_does():
    strategy, fills, _ = run({0: 'buy'}, stop_loss=0.0020, take_profit=0.0030)
    # entry at bar 5's open; the sell limit at 1.1000 + 0.0030 fills at its price on bar 6 (open below it)
    assert fills == [(5, 'buy', SIZE, 1.1004, 0.0), (6, 'sell', -SIZE, 1.1030, 0.0)]
    assert fills == plain_fills(stopprice=1.0980, limitprice=1.1030)
    parts = bracket_orders(strategy)
    assert parts['stop_loss'][0].created.price == pytest.approx(1.0980)
    assert parts['stop_loss'][0].status == bt.Order.Canceled
    assert parts['take_profit'][0].status == bt.Order.Completed
    assert strategy.open_bracket_orders() == {ASSET: []}
    logged = strategy.analyzers.getbyname(TRADE_LOG_NAME).get_analysis()['fills']
    assert [fill['order'] for fill in logged] == ['entry', 'take_profit']  # the trade log names the bracket parts


def test_stop_loss_of_a_sell_bracket_fills_and_cancels_the_take_profit():
    strategy, fills, _ = run({0: 'sell'}, stop_loss=0.0020, take_profit=0.0030)
    # the buy stop at 1.1020 triggers on bar 6 (high 1.1040, open 1.1006 below it): filled at the trigger
    assert fills == [(5, 'sell', -SIZE, 1.1004, 0.0), (6, 'buy', SIZE, 1.1020, 0.0)]
    assert fills == plain_fills(isbuy=False, stopprice=1.1020, limitprice=1.0970)
    assert bracket_orders(strategy)['take_profit'][0].status == bt.Order.Canceled


def test_close_cancels_both_children_and_opposite_action_closes():
    for second in ('close', 'sell'):
        strategy, fills, responses = run({0: 'buy', 1: second}, stop_loss=0.0020, take_profit=0.0030)
        # closed at bar 6's open: the take-profit that bar 6 would have filled was cancelled on bar 5
        assert fills == [(5, 'buy', SIZE, 1.1004, 0.0), (6, 'sell', -SIZE, 1.1006, 0.0)]
        parts = bracket_orders(strategy)
        assert [order.status for order in parts['stop_loss'] + parts['take_profit']] == [bt.Order.Canceled] * 2
        assert len(parts['entry']) == 1, "'sell' when long opens no bracket"
        assert 'bracket orders cancelled, position closed' in responses[2].infos[-1]['broker_message']
        assert strategy.order_failed == 0


def test_the_episode_end_cancels_the_open_children():
    strategy, fills, responses = run({0: 'buy'}, stop_loss=0.0100, take_profit=0.0100)
    assert responses[-1].done
    end = fills[-1]
    assert fills[0] == (5, 'buy', SIZE, 1.1004, 0.0) and end[1:3] == ('sell', -SIZE) and len(fills) == 2
    assert end[3] == BARS['open'].iloc[end[0]], 'closed by a market order at the open'
    parts = bracket_orders(strategy)
    assert [order.status for order in parts['stop_loss'] + parts['take_profit']] == [bt.Order.Canceled] * 2
    assert not any(order.alive() for order in strategy.broker.orders)
    assert strategy.position.size == 0


def true_range(row):
    previous = BARS['close'].iloc[row - 1]
    return max(BARS['high'].iloc[row], previous) - min(BARS['low'].iloc[row], previous)


@pytest.mark.parametrize('unit,stop_loss,take_profit,distances', [
    ('price', 0.0020, 0.0030, (0.0020, 0.0030)),
    ('pips', 20, 30, (0.0020, 0.0030)),
    ('percent', 0.2, 0.3, (0.002 * 1.1000, 0.003 * 1.1000)),
    # backtrader's ATR with period 3 is first the mean of the true ranges of bars 1 to 3, at the decision bar 3
    ('atr', 2, 3, tuple(k * np.mean([true_range(row) for row in (1, 2, 3)]) for k in (2, 3))),
])
def test_distances_in_each_unit_give_the_stop_and_limit_prices(unit, stop_loss, take_profit, distances):
    strategy, _, _ = run({0: 'buy'}, stop_loss=stop_loss, take_profit=take_profit, distance_unit=unit,
                         atr_period=3)
    parts = bracket_orders(strategy)
    assert parts['stop_loss'][0].created.price == pytest.approx(1.1000 - distances[0], abs=1e-12)
    assert parts['take_profit'][0].created.price == pytest.approx(1.1000 + distances[1], abs=1e-12)


def test_trailing_stop_follows_the_close_as_backtrader_stoptrail():
    strategy, fills, _ = run({0: 'buy'}, stop_loss=0.0020, trailing_stop=True)
    # from 1.1000 - 0.0020, raised after every bar it survives to its close - 0.0020: bar 6 -> 1.1012, bar 7 ->
    # 1.1018; bar 8's low 1.1015 reaches it
    assert fills == [(5, 'buy', SIZE, 1.1004, 0.0), (8, 'sell', -SIZE, 1.1018, 0.0)]
    assert fills == plain_fills(stopprice=1.1000, stopexec=bt.Order.StopTrail, stopargs={'trailamount': 0.0020},
                                limitexec=None)
    stop = bracket_orders(strategy)['stop_loss'][0]
    assert stop.exectype == bt.Order.StopTrail and stop.trailamount == 0.0020


@pytest.mark.parametrize('spread,stop_fill', [(0.0, (10, 0.0)), (0.0004, (9, 0.2))])
def test_stop_loss_sell_fills_against_the_bid(spread, stop_fill):
    _, fills, _ = run({0: 'buy'}, spread=spread, stop_loss=0.0020)
    # the entry buys at the ask's open; the bid's low on bar 9 (1.0981 - 0.0002) reaches the stop at 1.0980, the
    # mid's only on bar 10; filled at the trigger, paying half the spread per unit
    assert fills[0] == (5, 'buy', SIZE, round(1.1004 + spread / 2, 10), round(spread / 2 * SIZE, 10))
    assert fills[1] == (stop_fill[0], 'sell', -SIZE, 1.0980, stop_fill[1])


def test_stop_fill_between_decisions_shows_in_statistics_infos_trade_log_and_rendering():
    strategy, fills, responses = run({0: 'buy'}, skip_frame=4, stop_loss=0.0020)
    assert fills == [(5, 'buy', SIZE, 1.1004, 0.0), (10, 'sell', -SIZE, 1.0980, 0.0)]  # decisions at bars 3, 7, 11
    records = {bar: record for bar, *record in strategy.records}
    position, _, direction, _ = records[9]
    assert (position, direction) == (SIZE, 1)
    position, value, direction, realized = records[10]
    assert (position, direction) == (0, 0)
    assert value == pytest.approx(CASH + (1.0980 - 1.1004) * SIZE, abs=1e-9)
    assert realized < 0, 'the closed trade is in the realized pnl of bar 10'
    bars = responses[2].infos  # the response at bar 11: bars 8 to 11
    assert [info['position'] for info in bars] == [SIZE, SIZE, 0, 0]
    assert bars[2]['broker_value'] == pytest.approx(value, abs=1e-9)
    assert 'default_asset stop_loss SELL executed, price: 1.09800' in bars[2]['broker_message']
    buy_sell, = [observer for observer in strategy.observers if isinstance(observer, bt.observers.BuySell)]
    sells = buy_sell.lines.sell.array  # what the 'episode' rendering draws
    assert sells[10] == pytest.approx(1.0980) and np.isnan(sells[9])


@pytest.mark.parametrize('sizer,params,size', [
    ({'kind': 'fixed', 'stake': 700}, {}, 700),
    # the sizer's stake of a 'buy' without brackets: floor(50 % of the value 10000 at the reference price 1.1000)
    ({'kind': 'percent', 'percent': 50}, {}, 4545),
    # risk per trade: floor(0.35 % of the value 10000 / the stop distance 0.0030), leverage 10 for its margin
    ({'kind': 'risk', 'percent': 0.35}, dict(stop_loss=0.0030, commission=0.0, leverage=10.0), 11666),
])
def test_sizer_stakes(sizer, params, size):
    strategy, fills, _ = run({0: 'buy'}, sizer=sizer, **params)
    assert fills[0] == (5, 'buy', size, 1.1004, 0.0)
    assert [abs(order.size) for order in strategy.broker.orders] == [size] * len(strategy.broker.orders)


def test_sizer_giving_no_units_places_no_order():
    for params in ({}, dict(stop_loss=0.0020)):
        _, fills, responses = run({0: 'buy'}, sizer={'kind': 'percent', 'percent': 0.001}, **params)
        assert fills == []
        assert 'the sizer gives 0 units' in responses[1].infos[-1]['broker_message']


def test_entry_without_margin_counts_one_failed_order():
    strategy, fills, responses = run({0: 'buy'}, order_size=20000, stop_loss=0.0020, take_profit=0.0030)
    assert fills == [] and strategy.order_failed == 1
    message = responses[1].infos[-1]['broker_message']  # bar 4: backtrader checks the bracket on bar 5
    assert message == 'new default_asset_buy bracket submitted'
    assert responses[2].infos[-1]['broker_message'] == (
        'ORDER FAILED with status: Margin; default_asset stop_loss cancelled; default_asset take_profit cancelled')


@pytest.mark.parametrize('params,message', [
    (dict(distance_unit='points', stop_loss=1), "distance_unit must be one of .* got 'points'"),
    (dict(stop_loss=0), 'stop_loss must be a finite number > 0, got 0'),
    (dict(take_profit=-0.001), 'take_profit must be a finite number > 0, got -0.001'),
    (dict(pip_size=0), 'pip_size must be a finite number > 0'),
    (dict(atr_period=0.5), 'atr_period must be a whole number >= 1, got 0.5'),
    (dict(trailing_stop=True, take_profit=0.01), 'trailing_stop=True needs stop_loss'),
    (dict(sizer={'kind': 'kelly'}), "sizer must be None or a dict with 'kind' one of .*'kelly'"),
    (dict(sizer={'kind': 'fixed', 'stake': 0}), r"sizer\['stake'\] must be a finite number > 0, got 0"),
    (dict(sizer={'kind': 'percent', 'stake': 5}), "sizer of kind 'percent' takes the keys kind and percent"),
    (dict(sizer={'kind': 'risk', 'percent': 1}), 'needs stop_loss'),
    (dict(sizer={'kind': 'risk', 'percent': 150}, stop_loss=1), r"sizer\['percent'\] must be a finite number in"),
    (dict(sizer={'kind': 'fixed', 'stake': 5}, order_size=10), 'give sizer or order_size, not both'),
    (dict(stop_loss=0.01, portfolio_actions=None), 'need discrete actions .*got stop_loss=0.01 with '
                                                   'portfolio_actions=None'),
])
def test_bad_order_params_are_refused_naming_them(params, message):
    with pytest.raises(ValueError, match=message):
        BTgymBaseStrategy.check_params(dict(BTgymBaseStrategy.params._getitems(), **params))
    if 'portfolio_actions' not in params:
        with pytest.raises(ValueError, match=message):
            BTgymEnv(render_enabled=False, **params)


def finished_orders(env):
    env.get_stat()  # finishes the episode
    strategy = env._finished_strategy
    return strategy, bracket_orders(strategy)


def test_env_episodes_with_brackets_single_and_multi_asset():
    """Random actions: each asset gets its brackets, children fill between decisions, nothing is left open."""
    from test_multi_asset_env import ASSETS, env_kwargs

    envs = [BTgymEnv(strategy=DevStrat_4_11, render_enabled=False, start_cash=2000, fixed_stake=100,
                     drawdown_call=90, target_call=90, stop_loss=1, take_profit=1.5, distance_unit='atr',
                     trailing_stop=True),
            MultiDiscreteEnv(**env_kwargs(strategy=MultiAssetStrategy, stop_loss=0.05, take_profit=0.05,
                                          distance_unit='percent'))]
    for env, assets in zip(envs, ([ASSET], ASSETS)):
        rng = np.random.default_rng(3)
        env.reset(seed=3)
        done = False
        while not done:
            _, _, done, _, info = env.step({asset: int(rng.integers(4)) for asset in assets})
        strategy, parts = finished_orders(env)
        env.close()
        children = parts['stop_loss'] + parts['take_profit']
        assert {order.data._name for order in parts['entry']} == set(assets)
        assert any(order.status == bt.Order.Completed for order in children), 'a child filled'
        assert not any(order.alive() for order in strategy.broker.orders)
        assert all(strategy.getposition(data).size == 0 for data in strategy.datas)
