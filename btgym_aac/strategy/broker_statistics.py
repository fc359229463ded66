"""The broker statistics of a strategy: normalised value, cash, exposure, drawdown, position and pnl, one value
per bar in sliding windows (`broker_stat`), which the reward and the `internal` observations read."""
from collections import deque

from btgym_aac.strategy.utils import decayed_result, norm_value


class BrokerStatistics:
    """Mixin of `BTgymBaseStrategy` (it follows `bt.Strategy` in the bases, so backtrader's metaclasses see no
    params or lines of its own): one `get_broker_<name>()` method per name of `broker_datalines`, a subclass adds
    a statistic by adding both.

    It reads the strategy's `start_cash`, `avg_period`, params (`drawdown_call`, `target_call`, `leverage`,
    `skip_frame`), broker, position and drawdown analyzer, and the trade results `notify_trade` records.
    """
    broker_datalines = [
        'cash', 'value', 'exposure', 'drawdown', 'pos_direction', 'pos_duration', 'realized_pnl',
        'unrealized_pnl', 'min_unrealized_pnl', 'max_unrealized_pnl',
    ]

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
        self._broker_getters = [
            (name, self._required_method('get_broker_{}'.format(name))) for name in self.broker_datalines
        ]
        stat_window = max(self.avg_period, 2 * self.p.skip_frame)
        self.broker_stat = {name: deque(maxlen=stat_window) for name in self.broker_datalines}

    def update_broker_stat(self):
        """Appends the current value of every broker statistic to its sliding deque."""
        current_value = self.broker.get_value()
        stat = self.broker_stat
        for name, getter in self._broker_getters:
            stat[name].append(getter(current_value=current_value))
        self.trade_just_closed = False

    def get_broker_value(self, current_value, **kwargs):
        return norm_value(current_value, self.start_cash, self.p.drawdown_call, self.p.target_call)

    def get_broker_cash(self, **kwargs):
        return norm_value(self.broker.get_cash(), self.start_cash, 99.0, self.p.target_call)

    def get_broker_exposure(self, **kwargs):
        return self.position.size / (self.start_cash * self.p.leverage + 1e-2)

    def get_broker_pos_direction(self, **kwargs):
        size = self.position.size
        return 1.0 if size > 0 else (-1.0 if size < 0 else 0.0)

    def get_broker_drawdown(self, **kwargs):
        try:
            return self.stats.drawdown.drawdown[-1]
        except IndexError:
            return 0.0

    def get_broker_pos_duration(self, current_value, **kwargs):
        if self.position.size == 0:
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
