"""Strategy layer: numpy helpers, BTgymBaseStrategy in real backtrader episodes, DevStrat_4_x
observations and the rendering observers. Every expectation is recomputed from the input DataFrame or from the
strategy's broker statistics with plain numpy."""
import copy
import math
from collections import namedtuple
from datetime import timezone

import backtrader as bt
import numpy as np
import pandas as pd
import pytest
from gymnasium import spaces

from btgym_aac.data import make_random_walk_data, make_sine_data
from btgym_aac.env import engine
from btgym_aac.strategy import (BTgymBaseStrategy, DevStrat_4_6, DevStrat_4_7, DevStrat_4_10, DevStrat_4_11,
                                metadata_space)
from btgym_aac.strategy import utils
from btgym_aac.strategy.observers import NormPnL, Position, Reward

ASSET = 'default_asset'
META = {'type': 0, 'sample_num': 0, 'first_row': 0, 'parent_sample_num': 0, 'parent_sample_type': 0}
STATS = ['cash', 'value', 'exposure', 'drawdown', 'pos_direction', 'pos_duration', 'realized_pnl',
         'unrealized_pnl', 'min_unrealized_pnl', 'max_unrealized_pnl']

# One response: the StepResponse (state deep-copied at response time: the strategy refreshes its metadata dict in
# place at the next response), the broker statistic deques at that moment and the response bar's row.
Record = namedtuple('Record', ['response', 'stat', 'row'])
# One episode: the strategy, run_episode's result, every response, the rows of the decision points (the final
# response of a finished episode asks for no action) and the completed orders as (submission row, execution row,
# execution price, signed size).
Episode = namedtuple('Episode', ['strategy', 'result', 'records', 'decision_rows', 'fills'])


class Base12(BTgymBaseStrategy):
    """Base strategy with broker statistic windows long enough for the reward's 2 * skip_frame look-back."""
    avg_period = 12


def _flat_frame(prices, close_factor=1.0):
    """Bars with open = prices, close = prices * close_factor, high/low the max/min of both."""
    opens = np.asarray(prices, dtype=np.float64)
    closes = opens * close_factor
    return pd.DataFrame(
        {'open': opens, 'high': np.maximum(opens, closes), 'low': np.minimum(opens, closes), 'close': closes,
         'volume': 0.0},
        index=pd.date_range('2020-01-06 00:00', periods=len(opens), freq='1min'),
    )


def _feed(frame):
    feed = bt.feeds.PandasDirectData(dataname=frame, timeframe=bt.TimeFrame.Minutes, datetime=0, open=1, high=2,
                                     low=3, close=4, volume=5, openinterest=-1)
    feed.numrecords = len(frame)
    return feed


def _cerebro(strategy_class, frame, decide, cash, stake, observers, initial_portfolio_action, params):
    cerebro = bt.Cerebro(stdstats=False)
    cerebro.addstrategy(strategy_class, **params)
    cerebro.broker.setcash(cash)
    if stake is not None:
        cerebro.addsizer(bt.sizers.SizerFix, stake=stake)
    injected = dict(initial_action={ASSET: 0}, initial_portfolio_action=initial_portfolio_action,
                    metadata=params.pop('metadata', META))
    return engine.prepare_cerebro(cerebro, {ASSET: _feed(frame)}, injected, decide, render_observers=observers)


def run(strategy_class, frame, actions=(), cash=1000.0, stake=100, observers=(),
        initial_portfolio_action=None, **params):
    """Runs one episode of `strategy_class` over `frame`.

    Args:
        actions: action per decision point (index 0 = the first one, answered before any response); a string is
            a discrete action name for ASSET, anything else is passed as is; the initial portfolio action after
            the end of the list.
        stake: SizerFix stake, or None for no sizer.
        observers: observer classes to add.
        initial_portfolio_action: defaults to hold.
        params: strategy params (`metadata` replaces META).

    Returns:
        Episode.
    """
    rows = {stamp: row for row, stamp in enumerate(frame.index)}
    live = {}
    records, decision_rows, fills = [], [], []

    class Probe(strategy_class):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            live['strategy'] = self

        def notify_order(self, order):
            if order.status == order.Completed:
                fills.append((rows[bt.num2date(order.created.dt)], rows[bt.num2date(order.executed.dt)],
                              order.executed.price, order.executed.size))
            super().notify_order(order)

    def decide(response):
        strategy = live['strategy']
        row = rows[strategy.data.datetime.datetime(0)]
        if response is not None:
            stat = {name: np.array(values, dtype=np.float64) for name, values in strategy.broker_stat.items()}
            records.append(Record(response._replace(state=copy.deepcopy(response.state)), stat, row))
            if response.done:
                return None
        decision_rows.append(row)
        index = len(decision_rows) - 1
        action = actions[index] if index < len(actions) else initial_portfolio_action
        return {ASSET: action} if isinstance(action, str) else action

    initial_portfolio_action = initial_portfolio_action or {ASSET: 'hold'}
    cerebro = _cerebro(Probe, frame, decide, cash, stake, observers, initial_portfolio_action, dict(params))
    strategy, result = engine.run_episode(cerebro)
    return Episode(strategy, result, records, decision_rows, fills)


def bar_infos(episode, frame):
    """Info dicts of every bar from the first decision point on, keyed by the bar's row in `frame`."""
    return {frame.index.get_loc(info['time']): info
            for record in episode.records for info in record.response.infos}


def held_position(episode, num_bars):
    """Position size held on every bar, summed from the executed orders."""
    position = np.zeros(num_bars)
    for _, executed, _, size in episode.fills:
        position[executed:] += size
    return position


def cash_per_bar(fills, cash, num_bars):
    """Broker cash on every bar with backtrader's `shortcash=False` (the env's broker): opening a long or a short
    position pays its cost |size| * price; closing it gets the cost back plus the trade's profit or loss.
    Every fill here opens a position from flat or closes one to flat."""
    cash_left = np.full(num_bars, cash)
    position, entry = 0, None
    for _, executed, price, size in fills:
        if position == 0:
            position, entry = size, price
            cash_left[executed:] -= abs(size) * price
        else:
            assert size == -position
            cash_left[executed:] += abs(size) * entry + position * (price - entry)
            position = 0
    return cash_left


def broker_values(infos, cash, num_bars):
    """Broker value of every bar: `cash` before the first bar with an info (nothing is traded before it)."""
    values = np.full(num_bars, cash)
    rows = np.array(sorted(infos))
    values[rows] = [infos[row]['broker_value'] for row in rows]
    assert np.array_equal(rows, np.arange(rows[0], rows[-1] + 1))
    return values


def position_extremes(values, position):
    """The strategy's position value trackers: the bar's broker value when flat, else the running max and min from
    the last flat bar's value on."""
    highs, lows = values.copy(), values.copy()
    for row in range(1, len(values)):
        if position[row] != 0:
            highs[row] = max(highs[row - 1], values[row])
            lows[row] = min(lows[row - 1], values[row])
    return highs, lows


def plain_norm_value(value, start, lower, upper, epsilon=1e-8):
    """`strategy.utils.norm_value` written out: percent change mapped to -1 at -lower %, +1 at +upper %."""
    z = ((value / start - 1.0) * 100.0 - upper) / (lower + upper) + 1.0
    return 2.0 * np.clip(z, epsilon, 1.0 - epsilon) - 1.0


def plain_reward(stat, skip, gamma, scale):
    """`BTgymBaseStrategy.get_reward` from the broker statistic windows, written out case by case."""
    unrealized = list(stat['unrealized_pnl'])
    duration = int(stat['pos_duration'][-1])
    if duration == 0:
        shaping = 0.0
    else:
        recent = unrealized[-min(duration, skip):]
        if duration < skip:
            before = 0.0
        elif duration < 2 * skip:
            before = float(np.mean(unrealized[-(skip + duration):-skip]))
        else:
            before = float(np.mean(unrealized[-2 * skip:-skip]))
        shaping = gamma * float(np.mean(recent)) - before
    realized = sum(list(stat['realized_pnl'])[-skip:])
    raw = (10.0 * shaping + 10.0 * realized) * scale
    return min(max(raw, -scale), scale)


def sma(values, period):
    """Simple moving average; entry i averages values[i - period + 1: i + 1] (NaN before)."""
    out = np.full(len(values), np.nan)
    csum = np.concatenate([[0.0], np.cumsum(values)])
    out[period - 1:] = (csum[period:] - csum[:-period]) / period
    return out


def feature_gradient(x):
    """Central differences across the last axis, one-sided at both ends (unit spacing)."""
    grad = np.empty_like(x)
    grad[..., 0] = x[..., 1] - x[..., 0]
    grad[..., -1] = x[..., -1] - x[..., -2]
    grad[..., 1:-1] = (x[..., 2:] - x[..., :-2]) / 2.0
    return grad


# ------------------------------------------------------------------------------------------------ utils


def test_norm_value_maps_bounds_to_minus_and_plus_one():
    lower, upper, start = 5.0, 19.0, 2000.0
    assert utils.norm_value(start * (1 - lower / 100), start, lower, upper) == pytest.approx(-1.0, abs=1e-7)
    assert utils.norm_value(start * (1 + upper / 100), start, lower, upper) == pytest.approx(1.0, abs=1e-7)
    assert utils.norm_value(start, start, lower, upper) == pytest.approx((lower - upper) / (lower + upper))
    assert utils.norm_value(start * 1.07, start, lower, upper) == pytest.approx(2 * (7 + 5) / 24 - 1)
    beyond = utils.norm_value(np.array([start * 0.5, start * 2.0]), start, lower, upper, epsilon=1e-3)
    np.testing.assert_allclose(beyond, [-1 + 2e-3, 1 - 2e-3])


def test_norm_value_of_a_scalar_equals_the_array_form():
    values = np.linspace(500.0, 4000.0, 97)
    expected = utils.norm_value(values, 2000.0, 5.0, 19.0, epsilon=1e-3)
    scalars = [utils.norm_value(float(value), 2000.0, 5.0, 19.0, epsilon=1e-3) for value in values]
    np.testing.assert_array_equal(scalars, expected)
    assert expected.min() == -1 + 2e-3 and expected.max() == 1 - 2e-3


@pytest.mark.parametrize('shape,axis', [((30, 5), -1), ((30, 5), 0), ((2, 3), -1), ((4, 2, 6), 1), ((7,), 0)])
def test_gradient_equals_numpys_bit_for_bit(shape, axis):
    x = np.random.default_rng(3).normal(size=shape) * 1e3
    np.testing.assert_array_equal(utils.gradient(x, axis=axis), np.gradient(x, axis=axis))
    integers = np.arange(int(np.prod(shape))).reshape(shape) ** 2
    result = utils.gradient(integers, axis=axis)
    assert result.dtype == np.float64
    np.testing.assert_array_equal(result, np.gradient(integers, axis=axis))


def test_gradient_needs_two_entries():
    with pytest.raises(ValueError, match='at least 2 entries along axis 1'):
        utils.gradient(np.ones((3, 1)), axis=-1)


def test_drawdown_tracker_lags_as_an_observer_line_read_during_the_bar():
    from btgym_aac.strategy.observers import DrawdownTracker

    values = [100.0, 110.0, 99.0, 104.5, 120.0, 90.0]
    tracker = DrawdownTracker()
    peaks = np.maximum.accumulate(values)
    drawdowns = 100.0 * (peaks - values) / peaks
    for bar, value in enumerate(values):
        assert tracker.update(value) == (drawdowns[bar], max(drawdowns[:bar + 1]))
        previous = tracker.seen()
        assert previous == ((drawdowns[bar - 1], max(drawdowns[:bar])) if bar >= 1 else (0.0, 0.0))
        assert tracker.seen(-1)[0] == (drawdowns[bar - 2] if bar >= 2 else 0.0)
    tracker.finish()
    assert tracker.seen() == (drawdowns[-1], 25.0) and tracker.seen(-1)[0] == drawdowns[-2]


def test_decayed_result():
    assert utils.decayed_result(12.0, 50.0, 100.0, 5.0, 19.0, gamma=1) == pytest.approx(12.0 / 24.0)
    assert utils.decayed_result(12.0, 130.0, 100.0, 5.0, 19.0, gamma=1) == pytest.approx(12.0 / 24.0)
    # target 110, range 20, decay = (0.5 - 1) * (100 - 110) / 20 + 0.5 = 0.75
    assert utils.decayed_result(8.0, 100.0, 100.0, 10.0, 10.0, gamma=0.5) == pytest.approx(8.0 * 0.75 / 20.0)


def test_exp_scale_and_discounted_average():
    assert utils.exp_scale(1.0, gamma=4) == pytest.approx(1.0)
    assert utils.exp_scale(-1.0, gamma=4) == pytest.approx(np.exp(-16.0))
    assert utils.exp_scale(0.0, gamma=2) == pytest.approx(np.exp(-3.0))
    assert utils.exp_scale(-1.0, gamma=4, epsilon=1e-5) == pytest.approx(1e-5)
    assert utils.discounted_average([1.0, 2.0, 3.0], gamma=0.5) == pytest.approx((0.25 + 1.0 + 3.0) / 1.75)
    rows = np.array([[1.0, 10.0], [3.0, 30.0]])
    np.testing.assert_allclose(utils.discounted_average(rows), [2.0, 20.0])
    np.testing.assert_allclose(utils.discounted_average(rows, gamma=0.0), [3.0, 30.0])


def test_squashing_helpers():
    x = np.linspace(-6.0, 6.0, 49)
    np.testing.assert_allclose(utils.tanh(x), np.tanh(x), atol=1e-12)
    np.testing.assert_allclose(utils.sigmoid(x), (1.0 + np.tanh(x / 2.0)) / 2.0, atol=1e-12)
    np.testing.assert_allclose(utils.log_transform([-(np.e - 1), 0.0, np.e ** 2 - 1]), [-1.0, 0.0, 2.0])
    assert utils.abs_norm_ratio(3.0, 1.0, 5.0) == pytest.approx(0.0)
    assert utils.abs_norm_ratio(5.0, 1.0, 5.0) == pytest.approx(4.0 / 6.0)
    assert utils.abs_norm_ratio(-1.0, -2.0, 2.0) == pytest.approx(0.5)


# -------------------------------------------------------------------------------------- base strategy: run


def test_raw_state_metadata_and_stat_windows():
    frame = make_sine_data(num_bars=60, period=20, amplitude=0.02)
    meta = {'type': 1, 'sample_num': 7, 'first_row': 123, 'parent_sample_num': 3, 'parent_sample_type': 1}
    shape = {'raw': spaces.Box(low=0, high=0, shape=(4, 4), dtype=np.float64), 'metadata': metadata_space(),
             'internal': spaces.Box(low=-10, high=10, shape=(4, 1, 10), dtype=np.float64)}
    episode = run(BTgymBaseStrategy, frame, skip_frame=3, metadata=meta, state_shape=shape)
    strategy = episode.strategy
    assert episode.decision_rows[0] == 3  # time_dim = avg_period = 4 bars of warm-up
    assert strategy.can_broadcast
    assert set(strategy.broker_stat) == set(STATS)
    # Documented deviation: windows hold max(avg_period, 2 * skip_frame) bars so the reward never sees NaNs.
    assert strategy.avg_period == 4
    assert all(window.maxlen == 6 for window in strategy.broker_stat.values())
    ohlc = frame[['open', 'high', 'low', 'close']].to_numpy()
    assert len(episode.records) > 10
    for record in episode.records:
        state = record.response.state
        assert list(state) == ['raw', 'metadata', 'internal']
        np.testing.assert_array_equal(state['raw'], ohlc[record.row - 3:record.row + 1])
        expected_internal = np.stack([record.stat[name][-4:] for name in STATS], axis=-1)[:, None, :]
        np.testing.assert_array_equal(state['internal'], expected_internal)
        assert record.response.infos[-1]['time'] == frame.index[record.row]
        bar_time = frame.index[record.row].to_pydatetime().replace(tzinfo=timezone.utc).timestamp()
        assert state['metadata']['timestamp'] == bar_time
        assert {key: int(state['metadata'][key]) for key in ('type', 'trial_num', 'trial_type', 'sample_num',
                                                            'first_row')} == \
            {'type': 1, 'trial_num': 3, 'trial_type': 1, 'sample_num': 7, 'first_row': 123}
        assert metadata_space().contains(state['metadata'])
        assert all(len(window) == 6 for window in record.stat.values())


def test_raw_window_length_follows_state_shape():
    frame = make_sine_data(num_bars=40)
    shape = {'raw': spaces.Box(low=0, high=0, shape=(6, 4), dtype=np.float64), 'metadata': metadata_space()}
    episode = run(BTgymBaseStrategy, frame, skip_frame=2, state_shape=shape)
    assert episode.decision_rows[0] == 5
    assert episode.records[0].response.state['raw'].shape == (6, 4)


def test_action_executes_on_next_bar_and_fills_at_following_open():
    frame = make_sine_data(num_bars=80, period=30, amplitude=0.05)
    skip = 3
    actions = ['hold', 'hold', 'buy', 'hold', 'close', 'sell']
    episode = run(BTgymBaseStrategy, frame, actions=actions, skip_frame=skip, stake=50)
    rows = episode.decision_rows
    assert np.all(np.diff(rows) == skip)
    assert [record.row for record in episode.records[:-1]] == rows[1:]
    assert episode.records[-1].response.done and episode.records[-1].row > rows[-1]
    opens = frame['open'].to_numpy()
    expected = [(rows[2] + 1, rows[2] + 2, 50), (rows[4] + 1, rows[4] + 2, -50), (rows[5] + 1, rows[5] + 2, -50)]
    assert [(submitted, executed, size) for submitted, executed, _, size in episode.fills[:3]] == expected
    for (_, executed, price, _) in episode.fills[:3]:
        assert price == pytest.approx(opens[executed])
    infos = bar_infos(episode, frame)
    for decision, name in zip(rows[2:6], actions[2:]):
        executing = infos[decision + 1]
        assert executing['action'] == {ASSET: name}
        if name != 'hold':
            assert executing['broker_message'] == 'new {}_{} order submitted'.format(ASSET, name)
    assert infos[rows[0]]['step'] == 0 and infos[rows[0]]['action'] == {ASSET: 'hold'}
    skipped = [info for row, info in infos.items() if row - 1 not in rows and row != rows[0]]
    assert len(skipped) > 20 and all(info['action'] == {ASSET: 'hold', '_skip_this': True} for info in skipped)


def test_skipped_bars_leave_the_initial_portfolio_action_as_given():
    """Bars between decisions carry the skip marker in their info's action; neither the strategy's
    `initial_portfolio_action` param nor the caller's dict given as it gets the marker."""
    initial = {ASSET: 'hold'}
    frame = make_sine_data(num_bars=60, period=30, amplitude=0.05)
    episode = run(BTgymBaseStrategy, frame, actions=['buy'], skip_frame=3, initial_portfolio_action=initial)
    assert any('_skip_this' in info['action'] for info in bar_infos(episode, frame).values())
    assert initial == {ASSET: 'hold'} and episode.strategy.p.initial_portfolio_action == {ASSET: 'hold'}


def test_end_of_data_fires_and_episode_ends_two_bars_later_with_position_closed():
    num_bars, skip, warmup = 50, 3, 4
    frame = make_sine_data(num_bars=num_bars, period=25, amplitude=0.02)
    episode = run(BTgymBaseStrategy, frame, actions=['buy'], skip_frame=skip)
    fire_step = num_bars - warmup - skip - 2
    fired = [info['step'] for info in bar_infos(episode, frame).values() if 'END OF DATA' in info['broker_message']]
    assert fired == [fire_step]
    last = episode.records[-1]
    assert last.response.done and not any(record.response.done for record in episode.records[:-1])
    assert last.response.infos[-1]['step'] == fire_step + 2
    assert last.row == warmup - 1 + fire_step + 2
    assert episode.result['length'] == last.row + 1
    assert episode.strategy.final_message == 'END OF DATA'
    closing = episode.fills[-1]
    assert closing[0] == warmup - 1 + fire_step and closing[3] == -100
    assert episode.strategy.position.size == 0


def _portfolio_value(frame, cash, fill_row, stake):
    """Broker value per bar after a market buy of `stake` filled at the open of `fill_row`."""
    closes = frame['close'].to_numpy()
    value = np.full(len(frame), cash)
    value[fill_row:] = cash - stake * frame['open'].iloc[fill_row] + stake * closes[fill_row:]
    return value


def assert_closed_early(episode, frame, fire_row, message):
    """The rule fired on `fire_row` only, the closing sell filled at the next open, the episode ended a bar later."""
    fired = [row for row, info in bar_infos(episode, frame).items() if message in info['broker_message']]
    assert fired == [fire_row]
    assert episode.strategy.final_message == message
    assert episode.records[-1].response.done and episode.records[-1].row == fire_row + 2
    assert episode.result['length'] == fire_row + 3 < len(frame)
    assert episode.fills[-1][1:] == (fire_row + 1, pytest.approx(frame['open'].iloc[fire_row + 1]), -900)
    assert episode.strategy.position.size == 0


def _trend_episode(growth, close_factor, **params):
    """Flat prices for 8 bars, then a factor `growth` per bar; buys 900 units at the first decision point.

    Returns:
        frame, Episode, independently computed broker value per bar.
    """
    frame = _flat_frame(np.concatenate([np.ones(8), growth ** np.arange(1, 53)]), close_factor)
    episode = run(BTgymBaseStrategy, frame, actions=['buy'], cash=1000.0, stake=900, **params)
    return frame, episode, _portfolio_value(frame, 1000.0, episode.decision_rows[0] + 2, 900)


def test_drawdown_call_ends_episode_early():
    frame, episode, value = _trend_episode(0.99, 0.999, drawdown_call=7, target_call=10)
    drawdown = 100.0 * (1.0 - value / np.maximum.accumulate(value))
    crossed = int(np.argmax(drawdown >= 7))
    # DrawDown observer values are read by the step analyzer before the observer updates on the same bar.
    assert_closed_early(episode, frame, crossed + 1, 'DRAWDOWN CALL')


def test_target_call_ends_episode_early():
    frame, episode, value = _trend_episode(1.01, 1.001, drawdown_call=10, target_call=12)
    assert_closed_early(episode, frame, int(np.argmax(value > 1120.0)), 'TARGET REACHED')


# ---------------------------------------------------------------------------------------- base: reward


REWARD_CASES = {
    'base-scale-1': (Base12, dict(skip_frame=4, reward_scale=1.0)),
    'base-scale-0.05': (Base12, dict(skip_frame=4, reward_scale=0.05)),
    'dev-4-11': (DevStrat_4_11, dict()),
}


@pytest.mark.parametrize('case', sorted(REWARD_CASES))
def test_reward_matches_plain_formula_at_every_response(case):
    strategy_class, params = REWARD_CASES[case]
    frame = make_sine_data(num_bars=700, period=37, amplitude=0.2, noise=0.003, seed=1)
    actions = ['buy', 'hold', 'hold', 'hold', 'close', 'hold', 'sell', 'hold', 'close', 'buy', 'hold', 'buy',
               'hold', 'hold', 'close', 'sell', 'close'] * 4
    episode = run(strategy_class, frame, actions=actions, stake=300, drawdown_call=40, target_call=20, **params)
    assert episode.strategy.final_message == 'END OF DATA'
    strategy = episode.strategy
    skip, scale = strategy.p.skip_frame, strategy.p.reward_scale
    stat_window = max(strategy_class.avg_period, 2 * skip)
    assert all(window.maxlen == stat_window for window in strategy.broker_stat.values())
    rewards = np.array([record.response.reward for record in episode.records])
    expected = [plain_reward(record.stat, skip, strategy.p.gamma, scale) for record in episode.records]
    np.testing.assert_allclose(rewards, expected, rtol=1e-9, atol=1e-12)
    assert np.all(np.abs(rewards) <= scale)
    durations = np.array([record.stat['pos_duration'][-1] for record in episode.records])
    assert (durations == 0).any() and ((durations > 0) & (durations < skip)).any()
    assert ((durations >= skip) & (durations < 2 * skip)).any() and (durations >= 2 * skip).any()
    assert any(record.stat['realized_pnl'][-skip:].any() for record in episode.records)
    assert (np.abs(rewards) == scale).any()
    assert ((np.abs(rewards) > 1e-3 * scale) & (np.abs(rewards) < scale)).any()


def test_broker_statistics_match_values_and_trades():
    frame = make_sine_data(num_bars=120, period=37, amplitude=0.1, noise=0.003, seed=2)
    actions = ['buy', 'hold', 'close', 'hold', 'sell', 'hold', 'hold', 'close']
    drawdown_call, target_call, cash = 60, 40, 1000.0
    episode = run(Base12, frame, actions=actions, stake=300, cash=cash, skip_frame=4, drawdown_call=drawdown_call,
                  target_call=target_call)
    normalizer = 100.0 / (cash * (drawdown_call + target_call))
    opens = frame['open'].to_numpy()
    buy, close_long, sell, close_short = episode.fills[:4]
    trade_pnls = {close_long[1]: 300 * (opens[close_long[1]] - opens[buy[1]]),
                  close_short[1]: -300 * (opens[close_short[1]] - opens[sell[1]])}
    position = held_position(episode, len(frame))
    infos = bar_infos(episode, frame)
    values = broker_values(infos, cash, len(frame))
    cash_left = cash_per_bar(episode.fills, cash, len(frame))
    peaks = np.maximum.accumulate(values)
    drawdown = 100.0 * (peaks - values) / peaks
    pos_max, pos_min = position_extremes(values, position)
    realized_value = cash
    checked = 0
    for row, info in infos.items():
        record = next(record for record in episode.records if record.row >= row)
        offset = record.row - row
        if offset >= len(record.stat['value']):
            continue
        stat = {name: window[-1 - offset] for name, window in record.stat.items()}
        value = info['broker_value']
        if row in trade_pnls:
            realized_value = value
            assert stat['realized_pnl'] == pytest.approx(trade_pnls[row] / (cash * (drawdown_call + target_call)
                                                                           / 100.0))
        else:
            assert stat['realized_pnl'] == 0.0
        assert stat['value'] == pytest.approx(2 * (((value / cash - 1) * 100 - target_call) / 100 + 1) - 1)
        assert stat['unrealized_pnl'] == pytest.approx((value - realized_value) * normalizer)
        assert stat['pos_direction'] == np.sign(position[row])
        assert stat['exposure'] == pytest.approx(position[row] / (cash + 0.01))
        assert info['broker_cash'] == pytest.approx(cash_left[row], rel=1e-12)
        assert stat['cash'] == pytest.approx(plain_norm_value(cash_left[row], cash, 99.0, target_call), abs=1e-12)
        # the strategy reads `stats.drawdown.drawdown[-1]`: it runs before the observer advances to the bar, so
        # [0] holds the previous bar's drawdown and [-1] the one before it
        assert stat['drawdown'] == pytest.approx(drawdown[row - 2], abs=1e-12)
        assert stat['max_unrealized_pnl'] == pytest.approx((pos_max[row] - realized_value) * normalizer, abs=1e-12)
        assert stat['min_unrealized_pnl'] == pytest.approx((pos_min[row] - realized_value) * normalizer, abs=1e-12)
        checked += 1
    assert checked > 20
    assert drawdown.max() > 1.0 and cash_left.min() < 0.7 * cash
    assert (pos_max > values).any() and (pos_min < values).any()


# ------------------------------------------------------------------------------------ base: construction


@pytest.mark.parametrize('stake,order_size,expected', [(7, None, 7), (None, 5, 5), (3, {ASSET: 11}, 11)])
def test_order_size_resolution(stake, order_size, expected):
    frame = make_sine_data(num_bars=30)
    episode = run(BTgymBaseStrategy, frame, actions=['buy'], stake=stake, order_size=order_size, skip_frame=2)
    assert episode.strategy.order_size == {ASSET: expected}
    assert episode.fills[0][3] == expected


@pytest.mark.parametrize('stake,order_size', [(None, None), (1, {'other_asset': 2}), (1, [2]), (1, 'two')])
def test_bad_order_size_raises_value_error(stake, order_size):
    with pytest.raises(ValueError, match='order_size'):
        run(BTgymBaseStrategy, make_sine_data(num_bars=30), stake=stake, order_size=order_size)


def test_two_fixed_sizers_are_ambiguous():
    cerebro = _cerebro(BTgymBaseStrategy, make_sine_data(num_bars=30), lambda response: {ASSET: 'hold'}, 1000.0,
                       1, (), {ASSET: 'hold'}, {})
    cerebro.addsizer_byidx(0, bt.sizers.SizerFix, stake=2)
    with pytest.raises(ValueError, match='order_size'):
        engine.run_episode(cerebro)


def test_missing_state_method_raises():
    shape = {'foo': spaces.Box(low=-1, high=1, shape=(3,), dtype=np.float32), 'metadata': metadata_space()}
    with pytest.raises(NotImplementedError, match='get_foo_state'):
        run(BTgymBaseStrategy, make_sine_data(num_bars=30), state_shape=shape)


def test_continuous_actions_need_skip_frame_above_one():
    with pytest.raises(ValueError, match='skip_frame'):
        run(BTgymBaseStrategy, make_sine_data(num_bars=30), portfolio_actions=None, skip_frame=1,
            initial_portfolio_action={ASSET: 0.0})


@pytest.mark.parametrize('leverage', [None, 10.0], ids=['no-leverage', 'leverage-10'])
def test_continuous_action_sets_target_percent_of_portfolio(leverage):
    """The position is worth 0.45 of the portfolio after a weight of 0.5, with or without leverage (backtrader's
    own order_target_percent overshot tenfold with leverage 10)."""
    frame = make_sine_data(num_bars=40, amplitude=0.01)
    action = {ASSET: np.array([0.5], dtype=np.float32)}
    broker = {} if leverage is None else dict(commission=0.0, leverage=leverage)
    episode = run(BTgymBaseStrategy, frame, actions=[action] * 10, portfolio_actions=None, skip_frame=5,
                  initial_portfolio_action={ASSET: 0.0}, **broker)
    assert episode.fills[0][:2] == (episode.decision_rows[0] + 1, episode.decision_rows[0] + 2)
    closes = frame['close'].to_numpy()
    target_order = 'new {} target percent order: 0.45'.format(ASSET)
    for record in episode.records[1:4]:
        # Executed on the bar after the decision, then repeated on the next two skipped bars.
        messages = [info['broker_message'] for info in record.response.infos]
        assert messages == [target_order] * 3 + ['-'] * 2
        size = round(record.stat['exposure'][-1] * (1000.0 * (leverage or 1.0) + 0.01))
        value = record.response.infos[-1]['broker_value']
        assert size > 0 and size * closes[record.row] / value == pytest.approx(0.45, abs=0.005)


# ---------------------------------------------------------------------------------------------- DevStrat


def _walk(num_bars, seed):
    return make_random_walk_data(num_bars=num_bars, volatility=2e-4, seed=seed)


def test_dev_4_11_external_state_is_tanh_of_sma_gradients():
    frame = _walk(420, seed=3)
    episode = run(DevStrat_4_11, frame, actions=['buy', 'hold', 'sell', 'close'])
    assert episode.strategy.inner_embedding == 286 and episode.decision_rows[0] == 285
    closes = frame['close'].to_numpy()
    averages = np.stack([sma(closes, period) for period in (16, 32, 64, 128, 256)], axis=-1)
    scale = np.array([3000.0, 2500.0, 2000.0, 1500.0, 1000.0])
    assert len(episode.records) >= 10
    for record in episode.records:
        assert record.response.infos[-1]['time'] == frame.index[record.row]
        window = averages[record.row - 29:record.row + 1]
        expected = np.tanh(feature_gradient(window) * scale)[:, None, :]
        external = record.response.state['external']
        assert external.shape == (30, 1, 5)
        np.testing.assert_allclose(external, expected, rtol=1e-6, atol=1e-9)
    spread = np.concatenate([record.response.state['external'].ravel() for record in episode.records])
    assert spread.std() > 0.05


def test_dev_4_11_internal_state_and_metadata():
    frame = _walk(420, seed=4)
    episode = run(DevStrat_4_11, frame, actions=['buy', 'hold', 'close', 'sell'])
    strategy = episode.strategy
    assert (strategy.p.drawdown_call, strategy.p.target_call, strategy.p.gamma) == (5, 19, 0.99)
    assert strategy.p.skip_frame == 10 and list(strategy.p.state_shape) == ['external', 'internal', 'metadata']
    columns = ['value', 'unrealized_pnl', 'realized_pnl', 'cash', 'exposure', 'pos_direction']
    for record in episode.records:
        internal = record.response.state['internal']
        assert internal.shape == (20, 1, 6)
        assert np.all(np.abs(internal) <= 2.0)
        stats = np.stack([record.stat[name] for name in columns], axis=-1)
        np.testing.assert_allclose(internal, np.tanh(feature_gradient(stats))[:, None, :], atol=1e-12)
        assert metadata_space().contains(record.response.state['metadata'])
    assert any(record.stat['pos_direction'].any() for record in episode.records)


def test_dev_4_6_external_state_and_internal_statistics():
    frame = _walk(150, seed=5)
    episode = run(DevStrat_4_6, frame, actions=['buy', 'hold', 'close'])
    assert episode.decision_rows[0] == 29
    data = frame[['open', 'high', 'low']].to_numpy()
    channels = np.stack([data[:, 0] - np.concatenate([[np.nan], data[:-1, 0]]), data[:, 1] - data[:, 0],
                         data[:, 2] - data[:, 0]], axis=-1)
    columns = ['value', 'unrealized_pnl', 'realized_pnl', 'cash', 'exposure']
    assert [record.row for record in episode.records] == list(range(39, 140, 10))  # END OF DATA on row 139
    for record in episode.records:
        state = record.response.state
        expected = np.tanh(2e3 * channels[record.row - 29:record.row + 1])[:, None, :]
        np.testing.assert_allclose(state['external'], expected, rtol=1e-9, atol=1e-12)
        stats = np.stack([record.stat[name] for name in columns], axis=-1)
        assert state['internal'].shape == (30, 1, 5)
        np.testing.assert_allclose(state['internal'], np.clip(stats, -2, 2)[:, None, :])


@pytest.mark.parametrize('strategy_class', [DevStrat_4_7, DevStrat_4_10])
def test_dev_4_7_and_4_10_internal_state_is_latest_statistics(strategy_class):
    frame = _walk(150, seed=6)
    episode = run(strategy_class, frame, actions=['buy', 'hold', 'close'])
    assert episode.strategy.p.gamma == 1.0
    assert all(window.maxlen == 20 for window in episode.strategy.broker_stat.values())
    columns = ['value', 'unrealized_pnl', 'realized_pnl', 'cash', 'exposure']
    assert [record.row for record in episode.records] == list(range(39, 140, 10))  # END OF DATA on row 139
    for record in episode.records:
        state = record.response.state
        assert state['external'].shape == (30, 1, 3)
        assert state['internal'].shape == (1, 1, 5)
        latest = np.array([record.stat[name][-1] for name in columns])
        np.testing.assert_allclose(state['internal'][0, 0], np.clip(latest, -2, 2))


# ---------------------------------------------------------------------------------------------- observers


def _line(observer, name):
    """Observer line values, one per bar from the first bar of the data."""
    return np.array(getattr(observer.lines, name).array[:len(observer)])


def test_observers_follow_reward_position_and_pnl():
    frame = make_sine_data(num_bars=160, period=37, amplitude=0.1, noise=0.003, seed=7)
    actions = ['buy', 'hold', 'close', 'hold', 'sell', 'hold', 'hold', 'close', 'buy']
    episode = run(Base12, frame, actions=actions, stake=300, skip_frame=4, drawdown_call=60, target_call=60,
                  observers=(Reward, Position, NormPnL))
    observers = {type(observer).__name__: observer for observer in episode.strategy.observers}
    reward_line = _line(observers['Reward'], 'reward')
    exposure_line = _line(observers['Position'], 'abs_sum_exposure')
    first, last = episode.decision_rows[0], episode.records[-1].row
    assert len(reward_line) == len(exposure_line) == last + 1

    position = held_position(episode, len(frame))
    np.testing.assert_array_equal(exposure_line[first:], np.abs(position[first:last + 1]))

    expected_reward = np.zeros(last + 1)
    for record in episode.records:
        expected_reward[record.row:] = record.response.reward
    np.testing.assert_allclose(reward_line[first:], expected_reward[first:])

    realized_seen = 0
    for record in episode.records:
        rows = np.arange(record.row - len(record.stat['unrealized_pnl']) + 1, record.row + 1)
        for name in ('unrealized_pnl', 'max_unrealized_pnl', 'min_unrealized_pnl'):
            np.testing.assert_allclose(_line(observers['NormPnL'], name)[rows], record.stat[name])
        realized_line = _line(observers['NormPnL'], 'realized_pnl')[rows]
        closed = record.stat['realized_pnl'] != 0
        assert np.all(np.isnan(realized_line[~closed]))
        np.testing.assert_allclose(realized_line[closed], record.stat['realized_pnl'][closed])
        realized_seen += closed.sum()
    assert realized_seen > 0


@pytest.mark.parametrize('period', [1, 2, 16, 256])
def test_exact_window_sums_equal_fsum_of_every_window(period):
    from btgym_aac.strategy.indicators import window_sums

    rng = np.random.default_rng(period)
    values = list(1.1 + rng.normal(size=1500).cumsum() * 1e-4) + list(rng.normal(size=300) * 1e6)
    expected = [math.fsum(values[start:start + period]) for start in range(len(values) - period + 1)]
    assert window_sums(values, period) == expected
    with pytest.raises((OverflowError, ValueError)):
        window_sums(values[:10] + [float('nan')], period)


def test_simple_moving_average_equals_backtraders_and_falls_back_on_nan():
    """The package's SMA gives backtrader's values (NaN bars included, which its own loop averages), minimum
    period and line; only one average is computed."""
    from btgym_aac.strategy.indicators import ExactAverage, SimpleMovingAverage

    frame = make_random_walk_data(num_bars=700, seed=2)
    frame.iloc[400, frame.columns.get_loc('close')] = np.nan
    results = {}

    class Both(bt.Strategy):
        def __init__(self):
            self.ours = [SimpleMovingAverage(self.data.close, period=period) for period in (3, 64, 256)]
            self.theirs = [bt.indicators.SimpleMovingAverage(self.data.close, period=period)
                           for period in (3, 64, 256)]

        def stop(self):
            results['lines'] = [(np.array(a.lines[0].array), np.array(b.lines[0].array), a._minperiod, b._minperiod)
                                for a, b in zip(self.ours, self.theirs)]
            results['inner'] = [type(inner) for sma in self.ours for inner in sma._lineiterators[0]]

    cerebro = bt.Cerebro(stdstats=False)
    cerebro.adddata(bt.feeds.PandasData(dataname=frame))
    cerebro.addstrategy(Both)
    cerebro.run(preload=True, runonce=True)
    for ours, theirs, our_period, their_period in results['lines']:
        np.testing.assert_array_equal(ours, theirs)
        assert our_period == their_period and np.isnan(ours[400]) and np.isfinite(ours[-1])
    assert results['inner'].count(ExactAverage) == 3
    assert not any(kind is bt.indicators.Average for kind in results['inner'])
