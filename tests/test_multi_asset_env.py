"""MultiDiscreteEnv and PortfolioEnv on synthetic multi-asset data: episodes, positions, weights, errors."""
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from btgym_aac.data import BTgymDataset, BTgymMultiData, make_correlated_walks
from btgym_aac.env import BTgymEnv, MultiDiscreteEnv, PortfolioEnv
from btgym_aac.env.multi_asset import PORTFOLIO_SKIP_FRAME
from btgym_aac.spaces import ActionDictSpace
from btgym_aac.strategy import BTgymBaseStrategy, MultiAssetSpreadStrategy, MultiAssetStrategy

ASSETS = ('A', 'B', 'C')
EPISODE = {'days': 0, 'hours': 5, 'minutes': 0}


def multi_data(names=ASSETS, num_bars=4000, seed=0):
    frames = make_correlated_walks(num_bars=num_bars, names=names, correlation=0.3, seed=seed)
    config = {name: {'filename': None, 'dataframe': frame} for name, frame in frames.items()}
    return BTgymMultiData(data_class_ref=BTgymDataset, data_config=config, episode_duration=EPISODE,
                          time_gap={'hours': 1})


def env_kwargs(**overrides):
    kwargs = dict(dataset=multi_data(), strategy=MultiAssetStrategy, asset_names=list(ASSETS), start_cash=10000,
                  order_size={name: 1000 for name in ASSETS}, leverage=10.0, broker_commission=0.0,
                  drawdown_call=90, target_call=90, render_enabled=False, random_seed=1)
    kwargs.update(overrides)
    return kwargs


def close_at(env, asset, time):
    """Close of `asset` at bar `time` in the env's data."""
    return env.dataset.frames[asset].loc[time, 'close']


def test_multi_discrete_spaces_cover_every_asset_and_line():
    env = MultiDiscreteEnv(**env_kwargs())
    try:
        assert isinstance(env.action_space, ActionDictSpace)
        assert env.action_space.assets == ASSETS
        assert env.action_space.one_hot_depth == 4 ** 3
        assert env.action_space.encoded_depth == 6
        assert sorted(env.observation_space['external'].spaces) == list(ASSETS)
        assert env.observation_space['internal'].shape == (20, 1, 5 + 2 * 3)
    finally:
        env.close()


def test_multi_discrete_episode_of_random_actions_holds_the_ordered_positions():
    env = MultiDiscreteEnv(**env_kwargs())
    rng = np.random.default_rng(0)
    try:
        observation, _ = env.reset()
        assert env.observation_space.contains(observation)
        steps, done = 0, False
        while not done:
            action = {asset: int(rng.integers(4)) for asset in ASSETS}
            observation, reward, done, truncated, info = env.step(action)
            assert env.observation_space.contains(observation)
            assert np.isfinite(reward) and not truncated
            assert set(info['positions']) == set(ASSETS)
            steps += 1
        assert steps > 10
        assert info['positions'] == {asset: 0 for asset in ASSETS}, 'every position is closed at the end'
    finally:
        env.close()


def deviations_at(frame, time, time_dim, periods):
    """[time_dim, len(periods)]: log close less log SMA(close, p) of `frame` at the `time_dim` bars up to `time`."""
    closes = frame['close'].to_numpy(dtype=np.float64)
    now = frame.index.get_loc(time)
    bars = range(now - time_dim + 1, now + 1)
    return np.array([[np.log(closes[bar]) - np.log(closes[bar - period + 1:bar + 1].mean()) for period in periods]
                     for bar in bars])


def test_the_spread_strategy_observes_every_pair_of_lines_against_numpy():
    env = MultiDiscreteEnv(**env_kwargs(strategy=MultiAssetSpreadStrategy))
    strategy = MultiAssetSpreadStrategy
    try:
        assert sorted(env.observation_space['external'].spaces) == ['A', 'A_less_B', 'A_less_C', 'B', 'B_less_C', 'C']
        env.reset()
        for _ in range(3):
            observation, _, _, _, info = env.step(0)
        deviations = {name: deviations_at(env.dataset.frames[name], info['time'], strategy.time_dim,
                                          strategy.sma_periods) for name in ASSETS}
        scale = strategy.params.state_ext_scale
        for name in ASSETS:
            np.testing.assert_allclose(observation['external'][name][:, 0], np.tanh(scale * deviations[name]),
                                       rtol=1e-4, atol=1e-6)
        for first, second in (('A', 'B'), ('A', 'C'), ('B', 'C')):
            np.testing.assert_allclose(observation['external']['{}_less_{}'.format(first, second)][:, 0],
                                       np.tanh(scale * (deviations[first] - deviations[second])), rtol=1e-4,
                                       atol=1e-6)
    finally:
        env.close()
    plain = MultiDiscreteEnv(**env_kwargs())
    try:
        assert sorted(plain.observation_space['external'].spaces) == list(ASSETS)
    finally:
        plain.close()


def test_multi_asset_observation_has_the_time_of_the_bar():
    env = MultiDiscreteEnv(**env_kwargs())
    try:
        env.reset()
        for _ in range(3):
            observation, _, _, _, info = env.step(0)
            when = info['time']
            np.testing.assert_allclose(observation['datetime'], [[when.month / 12, when.day / 31, when.weekday() / 6,
                                                                  when.hour / 24, when.minute / 60]], atol=1e-6)
    finally:
        env.close()


def test_multi_discrete_buy_one_asset_moves_only_its_position():
    env = MultiDiscreteEnv(**env_kwargs())
    try:
        env.reset()
        env.step({'A': 1, 'B': 0, 'C': 2})
        _, _, _, _, info = env.step(0)
        assert info['positions'] == {'A': 1000, 'B': 0, 'C': -1000}
        internal = env._last_step['state']['internal'][-1, 0]
        exposure_unit = 10000 * 10.0 + 1e-2
        np.testing.assert_allclose(internal[4], np.tanh(0.0 / exposure_unit), atol=1e-9)
        np.testing.assert_allclose(internal[5:], np.tanh([1000 / exposure_unit, 1.0, 0.0, 0.0,
                                                          -1000 / exposure_unit, -1.0]))
    finally:
        env.close()


def test_portfolio_env_reaches_the_target_weights():
    env = PortfolioEnv(**env_kwargs(order_size=None, fixed_stake=1))
    try:
        assert env.action_space.assets == ('A', 'B', 'C', 'default_cash')
        observation, _ = env.reset()
        weights = {'A': 0.5, 'B': 0.3, 'C': 0.0, 'default_cash': 0.2}
        action = {key: np.array([2 * value], dtype=np.float32) for key, value in weights.items()}
        env.step(action)
        _, _, _, _, info = env.step(action)
        value = info['broker_value']
        for asset in ASSETS:
            held = info['positions'][asset] * close_at(env, asset, info['time'])
            assert held == pytest.approx(0.9 * weights[asset] * value, rel=0.02, abs=value * 0.002)
    finally:
        env.close()


def test_portfolio_episode_of_random_weights_on_three_assets():
    """Random weights from the action space every step: observations stay in the space, no position is ever
    short, the held value never exceeds 0.9 of the portfolio (plus price moves), and all is closed at the end."""
    env = PortfolioEnv(**env_kwargs(order_size=None, fixed_stake=1, commission=0.0001))
    env.action_space.seed(0)
    try:
        observation, _ = env.reset()
        steps, done = 0, False
        while not done:
            observation, reward, done, _, info = env.step(env.action_space.sample())
            assert env.observation_space.contains(observation) and np.isfinite(reward)
            for bar in info['bars']:
                assert all(size >= 0 for size in bar['positions'].values())
                held = sum(size * close_at(env, asset, bar['time']) for asset, size in bar['positions'].items())
                assert held <= 0.92 * bar['broker_value']
            steps += 1
        assert steps > 10
        assert info['positions'] == {asset: 0 for asset in ASSETS}
    finally:
        env.close()


def test_portfolio_env_refuses_bad_actions_and_settings():
    env = PortfolioEnv(**env_kwargs())
    try:
        env.reset()
        with pytest.raises(ValueError, match='exactly'):
            env.step({'A': [1.0]})
        with pytest.raises(ValueError, match="weight of 'B'"):
            env.step({'A': [0.5], 'B': [1.5], 'C': [0.0], 'default_cash': [0.0]})
        assert env.normalized_weights({'A': 0, 'B': 0, 'C': 0, 'default_cash': 0}) == {
            'A': 0.0, 'B': 0.0, 'C': 0.0, 'default_cash': 1.0}
    finally:
        env.close()
    with pytest.raises(ValueError, match='skip_frame > 1'):
        PortfolioEnv(**env_kwargs(skip_frame=1))


def test_multi_asset_env_errors_name_the_problem():
    with pytest.raises(ValueError, match='needs dataset='):
        MultiDiscreteEnv(**env_kwargs(dataset=None))
    with pytest.raises(ValueError, match=r"\['D'\]"):
        MultiDiscreteEnv(**env_kwargs(asset_names=['A', 'D'], order_size=1000))
    with pytest.raises(ValueError, match='MultiDiscreteEnv or PortfolioEnv'):
        BTgymEnv(**env_kwargs())


@pytest.mark.parametrize('env_class', [MultiDiscreteEnv, PortfolioEnv])
def test_a_multi_asset_env_made_with_only_a_dataset_trades_every_line(env_class):
    env = env_class(dataset=multi_data())
    try:
        assert env.strategy is BTgymBaseStrategy and env.asset_names == ASSETS
        assert env.skip_frame == (PORTFOLIO_SKIP_FRAME if env_class is PortfolioEnv else 1)
        observation, _ = env.reset(seed=0)
        assert env.observation_space.contains(observation)
        if env_class is PortfolioEnv:
            buy_a = {'A': [1.0], 'B': [0.0], 'C': [0.0], 'default_cash': [0.0]}
        else:
            buy_a = {'A': 1, 'B': 0, 'C': 0}
        for _ in range(3):
            observation, reward, terminated, truncated, info = env.step(buy_a)
            assert env.observation_space.contains(observation) and np.isfinite(reward)
            assert not terminated and not truncated and len(info['bars']) == env.skip_frame
        assert info['positions']['A'] > 0 and info['positions']['B'] == info['positions']['C'] == 0
    finally:
        env.close()


def test_a_strategys_own_asset_names_and_skip_frame_stay_the_multi_asset_envs_defaults():
    class TradesB(BTgymBaseStrategy):
        params = dict(asset_names=['B'])

    discrete = MultiDiscreteEnv(dataset=multi_data(), strategy=TradesB)
    portfolio = PortfolioEnv(dataset=multi_data(), strategy=MultiAssetStrategy)
    assert discrete.asset_names == ('B',)
    assert portfolio.asset_names == ASSETS and portfolio.skip_frame == MultiAssetStrategy.skip_frame == 5
    discrete.close()
    portfolio.close()
    with pytest.raises(ValueError, match='skip_frame > 1'):
        PortfolioEnv(dataset=multi_data(), skip_frame=1)


@pytest.mark.parametrize('env_class', [MultiDiscreteEnv, PortfolioEnv])
def test_gymnasium_check_env_passes(env_class):
    env = env_class(**env_kwargs())
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_fills_are_observed_on_every_line_and_no_observer_is_added_twice():
    import backtrader as bt

    from btgym_aac.env.engine import prepare_cerebro

    cerebro = bt.Cerebro()
    cerebro.addstrategy(MultiAssetStrategy)
    cerebro.addobserver(bt.observers.DrawDown)
    feeds = {name: bt.feeds.PandasData(dataname=frame) for name, frame in make_correlated_walks(
        num_bars=300, names=ASSETS, seed=0).items()}
    prepare_cerebro(cerebro, feeds, {}, decide=None, render_observers=(bt.observers.BuySell,))
    kinds = [(multi, observer) for multi, observer, _, _ in cerebro.observers]
    assert kinds.count((False, bt.observers.DrawDown)) == 1
    assert kinds.count((True, bt.observers.BuySell)) == 1, 'one BuySell per data line'
