"""Backtrader observers: the episode's drawdown, and the agent's reward, position and normalised pnl plotted on
episode renderings."""
import backtrader as bt

from btgym_aac.strategy.drawdown import DrawdownTracker


class DrawDown(bt.observers.DrawDown):
    """Backtrader's `DrawDown` observer (lines `drawdown` and `maxdrawdown`, in %, the strategy's
    `stats.drawdown`) with the same values, computed in the observer itself by a `DrawdownTracker`.

    Backtrader's keeps them in a `bt.analyzers.DrawDown` slave that it notifies of the broker value on every bar;
    that bookkeeping is a visible part of an env step's CPU (`benchmarks/env_throughput.py` measures the env). Here
    the value is read from the broker when the observer runs, after the strategy of the same bar, which has not
    changed it (orders execute at the next bar). The env adds it to the episodes it draws; the strategies keep the
    same numbers in their own tracker.
    """

    def __init__(self):
        fund = self.p.fund
        self._fundmode = self._owner.broker.fundmode if fund is None else fund
        self._tracker = DrawdownTracker()

    def next(self):
        broker = self._owner.broker
        drawdown, max_drawdown = self._tracker.update(broker.fundvalue if self._fundmode else broker.getvalue())
        self.lines.drawdown[0] = drawdown
        self.lines.maxdrawdown[0] = max_drawdown


class Reward(bt.observer.Observer):
    """Line `reward`: the strategy's last computed reward."""
    lines = ('reward',)
    plotinfo = dict(plot=True, subplot=True, plotname='Reward')
    plotlines = dict(reward=dict(markersize=4.0, color='darkviolet', fillstyle='full'))

    def next(self):
        self.lines.reward[0] = self._owner.reward


class Position(bt.observer.Observer):
    """Line `abs_sum_exposure`: sum of absolute position sizes over the strategy's data feeds."""
    lines = ('abs_sum_exposure',)
    plotinfo = dict(plot=True, subplot=True, plotname='Position')
    plotlines = dict(abs_sum_exposure=dict(markersize=4.0, color='blue', fillstyle='full'))

    def next(self):
        owner = self._owner
        self.lines.abs_sum_exposure[0] = sum(abs(owner.getposition(data).size) for data in owner.datas)


class NormPnL(bt.observer.Observer):
    """Lines of the strategy's normalised pnl statistics; realized pnl is drawn only where a trade closed."""
    lines = ('realized_pnl', 'unrealized_pnl', 'max_unrealized_pnl', 'min_unrealized_pnl')
    plotinfo = dict(plot=True, subplot=True, plotname='Normalized PnL', plotymargin=0.05)
    plotlines = dict(
        realized_pnl=dict(marker='o', markersize=4.0, color='blue', fillstyle='full', ls=''),
        unrealized_pnl=dict(marker='.', markersize=1.0, color='grey', fillstyle='full'),
        max_unrealized_pnl=dict(marker='.', markersize=1.0, color='c', fillstyle='full'),
        min_unrealized_pnl=dict(marker='.', markersize=1.0, color='m', fillstyle='full'),
    )

    @staticmethod
    def _last(stat, name):
        try:
            return stat[name][-1]
        except (IndexError, KeyError):
            return 0.0

    def next(self):
        stat = getattr(self._owner, 'broker_stat', {})
        realized = self._last(stat, 'realized_pnl')
        if realized != 0:
            self.lines.realized_pnl[0] = realized
        for name in ('unrealized_pnl', 'max_unrealized_pnl', 'min_unrealized_pnl'):
            getattr(self.lines, name)[0] = self._last(stat, name)
