"""`TradeLog`: a backtrader analyzer recording every filled order, every closed trade and why the episode ended.

Backtrader notifies analyzers of each order and trade separately, so two fills on one bar are both recorded (the
strategy's per-bar `broker_message` keeps only the last one). Added to `BTgymEnv.engine` (copied for every
episode), its analysis is returned by `env.get_stat()[TRADE_LOG_NAME]`.
"""
import backtrader as bt

TRADE_LOG_NAME = 'evaluation_trade_log'


class TradeLog(bt.Analyzer):
    """Analysis: {'fills': [{'time', 'side' ('buy'/'sell'), 'size' (signed), 'price', 'commission',
    'position' (running sum of the fill sizes)}], 'trades': [{'open_time', 'close_time', 'pnl', 'pnlcomm'}],
    'end_reason': the strategy's `done_message` ('' when no end rule fired)}."""

    def start(self):
        self.rets['fills'] = []
        self.rets['trades'] = []
        self.rets['end_reason'] = ''
        self.position = 0.0

    def notify_order(self, order):
        if order.status != order.Completed:
            return
        self.position += float(order.executed.size)
        self.rets['fills'].append({
            'time': self.strategy.data.datetime.datetime(),
            'side': 'buy' if order.isbuy() else 'sell',
            'size': float(order.executed.size),
            'price': float(order.executed.price),
            'commission': float(order.executed.comm),
            'position': self.position,
        })

    def notify_trade(self, trade):
        if trade.isclosed:
            self.rets['trades'].append({
                'open_time': bt.num2date(trade.dtopen),
                'close_time': bt.num2date(trade.dtclose),
                'pnl': float(trade.pnl),
                'pnlcomm': float(trade.pnlcomm),
            })

    def stop(self):
        self.rets['end_reason'] = getattr(self.strategy, 'done_message', '')
