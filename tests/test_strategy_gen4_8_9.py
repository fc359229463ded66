"""DevStrat_4_8 and DevStrat_4_9 observations in real backtrader episodes and through BTgymEnv, recomputed with numpy
from the input prices (open, moving averages of the close, np.gradient, signed log scaling) and from the broker
statistics the strategy held at each response."""
import numpy as np
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.data import make_random_walk_data
from btgym_aac.strategy import DevStrat_4_7, DevStrat_4_8, DevStrat_4_9, metadata_space
from test_strategy import run, sma

PERIODS_4_9 = (4, 8, 16, 32, 64, 128, 256)
STATS = ['value', 'unrealized_pnl', 'realized_pnl', 'cash', 'exposure']
HOLD, BUY, SELL, CLOSE = range(4)


def _walk(num_bars, seed, start='2017-01-02 00:00'):
    return make_random_walk_data(num_bars=num_bars, volatility=2e-4, seed=seed, start=start)


def _signed_log(x):
    return np.sign(x) * np.log1p(np.abs(x))


def _external_4_9(frame, row, size=30):
    """DevStrat_4_9's external state at `row` of `frame`, [size, 1, 8]: the open and the SMAs of the close over
    the `size` bars ending at `row`, central differences across those 8 features (one-sided at the ends), * 1e4,
    signed log."""
    closes = frame['close'].to_numpy()
    columns = [frame['open'].to_numpy()] + [sma(closes, period) for period in PERIODS_4_9]
    x = np.stack([column[row - size + 1:row + 1] for column in columns], axis=-1)
    grad = np.empty_like(x)
    grad[:, 0] = x[:, 1] - x[:, 0]
    grad[:, -1] = x[:, -1] - x[:, -2]
    grad[:, 1:-1] = (x[:, 2:] - x[:, :-2]) / 2.0
    return _signed_log(grad * 1e4)[:, None, :]


def _assert_fits_space(observation, space):
    assert observation in space
    for key in ('external', 'internal'):
        assert observation[key].shape == space[key].shape
        assert observation[key].dtype == space[key].dtype


# ------------------------------------------------------------------------------------------------- 4_8


def test_dev_4_8_defaults():
    assert issubclass(DevStrat_4_8, DevStrat_4_7)
    p = DevStrat_4_8.params
    assert (DevStrat_4_8.time_dim, DevStrat_4_8.skip_frame, DevStrat_4_8.avg_period) == (30, 10, 20)
    assert (p.gamma, p.drawdown_call, p.target_call, p.state_ext_scale, p.state_int_scale) == (1.0, 5, 19, 2e3, 1.0)
    shapes = {key: space.shape for key, space in p.state_shape.items() if key != 'metadata'}
    assert shapes == {'external': (30, 1, 3), 'internal': (20, 1, 5)}
    internal = p.state_shape['internal']
    assert (internal.low.min(), internal.high.max()) == (-2, 2)


def test_dev_4_8_internal_state_is_the_whole_statistics_window():
    frame = _walk(160, seed=21)
    episode = run(DevStrat_4_8, frame, actions=['buy', 'hold', 'close', 'sell', 'hold', 'close'])
    data = frame[['open', 'high', 'low']].to_numpy()
    channels = np.stack([data[:, 0] - np.concatenate([[np.nan], data[:-1, 0]]), data[:, 1] - data[:, 0],
                         data[:, 2] - data[:, 0]], axis=-1)
    assert episode.decision_rows[0] == 29
    assert len(episode.records) >= 10
    for record in episode.records:
        state = record.response.state
        assert state['internal'].shape == (20, 1, 5)
        stats = np.stack([record.stat[name][-20:] for name in STATS], axis=-1)
        assert stats.shape == (20, 5)
        np.testing.assert_allclose(state['internal'], np.clip(stats, -2, 2)[:, None, :])
        expected = np.tanh(2e3 * channels[record.row - 29:record.row + 1])[:, None, :]
        np.testing.assert_allclose(state['external'], expected, rtol=1e-9, atol=1e-12)
        assert metadata_space().contains(state['metadata'])
    # a window, not the latest statistics repeated: some response holds different values along time
    assert any(np.ptp(record.response.state['internal'][:, 0, :], axis=0).max() > 1e-6 for record in episode.records)


def test_dev_4_8_env_observations_match_broker_statistics():
    snapshots = []

    class Recording(DevStrat_4_8):
        def get_internal_state(self):
            snapshots.append(np.stack([np.array(self.broker_stat[name])[-20:] for name in STATS], axis=-1))
            return super().get_internal_state()

    env = BTgymEnv(strategy=Recording, dataframe=_walk(3000, seed=22), episode_duration={'minutes': 200},
                   render_enabled=False)
    assert env.observation_space['internal'].shape == (20, 1, 5)
    observation, info = env.reset(seed=3)
    observations = [observation]
    for action in (BUY, HOLD, HOLD, CLOSE, SELL, HOLD):
        observation, reward, terminated, truncated, info = env.step(action)
        observations.append(observation)
        assert np.isfinite(reward) and not truncated
        if terminated:
            break
    assert len(observations) == len(snapshots) >= 5
    for observation, stats in zip(observations, snapshots):
        _assert_fits_space(observation, env.observation_space)
        np.testing.assert_allclose(observation['internal'], np.clip(stats, -2, 2)[:, None, :], rtol=1e-6,
                                   atol=1e-7)
    assert any(np.abs(obs['internal'][:, 0, 4]).max() > 0 for obs in observations)  # a position was held
    env.close()


# ------------------------------------------------------------------------------------------------- 4_9


def test_dev_4_9_defaults():
    assert issubclass(DevStrat_4_9, DevStrat_4_7)
    p = DevStrat_4_9.params
    assert tuple(DevStrat_4_9.sma_periods) == PERIODS_4_9
    assert DevStrat_4_9.warmup_period == 256 + 30
    assert (p.gamma, p.drawdown_call, p.target_call, p.state_ext_scale, p.state_int_scale) == (1.0, 5, 19, 1e4, 1.0)
    shapes = {key: space.shape for key, space in p.state_shape.items() if key != 'metadata'}
    assert shapes == {'external': (30, 1, 8), 'internal': (1, 1, 5)}
    external = p.state_shape['external']
    assert (external.low.min(), external.high.max()) == (-100, 100)


def test_dev_4_9_external_state_is_log_of_feature_gradients():
    frame = _walk(420, seed=23)
    episode = run(DevStrat_4_9, frame, actions=['buy', 'hold', 'close', 'sell'])
    strategy = episode.strategy
    assert strategy.inner_embedding == 286 and episode.decision_rows[0] == 285
    assert [line.p.period for line in strategy.smas] == list(PERIODS_4_9)
    assert not any(line.plotinfo.plot for line in strategy.smas)
    assert len(episode.records) >= 10
    for record in episode.records:
        state = record.response.state
        assert record.response.infos[-1]['time'] == frame.index[record.row]
        assert state['external'].shape == (30, 1, 8)
        np.testing.assert_allclose(state['external'], _external_4_9(frame, record.row), rtol=1e-6, atol=1e-9)
        latest = np.array([record.stat[name][-1] for name in STATS])
        assert state['internal'].shape == (1, 1, 5)
        np.testing.assert_allclose(state['internal'][0, 0], np.clip(latest, -2, 2))
    spread = np.concatenate([record.response.state['external'].ravel() for record in episode.records])
    assert spread.std() > 0.1 and np.abs(spread).max() < 100


def test_dev_4_9_env_observations_match_numpy_reference():
    frame = _walk(3000, seed=24)
    env = BTgymEnv(strategy=DevStrat_4_9, dataframe=frame, episode_duration={'minutes': 340}, render_enabled=False)
    assert env.observation_space['external'].shape == (30, 1, 8)
    observation, info = env.reset(seed=4)
    steps = [(observation, info)]
    for action in (BUY, HOLD, CLOSE):
        observation, _, terminated, _, info = env.step(action)
        steps.append((observation, info))
        if terminated:
            break
    assert len(steps) >= 3
    for observation, info in steps:
        _assert_fits_space(observation, env.observation_space)
        # the episode is a window of `frame`; the SMA windows lie inside it after the warm-up
        row = frame.index.get_loc(info['time'])
        np.testing.assert_allclose(observation['external'], _external_4_9(frame, row), rtol=1e-5, atol=1e-5)
    env.close()


def test_dev_4_9_episode_shorter_than_its_warm_up_is_refused():
    with pytest.raises(ValueError, match='warm-up of 286 bars'):
        run(DevStrat_4_9, _walk(306, seed=25))
    frame = _walk(307, seed=25)
    episode = run(DevStrat_4_9, frame)
    assert episode.decision_rows[0] == 285 and episode.records
    np.testing.assert_allclose(episode.records[0].response.state['external'], _external_4_9(frame, 295), rtol=1e-6,
                               atol=1e-9)


@pytest.mark.parametrize('scale, accepted', [(np.linspace(1e4, 2e3, 8), True), (np.ones(5), False)])
def test_dev_4_9_per_feature_scale(scale, accepted):
    params = dict(DevStrat_4_9.params._getitems(), state_ext_scale=scale)
    if accepted:
        DevStrat_4_9.check_params(params)
    else:
        with pytest.raises(ValueError, match='external'):
            DevStrat_4_9.check_params(params)
