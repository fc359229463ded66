"""CausalConvStrategy family: 128-bar observation windows for the causal convolution encoders of `networks`.

Chain: DevStrat_4_12 -> CausalConvStrategy (SMA features) -> CausalConvStrategy_0 (sliding-candle features)
-> {CausalConvStrategy_1 (wavelet transform of one line), CausalConvStrategyMulti (wavelet transform of every
data line)}. All keep DevStrat_4_12's internal [20, 1, 5] and datetime [1, 5] states, reward, info and episode
end rules. The warm-up (bars before the first decision) is max(features_parameters) + time_dim: 640 for
CausalConvStrategy, 384 for the others.
"""
import backtrader as bt
import numpy as np
from gymnasium import spaces

from btgym_aac.research.causal_conv.wavelets import cwt, ricker
from btgym_aac.spaces import DictSpace
from btgym_aac.strategy.base import datetime_space, metadata_space
from btgym_aac.strategy.gen4 import DevStrat_4_6, DevStrat_4_12, _box, _check_scale
from btgym_aac.strategy.utils import gradient, tanh


class MaxPool(bt.Indicator):
    """Upper bound of a sliding candle: line `max` is the highest high of the last `period` bars (param `period`,
    default 1; no value before `period` bars)."""
    lines = ('max',)
    params = (('period', 1),)
    plotinfo = dict(subplot=False, plotlinevalues=False)

    def __init__(self):
        self.addminperiod(self.p.period)

    def next(self):
        self.lines.max[0] = np.max(self.data.high.get(size=self.p.period))


class MinPool(bt.Indicator):
    """Lower bound of a sliding candle: line `min` is the lowest low of the last `period` bars (param `period`,
    default 1; no value before `period` bars)."""
    lines = ('min',)
    params = (('period', 1),)
    plotinfo = dict(subplot=False, plotlinevalues=False)

    def __init__(self):
        self.addminperiod(self.p.period)

    def next(self):
        self.lines.min[0] = np.min(self.data.low.get(size=self.p.period))


def _common_states(avg_period):
    """The internal, datetime and metadata spaces all strategies of this module share."""
    return {
        'internal': _box(-2, 2, (avg_period, 1, 5)),
        'datetime': datetime_space(),
        'metadata': metadata_space(),
    }


def _multi_state_shape(data_names, time_dim, avg_period, num_features):
    """CausalConvStrategyMulti's state spaces for the data lines `data_names`."""
    stream = _box(-1000, 1000, (time_dim, 1, num_features))
    return dict(
        _common_states(avg_period),
        raw=_box(-1000, 1000, (time_dim, 4)),
        external=DictSpace({name: stream for name in data_names}),
    )


def _line_scale(scale, name):
    """The external scale of data line `name`: its entry of a dict scale, else the scale itself."""
    return scale[name] if isinstance(scale, dict) else scale


def cwt_widths(params, num_widths):
    """Wavelet widths: `num_widths` values evenly spaced from `cwt_lower_bound` to `cwt_upper_bound`.

    Args:
        params: strategy params with `cwt_lower_bound` and `cwt_upper_bound`.
        num_widths: number of widths.

    Returns:
        float64 array [num_widths].
    """
    return np.linspace(params.cwt_lower_bound, params.cwt_upper_bound, num_widths)


def midpoint_cwt(high, low, widths, signal_scale):
    """Ricker wavelet transform of the gradient of the high-low midpoint.

    x = (high + low) / 2, dx = np.gradient(x) * signal_scale (along time), W = cwt(dx, ricker, widths).

    Args:
        high: highs [T].
        low: lows [T].
        widths: wavelet widths.
        signal_scale: factor of the gradient.

    Returns:
        float64 array [T, len(widths)] (time x width).
    """
    x = (np.asarray(high, dtype=np.float64) + np.asarray(low, dtype=np.float64)) / 2
    return cwt(np.gradient(x) * signal_scale, ricker, widths).T


class CausalConvStrategy(DevStrat_4_12):
    """DevStrat_4_12 over a 128-bar window of four moving averages: SMA(8, 32, 128, 512) of the close.

    External state [128, 1, 4]: tanh(np.gradient(X, axis=-1) * state_ext_scale), X the SMA window [128, 4];
    the gradient runs across the SMA periods (DevStrat_4_12's rule). Warm-up: 512 + 128 = 640 bars.

    Params (beyond DevStrat_4_12's): `state_ext_scale` default linspace(4e3, 1e3, 4).
    """
    time_dim = 128
    features_parameters = (8, 32, 128, 512)
    num_features = len(features_parameters)
    skip_frame = 10
    avg_period = 20
    gamma = 0.99
    reward_scale = 1
    state_ext_scale = np.linspace(4e3, 1e3, num_features)

    params = dict(
        state_shape=dict(_common_states(avg_period), external=_box(-100, 100, (time_dim, 1, num_features))),
        state_ext_scale=state_ext_scale,
    )

    @classmethod
    def check_params(cls, params):
        """BTgymBaseStrategy's checks, `state_int_scale` against the internal state and `state_ext_scale` by the
        class's own rule (`check_ext_scale`).

        Args:
            params: dict of all the strategy's params.
        """
        # Skips DevStrat_4_6's scale checks: the external scale of the subclasses is not per channel.
        super(DevStrat_4_6, cls).check_params(params)
        internal = params['state_shape'].get('internal')
        if internal is not None:
            _check_scale('state_int_scale', params['state_int_scale'], 'internal',
                         (internal.shape[0], internal.shape[-1]))
        cls.check_ext_scale(params)

    @classmethod
    def check_ext_scale(cls, params):
        """Raises ValueError unless `state_ext_scale` broadcasts to the external state's [time, channels].

        Args:
            params: dict of all the strategy's params.
        """
        external = params['state_shape'].get('external')
        if external is not None:
            _check_scale('state_ext_scale', params['state_ext_scale'], 'external',
                         (external.shape[0], external.shape[-1]))


class CausalConvStrategy_0(CausalConvStrategy):
    """Sliding-candle features instead of moving averages.

    Features: MinPool (lowest low) and MaxPool (highest high) of the first data line for each period of
    `features_parameters` (8, 16, 32, 64, 128, 256), interleaved [min_8, max_8, min_16, max_16, ...].
    External state [128, 1, 12]: tanh(np.gradient(X, axis=-1) * scale), X the feature window [128, 12], the
    gradient across the interleaved channels; `scale` repeats each period's entry of `state_ext_scale` for its
    min and max channels. Warm-up: 256 + 128 = 384 bars.

    Params (beyond CausalConvStrategy's): `state_ext_scale` is one value per period (scalar, [6] or [128, 6];
    default linspace(2e3, 1e3, 6)); the param itself is left unchanged (the per-channel copy is
    `ext_channel_scale`).
    """
    time_dim = 128
    features_parameters = (8, 16, 32, 64, 128, 256)
    num_features = len(features_parameters)
    state_ext_scale = np.linspace(2e3, 1e3, num_features)

    params = dict(
        state_shape=dict(_common_states(CausalConvStrategy.avg_period),
                         external=_box(-100, 100, (time_dim, 1, 2 * num_features))),
        state_ext_scale=state_ext_scale,
    )

    @classmethod
    def check_ext_scale(cls, params):
        """Raises ValueError unless `state_ext_scale` broadcasts to [time, number of periods].

        Args:
            params: dict of all the strategy's params.
        """
        external = params['state_shape'].get('external')
        if external is not None:
            _check_scale('state_ext_scale', params['state_ext_scale'], 'external (one value per period)',
                         (external.shape[0], len(cls.features_parameters)))

    def set_datalines(self):
        """Adds the interleaved MinPool / MaxPool features and the per-channel scale `ext_channel_scale`."""
        self.data.features = []
        for period in self.features_parameters:
            self.data.features += [MinPool(self.data, period=period), MaxPool(self.data, period=period)]
        for feature in self.data.features:
            feature.plotinfo.plot = False
        per_period = np.asarray(self.p.state_ext_scale, dtype=np.float64) * np.ones(len(self.features_parameters))
        self.ext_channel_scale = np.repeat(per_period, 2, axis=-1)

    def get_external_state(self):
        x = self._windows(self.data.features, self.time_dim)
        return tanh(gradient(x, axis=-1) * self.ext_channel_scale)[:, None, :]


class CausalConvStrategy_1(CausalConvStrategy_0):
    """Continuous wavelet transform of the first data line, plus its raw OHLC window.

    External state [128, 16, 1] (time x wavelet width x one channel): tanh of `midpoint_cwt` of the last 128
    bars, i.e. of the Ricker transform of np.gradient((high + low) / 2) * cwt_signal_scale at 16 widths evenly
    spaced from `cwt_lower_bound` to `cwt_upper_bound` (`cwt_width`). `raw` [128, 4]: the last 128 bars of
    open, high, low, close (BTgymEnv sets its bounds to the data's price range). No feature indicators; the
    warm-up stays 256 + 128 = 384 bars (`features_parameters` of CausalConvStrategy_0).

    An `external_2` key added to `state_shape` (Box of shape [128, 1, 4]) gets `get_external_2_state`.

    Params (beyond CausalConvStrategy_0's): `cwt_signal_scale` (3e3), `cwt_lower_bound` (3.0),
    `cwt_upper_bound` (90.0). `state_ext_scale` (linspace(1, 3, 16)) is kept as the original declares it but
    used by no state.
    """
    time_dim = 128
    num_features = 16
    cwt_signal_scale = 3e3
    cwt_lower_bound = 3.0
    cwt_upper_bound = 90.0
    state_ext_scale = np.linspace(1, 3, num_features)

    params = dict(
        state_shape=dict(_common_states(CausalConvStrategy.avg_period),
                         raw=_box(-100, 100, (time_dim, 4)),
                         external=_box(-100, 100, (time_dim, num_features, 1))),
        state_ext_scale=state_ext_scale,
        cwt_signal_scale=cwt_signal_scale,
        cwt_lower_bound=cwt_lower_bound,
        cwt_upper_bound=cwt_upper_bound,
    )

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.num_channels = self.num_features
        self.cwt_width = cwt_widths(self.p, self.num_channels)

    @classmethod
    def check_ext_scale(cls, params):
        """No check: `state_ext_scale` is unused.

        Args:
            params: dict of all the strategy's params.
        """

    def set_datalines(self):
        """No feature indicators: the states read the price lines directly."""

    def get_external_state(self):
        data = self.data
        transform = midpoint_cwt(self._window(data.high, self.time_dim), self._window(data.low, self.time_dim),
                                 self.cwt_width, self.p.cwt_signal_scale)
        return tanh(transform)[..., None]

    def get_external_2_state(self):
        """tanh(np.gradient([high, open, low, close], axis=-1) * cwt_signal_scale) over the last 128 bars, the
        gradient across the four prices.

        Returns:
            array [128, 1, 4].
        """
        data = self.data
        x = self._windows((data.high, data.open, data.low, data.close), self.time_dim)
        return tanh(gradient(x, axis=-1) * self.p.cwt_signal_scale)[:, None, :]


class CausalConvStrategyMulti(CausalConvStrategy_0):
    """One wavelet-transform stream per data line (backtrader feed), for several traded or information lines.

    External state: dict data line name (`feed._name`) -> [128, 1, 16]: tanh(W * state_ext_scale[name]), W the
    `midpoint_cwt` of the line's last 128 bars at 16 widths from `cwt_lower_bound` to `cwt_upper_bound`
    (`cwt_width`); every line is included, traded or not. `raw` [128, 4]: OHLC of the first data line
    (`datas[0]`). Internal state as DevStrat_4_12: the broker statistics of the whole portfolio, with exposure
    and position-based values of the first data line. Warm-up: 384 bars, on the first data line.

    The class default `state_shape` names the lines USD, GBP, CHF and JPY (the original's); for other lines pass
    `state_shape=CausalConvStrategyMulti.state_shape_for(names)` (environments that call the
    `state_shape_for(data_names, asset_names)` hook do it themselves) and a `state_ext_scale` that covers them.

    Params (beyond CausalConvStrategy_0's): `cwt_signal_scale` (3e3), `cwt_lower_bound` (4.0), `cwt_upper_bound`
    (100.0); `state_ext_scale`: dict line name -> factor per width (scalar or [16]; default linspace(1, 2, 16)
    for USD, GBP, CHF and linspace(5e-3, 1e-2, 16) for JPY), or one such factor for all lines; `cash_name`
    'EUR', `asset_names` {'USD', 'GBP', 'CHF', 'JPY'}, `order_size` 1000 for each.

    Raises:
        ValueError (at the episode start): the data lines' names are not the `external` streams of
            `state_shape`.
    """
    time_dim = 128
    num_features = 16
    cwt_signal_scale = 3e3
    cwt_lower_bound = 4.0
    cwt_upper_bound = 100.0
    default_data_names = ('USD', 'GBP', 'CHF', 'JPY')
    state_ext_scale = {
        'USD': np.linspace(1, 2, num_features),
        'GBP': np.linspace(1, 2, num_features),
        'CHF': np.linspace(1, 2, num_features),
        'JPY': np.linspace(5e-3, 1e-2, num_features),
    }
    order_size = {'USD': 1000, 'GBP': 1000, 'CHF': 1000, 'JPY': 1000}

    params = dict(
        state_shape=_multi_state_shape(default_data_names, time_dim, CausalConvStrategy.avg_period, num_features),
        cash_name='EUR',
        asset_names={'USD', 'GBP', 'CHF', 'JPY'},
        order_size=order_size,
        state_ext_scale=state_ext_scale,
        cwt_signal_scale=cwt_signal_scale,
        cwt_lower_bound=cwt_lower_bound,
        cwt_upper_bound=cwt_upper_bound,
    )

    @classmethod
    def state_shape_for(cls, data_names, asset_names=None):
        """The `state_shape` param for data lines named `data_names`: `raw` [128, 4], `external` DictSpace of one
        Box [128, 1, 16] per line, `internal`, `datetime` and `metadata` as the class default.

        Args:
            data_names: data line names (the names the feeds get in the cerebro / dataset).
            asset_names: the traded assets; unused (every line gets a stream, traded or not), accepted for the
                environments' `state_shape_for(data_names, asset_names)` hook.

        Returns:
            dict of spaces.

        Raises:
            ValueError: no names, repeated names, or a name that is not a string.
        """
        names = list(data_names)
        if not names or len(set(names)) != len(names) or not all(isinstance(name, str) for name in names):
            raise ValueError('{}.state_shape_for needs distinct data line names (strings), got {!r}'.format(
                cls.__name__, data_names))
        return _multi_state_shape(names, cls.time_dim, cls.avg_period, cls.num_features)

    @classmethod
    def check_ext_scale(cls, params):
        """Raises ValueError unless `external` is a dict space and `state_ext_scale` gives every stream a factor
        that broadcasts to its [time, widths].

        Args:
            params: dict of all the strategy's params.
        """
        external = params['state_shape'].get('external')
        if not isinstance(external, spaces.Dict):
            raise ValueError('{}: state_shape["external"] must be a DictSpace with one stream per data line (see '
                             'state_shape_for), got {!r}'.format(cls.__name__, external))
        scale = params['state_ext_scale']
        if isinstance(scale, dict):
            missing = sorted(set(external.spaces) - set(scale))
            if missing:
                raise ValueError('state_ext_scale has no entry for the data lines {}: give a dict line -> factor for '
                                 'every external stream, or one factor for all lines'.format(missing))
        for name, space in external.spaces.items():
            _check_scale('state_ext_scale[{!r}]'.format(name), _line_scale(scale, name), 'external/{}'.format(name),
                         (space.shape[0], space.shape[-1]))

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.num_channels = self.num_features
        self.cwt_width = cwt_widths(self.p, self.num_channels)

    def set_datalines(self):
        """Maps the data line names to their feeds (`data_streams`, in feed order).

        Raises:
            ValueError: the line names are not the `external` streams of `state_shape`.
        """
        self.data_streams = {data._name: data for data in self.datas}
        streams = sorted(self.p.state_shape['external'].spaces)
        if sorted(self.data_streams) != streams:
            raise ValueError('{}: the data lines {} are not the external streams {} of state_shape: pass '
                             'state_shape={}.state_shape_for(<data line names>)'.format(
                                 type(self).__name__, list(self.data_streams), streams, type(self).__name__))

    def get_external_state(self):
        return {name: self.get_single_external_state(name) for name in self.data_streams}

    def get_single_external_state(self, name):
        """The external stream of data line `name`.

        Args:
            name: data line name.

        Returns:
            array [128, 1, 16].
        """
        data = self.data_streams[name]
        transform = midpoint_cwt(self._window(data.high, self.time_dim), self._window(data.low, self.time_dim),
                                 self.cwt_width, self.p.cwt_signal_scale)
        return tanh(transform * _line_scale(self.p.state_ext_scale, name))[:, None, :]

