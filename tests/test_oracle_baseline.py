"""The oracle baseline of `evaluate`: which data has one, how its signals become env actions, that it sees
only the bars up to the env's current one, and that it gains in the env where the market has an edge."""
import numpy as np
import pandas as pd
import pytest

from btgym_aac.data import BTgymDataset, make_random_walk_data
from btgym_aac.data.markets import make_mean_reversion_data, make_regime_switching_data, write_market_csv
from btgym_aac.env import BTgymEnv
from btgym_aac.evaluation.baselines import BuyAndHoldAgent
from btgym_aac.evaluation.episodes import play_episode, reset_options
from btgym_aac.evaluation.trade_log import TRADE_LOG_NAME, TradeLog
from btgym_aac.evaluation.oracle_agent import (LOOKAHEAD_DECISIONS, OracleAgent, market_spec_of,
                                               oracle_agent)
from btgym_aac.strategy import DevStrat_4_11

HOLD, BUY, SELL, CLOSE = range(4)
ACTIONS = ('hold', 'buy', 'sell', 'close')
COMMISSION = 1e-4


def market_env(frame=None, filename=None, **costs):
    dataset = BTgymDataset(dataframe=frame, filename=filename,
                           episode_duration={'days': 0, 'hours': 8, 'minutes': 0})
    env = BTgymEnv(dataset=dataset, strategy=DevStrat_4_11, start_cash=2000.0, commission=COMMISSION,
                   leverage=10.0, order_size=2000, drawdown_call=50, target_call=50, render_enabled=False, verbose=0,
                   **costs)
    env.engine.addanalyzer(TradeLog, _name=TRADE_LOG_NAME)  # as the evaluation env has it
    return env


class ScriptedOracle:
    """Gives the expected returns {bar number: value} (0 at every other bar)."""

    commission = COMMISSION

    def __init__(self, expected):
        self.expected = dict(expected)

    def expected_returns(self, log_closes, times):
        assert len(log_closes) == len(times)
        values = np.zeros(len(times))
        for bar, value in self.expected.items():
            values[bar] = value
        return values


def test_the_market_spec_comes_from_the_frame_or_the_csv_sidecar(tmp_path):
    frame = make_mean_reversion_data(num_bars=3000, seed=2)
    assert market_spec_of(BTgymDataset(dataframe=frame)).to_dict() == frame.attrs['market']
    path = str(tmp_path / 'mr.csv')
    write_market_csv(frame, path)
    dataset = BTgymDataset(filename=path)
    dataset.read_csv()
    assert market_spec_of(dataset).to_dict() == frame.attrs['market']
    plain = BTgymDataset(dataframe=make_random_walk_data(num_bars=3000, seed=2))
    assert market_spec_of(plain) is None


def test_signals_become_orders_towards_the_largest_position_holds_while_weak_and_closes_to_turn_around():
    bars = make_mean_reversion_data(num_bars=50, seed=1)
    strong, weak = 5 * COMMISSION, 1.5 * COMMISSION  # a round trip costs 2 * COMMISSION
    signals = [strong, strong, weak, -weak, -strong, -strong, strong]
    agent = OracleAgent(ScriptedOracle({10 + minute: signal for minute, signal in enumerate(signals)}), bars, ACTIONS)
    positions = [0, 2000, 4000, 4000, 4000, 0, -2000]  # the env's position before each decision
    actions = []
    for minute, position in enumerate(positions):
        agent.observe_info({'time': bars.index[10 + minute], 'position': position})
        actions.append(agent.act(None))
    # long from flat: buy, and buy again while the signal is strong (the broker caps it); a signal too weak to pay
    # a round trip holds, whichever its side; turn around: close first, then sell
    assert actions == [BUY, BUY, HOLD, HOLD, CLOSE, SELL, CLOSE]
    agent.observe_info({'time': bars.index[10] + pd.Timedelta(seconds=30), 'position': 0})
    assert agent.expected_now() == strong  # between bars: the last bar at or before the time
    agent.reset()
    assert agent.side == 0


def test_an_oracle_needs_the_four_discrete_actions():
    with pytest.raises(ValueError, match="'close'"):
        OracleAgent(ScriptedOracle({}), make_mean_reversion_data(num_bars=50, seed=1), ('hold', 'buy', 'sell'))


def test_the_oracle_decides_on_the_bars_up_to_the_envs_current_bar_only(tmp_path):
    env = market_env(filename=write_market_csv(make_mean_reversion_data(num_bars=6000, seed=5),
                                               str(tmp_path / 'mr.csv')))
    try:
        agent = oracle_agent(env)
        assert isinstance(agent, OracleAgent) and agent.oracle.horizon == LOOKAHEAD_DECISIONS * DevStrat_4_11.skip_frame
        assert env.cost_settings()['commission'] == COMMISSION and agent.oracle.commission == COMMISSION
        agent.expected = np.arange(len(agent.times), dtype=np.float64) * 1e-9  # each bar's number, too weak to trade
        read = []
        expected_now = agent.expected_now
        agent.expected_now = lambda: read.append(expected_now()) or read[-1]
        record = play_episode(env, agent, seed=0, options=reset_options(0))
    finally:
        env.close()
    # each decision reads the oracle at the bar of the info the env gave before it (the oracle's own values at a
    # bar come from the bars up to it: tests/test_markets.py)
    assert [agent.times[int(round(value * 1e9))] for value in read] == [pd.Timestamp(time)
                                                                         for time in record.step_times[:-1]]


def test_no_oracle_for_bars_of_no_known_edge_market():
    env = market_env(frame=make_random_walk_data(num_bars=6000, seed=1))
    try:
        assert oracle_agent(env) is None
    finally:
        env.close()


@pytest.mark.parametrize('make', [make_mean_reversion_data, make_regime_switching_data], ids=['mr', 'regime'])
def test_the_oracle_gains_in_the_env_on_a_market_with_an_edge(tmp_path, make):
    frame = make(num_bars=20000, seed=7)
    env = market_env(filename=write_market_csv(frame, str(tmp_path / 'market.csv')))
    try:
        oracle = oracle_agent(env)
        hold = BuyAndHoldAgent(env.portfolio_actions)
        returns = {'oracle': [], 'buy_and_hold': []}
        for seed in range(6):
            for name, agent in (('oracle', oracle), ('buy_and_hold', hold)):
                record = play_episode(env, agent, seed=seed, options=reset_options(0))
                returns[name].append(record.step_values[-1] / record.step_values[0] - 1)
    finally:
        env.close()
    assert np.mean(returns['oracle']) > 0
    assert np.mean(returns['oracle']) > np.mean(returns['buy_and_hold'])


@pytest.mark.parametrize('costs, extra', [
    ({'spread': 2e-4, 'slippage': 5e-5}, lambda price: 1e-4 / price + 5e-5),
    ({'spread': 1e-4, 'slippage_fixed': 2e-5}, lambda price: 0.5e-4 / price + 2e-5 / price),
    ({'commission_scheme': 'per_unit'}, lambda price: COMMISSION / price - COMMISSION),
])
def test_the_oracle_weighs_every_cost_of_a_fill(tmp_path, costs, extra):
    """With a spread, slippage or a per-unit commission the oracle trades only on moves that beat them all: its
    cost per side is the commission, half the spread and the slippage as fractions of a typical price."""
    frame = make_mean_reversion_data(num_bars=3000, seed=5)
    env = market_env(filename=write_market_csv(frame, str(tmp_path / 'mr.csv')), **costs)
    try:
        price = float(env.dataset.data['close'].median())
        assert oracle_agent(env).oracle.commission == pytest.approx(COMMISSION + extra(price), rel=1e-12)
    finally:
        env.close()


def test_the_oracle_weighs_a_spread_from_the_data_at_its_median():
    frame = make_mean_reversion_data(num_bars=3000, seed=5)
    frame['spread'] = np.linspace(1e-4, 5e-4, len(frame)) ** 2 * 1e4  # median 9e-4, mean larger
    env = market_env(frame=frame, spread='data')
    try:
        price = float(env.dataset.data['close'].median())
        median_spread = float(np.median(frame['spread']))
        assert oracle_agent(env).oracle.commission == pytest.approx(COMMISSION + median_spread / 2 / price,
                                                                   rel=1e-12)
    finally:
        env.close()
