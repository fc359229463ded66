"""`TradeLog`: a backtrader analyzer recording every filled order, every closed trade and why the episode ended.

Backtrader notifies analyzers of each order and trade separately, so two fills on one bar are both recorded (the
strategy's per-bar `broker_message` keeps only the last one). Added to `BTgymEnv.engine` (copied for every
episode), its analysis is returned by `env.get_stat()[TRADE_LOG_NAME]`.
"""
import collections

import backtrader as bt

from btgym_aac.strategy.orders import bracket_part

TRADE_LOG_NAME = 'evaluation_trade_log'


class TradeLog(bt.Analyzer):
    """Analysis: {'fills': [{'time', 'asset' (the order's data line), 'side' ('buy'/'sell'), 'size' (signed),
    'price', 'commission', 'spread_cost', 'slippage_cost' (what the fill paid for the spread and for slippage with a
    `CostBroker`, else 0), 'position' (running sum of the asset's fill sizes), 'order' (its part of a bracket,
    'entry', 'stop_loss' or 'take_profit', else backtrader's order type in lower case: 'market', 'close', 'limit',
    'stop', 'stoptrail', ...)}], 'trades': [{'asset', 'open_time', 'close_time', 'pnl', 'pnlcomm'}], 'end_reason':
    the strategy's `done_message` ('' when no end rule fired)}."""

    def start(self):
        self.rets['fills'] = []
        self.rets['trades'] = []
        self.rets['end_reason'] = ''
        self.positions = collections.defaultdict(float)

    def notify_order(self, order):
        if order.status != order.Completed:
            return
        asset = order.data._name
        self.positions[asset] += float(order.executed.size)
        self.rets['fills'].append({
            'time': self.strategy.data.datetime.datetime(),
            'asset': asset,
            'side': 'buy' if order.isbuy() else 'sell',
            'size': float(order.executed.size),
            'price': float(order.executed.price),
            'commission': float(order.executed.comm),
            'spread_cost': float(order.info.get('spread_cost', 0.0)),
            'slippage_cost': float(order.info.get('slippage_cost', 0.0)),
            'position': self.positions[asset],
            'order': bracket_part(order) or order.getordername().lower(),
        })

    def notify_trade(self, trade):
        if trade.isclosed:
            self.rets['trades'].append({
                'asset': trade.data._name,
                'open_time': bt.num2date(trade.dtopen),
                'close_time': bt.num2date(trade.dtclose),
                'pnl': float(trade.pnl),
                'pnlcomm': float(trade.pnlcomm),
            })

    def stop(self):
        self.rets['end_reason'] = getattr(self.strategy, 'done_message', '')
