"""The decisions of a `trade` run: the policy acting at every decision point of the live strategy, the journal and
the saved state, and the stops (a signal, `--max-drawdown`, a silent feed)."""
import datetime
import time

import backtrader as bt
import numpy as np

from btgym_aac.env.actions import normalized_weights, strategy_action
from btgym_aac.logs import get_logger
from btgym_aac.nonfinite import first_non_finite_key
from btgym_aac.strategy.base import SKIP_ACTION_KEY

MODES = ('paper', 'shadow')
STATE_TOLERANCE = 1e-5
"""Largest difference between the recurrent state recomputed when a run is started again and the saved one before
a warning."""


class Trader:
    """Takes the policy's decisions inside a live Cerebro (`decide` is the step analyzer's callable) and journals
    them.

    Args:
        policy: the artifact's `ArtifactPolicy`.
        folder: the run's `TradingFolder`.
        mode: 'paper' (orders go to backtrader's broker) or 'shadow' (no orders; the intended one is journaled).
        source: the run's `BarSource`.
        strategy_params: the strategy's params: `asset_names`, `portfolio_actions` (the action names; None for
            target weights, whose orders are the action's weights normalised as PortfolioEnv normalises them) and
            `cash_name`.
        identity: what the saved state must hold for the folder's run to be continued (artifact files, mode, data
            lines), saved with it.
        journaled: the decisions journaled by earlier runs on this folder (taken again and checked, not written).
        saved: the state saved by the earlier run, or None.
        max_drawdown: percent of the broker value's peak; when lost, positions are closed and the run stops.
        flatten_on_exit: close positions before a stop asked for by a signal.
        log: logbook logger.
    """

    def __init__(self, policy, folder, mode, source, strategy_params, identity, journaled=(), saved=None,
                 max_drawdown=None, flatten_on_exit=False, log=None):
        if mode not in MODES:
            raise ValueError('mode must be one of {}, got {!r}'.format(', '.join(MODES), mode))
        self.policy, self.folder, self.mode, self.source = policy, folder, mode, source
        self.asset_names = tuple(strategy_params['asset_names'])
        self.portfolio_actions, self.cash_name = strategy_params['portfolio_actions'], strategy_params['cash_name']
        self.identity, self.journaled, self.saved = identity, list(journaled), saved
        self.max_drawdown, self.flatten_on_exit = max_drawdown, flatten_on_exit
        self.log = log or get_logger('Trader')
        self.strategy = self.trade_log = None
        self.decisions, self.acted, self.fills_seen, self.peak = 0, False, 0, None
        self.stop_reason, self.flatten, self.close_after_silence = None, False, False
        self.end_message = None

    # ------------------------------------------------------------------------------------------- decisions

    def decide(self, response):
        """The step analyzer's callable: the strategy's action for a response (None: the run's first decision
        point, answered with 'hold'; a final response is recorded and answered with None)."""
        if response is None:
            return self.hold()
        if response.done:
            self.end_message = getattr(self.strategy, 'done_message', None)
            return None
        if self.acted:
            self.policy.observe(response.reward)
        self.acted = True
        bad = first_non_finite_key(response.state)
        if bad is not None:
            raise ValueError('{} holds NaN or inf at {}: not given to the policy'.format(bad, self._bar_time()))
        action, probabilities, value = self.policy.act(response.state)
        index, self.decisions = self.decisions, self.decisions + 1
        order = self._order(action)
        if index < len(self.journaled):
            self._check_replayed(index, action)
            self.fills_seen = len(self.trade_log.rets['fills'])
        else:
            self._journal(index, action, probabilities, value, order)
        return order if self.mode == 'paper' else self.hold()

    def hold(self):
        """The running strategy's 'do nothing' action, as the env set it (`initial_portfolio_action`): 'hold' per
        asset, or a target of no position."""
        return dict(self.strategy.p.initial_portfolio_action)

    def _order(self, action):
        """The strategy's action for the policy's: action names, or the assets' target weights."""
        if self.portfolio_actions:
            return strategy_action(action, self.policy.ac_space, self.asset_names, self.portfolio_actions)
        weights = normalized_weights(action, self.policy.ac_space.spaces, self.cash_name)
        return {asset: weights[asset] for asset in self.asset_names}

    def _bar_time(self):
        return self.strategy.data.datetime.datetime()

    def _check_replayed(self, index, action):
        """A decision an earlier run journaled, taken again on the same bars: it must be the same."""
        entry = self.journaled[index]
        if entry['bar_time'] != self._bar_time().isoformat() or entry['action'] != _json_action(action):
            raise RuntimeError('decision {} taken again differs from the journal (journal: {} at {}; now: {} at {}): '
                               'the bars or the artifact changed'.format(index, entry['action'], entry['bar_time'],
                                                                         _json_action(action), self._bar_time()))
        if index == len(self.journaled) - 1 and self.saved is not None:
            self._compare_saved_state()

    def _compare_saved_state(self):
        saved = self.saved['policy']['state']
        now = self.policy.get_state()['state']
        difference = max((float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(saved, now)),
                         default=0.0)
        if difference > STATE_TOLERANCE:
            self.log.warning('the recurrent state taken again differs from the saved one by {:.3g}', difference)
        self.log.notice('continued from decision {} ({} bars of the earlier run taken again)', self.decisions,
                        self.source.history_length)

    def _journal(self, index, action, probabilities, value, order):
        received, received_monotonic = self.source.received_at
        latency = None if received_monotonic is None else (time.monotonic() - received_monotonic) * 1000.0
        new_fills = self.trade_log.rets['fills'][self.fills_seen:]
        self.fills_seen += len(new_fills)
        entry = {
            'decision': index, 'bar_time': self._bar_time().isoformat(), 'mode': self.mode,
            'received_at': None if received is None else received.isoformat(), 'latency_ms': latency,
            'action': _json_action(action), 'probabilities': dict(zip(self.policy.action_names,
                                                                      map(float, probabilities))),
            'value_estimate': value, ('order' if self.mode == 'paper' else 'intended_order'): order,
            'fills': [dict(fill, time=fill['time'].isoformat()) for fill in new_fills],
        }
        entry.update(self.broker_state())
        self.folder.append_decision(entry)
        self.folder.save_state(dict(self.identity, **self.broker_state(), decisions=self.decisions,
                                    last_bar_time=entry['bar_time'], policy=self.policy.get_state(),
                                    saved_at=datetime.datetime.now(datetime.timezone.utc).isoformat()))

    def broker_state(self):
        """{'positions': asset -> size, 'cash', 'broker_value'} of the running strategy's broker."""
        broker = self.strategy.broker
        return {'positions': {asset: float(self.strategy.getposition(self.strategy.getdatabyname(asset)).size)
                              for asset in self.asset_names},
                'cash': float(broker.get_cash()), 'broker_value': float(broker.get_value())}

    # ------------------------------------------------------------------------------------------- stops

    def request_stop(self, reason, flatten=False):
        """Ends the run at the next bar (after the current decision); with `flatten` in paper mode, open positions
        are closed first (their orders fill on the next bar, then the run ends)."""
        if self.stop_reason is None:
            self.stop_reason, self.flatten = reason, flatten and self.mode == 'paper'
            self.log.notice('stopping: {}{}', reason, ', closing positions first' if self.flatten else '')

    def on_silence(self, line):
        """A feed went silent: in paper mode, open positions are closed at the first bar that comes again (orders
        cannot be sent between bars), filled at the open of the bar after it."""
        if self.mode == 'paper' and self.strategy is not None and self._has_positions():
            self.log.warning('the feed of {} is silent: positions will be closed at its next bar', line)
            self.close_after_silence = True

    def on_bar(self):
        """Per bar, after the decision: positions to close after a silence, the drawdown guard and a requested
        stop (with `flatten`, the stop waits while positions are open, closing them on every bar: the closing
        orders of a bar fill at the next one, so whatever is open then was opened since)."""
        close, self.close_after_silence = self.close_after_silence, False
        value = self.strategy.broker.get_value()
        self.peak = value if self.peak is None else max(self.peak, value)
        if self.max_drawdown is not None and self.peak > 0 and \
                (self.peak - value) / self.peak * 100.0 >= self.max_drawdown:
            self.request_stop('max drawdown: {:.2f} % below the peak value {:.2f}'.format(
                (self.peak - value) / self.peak * 100.0, self.peak), flatten=True)
            self.flatten = self.mode == 'paper'
        flattening = self.stop_reason is not None and self.flatten and self._has_positions()
        if close or flattening:
            self._close()
        if self.stop_reason is not None and not flattening:
            self.source.stop_requested = True

    def _has_positions(self):
        return any(self.strategy.getposition(data).size for data in self.strategy.datas)

    def _close(self):
        """Closes every position and keeps the pending action, and the target weights the strategy sends again on
        the bars after a decision, from opening new ones."""
        self.strategy._close_positions()
        self.strategy.action = dict(self.hold(), **{SKIP_ACTION_KEY: True})
        self.strategy.action_to_repeat = self.hold()


def _json_action(action):
    """An action as the journal writes it (an int, or a dict asset -> int or weight)."""
    if isinstance(action, dict):
        return {asset: np.asarray(value).tolist() for asset, value in action.items()}
    return int(action)


class TraderAnalyzer(bt.Analyzer):
    """Hands the running strategy and its trade log to the trader and calls its per-bar checks."""

    params = (('trader', None), ('trade_log', None))

    def start(self):
        trader = self.p.trader
        trader.strategy = self.strategy
        trader.trade_log = self.strategy.analyzers.getbyname(self.p.trade_log)

    def next(self):
        self.p.trader.on_bar()
