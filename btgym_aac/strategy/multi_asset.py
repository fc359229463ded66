"""MultiAssetStrategy: observations of every data line and of every traded asset's position, for
MultiDiscreteEnv and PortfolioEnv (and `btgym-aac train --assets`)."""
import numpy as np
from gymnasium import spaces

from btgym_aac.spaces import DictSpace
from btgym_aac.strategy.base import BTgymBaseStrategy, datetime_space, metadata_space
from btgym_aac.strategy.indicators import SimpleMovingAverage

PORTFOLIO_STATS = ('value', 'unrealized_pnl', 'realized_pnl', 'cash', 'exposure')
ASSET_STATS = ('exposure', 'pos_direction')


def _box(shape):
    return spaces.Box(low=-1.0, high=1.0, shape=shape, dtype=np.float32)


def spread_streams(data_names):
    """(stream name, first line, second line) of every pair of data lines, in sorted order of the lines: the stream
    '<first>_less_<second>' shows the first line's deviations less the second's."""
    names = sorted(data_names)
    return [('{}_less_{}'.format(first, second), first, second)
            for index, first in enumerate(names) for second in names[index + 1:]]


def external_stream_names(data_names, spreads):
    """The `external` streams of these data lines: one per line, then with `spreads` one per pair of lines."""
    return list(data_names) + ([name for name, _, _ in spread_streams(data_names)] if spreads else [])


def _state_shape(data_names, asset_names, time_dim, avg_period, num_features, spreads=False):
    num_stats = len(PORTFOLIO_STATS) + len(ASSET_STATS) * len(asset_names)
    return {
        'external': DictSpace({name: _box((time_dim, 1, num_features))
                               for name in external_stream_names(data_names, spreads)}),
        'internal': _box((avg_period, 1, num_stats)),
        'datetime': datetime_space(),
        'metadata': metadata_space(),
    }


class MultiAssetStrategy(BTgymBaseStrategy):
    """One observation stream per data line, and the positions of the portfolio and of each asset.

    External state: a dict of one stream per data line (traded or information-only), each [time_dim, 1, P] with
    P = len(sma_periods): tanh(state_ext_scale * (log close - log SMA(close, p))) over the last `time_dim` bars,
    for p in `sma_periods`. Differences of these streams across lines show spreads between the lines.
    Internal state [avg_period, 1, 5 + 2 K] for K traded assets (sorted): tanh of the portfolio statistics
    [value, unrealized_pnl, realized_pnl, cash, exposure], then each asset's [exposure, pos_direction].
    Datetime state [1, 5]: the current bar's time (`get_datetime_state`), for policies that read the time of day.
    Reward and episode end are the base strategy's, on the portfolio value.

    `state_shape_for(data_names, asset_names)` gives the state shape of any lines; the env calls it when no
    `state_shape` is given. `MultiAssetSpreadStrategy` adds a stream per pair of lines.
    """
    time_dim = 30
    skip_frame = 5
    avg_period = 20
    sma_periods = (8, 32, 128)
    warmup_period = max(sma_periods) + time_dim
    track_asset_statistics = True
    observes_spreads = False
    """Whether `external` has a stream per pair of data lines (`spread_streams`)."""

    @classmethod
    def state_shape_for(cls, data_names, asset_names):
        """State spaces for these data lines and traded assets.

        Args:
            data_names: data line names (one `external` stream each).
            asset_names: traded asset names.

        Returns:
            dict with 'external' (DictSpace), 'internal', 'datetime' and 'metadata' spaces.
        """
        return _state_shape(data_names, asset_names, cls.time_dim, cls.avg_period, len(cls.sma_periods),
                            cls.observes_spreads)

    params = dict(
        state_shape=_state_shape(('default_asset',), ('default_asset',), time_dim, avg_period, len(sma_periods)),
        state_ext_scale=300.0,
        skip_frame=skip_frame,
        drawdown_call=5,
        target_call=19,
    )

    def set_datalines(self):
        """Checks that `external` names the data lines and adds the SMAs of every line's close.

        Raises:
            ValueError: the `external` streams are not the data lines.
        """
        lines = sorted(data._name for data in self.datas)
        wanted = sorted(external_stream_names(lines, self.observes_spreads))
        streams = sorted(self.p.state_shape['external'].spaces)
        if wanted != streams:
            raise ValueError('{}: the external streams of state_shape {} are not those of the data lines {}: make '
                             'the state shape with state_shape_for(data_names, asset_names)'.format(
                                 type(self).__name__, streams, lines))
        self.line_smas = {}
        for data in self.datas:
            smas = [SimpleMovingAverage(data.close, period=period) for period in self.sma_periods]
            for sma in smas:
                sma.plotinfo.plot = False
            self.line_smas[data._name] = (data, smas)

    def get_external_state(self):
        """Dict data line name -> [time_dim, 1, len(sma_periods)] log-deviations of the close from its SMAs (and with
        `observes_spreads` spread stream name -> the first line's deviations less the second's)."""
        deviations = {}
        for name, (data, smas) in self.line_smas.items():
            close = np.log(self._window(data.close, self.time_dim))[:, None]
            averages = np.log(np.stack([self._window(sma, self.time_dim) for sma in smas], axis=-1))
            deviations[name] = close - averages
        if self.observes_spreads:
            deviations.update({name: deviations[first] - deviations[second]
                               for name, first, second in spread_streams(deviations)})
        return {name: np.tanh(self.p.state_ext_scale * deviation)[:, None, :]
                for name, deviation in deviations.items()}

    def get_internal_state(self):
        """[avg_period, 1, 5 + 2 K]: tanh of the portfolio statistics, then each traded asset's."""
        columns = [self.broker_window(PORTFOLIO_STATS)]
        columns += [self.asset_window(asset, ASSET_STATS) for asset in sorted(self.traded_datas)]
        return np.tanh(np.concatenate(columns, axis=-1))[:, None, :]


class MultiAssetSpreadStrategy(MultiAssetStrategy):
    """`MultiAssetStrategy` with one more `external` stream per pair of data lines: '<first>_less_<second>' is
    tanh(state_ext_scale * (d_first - d_second)), d a line's log deviations of its close from its SMAs before the
    tanh, i.e. the log ratio of the two closes against the log ratio of their SMAs. On a cointegrated pair of beta
    1 it is the spread less its moving averages, which a policy would otherwise have to learn to take from the two
    lines' streams (docs/multi-asset.md, "Why the pair stops near half")."""
    observes_spreads = True
