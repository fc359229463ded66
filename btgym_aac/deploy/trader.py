"""The decisions of a `trade` run: `Trader` takes the policy's decisions at every decision point of the live
strategy, journals them, saves the state, resets the policy's recurrent state by its rule, applies the stops (a
signal, `--max-drawdown`, a silent feed) and writes the run's end.

Started again on the same folder, a run first takes the bars it processed before through the strategy and the policy
again (`BarSource`'s history): every decision is checked against the journal (time, action and the broker's
positions, cash and value after it), the positions the trader closed are closed again at the same bars, and nothing
is journaled until the bars are new. So the run takes the decisions an uninterrupted run takes, however it was
stopped (SIGKILL included).
"""
import datetime
import math
import time

import backtrader as bt
import numpy as np

from btgym_aac.deploy.journal import CLOSE_RECORD, END_RECORD
from btgym_aac.env.components import normalized_weights, strategy_action
from btgym_aac.logs import get_logger
from btgym_aac.nonfinite import first_non_finite_key
from btgym_aac.strategy.base import SKIP_ACTION_KEY

MODES = ('paper', 'shadow')
STATE_TOLERANCE = 1e-5
"""Largest difference between the recurrent state recomputed when a run is started again and the saved one before
a warning."""
BROKER_TOLERANCE = 1e-9
"""Largest relative difference between the broker's cash or value after a decision taken again and the journal's."""

STOPS = {
    'end of data': 0,
    'feed failed': 1,
    'refused': 2,
    'signal': 3,
    'max drawdown': 4,
    'strategy end': 5,
    'silent feed': 6,
}
"""The kinds of end of a `trade` run and the exit status `btgym-aac trade` gives each: the feeds ended (or, with
`close_at_end`, the strategy's end-of-data rule closed the run); a feed failed for good; the input was refused
(during the run: a bar or observation, or bars or an artifact that changed under a continued run); SIGINT or SIGTERM;
`--max-drawdown`; the strategy's own end rule (its drawdown call, target or `get_done`); a feed silent for
`max_bar_delay` with `stop_on_silence` (the run ends at once: no bar comes to close the positions at)."""
END_OF_DATA_RULE = 'END OF DATA'
STATE_RESET_RULES = ('episode', 'day', 'never')


class ResumeError(ValueError):
    """A run started again does not take again what the folder's journal holds: the bars or the artifact changed."""


def check_state_reset(rule):
    """The rule as `Trader` takes it: 'episode', 'day', 'never' or a whole number of decisions > 0.

    Raises:
        ValueError: any other value, naming it.
    """
    if rule in STATE_RESET_RULES or (isinstance(rule, int) and not isinstance(rule, bool) and rule > 0):
        return rule
    raise ValueError('the recurrent state reset must be one of {} or a whole number of decisions > 0, not '
                     '{!r}'.format(', '.join(STATE_RESET_RULES), rule))


def episode_decisions(bars, warmup, skip_frame):
    """The decisions the policy takes in an episode of `bars` bars: the strategy's decision points come every
    `skip_frame` bars after its `warmup` bars, from the first (answered without the policy) until the end-of-data
    rule fires `skip_frame` + 2 bars before the data's end and the episode ends 2 bars later.

    Returns:
        int (at least 1).
    """
    return max(1, (bars - warmup - skip_frame - 1) // skip_frame)


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
        records: the journal's other records of earlier runs: positions are closed again at the bars of the close
            records, and the fills of the end records are not journaled again.
        saved: the state saved by the earlier run, or None.
        max_drawdown: percent of the broker value's peak (since the run's start, or since its latest drawdown stop);
            when lost, positions are closed and the run stops.
        flatten_on_exit: close positions before a stop asked for by a signal.
        stop_on_silence: a silent feed ends the run (its positions left as they are) instead of closing them at
            its next bar.
        state_reset: when the policy's recurrent state is reset before a decision (`check_state_reset`): 'episode'
            (every `episode_decisions` of `episode_bars`), 'day' (at the first decision of each UTC day of the
            bars), 'never', or every that many decisions.
        episode_bars: the bars of a training episode (for 'episode').
        log: logbook logger.
        progress: a `btgym_aac.progress.Progress` of bars, updated at every bar (decisions, bar time, value), or
            None.
    """

    def __init__(self, policy, folder, mode, source, strategy_params, identity, journaled=(), records=(), saved=None,
                 max_drawdown=None, flatten_on_exit=False, stop_on_silence=False, state_reset='never',
                 episode_bars=None, log=None, progress=None):
        if mode not in MODES:
            raise ValueError('mode must be one of {}, got {!r}'.format(', '.join(MODES), mode))
        if check_state_reset(state_reset) == 'episode' and not episode_bars:
            raise ValueError('the recurrent state reset rule \'episode\' needs the bars of a training episode')
        self.policy, self.folder, self.mode, self.source = policy, folder, mode, source
        self.asset_names = tuple(strategy_params['asset_names'])
        self.portfolio_actions, self.cash_name = strategy_params['portfolio_actions'], strategy_params['cash_name']
        self.identity, self.journaled, self.saved = identity, list(journaled), saved
        self.recorded_closes = {record['bar_time']: record['reason'] for record in records
                                if record['record'] == CLOSE_RECORD}
        ends = [record for record in records if record['record'] == END_RECORD]
        self.earlier_end = ends[-1] if ends else None
        self.max_drawdown, self.flatten_on_exit, self.stop_on_silence = max_drawdown, flatten_on_exit, stop_on_silence
        self.state_reset, self.episode_bars, self.reset_every = state_reset, episode_bars, None
        self.log = log or get_logger('Trader')
        self.progress = progress
        self.strategy = self.trade_log = None
        self.decisions, self.acted, self.peak = 0, False, None
        self.fills_seen = sum(len(entry.get('fills', ())) for entry in self.journaled + list(records))
        self.last_decision_time = self.last_bar_time = None
        self.stop_kind = self.stop_reason = None
        self.flatten, self.close_after_silence = False, False
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
        index, self.decisions = self.decisions, self.decisions + 1
        reset = self._resets_before(index)
        if reset:
            self.policy.reset()
        self.last_decision_time = self._bar_time()
        action, probabilities, value = self.policy.act(response.state)
        order = self._order(action)
        if index < len(self.journaled):
            self._check_replayed(index, action)
        else:
            self._journal(index, action, probabilities, value, order, reset)
        return order if self.mode == 'paper' else self.hold()

    def _resets_before(self, index):
        """True when the state reset rule resets the policy before decision `index` (never before the first)."""
        if index == 0 or self.state_reset == 'never':
            return False
        if self.state_reset == 'day':
            return self._bar_time().date() != self.last_decision_time.date()
        if self.reset_every is None:
            self.reset_every = self.state_reset if isinstance(self.state_reset, int) else episode_decisions(
                self.episode_bars, self.strategy.inner_embedding, self.strategy.p.skip_frame)
        return index % self.reset_every == 0

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
        """A decision an earlier run journaled, taken again on the same bars: its time, action and the broker after
        it must be the journal's (ResumeError otherwise)."""
        entry = self.journaled[index]
        if entry['bar_time'] != self._bar_time().isoformat() or entry['action'] != _json_action(action):
            raise ResumeError('decision {} taken again differs from the journal (journal: {} at {}; now: {} at {}): '
                              'the bars or the artifact changed'.format(index, entry['action'], entry['bar_time'],
                                                                        _json_action(action), self._bar_time()))
        self._check_broker(entry, 'decision {}'.format(index))
        if self.saved is not None and index == self.saved.get('decisions', 0) - 1:
            self._compare_saved_state()

    def _check_broker(self, entry, what):
        """Raises ResumeError when the broker, taken again to the bar of journal `entry`, differs from it."""
        broker = self.broker_state()
        if broker['positions'] != entry['positions'] or not all(
                math.isclose(broker[key], entry[key], rel_tol=BROKER_TOLERANCE) for key in ('cash', 'broker_value')):
            raise ResumeError('{} at {} taken again leaves the broker with positions {}, cash {!r}, value {!r}; the '
                              'journal holds {}, {!r}, {!r}: the bars or the artifact changed'.format(
                                  what, entry['bar_time'], broker['positions'], broker['cash'],
                                  broker['broker_value'], entry['positions'], entry['cash'], entry['broker_value']))

    def _compare_saved_state(self):
        saved = self.saved['policy']['state']
        now = self.policy.get_state()['state']
        difference = max((float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(saved, now)),
                         default=0.0)
        if difference > STATE_TOLERANCE:
            self.log.warning('the recurrent state taken again differs from the saved one by {:.3g}', difference)
        self.log.notice('continued from decision {} ({} bars of the earlier run taken again)', len(self.journaled),
                        self.source.history_length)

    def _journal(self, index, action, probabilities, value, order, reset):
        received, received_monotonic = self.source.received_at
        latency = None if received_monotonic is None else (time.monotonic() - received_monotonic) * 1000.0
        entry = {
            'decision': index, 'bar_time': self._bar_time().isoformat(), 'mode': self.mode,
            'received_at': None if received is None else received.isoformat(), 'latency_ms': latency,
            'state_reset': reset, 'action': _json_action(action),
            'probabilities': dict(zip(self.policy.action_names, map(float, probabilities))),
            'value_estimate': value, ('order' if self.mode == 'paper' else 'intended_order'): order,
            'fills': self._new_fills(),
        }
        entry.update(self.broker_state())
        self.folder.append_decision(entry)
        self.folder.save_state(self._state(last_bar_time=entry['bar_time']))

    def _new_fills(self):
        """The fills since the last ones journaled, as the journal writes them."""
        new_fills = self.trade_log.rets['fills'][self.fills_seen:]
        self.fills_seen += len(new_fills)
        return [dict(fill, time=fill['time'].isoformat()) for fill in new_fills]

    def _state(self, **extra):
        """What state.json holds: the identity, the broker's state, the decisions, the policy's state."""
        return dict(self.identity, **self.broker_state(), decisions=self.decisions, policy=self.policy.get_state(),
                    saved_at=datetime.datetime.now(datetime.timezone.utc).isoformat(), **extra)

    def broker_state(self):
        """{'positions': asset -> size, 'cash', 'broker_value'} of the running strategy's broker."""
        broker = self.strategy.broker
        return {'positions': {asset: float(self.strategy.getposition(self.strategy.getdatabyname(asset)).size)
                              for asset in self.asset_names},
                'cash': float(broker.get_cash()), 'broker_value': float(broker.get_value())}

    # ------------------------------------------------------------------------------------------- stops

    def request_stop(self, kind, reason, flatten=False):
        """Ends the run at the next bar (after the current decision); with `flatten` in paper mode, open positions
        are closed first (their orders fill on the next bar, then the run ends).

        Args:
            kind: a key of `STOPS`.
            reason: what is logged and journaled.
            flatten: close the positions before the run ends.
        """
        if self.stop_reason is None:
            self.stop_kind, self.stop_reason, self.flatten = kind, reason, flatten and self.mode == 'paper'
            self.log.notice('stopping: {}{}', reason, ', closing positions first' if self.flatten else '')

    def on_silence(self, line):
        """A feed went silent: with `stop_on_silence` the run ends now; else, in paper mode, open positions are
        closed at the first bar that comes again (orders cannot be sent between bars), filled at the open of the bar
        after it."""
        if self.stop_on_silence:
            self.request_stop('silent feed', 'the feed of {} is silent'.format(line))
            self.source.stop_requested = True
            return
        if self.mode == 'paper' and self.strategy is not None and self._has_positions():
            self.log.warning('the feed of {} is silent: positions will be closed at its next bar', line)
            self.close_after_silence = True

    def on_bar(self):
        """Per bar, after the decision. Bars taken again: the closes the journal records. New bars: positions to
        close after a silence, the drawdown guard and a requested stop (with `flatten`, the stop waits while
        positions are open, closing them on every bar: the closing orders of a bar fill at the next one, so
        whatever is open then was opened since)."""
        value = self.strategy.broker.get_value()
        self.last_bar_time = self._bar_time()
        if self.progress is not None:
            self.progress.update(len(self.strategy), 'decisions {}, bar {}, value {:.2f}'.format(
                self.decisions, self._bar_time(), value))
        if self.source.replaying:
            reason = self.recorded_closes.get(self._bar_time().isoformat())
            if reason is not None:
                self._close(reason, journal=False)
            if self.earlier_end is not None and self.earlier_end['bar_time'] == self.last_bar_time.isoformat():
                self._check_broker(self.earlier_end, 'the end of the earlier run')
            self._track_peak(value)
            self.source.stop_requested = self.stop_reason is not None  # (nothing new to close while taken again)
            return
        close, self.close_after_silence = self.close_after_silence, False
        self._track_peak(value)
        if self.max_drawdown is not None and self.peak > 0 and \
                (self.peak - value) / self.peak * 100.0 >= self.max_drawdown:
            self.request_stop('max drawdown', 'max drawdown: {:.2f} % below the peak value {:.2f}'.format(
                (self.peak - value) / self.peak * 100.0, self.peak), flatten=True)
            self.flatten = self.mode == 'paper'
        flattening = self.stop_reason is not None and self.flatten and self._has_positions()
        if close or flattening:
            self._close(self.stop_reason if flattening else 'silent feed')
        if self.stop_reason is not None and not flattening:
            self.source.stop_requested = True

    def _track_peak(self, value):
        """The broker value's peak, started afresh after a drawdown stop's close."""
        self.peak = value if self.peak is None else max(self.peak, value)

    def _has_positions(self):
        return any(self.strategy.getposition(data).size for data in self.strategy.datas)

    def _close(self, reason, journal=True):
        """Closes every position and keeps the pending action, and the target weights the strategy sends again on
        the bars after a decision, from opening new ones; journaled as a close record (`reason`) unless taken
        again. A drawdown stop's close starts the peak afresh."""
        self.strategy._close_positions()
        self.strategy.action = dict(self.hold(), **{SKIP_ACTION_KEY: True})
        self.strategy.action_to_repeat = self.hold()
        if reason.startswith('max drawdown'):
            self.peak = None
        if journal:
            self.folder.append_decision({'record': CLOSE_RECORD, 'bar_time': self._bar_time().isoformat(),
                                         'reason': reason, 'decisions': self.decisions})

    # ------------------------------------------------------------------------------------------- the end

    def ending(self):
        """(kind, reason) of the run's end, once the Cerebro has returned: a requested stop, the strategy's end
        rule, or the feeds' end."""
        if self.stop_kind is not None:
            return self.stop_kind, self.stop_reason
        if self.end_message is not None:
            return ('end of data' if self.end_message == END_OF_DATA_RULE else 'strategy end'), self.end_message
        return 'end of data', self.source.ended or 'feed ended'

    def finish(self, kind, reason):
        """Journals the run's end (the fills since the last decision, the broker's final state) and saves the state
        with it; does nothing when the strategy never ran.

        Returns:
            the end record, or None.
        """
        if self.trade_log is None:
            return None
        record = dict({'record': END_RECORD, 'stop': kind, 'ended': reason, 'exit_code': STOPS[kind],
                       'episode_ended': self.end_message is not None, 'decisions': self.decisions,
                       'bars': self.source.delivered,
                       'bar_time': None if self.last_bar_time is None else self.last_bar_time.isoformat(),
                       'fills': self._new_fills()}, **self.broker_state())
        self.folder.append_decision(record)
        self.folder.save_state(self._state(
            last_bar_time=None if self.last_decision_time is None else self.last_decision_time.isoformat(),
            ended=reason, exit_code=STOPS[kind]))
        return record


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
