"""The drawdown of an episode and the backtrader observers of episode renderings.

The drawdown of the broker value is kept bar by bar by the strategy itself (`DrawdownTracker`), as backtrader's
`DrawDown` observer computes it, so that episodes run without observers still have it; the `DrawDown` observer here
computes the same numbers. `Reward`, `Position` and `NormPnL` plot the agent's reward, position and normalised pnl
on episode renderings.
"""
import backtrader as bt

BEFORE_FIRST_BARS = (0.0, 0.0)


class DrawdownTracker:
    """Drawdown and maximum drawdown of the broker value, in percent, one entry per bar.

    The strategy updates it on every bar with the broker value. Backtrader's observers run after the strategy on a
    bar, so while the strategy runs an observer's line shows at `[0]` the previous bar's value and at `[-1]` the
    one before, and once the episode has ended the last bar's at `[0]`; `seen(ago)` gives those values (the
    drawdown statistics of the observations and infos have always been read that way).
    """

    def __init__(self):
        self.peak = float('-inf')
        self.max_drawdown = 0.0
        self.history = []
        self._lag = 2

    def update(self, value):
        """Adds the bar of broker value `value`.

        Returns:
            (drawdown, max drawdown) of this bar.
        """
        self.peak = max(self.peak, value)
        drawdown = 100.0 * (self.peak - value) / self.peak
        self.max_drawdown = max(self.max_drawdown, drawdown)
        self.history.append((drawdown, self.max_drawdown))
        return self.history[-1]

    def seen(self, ago=0):
        """(drawdown, max drawdown) as an observer line shows it at `[ago]` during the latest bar.

        Args:
            ago: 0 or negative.

        Returns:
            tuple of floats; (0.0, 0.0) before the first bars.
        """
        index = len(self.history) - self._lag + ago
        return self.history[index] if index >= 0 else BEFORE_FIRST_BARS

    def finish(self):
        """Marks the end of the episode: `seen(0)` is the last bar's from now on."""
        self._lag = 1


class _SeenLine:
    """One line of `DrawdownLines`: `line[ago]` reads the tracker as the observer's line would read."""

    def __init__(self, tracker, column):
        self._tracker = tracker
        self._column = column

    def __getitem__(self, ago):
        return self._tracker.seen(ago)[self._column]


class DrawdownLines:
    """`strategy.stats.drawdown` in an episode run without the `DrawDown` observer (one that is not drawn): lines
    `drawdown` and `maxdrawdown` whose `[ago]` give, while the strategy runs, what the observer's would.

    Args:
        tracker: the strategy's `DrawdownTracker`.
    """

    def __init__(self, tracker):
        self.drawdown = _SeenLine(tracker, 0)
        self.maxdrawdown = _SeenLine(tracker, 1)


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
