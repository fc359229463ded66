"""DevStrat_4_x research strategies (the examples and `btgym-aac train`'s default configuration use DevStrat_4_11).

Chain: BTgymBaseStrategy -> DevStrat_4_6 -> DevStrat_4_7 -> {DevStrat_4_8, DevStrat_4_9, DevStrat_4_10};
DevStrat_4_10 -> DevStrat_4_11 -> {DevStrat_4_11_1, DevStrat_4_12}. Observations carry a fake width axis
([time, 1, channels]) so 2-D convolutions apply. Reward, info and done rules are the base ones.
"""
import numpy as np
from gymnasium import spaces

from btgym_aac.spaces import DictSpace
from btgym_aac.strategy.base import BTgymBaseStrategy, datetime_space, metadata_space
from btgym_aac.strategy.indicators import SimpleMovingAverage
from btgym_aac.strategy.utils import gradient, log_transform, tanh


def _box(low, high, shape):
    return spaces.Box(low=low, high=high, shape=shape, dtype=np.float32)


def _state_boxes(space, key):
    """(label, Box) pairs of a state space: the space itself, or every stream `key/stream` of a DictSpace."""
    if isinstance(space, spaces.Dict):
        return [('{}/{}'.format(key, stream), sub) for stream, sub in space.spaces.items()]
    return [(key, space)] if space is not None else []


def _check_scale(name, scale, key, shape):
    """Raises ValueError naming the param unless `scale` is finite and broadcasts to `shape`, the `key` state's
    [time, channels] shape, without changing it."""
    try:
        values = np.asarray(scale, dtype=np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or not np.all(np.isfinite(values)):
        raise ValueError('{} must be a finite number or array, got {!r}'.format(name, scale))
    try:
        fits = np.broadcast_shapes(values.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        shown = ' '.join(np.array2string(values, threshold=10, separator=', ').split())
        raise ValueError('{} of shape {} does not broadcast to the {} state of shape {} (time, channels): give a '
                         'scalar, {} per-channel values or a {} array; got {}'.format(
                             name, values.shape, key, shape, shape[1], shape, shown))


class DevStrat_4_6(BTgymBaseStrategy):
    """External state: tanh-squashed one-bar open difference and high/low distances from the open, [30, 1, 3];
    internal state: the last 30 values of broker value, unrealized pnl, realized pnl, cash and exposure, [30, 1, 5].
    """
    time_dim = 30
    skip_frame = 10
    avg_period = time_dim
    internal_stats = ('value', 'unrealized_pnl', 'realized_pnl', 'cash', 'exposure')

    params = dict(
        state_shape={
            'external': _box(-1, 1, (time_dim, 1, 3)),
            'internal': _box(-2, 2, (avg_period, 1, 5)),
            'metadata': metadata_space(),
        },
        drawdown_call=5,
        target_call=19,
        skip_frame=skip_frame,
        state_ext_scale=2e3,
        state_int_scale=1.0,
    )

    @classmethod
    def check_params(cls, params):
        """Base checks, and `state_ext_scale` / `state_int_scale` must broadcast to the external / internal state
        (the `state_shape` space without its width axis; every stream of a dict-valued state).

        Args:
            params: dict of all the strategy's params.
        """
        super().check_params(params)
        for key, name in (('external', 'state_ext_scale'), ('internal', 'state_int_scale')):
            for label, space in _state_boxes(params['state_shape'].get(key), key):
                if len(space.shape) == 3:
                    _check_scale(name, params[name], label, (space.shape[0], space.shape[2]))

    def set_datalines(self):
        data = self.data
        self.channel_o = data.open - data.open(-1)
        self.channel_h = data.high - data.open
        self.channel_l = data.low - data.open

    def get_external_state(self):
        x = self._windows((self.channel_o, self.channel_h, self.channel_l), self.time_dim)
        return tanh(x * self.p.state_ext_scale)[:, None, :]

    def get_internal_state(self):
        x = self.broker_window(self.internal_stats) * self.p.state_int_scale
        return np.clip(x, -2, 2)[:, None, :]


class DevStrat_4_7(DevStrat_4_6):
    """4_6 with broker statistics windows of 20 bars, gamma 1 and only the latest broker statistics as internal
    state, [1, 1, 5]."""
    avg_period = 20
    gamma = 1.0

    params = dict(
        state_shape={
            'external': _box(-1, 1, (DevStrat_4_6.time_dim, 1, 3)),
            'internal': _box(-2, 2, (1, 1, 5)),
            'metadata': metadata_space(),
        },
        gamma=gamma,
    )

    def get_internal_state(self):
        x = self.broker_window(self.internal_stats)[-1:] * self.p.state_int_scale
        return np.clip(x, -2, 2)[:, None, :]


class DevStrat_4_8(DevStrat_4_7):
    """4_7 with the whole `avg_period` window of the five broker statistics as internal state, [20, 1, 5]
    (for a convolutional encoder of the internal state).

    Internal state: value, unrealized_pnl, realized_pnl, cash and exposure over the last 20 bars, times
    `state_int_scale` and clipped to [-2, 2] like 4_6 and 4_7 here (the original returns them unclipped; the
    clip only keeps the values inside the declared Box). External state, reward and params as 4_7.
    """
    params = dict(
        state_shape={
            'external': _box(-1, 1, (DevStrat_4_7.time_dim, 1, 3)),
            'internal': _box(-2, 2, (DevStrat_4_7.avg_period, 1, 5)),
            'metadata': metadata_space(),
        },
    )

    def get_internal_state(self):
        x = self.broker_window(self.internal_stats) * self.p.state_int_scale
        return np.clip(x, -2, 2)[:, None, :]


class DevStrat_4_9(DevStrat_4_7):
    """4_7 with simple moving average features as external state.

    External state [30, 1, 8]: signed log scaling (`log_transform`) of `np.gradient` across the feature axis,
    times `state_ext_scale` (1e4), of the last 30 values of [open, SMA(4), SMA(8), SMA(16), SMA(32), SMA(64),
    SMA(128), SMA(256)], the SMAs taken over the first data line (its close). The gradient runs across features,
    from the open to the shortest SMA and from one SMA period to the next, not along time. Warm-up: 256 + 30 bars.
    Internal state as 4_7 ([1, 1, 5], latest broker statistics clipped to [-2, 2]).
    """
    sma_periods = (4, 8, 16, 32, 64, 128, 256)
    warmup_period = sma_periods[-1] + DevStrat_4_7.time_dim

    params = dict(
        state_shape={
            'external': _box(-100, 100, (DevStrat_4_7.time_dim, 1, 1 + len(sma_periods))),
            'internal': _box(-2, 2, (1, 1, 5)),
            'metadata': metadata_space(),
        },
        state_ext_scale=1e4,
    )

    def set_datalines(self):
        self.smas = [SimpleMovingAverage(self.datas[0], period=period) for period in self.sma_periods]
        for sma in self.smas:
            sma.plotinfo.plot = False

    def get_external_state(self):
        x = self._windows([self.data.open] + self.smas, self.time_dim)
        return log_transform(gradient(x, axis=-1) * self.p.state_ext_scale)[:, None, :]


class DevStrat_4_10(DevStrat_4_7):
    """Same observations, reward and params as DevStrat_4_7."""


class DevStrat_4_11(DevStrat_4_10):
    """Gradients across five moving averages of the close price.

    External state [30, 1, 5]: tanh of `np.gradient` across the SMA(16, 32, 64, 128, 256) axis times a
    per-channel scale. Internal state [20, 1, 6]: tanh of `np.gradient` across the broker statistics
    [value, unrealized_pnl, realized_pnl, cash, exposure, pos_direction].

    Note: both gradients run across features (from one SMA period, or one statistic, to the next), not across
    time; for gradients along time write a subclass (DevStrat_4_11_1's `avg` stream is one).
    """
    time_dim = 30
    skip_frame = 10
    avg_period = 20
    gamma = 0.99
    sma_periods = (16, 32, 64, 128, 256)
    warmup_period = sma_periods[-1] + time_dim
    internal_stats = ('value', 'unrealized_pnl', 'realized_pnl', 'cash', 'exposure', 'pos_direction')

    params = dict(
        state_shape={
            'external': _box(-100, 100, (time_dim, 1, 5)),
            'internal': _box(-2, 2, (avg_period, 1, 6)),
            'metadata': metadata_space(),
        },
        drawdown_call=5,
        target_call=19,
        gamma=gamma,
        reward_scale=1.0,
        state_ext_scale=np.linspace(3e3, 1e3, 5),
        state_int_scale=1.0,
    )

    def set_datalines(self):
        self.smas = [SimpleMovingAverage(self.data.close, period=period) for period in self.sma_periods]
        for sma in self.smas:
            sma.plotinfo.plot = False

    def get_external_state(self):
        x = self._windows(self.smas, self.time_dim)
        dx = gradient(x, axis=-1) * self.p.state_ext_scale
        return tanh(dx)[:, None, :]

    def get_internal_state(self):
        x = gradient(self.broker_window(self.internal_stats), axis=-1) * self.p.state_int_scale
        return tanh(x)[:, None, :]


class DevStrat_4_11_1(DevStrat_4_11):
    """4_11 with two external streams over the same SMA(16, 32, 64, 128, 256) window X [30, 5]:

    `diff` = tanh(np.gradient(X, axis=-1) * state_ext_scale) (across SMA periods, as 4_11) and
    `avg` = tanh(np.gradient(X, axis=0) * state_ext_scale) (along time, per SMA), each [30, 1, 5].
    Internal state as 4_11.
    """
    params = dict(
        state_shape={
            'external': DictSpace({
                'diff': _box(-100, 100, (DevStrat_4_11.time_dim, 1, 5)),
                'avg': _box(-100, 100, (DevStrat_4_11.time_dim, 1, 5)),
            }),
            'internal': _box(-2, 2, (DevStrat_4_11.avg_period, 1, 6)),
            'metadata': metadata_space(),
        },
    )

    def get_external_state(self):
        x = self._windows(self.smas, self.time_dim)
        scale = self.p.state_ext_scale
        return {
            'avg': tanh(gradient(x, axis=0) * scale)[:, None, :],
            'diff': tanh(gradient(x, axis=-1) * scale)[:, None, :],
        }


class DevStrat_4_12(DevStrat_4_11):
    """4_11 over six moving averages SMA(8, 16, 32, 64, 128, 256) of the close, plus a `datetime` state.

    External state [30, 1, 6]: tanh of `np.gradient` across the SMA axis (`features_parameters` order) times
    `state_ext_scale`. Internal state [20, 1, 5]: tanh of `np.gradient` across the broker statistics
    [value, unrealized_pnl, realized_pnl, cash, exposure] times `state_int_scale` (no clipping). Datetime state
    [1, 5]: the current bar's [month / 12, day / 31, weekday / 6, hour / 24, minute / 60].
    Subclasses may change `time_dim`, `features_parameters` and the scale; a subclass that sets `time_dim` or
    `features_parameters` but not `warmup_period` gets `warmup_period = max(features_parameters) + time_dim`.
    """
    time_dim = 30
    features_parameters = (8, 16, 32, 64, 128, 256)
    num_features = len(features_parameters)
    skip_frame = 10
    avg_period = 20
    gamma = 0.99
    reward_scale = 1
    state_ext_scale = np.linspace(3e3, 1e3, num_features)
    warmup_period = max(features_parameters) + time_dim
    internal_stats = ('value', 'unrealized_pnl', 'realized_pnl', 'cash', 'exposure')

    params = dict(
        state_shape={
            'external': _box(-100, 100, (time_dim, 1, num_features)),
            'internal': _box(-2, 2, (avg_period, 1, 5)),
            'datetime': datetime_space(),
            'metadata': metadata_space(),
        },
        state_ext_scale=state_ext_scale,
    )

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = vars(cls)
        if 'warmup_period' not in own and ('time_dim' in own or 'features_parameters' in own):
            cls.warmup_period = max(cls.features_parameters) + cls.time_dim

    def set_datalines(self):
        self.data.features = [SimpleMovingAverage(self.datas[0], period=period)
                              for period in self.features_parameters]
        for feature in self.data.features:
            feature.plotinfo.plot = False

    def get_external_state(self):
        x = self._windows(self.data.features, self.time_dim)
        return tanh(gradient(x, axis=-1) * self.p.state_ext_scale)[:, None, :]

    def get_internal_state(self):
        x = gradient(self.broker_window(self.internal_stats), axis=-1) * self.p.state_int_scale
        return tanh(x)[:, None, :]
