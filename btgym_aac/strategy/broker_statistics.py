"""The broker statistics of a strategy: normalised value, cash, exposure, drawdown, position and pnl, one value
per bar in sliding windows (`broker_stat`), which the reward and the `internal` observations read; with several
traded assets also per-asset position statistics (`asset_stat`)."""
from collections import deque
from itertools import islice

import numpy as np

from btgym_aac.strategy.observers import DrawdownTracker
from btgym_aac.strategy.utils import decayed_result, norm_value


class BrokerStatistics:
    """Mixin of `BTgymBaseStrategy` (it follows `bt.Strategy` in the bases, so backtrader's metaclasses see no
    params or lines of its own): one `get_broker_<name>()` method per name of `broker_datalines`, a subclass adds
    a statistic by adding both.

    Portfolio statistics (`broker_stat`) cover every traded asset (`asset_names`): `exposure` is the sum of the
    assets' position sizes over `start_cash * leverage`, `pos_direction` the mean of their position signs,
    `pos_duration` the bars since the portfolio last held no position, `realized_pnl` the sum of the trades closed
    on the bar. With one asset these are that asset's own statistics. With several (or `track_asset_statistics`),
    `asset_stat[asset]` keeps per-asset windows of `asset_datalines`: `exposure`, `pos_direction`, `pos_duration`
    and `unrealized_pnl` (the open position's pnl at the close, normalised as the portfolio's).

    The drawdown of the broker value (the fund value in backtrader's fund mode) is kept in `drawdown_tracker`,
    updated first on every bar.

    It reads the strategy's `start_cash`, `avg_period`, params (`drawdown_call`, `target_call`, `leverage`,
    `skip_frame`, `asset_names`), broker and positions, and the trade results `notify_trade` records.
    """
    broker_datalines = [
        'cash', 'value', 'exposure', 'drawdown', 'pos_direction', 'pos_duration', 'realized_pnl',
        'unrealized_pnl', 'min_unrealized_pnl', 'max_unrealized_pnl',
    ]
    asset_datalines = ['exposure', 'pos_direction', 'pos_duration', 'unrealized_pnl']
    track_asset_statistics = False
    """Keep `asset_stat` with one traded asset too (with several it is always kept)."""

    def _init_broker_statistics(self):
        """Empty statistic windows of max(avg_period, 2 * skip_frame) bars, no closed trade, no open position.

        Raises:
            NotImplementedError: a name of `broker_datalines` has no `get_broker_<name>()` method.
        """
        self.broker_value_normalizer = 100.0 / (self.start_cash * (self.p.drawdown_call + self.p.target_call))
        self.trade_just_closed = False
        self.trade_result = 0.0
        self.realized_broker_value = self.start_cash
        self.current_pos_duration = 0
        self.current_pos_min_value = self.start_cash
        self.current_pos_max_value = self.start_cash
        self.drawdown_tracker = DrawdownTracker()
        self._fund_mode = self.broker.fundmode
        stat_window = max(self.avg_period, 2 * self.p.skip_frame)
        self.broker_stat = {name: deque(maxlen=stat_window) for name in self.broker_datalines}
        self._broker_appenders = [
            (self.broker_stat[name].append, self._required_method('get_broker_{}'.format(name)))
            for name in self.broker_datalines
        ]
        self.traded_datas = self._traded_datas()
        self._exposure_unit = self.start_cash * self.p.leverage + 1e-2
        self.asset_pos_duration = dict.fromkeys(self.traded_datas, 0)
        self.asset_stat = {}
        if len(self.traded_datas) > 1 or self.track_asset_statistics:
            self.asset_stat = {asset: {name: deque(maxlen=stat_window) for name in self.asset_datalines}
                               for asset in self.traded_datas}

    def _traded_datas(self):
        """Dict asset name -> data feed of every traded asset.

        Raises:
            ValueError: several assets and one of them is no data line (one asset that is none trades datas[0],
                as the original did).
        """
        feeds = {data._name: data for data in self.datas}
        assets = list(self.p.asset_names)
        if len(assets) == 1 and assets[0] not in feeds:
            return {assets[0]: self.datas[0]}
        missing = [asset for asset in assets if asset not in feeds]
        if missing:
            raise ValueError('{}: asset_names {} are not data lines (the data lines are {})'.format(
                type(self).__name__, missing, sorted(feeds)))
        return {asset: feeds[asset] for asset in assets}

    def update_broker_stat(self):
        """Appends the current value of every broker statistic (and per-asset statistic) to its sliding deque."""
        current_value = self.broker.get_value()
        self.drawdown_tracker.update(self.broker.fundvalue if self._fund_mode else current_value)
        self._sizes = {asset: self.getposition(data).size for asset, data in self.traded_datas.items()}
        for append, getter in self._broker_appenders:
            append(getter(current_value=current_value))
        for asset, windows in self.asset_stat.items():
            for name in self.asset_datalines:
                windows[name].append(self._asset_statistic(name, asset))
        self.trade_just_closed = False
        self.trade_result = 0.0

    def _asset_statistic(self, name, asset):
        """Current value of the per-asset statistic `name` (one of `asset_datalines`)."""
        size = self._sizes[asset]
        if name == 'exposure':
            return size / self._exposure_unit
        if name == 'pos_direction':
            return float(np.sign(size))
        if name == 'pos_duration':
            self.asset_pos_duration[asset] = self.asset_pos_duration[asset] + 1 if size else 0
            return self.asset_pos_duration[asset]
        position = self.getposition(self.traded_datas[asset])
        price = self.traded_datas[asset].close[0]
        return size * (price - position.price) * self.broker_value_normalizer

    def broker_window(self, names):
        """Broker statistics over the last `avg_period` bars.

        Args:
            names: statistic names (see `broker_datalines`).

        Returns:
            float64 array [avg_period, len(names)] (fewer rows before avg_period bars have passed).
        """
        return latest_columns(self.broker_stat, names, self.avg_period)

    def asset_window(self, asset, names):
        """Per-asset statistics of `asset` over the last `avg_period` bars (kept with several traded assets or
        `track_asset_statistics`).

        Args:
            asset: a traded asset name.
            names: statistic names (see `asset_datalines`).

        Returns:
            float64 array [avg_period, len(names)] (fewer rows before avg_period bars have passed).
        """
        return latest_columns(self.asset_stat[asset], names, self.avg_period)

    def get_broker_value(self, current_value, **kwargs):
        return norm_value(current_value, self.start_cash, self.p.drawdown_call, self.p.target_call)

    def get_broker_cash(self, **kwargs):
        return norm_value(self.broker.get_cash(), self.start_cash, 99.0, self.p.target_call)

    def get_broker_exposure(self, **kwargs):
        return sum(self._sizes.values()) / self._exposure_unit

    def get_broker_pos_direction(self, **kwargs):
        signs = [1.0 if size > 0 else (-1.0 if size < 0 else 0.0) for size in self._sizes.values()]
        return sum(signs) / len(signs)

    def get_broker_drawdown(self, **kwargs):
        return self.drawdown_tracker.seen(-1)[0]

    def get_broker_pos_duration(self, current_value, **kwargs):
        if not any(self._sizes.values()):
            self.current_pos_duration = 0
            self.current_pos_min_value = self.current_pos_max_value = current_value
        else:
            self.current_pos_duration += 1
            self.current_pos_max_value = max(self.current_pos_max_value, current_value)
            self.current_pos_min_value = min(self.current_pos_min_value, current_value)
        return self.current_pos_duration

    def get_broker_realized_pnl(self, current_value, **kwargs):
        if not self.trade_just_closed:
            return 0.0
        return decayed_result(
            self.trade_result, current_value, self.start_cash, self.p.drawdown_call, self.p.target_call, gamma=1
        )

    def get_broker_unrealized_pnl(self, current_value, **kwargs):
        return (current_value - self.realized_broker_value) * self.broker_value_normalizer

    def get_broker_min_unrealized_pnl(self, **kwargs):
        return (self.current_pos_min_value - self.realized_broker_value) * self.broker_value_normalizer

    def get_broker_max_unrealized_pnl(self, **kwargs):
        return (self.current_pos_max_value - self.realized_broker_value) * self.broker_value_normalizer


def latest_columns(windows, names, size):
    """The latest `size` values of several statistic windows side by side.

    Args:
        windows: dict name -> deque of values, all of one length.
        names: the names to take, in column order.
        size: rows wanted.

    Returns:
        float64 array [min(size, window length), len(names)].
    """
    length = min(size, len(windows[names[0]]))
    columns = np.empty((length, len(names)))
    for column, name in enumerate(names):
        window = windows[name]
        columns[:, column] = list(islice(window, len(window) - length, None))
    return columns
