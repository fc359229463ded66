"""DevStrat_4_11_1 and DevStrat_4_12 observations in real backtrader episodes, recomputed with numpy from the input
prices (moving averages, np.gradient, tanh) and from the broker statistics the strategy held at each response."""
import numpy as np
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.data import make_random_walk_data
from btgym_aac.strategy import DevStrat_4_11_1, DevStrat_4_12, metadata_space
from test_strategy import run, sma

PERIODS_4_12 = (8, 16, 32, 64, 128, 256)
PERIODS_4_11 = (16, 32, 64, 128, 256)


def _walk(num_bars, seed):
    return make_random_walk_data(num_bars=num_bars, volatility=2e-4, seed=seed)


def _sma_windows(frame, periods, row, size=30):
    """SMAs of the close over the `size` bars ending at `row`, [size, len(periods)]."""
    closes = frame['close'].to_numpy()
    return np.stack([sma(closes, period)[row - size + 1:row + 1] for period in periods], axis=-1)


def test_dev_4_12_defaults_and_warm_up():
    frame = _walk(400, seed=11)
    episode = run(DevStrat_4_12, frame, actions=['buy'])
    strategy = episode.strategy
    assert (strategy.time_dim, strategy.skip_frame, strategy.avg_period, strategy.num_features) == (30, 10, 20, 6)
    assert tuple(strategy.features_parameters) == PERIODS_4_12
    p = strategy.p
    assert (p.drawdown_call, p.target_call, p.gamma, p.reward_scale, p.state_int_scale) == (5, 19, 0.99, 1.0, 1.0)
    np.testing.assert_allclose(p.state_ext_scale, [3000, 2600, 2200, 1800, 1400, 1000])
    assert {key: space.shape for key, space in p.state_shape.items() if key != 'metadata'} == {
        'external': (30, 1, 6), 'internal': (20, 1, 5), 'datetime': (1, 5)}
    assert strategy.inner_embedding == 286 and episode.decision_rows[0] == 285
    assert [feature.p.period for feature in strategy.data.features] == list(PERIODS_4_12)


def test_dev_4_12_states_match_numpy_gradients():
    frame = _walk(450, seed=12)
    episode = run(DevStrat_4_12, frame, actions=['buy', 'hold', 'sell', 'close', 'sell', 'hold', 'close'])
    scale = np.linspace(3e3, 1e3, 6)
    stats = ['value', 'unrealized_pnl', 'realized_pnl', 'cash', 'exposure']
    assert len(episode.records) >= 10
    for record in episode.records:
        state = record.response.state
        expected = np.tanh(np.gradient(_sma_windows(frame, PERIODS_4_12, record.row), axis=-1) * scale)
        np.testing.assert_allclose(state['external'], expected[:, None, :], rtol=1e-6, atol=1e-9)
        broker = np.stack([record.stat[name][-20:] for name in stats], axis=-1)
        np.testing.assert_allclose(state['internal'], np.tanh(np.gradient(broker, axis=-1))[:, None, :], atol=1e-12)
        now = frame.index[record.row]
        np.testing.assert_allclose(state['datetime'], [[now.month / 12, now.day / 31, now.weekday() / 6,
                                                        now.hour / 24, now.minute / 60]])
        assert metadata_space().contains(state['metadata'])
    spread = np.concatenate([record.response.state['external'].ravel() for record in episode.records])
    assert spread.std() > 0.05
    assert any(np.abs(record.response.state['internal']).max() > 0.01 for record in episode.records)


def test_dev_4_11_1_external_streams_across_smas_and_along_time():
    frame = _walk(420, seed=13)
    episode = run(DevStrat_4_11_1, frame, actions=['buy', 'hold', 'close'])
    scale = np.linspace(3e3, 1e3, 5)
    assert episode.strategy.inner_embedding == 286
    assert episode.strategy.p.state_shape['internal'].shape == (20, 1, 6)
    for record in episode.records:
        external = record.response.state['external']
        assert sorted(external) == ['avg', 'diff']
        window = _sma_windows(frame, PERIODS_4_11, record.row)
        np.testing.assert_allclose(external['diff'], np.tanh(np.gradient(window, axis=-1) * scale)[:, None, :],
                                   rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(external['avg'], np.tanh(np.gradient(window, axis=0) * scale)[:, None, :],
                                   rtol=1e-6, atol=1e-9)
        assert record.response.state['internal'].shape == (20, 1, 6)


def test_dev_4_11_1_env_observations_fit_the_dict_space():
    env = BTgymEnv(strategy=DevStrat_4_11_1, render_enabled=False)
    observation, _ = env.reset(seed=0)
    for _ in range(3):
        assert observation in env.observation_space
        assert {key: value.shape for key, value in observation['external'].items()} == {
            'avg': (30, 1, 5), 'diff': (30, 1, 5)}
        observation, *_ = env.step(0)
    env.close()


@pytest.mark.parametrize('strategy_class, scale, label', [
    (DevStrat_4_12, np.ones(5), 'external'),
    (DevStrat_4_11_1, np.ones(6), 'external/avg'),
])
def test_scale_that_does_not_fit_the_external_state_is_rejected(strategy_class, scale, label):
    params = dict(strategy_class.params._getitems(), state_ext_scale=scale)
    with pytest.raises(ValueError, match=label):
        strategy_class.check_params(params)


def test_dev_4_12_subclass_warm_up_follows_its_features_and_window():
    class Short(DevStrat_4_12):
        time_dim = 12
        features_parameters = (4, 8, 40)

    class Fixed(Short):
        warmup_period = 60

    class FixedChild(Fixed):
        pass

    assert (DevStrat_4_12.warmup_period, Short.warmup_period, Fixed.warmup_period, FixedChild.warmup_period) == (
        286, 52, 60, 60)
