"""btgym_aac.research.causal_conv: the Ricker wavelet transform against its formula and SciPy 1.14's numbers, the
sliding-candle indicators against numpy rolling extrema, the CausalConvStrategy observations of real episodes
recomputed with numpy from the episode's bars, and the causal encoders / attention / dilated convolution against
numpy forward passes, variable sharing and their use as StackedLstmPolicy state encoders."""
import copy
import math
import pathlib

import backtrader as bt
import numpy as np
import pandas as pd
import pytest
from gymnasium import spaces
from numpy.lib.stride_tricks import sliding_window_view

from btgym_aac import BTgymDataset, BTgymEnv
from btgym_aac.algorithms.policy import StackedLstmPolicy
from btgym_aac.compat import tf
from btgym_aac.data import make_sine_data
from btgym_aac.env import engine
from btgym_aac.research.causal_conv import (
    CausalConvPolicy_0_0, CausalConvStrategy, CausalConvStrategy_0, CausalConvStrategy_1, CausalConvStrategyMulti,
    MaxPool, MinPool, attention_layer, batch_to_time, conv_1d_causal_attention_encoder, conv_1d_causal_encoder, cwt,
    dilated_conv1d, ricker, time_to_batch,
)
from btgym_aac.spaces import ActionDictSpace, DictSpace
from btgym_aac.strategy.base import metadata_space
from test_policies import assert_valid_action_pack, random_observation
from test_strategy import run

ACTIONS = ('hold', 'buy', 'sell', 'close')
META = {'type': 0, 'sample_num': 0, 'first_row': 0, 'parent_sample_num': 0, 'parent_sample_type': 0}


# ------------------------------------------------------------------------------------------- numpy references

def ricker_reference(points, a):
    """Ricker wavelet evaluated sample by sample: ceil(points) samples centred on (points - 1) / 2."""
    amplitude = 2.0 / (math.sqrt(3.0 * a) * math.pi ** 0.25)
    centre = (points - 1.0) / 2.0
    values = []
    for i in range(math.ceil(points)):
        u = i - centre
        values.append(amplitude * (1.0 - u * u / (a * a)) * math.exp(-u * u / (2.0 * a * a)))
    return np.array(values)


def same_convolution(x, kernel):
    """np.convolve(x, kernel, 'same') written as a matrix: the centre part (offset (L - 1) // 2) of the full
    convolution full[j] = sum_k x[k] kernel[j - k]."""
    n, length = len(x), len(kernel)
    full_index = np.arange(n)[:, None] + (length - 1) // 2 - np.arange(n)[None, :]
    inside = (full_index >= 0) & (full_index < length)
    matrix = np.where(inside, kernel[np.clip(full_index, 0, length - 1)], 0.0)
    return matrix @ x


def cwt_reference(x, widths, points=None):
    """Rows of the wavelet transform: wavelet of M = min(10 w, len(x)) samples (or `points`), reversed, 'same'
    convolution."""
    rows = []
    for width in widths:
        m = min(10 * width, len(x)) if points is None else points
        rows.append(same_convolution(np.asarray(x, dtype=np.float64), ricker_reference(m, width)[::-1]))
    return np.stack(rows)


def rolling(values, period, reduce):
    """`reduce` over the last `period` values ending at every index (NaN before index period - 1)."""
    out = np.full(len(values), np.nan)
    out[period - 1:] = reduce(sliding_window_view(values, period), axis=1)
    return out


def window(values, row, size=128):
    """The `size` values ending at `row`."""
    return np.asarray(values)[row - size + 1:row + 1]


def midpoint_cwt_reference(frame, row, widths, signal_scale):
    """[128, len(widths)] wavelet transform of the scaled midpoint gradient of the 128 bars ending at `row`."""
    midpoint = (window(frame['high'], row) + window(frame['low'], row)) / 2
    return cwt_reference(np.gradient(midpoint) * signal_scale, widths).T


def elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ------------------------------------------------------------------------------------------------- wavelets

@pytest.mark.parametrize('points, a', [(10, 2.0), (31, 3.0), (36.5, 3.65), (97.33333333333333, 9.733333333333333),
                                       (128, 20.0)])
def test_ricker_samples_the_formula(points, a):
    psi = ricker(points, a)
    assert psi.shape == (math.ceil(points),) and psi.dtype == np.float64
    np.testing.assert_allclose(psi, ricker_reference(points, a), rtol=1e-12, atol=1e-15)
    if float(points).is_integer():
        np.testing.assert_allclose(psi, psi[::-1], rtol=1e-12, atol=1e-15)
    assert np.argmax(psi) in (math.floor((points - 1) / 2), math.ceil((points - 1) / 2))


def test_cwt_matches_the_direct_evaluation_and_truncates_long_wavelets():
    rng = np.random.default_rng(0)
    x = rng.normal(size=128)
    widths = np.linspace(3.0, 90.0, 16)
    transform = cwt(x, ricker, widths)
    assert transform.shape == (16, 128) and transform.dtype == np.float64
    np.testing.assert_allclose(transform, cwt_reference(x, widths), rtol=1e-10, atol=1e-12)
    # A fractional M = 10 w = 97.33 stays a float: 98 samples centred on 48.17, not int(M) = 97 samples.
    width = np.linspace(4.0, 90.0, 16)[1:2]
    fractional = cwt(x, ricker, width)[0]
    np.testing.assert_allclose(fractional, cwt_reference(x, width, points=10 * width[0])[0], rtol=1e-10, atol=1e-12)
    assert np.abs(fractional - cwt_reference(x, width, points=97)[0]).max() > 1e-3
    # 10 w > 128 from the third width on: the wavelet is cut to 128 samples, which changes the rows.
    for row in (2, 8, 15):
        np.testing.assert_allclose(transform[row], cwt_reference(x, widths[row:row + 1], points=128)[0],
                                   rtol=1e-10, atol=1e-12)
        untruncated = cwt_reference(x, widths[row:row + 1], points=int(10 * widths[row]))[0]
        assert np.abs(transform[row] - untruncated).max() > 1e-3


SCIPY_CWT = pathlib.Path(__file__).parent / 'data' / 'scipy_1_14_cwt.npz'


def test_cwt_and_ricker_equal_scipy_1_14s_numbers():
    """SciPy 1.15 removed signal.cwt and signal.ricker; data/scipy_1_14_cwt.npz holds their numbers, made in a
    throwaway venv with `pip install 'scipy<1.15' numpy` (scipy 1.14.1, numpy 2.2.6, Python 3.11) by:

        import numpy as np, scipy
        from scipy import signal
        x = np.random.default_rng(1).normal(size=64)
        widths = np.geomspace(1.5, 12.0, 8)  # 10 w from 15 to 120: fractional, past len(x) from the sixth on
        np.savez('scipy_1_14_cwt.npz', scipy_version=scipy.__version__, x=x, widths=widths,
                 cwt=signal.cwt(x, signal.ricker, widths), ricker=signal.ricker(36.5, 3.65))
    """
    scipy_numbers = np.load(SCIPY_CWT)
    assert str(scipy_numbers['scipy_version']) == '1.14.1'
    transform = cwt(scipy_numbers['x'], ricker, scipy_numbers['widths'])
    assert transform.shape == (8, 64) and transform.dtype == np.float64
    np.testing.assert_allclose(transform, scipy_numbers['cwt'], rtol=1e-10, atol=0)
    np.testing.assert_allclose(ricker(36.5, 3.65), scipy_numbers['ricker'], rtol=1e-10, atol=0)


# ----------------------------------------------------------------------------------- sliding-candle indicators

def test_pools_are_rolling_extrema_and_the_scale_param_stays_as_given():
    frame = make_sine_data(num_bars=420, period=150, noise=2e-4, seed=5)
    scale = np.linspace(2e3, 1e3, 6)
    episode = run(CausalConvStrategy_0, frame, actions=['buy'], state_ext_scale=scale)
    strategy = episode.strategy
    features = strategy.data.features
    assert [type(f) for f in features] == [MinPool, MaxPool] * 6
    for index, period in enumerate((8, 16, 32, 64, 128, 256)):
        low, high = features[2 * index], features[2 * index + 1]
        assert (low.p.period, high.p.period) == (period, period)
        np.testing.assert_array_equal(np.array(low.lines.min.array), rolling(frame['low'].to_numpy(), period, np.min))
        np.testing.assert_array_equal(np.array(high.lines.max.array),
                                      rolling(frame['high'].to_numpy(), period, np.max))
    assert strategy.p.state_ext_scale is scale
    np.testing.assert_array_equal(scale, np.linspace(2e3, 1e3, 6))
    np.testing.assert_array_equal(strategy.ext_channel_scale, np.repeat(scale, 2))
    assert strategy.inner_embedding == 384 and episode.decision_rows[0] == 383


# ----------------------------------------------------------------------------- single-line strategies in envs

def env_episode(strategy_class, frame, hours=12, **strategy_kwargs):
    """Plays one episode of `strategy_class` in a BTgymEnv; returns (observation space, observations, rows)."""
    dataset = BTgymDataset(dataframe=frame, episode_duration={'days': 0, 'hours': hours, 'minutes': 0})
    env = BTgymEnv(dataset=dataset, strategy=strategy_class, render_enabled=False, random_seed=3,
                   **strategy_kwargs)
    observation, _ = env.reset()
    observations, terminated, step = [observation], False, 0
    while not terminated:
        observation, _, terminated, _, _ = env.step(step % 4)
        observations.append(observation)
        step += 1
    env.close()
    rows = [frame.index.get_loc(pd.Timestamp(float(o['metadata']['timestamp']), unit='s')) for o in observations]
    return env.observation_space, observations, rows


def assert_common_observation(observation, space, frame, row):
    """Fits the space; internal within tanh bounds; datetime of the bar at `row`."""
    assert observation in space
    assert observation['internal'].shape == (20, 1, 5) and np.abs(observation['internal']).max() <= 1
    now = frame.index[row]
    np.testing.assert_allclose(observation['datetime'], [[now.month / 12, now.day / 31, now.weekday() / 6,
                                                          now.hour / 24, now.minute / 60]], rtol=1e-6)


def test_sma_strategy_observations_are_tanh_of_sma_gradients():
    frame = make_sine_data(num_bars=1500, period=300, noise=2e-4, seed=7)
    space, observations, rows = env_episode(CausalConvStrategy, frame)
    assert CausalConvStrategy.warmup_period == 640 and min(rows) >= 639
    assert space['external'].shape == (128, 1, 4) and len(observations) >= 5
    closes = frame['close'].to_numpy()
    smas = np.stack([rolling(closes, p, np.mean) for p in (8, 32, 128, 512)], axis=-1)
    for observation, row in zip(observations, rows):
        expected = np.tanh(np.gradient(window(smas, row), axis=-1) * np.linspace(4e3, 1e3, 4))[:, None, :]
        np.testing.assert_allclose(observation['external'], expected, rtol=1e-5, atol=1e-6)
        assert_common_observation(observation, space, frame, row)
    assert np.std([o['external'] for o in observations]) > 0.05


def test_sliding_candle_strategy_observations_are_tanh_of_interleaved_extremum_gradients():
    frame = make_sine_data(num_bars=1200, period=300, noise=2e-4, seed=8)
    space, observations, rows = env_episode(CausalConvStrategy_0, frame, hours=10, state_ext_scale=1500.0)
    assert space['external'].shape == (128, 1, 12) and len(observations) >= 20 and min(rows) >= 383
    lows, highs = frame['low'].to_numpy(), frame['high'].to_numpy()
    features = np.stack([line for p in (8, 16, 32, 64, 128, 256)
                         for line in (rolling(lows, p, np.min), rolling(highs, p, np.max))], axis=-1)
    for observation, row in zip(observations, rows):
        expected = np.tanh(np.gradient(window(features, row), axis=-1) * 1500.0)[:, None, :]
        np.testing.assert_allclose(observation['external'], expected, rtol=1e-5, atol=1e-6)
        assert_common_observation(observation, space, frame, row)
    assert np.std([o['external'] for o in observations]) > 0.05


def test_wavelet_strategy_observations_are_tanh_of_the_midpoint_transform():
    frame = make_sine_data(num_bars=1200, period=300, noise=2e-4, seed=9)
    state_shape = dict(CausalConvStrategy_1.params.state_shape,
                       external_2=spaces.Box(-1, 1, (128, 1, 4), dtype=np.float32))
    space, observations, rows = env_episode(CausalConvStrategy_1, frame, hours=10, state_shape=state_shape,
                                            cwt_signal_scale=2e3)
    assert space['external'].shape == (128, 16, 1) and space['raw'].shape == (128, 4) and len(observations) >= 20
    widths = np.linspace(3.0, 90.0, 16)
    prices = frame[['open', 'high', 'low', 'close']].to_numpy()
    saturated = []
    for observation, row in zip(observations, rows):
        expected = np.tanh(midpoint_cwt_reference(frame, row, widths, 2e3))[..., None]
        np.testing.assert_allclose(observation['external'], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(observation['raw'], window(prices, row), rtol=1e-7)
        hlc = window(prices[:, [1, 0, 2, 3]], row)
        np.testing.assert_allclose(observation['external_2'], np.tanh(np.gradient(hlc, axis=-1) * 2e3)[:, None, :],
                                   rtol=1e-5, atol=1e-6)
        assert_common_observation(observation, space, frame, row)
        saturated.append(np.mean(np.abs(observation['external']) > 0.99))
    assert np.mean(saturated) < 0.5 and np.std([o['external'] for o in observations]) > 0.1


@pytest.mark.parametrize('strategy_class, scale, message', [
    (CausalConvStrategy_0, np.ones(12), 'one value per period'),
    (CausalConvStrategy, np.ones(6), 'external'),
    (CausalConvStrategy, np.ones(6), r'\(128, 4\)'),
])
def test_external_scale_that_does_not_fit_is_rejected(strategy_class, scale, message):
    params = dict(strategy_class.params._getitems(), state_ext_scale=scale)
    with pytest.raises(ValueError, match=message):
        strategy_class.check_params(params)


def test_wavelet_strategy_ignores_its_unused_external_scale():
    CausalConvStrategy_1.check_params(dict(CausalConvStrategy_1.params._getitems(), state_ext_scale=np.ones(3)))


# ------------------------------------------------------------------------------------ multi-line strategy

def line_frames(names, num_bars=500):
    """Sine bars for every name, on one time index; the last line trades around 130 (a yen cross)."""
    frames = {}
    for index, name in enumerate(names):
        base, amplitude = (130.0, 0.3) if name == 'JPY' else (1.1 + 0.2 * index, 0.002)
        frames[name] = make_sine_data(num_bars=num_bars, period=120 + 40 * index, amplitude=amplitude, base=base,
                                      noise=amplitude / 10, seed=20 + index)
    return frames


def pandas_feed(frame):
    feed = bt.feeds.PandasData(dataname=frame, timeframe=bt.TimeFrame.Minutes)
    feed.numrecords = len(frame)
    return feed


def multi_episode(frames, traded, actions=(), **params):
    """Runs CausalConvStrategyMulti over one feed per frame (in `frames` order); returns (strategy, the states of
    every response, the response rows)."""
    states, rows = [], []
    index = next(iter(frames.values())).index
    decisions = iter(actions)

    def decide(response):
        if response is not None:
            states.append(copy.deepcopy(response.state))
            rows.append(index.get_loc(pd.Timestamp(float(response.state['metadata']['timestamp']), unit='s')))
            if response.done:
                return None
        return dict({asset: 'hold' for asset in traded}, **next(decisions, {}))

    cerebro = bt.Cerebro(stdstats=False)
    cerebro.addstrategy(CausalConvStrategyMulti, asset_names=set(traded), **params)
    cerebro.broker.setcash(2000.0)
    injected = dict(initial_action={asset: 0 for asset in traded},
                    initial_portfolio_action={asset: 'hold' for asset in traded}, metadata=META)
    feeds = {name: pandas_feed(frame) for name, frame in frames.items()}
    strategy, _ = engine.run_episode(engine.prepare_cerebro(cerebro, feeds, injected, decide))
    return strategy, states, rows


def test_multi_line_observations_are_one_wavelet_stream_per_line():
    names = ('USD', 'GBP', 'CHF', 'JPY')
    frames = line_frames(names)
    strategy, states, rows = multi_episode(frames, traded=('USD', 'CHF'), actions=[{'USD': 'buy'}, {'CHF': 'sell'}],
                                           order_size={'USD': 1000, 'CHF': 1000}, cwt_signal_scale=4e3,
                                           cwt_upper_bound=90.0)
    assert (strategy.p.cash_name, strategy.p.cwt_lower_bound, len(states)) == ('EUR', 4.0, len(rows))
    assert len(states) >= 8 and min(rows) >= 383
    widths = np.linspace(4.0, 90.0, 16)
    np.testing.assert_allclose(strategy.cwt_width, widths)
    shape = CausalConvStrategyMulti.params.state_shape
    scales = CausalConvStrategyMulti.state_ext_scale
    usd = frames['USD'][['open', 'high', 'low', 'close']].to_numpy()
    for state, row in zip(states, rows):
        assert sorted(state['external']) == sorted(names)
        for name in names:
            stream = state['external'][name]
            expected = np.tanh(midpoint_cwt_reference(frames[name], row, widths, 4e3) * scales[name])[:, None, :]
            np.testing.assert_allclose(stream, expected, rtol=1e-9, atol=1e-12)
            assert shape['external'][name].contains(stream.astype(np.float32))
        np.testing.assert_array_equal(state['raw'], window(usd, row))
        for key in ('raw', 'internal', 'datetime'):
            assert shape[key].contains(np.asarray(state[key], dtype=np.float32))
        assert np.abs(state['internal']).max() <= 1
    spread = {name: np.std([state['external'][name] for state in states]) for name in names}
    assert min(spread.values()) > 0.05
    assert strategy.getposition(strategy.data_streams['USD']).size == 0  # closed at the episode end


def test_multi_line_strategy_takes_any_line_names_through_state_shape_for():
    names = ('EURUSD', 'XAUUSD')
    frames = line_frames(names, num_bars=430)
    state_shape = CausalConvStrategyMulti.state_shape_for(names)
    assert sorted(state_shape['external'].spaces) == sorted(names)
    assert {key: space.shape for key, space in state_shape.items() if key not in ('external', 'metadata')} == {
        'raw': (128, 4), 'internal': (20, 1, 5), 'datetime': (1, 5)}
    assert state_shape['external']['XAUUSD'].shape == (128, 1, 16)
    assert CausalConvStrategyMulti.state_shape_for(names, ('EURUSD',)).keys() == state_shape.keys()
    _, states, rows = multi_episode(frames, traded=('EURUSD',), state_shape=state_shape,
                                    state_ext_scale=np.linspace(1, 2, 16), order_size={'EURUSD': 1000})
    widths = np.linspace(4.0, 100.0, 16)
    for state, row in zip(states, rows):
        expected = np.tanh(midpoint_cwt_reference(frames['XAUUSD'], row, widths, 3e3) * np.linspace(1, 2, 16))
        np.testing.assert_allclose(state['external']['XAUUSD'], expected[:, None, :], rtol=1e-9, atol=1e-12)


def test_multi_line_strategy_names_the_lines_that_do_not_match_the_state_shape():
    frames = line_frames(('USD', 'SEK'), num_bars=430)
    with pytest.raises(ValueError, match=r"\['USD', 'SEK'\].*state_shape_for"):
        multi_episode(frames, traded=('USD',), order_size={'USD': 1000})


@pytest.mark.parametrize('changes, message', [
    (dict(state_shape=CausalConvStrategyMulti.state_shape_for(('USD', 'NOK', 'AUD'))), r"\['AUD', 'NOK'\]"),
    (dict(state_ext_scale=dict(CausalConvStrategyMulti.state_ext_scale, GBP=np.ones(5))), "state_ext_scale\\['GBP'\\]"),
    (dict(state_shape=dict(CausalConvStrategy_0.params.state_shape)), 'DictSpace'),
])
def test_multi_line_strategy_rejects_scales_and_spaces_that_do_not_fit(changes, message):
    params = dict(CausalConvStrategyMulti.params._getitems(), **changes)
    with pytest.raises(ValueError, match=message):
        CausalConvStrategyMulti.check_params(params)


def test_state_shape_for_rejects_repeated_names():
    with pytest.raises(ValueError, match='distinct'):
        CausalConvStrategyMulti.state_shape_for(['USD', 'USD'])


# ------------------------------------------------------------------------------------------------- encoders

def build_encoder(encoder, time_steps, channels=3, name='encoder', **kwargs):
    """(placeholder [None, T, 1, C], encoder output) in the default graph."""
    x = tf.placeholder(tf.float32, [None, time_steps, 1, channels], name='x_{}'.format(name))
    return x, encoder(x=x, ob_space=None, ac_space=None, name=name, **kwargs)


@pytest.mark.parametrize('encoder, time_steps, kwargs, shape', [
    (conv_1d_causal_encoder, 128, {}, [7, 32]),
    (conv_1d_causal_encoder, 30, {}, [4, 32]),
    (conv_1d_causal_encoder, 30, dict(conv_1d_gated=True), [4, 16]),
    (conv_1d_causal_encoder, 64, dict(conv_1d_filter_size=4, conv_1d_overlap=3), [5, 32]),
    (conv_1d_causal_attention_encoder, 128, {}, [13, 32]),
    (conv_1d_causal_attention_encoder, 30, {}, [8, 32]),
    (conv_1d_causal_attention_encoder, 20, {}, [8, 32]),
    (conv_1d_causal_attention_encoder, 128, dict(conv_1d_gated=True, conv_1d_num_filters=8), [13, 4]),
    (conv_1d_causal_attention_encoder, 30, dict(conv_1d_full_hidden=True), [15 + 8 + 4 + 2 + 4, 32]),
])
def test_encoder_output_shapes(encoder, time_steps, kwargs, shape):
    with tf.Graph().as_default(), tf.Session() as sess:
        x, encoded = build_encoder(encoder, time_steps, conv_2d_num_filters=(32, 64), conv_2d_stride=(2, 1),
                                   keep_prob=tf.constant(1.0), **kwargs)
        assert encoded.get_shape().as_list() == [None] + shape
        sess.run(tf.global_variables_initializer())
        out = sess.run(encoded, {x: np.random.default_rng(0).normal(size=(2, time_steps, 1, 3))})
        assert out.shape == tuple([2] + shape) and np.all(np.isfinite(out))


def randomise_variables(sess, rng):
    """Loads random values into every global variable (so biases and layer-norm offsets count)."""
    for variable in tf.global_variables():
        variable.load(rng.normal(size=variable.get_shape().as_list()).astype(np.float32), sess)


def numpy_tree_layers(x, variables, num_layers, k=2, scope='encoder'):
    """numpy forward pass of the tree layers: left zero-pad, blocks of k steps, conv, layer norm, elu."""
    layers, y = [], x[:, :, 0, :]
    for i in range(num_layers):
        pad = -y.shape[1] % k
        y = np.pad(y, ((0, 0), (pad, 0), (0, 0)))
        blocks = y.reshape(y.shape[0], -1, k, y.shape[2])
        z = np.einsum('bjkc,kcf->bjf', blocks, variables['{}/conv1d_layer_{}/W'.format(scope, i)])
        z = z + variables['{}/conv1d_layer_{}/b'.format(scope, i)]
        norm = 'LayerNorm' if i == 0 else 'LayerNorm_{}'.format(i)
        mean, var = z.mean(axis=(1, 2), keepdims=True), z.var(axis=(1, 2), keepdims=True)
        z = (z - mean) / np.sqrt(var + 1e-12) * variables['{}/{}/gamma'.format(scope, norm)]
        y = elu(z + variables['{}/{}/beta'.format(scope, norm)])
        layers.append(y)
    return layers


def numpy_attention(y, weights):
    memory, query = y[:, :-1], y[:, -1]
    alignments = softmax(np.einsum('bf,blf->bl', query, memory @ weights))
    return np.einsum('bl,blf->bf', alignments, memory)[:, None, :]


def evaluated_encoder(encoder, time_steps, batch=3, **kwargs):
    """(input batch, encoder output, {variable name: value}) of a freshly built encoder with random variables."""
    rng = np.random.default_rng(4)
    with tf.Graph().as_default(), tf.Session() as sess:
        x, encoded = build_encoder(encoder, time_steps, conv_1d_num_filters=6, **kwargs)
        randomise_variables(sess, rng)
        batch_x = rng.normal(size=(batch, time_steps, 1, 3))
        variables = {v.op.name: value for v, value in zip(tf.global_variables(), sess.run(tf.global_variables()))}
        return batch_x, sess.run(encoded, {x: batch_x}), variables


def test_causal_encoder_matches_a_numpy_forward_pass():
    batch_x, out, variables = evaluated_encoder(conv_1d_causal_encoder, 30)
    layers = numpy_tree_layers(batch_x, variables, 4)
    assert [layer.shape[1] for layer in layers] == [15, 8, 4, 2]
    np.testing.assert_allclose(out, np.concatenate([layer[:, -1:] for layer in layers], axis=1), rtol=1e-4,
                               atol=1e-5)


def test_attention_encoder_matches_a_numpy_forward_pass():
    batch_x, out, variables = evaluated_encoder(conv_1d_causal_attention_encoder, 20)
    layers = numpy_tree_layers(batch_x, variables, 4)
    assert [layer.shape[1] for layer in layers] == [10, 5, 3, 2]
    contexts = [numpy_attention(layer, variables['encoder/attention_layer_{}/W'.format(i)])
                for i, layer in enumerate(layers)]
    expected = np.concatenate([layer[:, -1:] for layer in layers] + contexts, axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_attention_layer_is_softmax_attention_of_the_newest_step():
    rng = np.random.default_rng(5)
    with tf.Graph().as_default(), tf.Session() as sess:
        inputs = tf.placeholder(tf.float32, [None, 6, 4])
        context = attention_layer(inputs, name='attention')
        assert context.get_shape().as_list() == [None, 1, 4]
        assert [v.op.name for v in tf.global_variables()] == ['attention/W']
        sess.run(tf.global_variables_initializer())
        batch = rng.normal(size=(5, 6, 4)).astype(np.float32)
        out, weights = sess.run([context, tf.global_variables()[0]], {inputs: batch})
    np.testing.assert_allclose(out, numpy_attention(batch.astype(np.float64), weights), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('encoder', [conv_1d_causal_encoder, conv_1d_causal_attention_encoder])
def test_encoder_rebuilt_with_reuse_shares_every_variable(encoder):
    rng = np.random.default_rng(6)
    with tf.Graph().as_default(), tf.Session() as sess:
        x, first = build_encoder(encoder, 128)
        names = [v.op.name for v in tf.global_variables()]
        assert names and all(name.startswith('encoder/') for name in names)
        second = encoder(x=x, ob_space=None, ac_space=None, name='encoder', reuse=True)
        assert [v.op.name for v in tf.global_variables()] == names
        randomise_variables(sess, rng)
        first_value, second_value = sess.run([first, second], {x: rng.normal(size=(2, 128, 1, 3))})
        np.testing.assert_array_equal(first_value, second_value)


def test_first_tree_layer_reads_only_its_block_and_the_newest_step_lands_last():
    """Causality of the convolution: block j of the first layer combines input steps (2j - 1, 2j) of a 31-step
    window (one zero padded before the oldest step), so changing step s changes block (s + 1) // 2 only and the
    newest step feeds the newest block. Other samples of the batch never change."""
    rng = np.random.default_rng(7)
    with tf.Graph().as_default(), tf.Session() as sess:
        x, encoded = build_encoder(conv_1d_causal_encoder, 31)
        first_layer = tf.get_default_graph().get_tensor_by_name('encoder/layer_0_output:0')
        randomise_variables(sess, rng)
        batch = rng.normal(size=(2, 31, 1, 3))
        base_layer, base_out = sess.run([first_layer, encoded], {x: batch})
        for step in (0, 1, 2, 17, 30):
            changed = batch.copy()
            changed[0, step] += 1.0
            layer, out = sess.run([first_layer, encoded], {x: changed})
            moved = np.flatnonzero(np.abs(layer[0] - base_layer[0]).max(axis=-1) > 1e-6)
            np.testing.assert_array_equal(moved, [(step + 1) // 2])
            np.testing.assert_array_equal(layer[1], base_layer[1])
            np.testing.assert_array_equal(out[1], base_out[1])
    assert base_layer.shape == (2, 16, 32)


def test_encoder_input_checks():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='conv_1d_overlap'):
            build_encoder(conv_1d_causal_encoder, 30, conv_1d_overlap=2)
        with pytest.raises(ValueError, match='even'):
            build_encoder(conv_1d_causal_attention_encoder, 30, name='gated', conv_1d_gated=True,
                          conv_1d_num_filters=7)
        with pytest.raises(ValueError, match='at least 4 time steps'):
            build_encoder(conv_1d_causal_encoder, 3, name='short', conv_1d_filter_size=4, conv_1d_overlap=0)


# ------------------------------------------------------------------------------------------ dilated layers

def test_time_to_batch_folds_phases_and_batch_to_time_restores_them():
    x = np.arange(2 * 7 * 3, dtype=np.float32).reshape(2, 7, 3)
    with tf.Graph().as_default(), tf.Session() as sess:
        inputs = tf.placeholder(tf.float32, [None, None, 3])
        folded = time_to_batch(inputs, 3)
        restored = batch_to_time(folded, 3)
        folded_value, restored_value = sess.run([folded, restored], {inputs: x})
    padded = np.pad(x, ((0, 0), (0, 2), (0, 0)))
    assert folded_value.shape == (6, 3, 3)
    for phase in range(3):
        for sample in range(2):
            np.testing.assert_array_equal(folded_value[phase * 2 + sample], padded[sample, phase::3])
    np.testing.assert_array_equal(restored_value, padded)


@pytest.mark.parametrize('width, dilation', [(2, 1), (3, 2), (2, 4)])
def test_dilated_conv1d_matches_numpy(width, dilation):
    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 13, 3)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        inputs = tf.placeholder(tf.float32, [None, None, 3])
        out = dilated_conv1d(inputs, 4, filter_width=width, dilation_rate=dilation, activation=tf.tanh)
        randomise_variables(sess, rng)
        kernel, bias = sess.run(tf.global_variables())
        value = sess.run(out, {inputs: x})
    steps = 13 - (width - 1) * dilation
    expected = np.stack([sum(x[:, t + j * dilation] @ kernel[j] for j in range(width)) for t in range(steps)], 1)
    np.testing.assert_allclose(value, np.tanh(expected + bias), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------------- policies

MULTI_ACTIONS = ActionDictSpace(assets=('CHF', 'USD'), base_actions=ACTIONS)


def act_a_few_times(policy, ob_space, ac_space, steps=2):
    """Initialises the graph and acts `steps` times on random observations; returns the last action pack."""
    rng = np.random.default_rng(9)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        context = sess.run(policy.on_lstm_init_state)
        last_action = ac_space.encode(ac_space.get_initial_action())
        for _ in range(steps):
            with sess.as_default():
                pack, logits, value, context = policy.act(random_observation(ob_space, rng), context,
                                                          last_action[None], np.array([0.5]))
            assert_valid_action_pack(pack, ac_space)
            assert logits.shape == (ac_space.one_hot_depth,) and np.isfinite(value).all()
            last_action = pack['encoded']
    return pack


def test_stacked_lstm_policy_encodes_every_line_with_the_attention_encoder():
    ob_space = DictSpace(CausalConvStrategyMulti.state_shape_for(('CHF', 'USD')))
    with tf.Graph().as_default():
        with tf.variable_scope('local'):
            policy = StackedLstmPolicy(ob_space=ob_space, ac_space=MULTI_ACTIONS, rp_sequence_size=3,
                                       state_encoder_class_ref=conv_1d_causal_attention_encoder,
                                       conv_1d_num_filters=8, lstm_layers=(8, 8), task=0)
        names = {v.op.name: v.get_shape().as_list() for v in policy.var_list}
        # (scope, input channels, tree layers, attention layers): W, b, beta, gamma per layer, W per attention.
        for scope, channels, layers, attentions in (('encoded_external_CHF', 16, 7, 6),
                                                    ('encoded_external_USD', 16, 7, 6), ('encoded_internal', 5, 4, 4)):
            assert names['local/{}/attention_layer_0/W'.format(scope)] == [8, 8]
            assert names['local/{}/conv1d_layer_0/W'.format(scope)] == [2, channels, 8]
            assert sum(name.startswith('local/{}/'.format(scope)) for name in names) == 4 * layers + attentions
        assert not any('encoded_external_USD_1' in name for name in names)
        # LSTM 1 reads both 13 x 8 line encodings and the last reward, LSTM 2 also the action code (4), the
        # 8 x 8 internal encoding and LSTM 1's output.
        kernels = {name.split('/')[1]: shape for name, shape in names.items() if name.endswith('/kernel')}
        assert kernels == {'lstm_1': [2 * 13 * 8 + 1 + 8, 4 * 8], 'lstm_2': [2 * 13 * 8 + 4 + 8 * 8 + 8 + 8, 4 * 8]}
        act_a_few_times(policy, ob_space, MULTI_ACTIONS)


GUIDED_SPACE = DictSpace({
    'external': spaces.Box(-100, 100, (30, 1, 6), np.float32),
    'internal': spaces.Box(-2, 2, (20, 1, 5), np.float32),
    'expert': spaces.Box(0, 10, (4,), np.float32),
    'metadata': metadata_space(),
})
TRADE_ACTIONS = ActionDictSpace(assets=('default_asset',), base_actions=ACTIONS)


def test_causal_conv_policy_encodes_with_the_causal_encoder_and_exposes_the_expert():
    with tf.Graph().as_default():
        with tf.variable_scope('local'):
            policy = CausalConvPolicy_0_0(ob_space=GUIDED_SPACE, ac_space=TRADE_ACTIONS, rp_sequence_size=3,
                                          conv_1d_num_filters=8, lstm_layers=(8, 8))
        names = {v.op.name: v.get_shape().as_list() for v in policy.var_list}
        assert names['local/encoded_external/conv1d_layer_3/W'] == [2, 8, 8]
        assert names['local/encoded_internal/conv1d_layer_0/W'] == [2, 5, 8]
        assert not any('/_layer_1/' in name for name in names)  # no conv_2d_network layer
        assert policy.expert_actions is policy.on_state_in['expert']
        assert policy.expert_actions.get_shape().as_list() == [None, 4]
        act_a_few_times(policy, GUIDED_SPACE, TRADE_ACTIONS, steps=1)
    assert CausalConvPolicy_0_0.kwargs_readers({})[0] is conv_1d_causal_encoder


@pytest.mark.parametrize('changes, message', [
    (dict(ob_space=DictSpace({key: space for key, space in GUIDED_SPACE.spaces.items() if key != 'expert'})),
     'guided policy.*`expert`'),
    (dict(conv_1d_slice_size=2), 'conv_1d_slice_size'),
])
def test_causal_conv_policy_rejects_what_it_cannot_build(changes, message):
    kwargs = dict(dict(ob_space=GUIDED_SPACE, ac_space=TRADE_ACTIONS, rp_sequence_size=3), **changes)
    with tf.Graph().as_default(), pytest.raises(ValueError, match=message):
        CausalConvPolicy_0_0(**kwargs)
