"""DevStrat_4_x research strategies (the reference notebooks train on DevStrat_4_11).

Chain: BTgymBaseStrategy -> DevStrat_4_6 -> DevStrat_4_7 -> DevStrat_4_10 -> DevStrat_4_11. Observations carry a
fake width axis ([time, 1, channels]) so 2-D convolutions apply. Reward, info and done rules are the base ones.
"""
import backtrader.indicators as btind
import numpy as np
from gymnasium import spaces

from btgym_aac.strategy.base import BTgymBaseStrategy, metadata_space
from btgym_aac.strategy.utils import tanh


def _box(low, high, shape):
    return spaces.Box(low=low, high=high, shape=shape, dtype=np.float32)


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
        (the `state_shape` space without its width axis).

        Args:
            params: dict of all the strategy's params.
        """
        super().check_params(params)
        for key, name in (('external', 'state_ext_scale'), ('internal', 'state_int_scale')):
            space = params['state_shape'].get(key)
            if space is not None and len(space.shape) == 3:
                _check_scale(name, params[name], key, (space.shape[0], space.shape[2]))

    def set_datalines(self):
        data = self.data
        self.channel_o = data.open - data.open(-1)
        self.channel_h = data.high - data.open
        self.channel_l = data.low - data.open

    def get_external_state(self):
        x = np.stack([self._window(line, self.time_dim) for line in (self.channel_o, self.channel_h, self.channel_l)],
                     axis=-1)
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


class DevStrat_4_10(DevStrat_4_7):
    """Same behaviour as DevStrat_4_7 (the original differs only in commented-out reward experiments)."""


class DevStrat_4_11(DevStrat_4_10):
    """Reference strategy: gradients across five moving averages of the close price.

    External state [30, 1, 5]: tanh of `np.gradient` across the SMA(16, 32, 64, 128, 256) axis times a
    per-channel scale. Internal state [20, 1, 6]: tanh of `np.gradient` across the broker statistics
    [value, unrealized_pnl, realized_pnl, cash, exposure, pos_direction].

    Note: both gradients run across features, not across time (reference §20.3 item 27). This is kept as in the
    original because it defines this strategy's observations (results are compared against the original's
    notebooks); write a subclass for time gradients.
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
        self.smas = [btind.SimpleMovingAverage(self.data.close, period=period) for period in self.sma_periods]
        for sma in self.smas:
            sma.plotinfo.plot = False

    def get_external_state(self):
        x = np.stack([self._window(sma, self.time_dim) for sma in self.smas], axis=-1)
        dx = np.gradient(x, axis=-1) * self.p.state_ext_scale
        return tanh(dx)[:, None, :]

    def get_internal_state(self):
        x = np.gradient(self.broker_window(self.internal_stats), axis=-1) * self.p.state_int_scale
        return np.clip(tanh(x), -2, 2)[:, None, :]
