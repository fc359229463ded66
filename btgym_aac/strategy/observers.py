"""Backtrader observers that plot the agent's reward, position and normalised pnl on episode renderings."""
import backtrader as bt


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
