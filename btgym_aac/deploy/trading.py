"""`trade`: a policy artifact trading bars as they arrive, in a backtrader live run of the artifact's own strategy.

The strategy class and its kwargs, the broker's cash, commission and sizer come from the manifest, so the
observations are computed from the bars as in training, and the policy acts every `skip_frame` bars. The run's parts:
- `BarSource` lines up the bars of every data line's feed by time, and `LiveBars` is the backtrader data feed of one
  line, fed by it. A Cerebro with live data runs bar by bar (no preloading): when a feed has no bar yet,
  `LiveBars._load` returns None and backtrader polls again. Several lines are delivered only as whole groups of
  bars of the same time, so that the strategy sees the lines aligned as in training, where the data of every line
  holds the same times.
- `Trader` takes the policy's decisions at every decision point of the live strategy, journals them, saves the
  state, and applies the stops (a signal, `--max-drawdown`, a silent feed).
- `trade` assembles them and runs the Cerebro.

Started again on the same folder, a run first takes the bars it processed before (`bars.jsonl`) through the strategy
and the policy again, checking every decision against the journal, and then goes on with the feed's newer bars: it
takes the decisions an uninterrupted run takes.
"""
import collections
import contextlib
import datetime
import signal
import time

import backtrader as bt
import numpy as np

from btgym_aac.data.base import bt_timeframe
from btgym_aac.deploy.journal import TradingFolder
from btgym_aac.deploy.json_values import UnreadableValue, from_json
from btgym_aac.deploy.live_feeds import FEED_ENDED, FEED_SILENT, GuardedFeed, open_feed
from btgym_aac.deploy.manifest import ArtifactError, import_class
from btgym_aac.deploy.runtime import load_artifact
from btgym_aac.env.components import new_engine, normalized_weights, strategy_action
from btgym_aac.env.costs import SPREAD_FROM_DATA
from btgym_aac.env.engine import prepare_cerebro
from btgym_aac.evaluation.trade_log import TRADE_LOG_NAME, TradeLog
from btgym_aac.logs import get_logger
from btgym_aac.nonfinite import first_non_finite_key
from btgym_aac.progress import Progress
from btgym_aac.strategy.base import SKIP_ACTION_KEY

POLL_SECONDS = 0.25
"""How long one `LiveBars._load` waits for the next group of bars before handing control back to backtrader."""
LIVE_RECORDS = 10 ** 12
"""The bar count a live line reports to the strategy (its end-of-data rule never fires)."""


class BarSource:
    """The bars of several data lines, grouped by time.

    Args:
        feeds: dict data line -> feed (a `GuardedFeed`), in the lines' order.
        history: bars already processed by an earlier run, delivered first: list of dicts data line -> Bar.
        on_silence: callable(line) called when a line's feed goes silent.
        on_bars: callable(dict line -> Bar) called for every group delivered from the feeds (not for history).
        log: logbook logger.

    Attributes:
        received_at: wall-clock UTC time and monotonic seconds when the latest group was complete.
        stop_requested: set it to end the run at the next bar (the current decision is finished first).
        ended: why the source ended ('feed ended', 'stopped'), or None.
    """

    def __init__(self, feeds, history=(), on_silence=None, on_bars=None, log=None):
        self.feeds = dict(feeds)
        self.lines = list(self.feeds)
        self._history = collections.deque(history)
        self.history_length = len(self._history)
        self._after = self._history[-1][self.lines[0]].time if self._history else None
        self._pending = {line: None for line in self.lines}
        self._ready = {}
        self.on_silence, self.on_bars = on_silence, on_bars
        self.log = log or get_logger('BarSource')
        self.received_at = (None, None)
        self.stop_requested = False
        self.ended = None
        self.delivered = 0

    def bar_for(self, line):
        """The next bar of `line`, None when its group is not complete yet, or FEED_ENDED."""
        if line not in self._ready:
            group = self._next_group()
            if group is None or group is FEED_ENDED:
                return group
            self._ready = dict(group)
        return self._ready.pop(line)

    def _next_group(self):
        if self.stop_requested:
            self.ended = self.ended or 'stopped'
            return FEED_ENDED
        if self._history:
            self.received_at = (None, None)
            return self._history.popleft()
        deadline = time.monotonic() + POLL_SECONDS
        for line in self.lines:
            while self._pending[line] is None:
                item = self.feeds[line].next_bar(max(0.0, deadline - time.monotonic()))
                if item is None:
                    return None
                if item is FEED_ENDED:
                    self.ended = 'feed ended ({})'.format(line)
                    return FEED_ENDED
                if item is FEED_SILENT:
                    if self.on_silence is not None:
                        self.on_silence(line)
                    continue
                if self._after is not None and item.time <= self._after:
                    continue  # processed by an earlier run (in the history)
                self._pending[line] = item
        return self._aligned()

    def _aligned(self):
        """The pending bars as a group when they share one time; else the earlier ones are dropped (warned)."""
        times = {bar.time for bar in self._pending.values()}
        if len(times) > 1:
            latest = max(times)
            for line, bar in self._pending.items():
                if bar.time < latest:
                    self.log.warning('dropped the bar of {} at {}: the other lines have none at that time (next: {})',
                                     line, bar.time, latest)
                    self._pending[line] = None
            return None
        group, self._pending = self._pending, {line: None for line in self.lines}
        self.received_at = (datetime.datetime.now(datetime.timezone.utc), time.monotonic())
        self.delivered += 1
        if self.on_bars is not None:
            self.on_bars(group)
        return group


class LiveBars(bt.feed.DataBase):
    """A live backtrader data feed of one data line, reading its bars from a `BarSource`.

    Params: `source` (the BarSource), `line` (the data line's name), `records` (the bar count the strategy is told:
    a replayed file's, or `LIVE_RECORDS`).
    """

    params = (('source', None), ('line', None), ('records', LIVE_RECORDS))

    def start(self):
        super().start()
        self.numrecords = self.p.records

    def islive(self):
        return True

    def _load(self):
        bar = self.p.source.bar_for(self.p.line)
        if bar is None:
            return None
        if bar is FEED_ENDED:
            return False
        lines = self.lines
        lines.datetime[0] = bt.date2num(bar.time)
        lines.open[0], lines.high[0], lines.low[0], lines.close[0] = bar.open, bar.high, bar.low, bar.close
        lines.volume[0], lines.openinterest[0] = bar.volume, 0.0
        return True


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
        progress: a `btgym_aac.progress.Progress` of bars, updated at every bar (decisions, bar time, value), or
            None.
    """

    def __init__(self, policy, folder, mode, source, strategy_params, identity, journaled=(), saved=None,
                 max_drawdown=None, flatten_on_exit=False, log=None, progress=None):
        if mode not in MODES:
            raise ValueError('mode must be one of {}, got {!r}'.format(', '.join(MODES), mode))
        self.policy, self.folder, self.mode, self.source = policy, folder, mode, source
        self.asset_names = tuple(strategy_params['asset_names'])
        self.portfolio_actions, self.cash_name = strategy_params['portfolio_actions'], strategy_params['cash_name']
        self.identity, self.journaled, self.saved = identity, list(journaled), saved
        self.max_drawdown, self.flatten_on_exit = max_drawdown, flatten_on_exit
        self.log = log or get_logger('Trader')
        self.progress = progress
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
        if self.progress is not None:
            self.progress.update(len(self.strategy), 'decisions {}, bar {}, value {:.2f}'.format(
                self.decisions, self._bar_time(), value))
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


LIVE_METADATA = {'type': 1, 'parent_sample_type': 1}
"""The strategy's episode metadata in a live run: a test episode, as in `evaluate`."""


def live_settings(manifest):
    """(strategy class, strategy kwargs, strategy params, broker settings, data lines) rebuilt from an artifact's
    manifest: the kwargs the env gave the strategy, and of its params the traded assets, the action names (None:
    target weights, PortfolioEnv's) and the cash name.

    Raises:
        ArtifactError: the artifact's env is no backtrader trading env, was given its own engine, takes its spread
            from the data, or a strategy kwarg cannot be rebuilt (naming it).
    """
    strategy, broker, lines = manifest.get('strategy'), manifest.get('broker'), manifest.get('data_lines')
    if not strategy or not broker or not lines:
        raise ArtifactError('the artifact\'s env {} is no backtrader trading env (no strategy or data lines): it '
                            'cannot trade'.format(manifest.get('env', {}).get('class')))
    if broker.get('custom_engine'):
        raise ArtifactError('the artifact\'s env was given its own engine=, which the artifact does not describe: '
                            'trade rebuilds the engine from start_cash, broker_commission and fixed_stake only')
    if broker.get('spread') == SPREAD_FROM_DATA:
        raise ArtifactError("the artifact's broker takes each bar's spread from bid/ask data (spread='data'), which "
                            'live feeds do not deliver: trade cannot charge it')
    kwargs = _decoded(strategy['kwargs'], 'kwarg')
    params = _decoded({name: strategy['params'][name] for name in ('asset_names', 'portfolio_actions', 'cash_name')},
                      'param')
    return import_class(strategy['class']), kwargs, params, from_json(broker), lines


def _decoded(values, kind):
    """`from_json` of every entry; ArtifactError naming the strategy's entry that cannot be rebuilt."""
    decoded = {}
    for name, value in values.items():
        try:
            decoded[name] = from_json(value)
        except (UnreadableValue, ImportError) as error:
            raise ArtifactError('strategy {} {!r} of the artifact: {}'.format(kind, name, error)) from None
    return decoded


def live_cerebro(manifest, source, records, trader):
    """The artifact's engine with one `LiveBars` feed per data line, the step analyzer calling `trader.decide`,
    the trade log and the trader's analyzer."""
    strategy, kwargs, _, settings, lines = live_settings(manifest)
    engine = new_engine(strategy, kwargs, settings)
    timeframe, compression = bt_timeframe(lines['timeframe_minutes'])
    feeds = {line: LiveBars(source=source, line=line, records=records, timeframe=timeframe, compression=compression)
             for line in lines['names']}
    strategy_params = dict(metadata=LIVE_METADATA, trial_metadata={}, dataset_stat=None, trial_stat=None,
                           episode_stat=None)
    prepare_cerebro(engine, feeds, strategy_params, trader.decide)
    engine.addanalyzer(TradeLog, _name=TRADE_LOG_NAME)
    engine.addanalyzer(TraderAnalyzer, trader=trader, trade_log=TRADE_LOG_NAME)
    return engine


def feed_specs(feeds, lines):
    """{data line: feed spec or feed} for the artifact's data lines: a single one serves a single line.

    Raises:
        ValueError: a line without a feed, or a feed for no line of the artifact, naming them.
    """
    if not isinstance(feeds, dict):
        if len(lines) != 1:
            raise ValueError('the artifact trades {} data lines ({}): give one feed per line, LINE=SPEC'.format(
                len(lines), ', '.join(lines)))
        return {lines[0]: feeds}
    missing, unknown = sorted(set(lines) - set(feeds)), sorted(set(feeds) - set(lines))
    if missing or unknown:
        problems = (['no feed for {}'.format(', '.join(missing))] if missing else []) + \
            (['no such line {}'.format(', '.join(unknown))] if unknown else [])
        raise ValueError('feeds must name the artifact\'s data lines {}: {}'.format(', '.join(lines),
                                                                                    '; '.join(problems)))
    return {line: feeds[line] for line in lines}


def check_resumable(saved, manifest, mode, lines, folder):
    """Raises ValueError when the folder holds a run of another artifact, mode or set of data lines."""
    if saved is None:
        return
    for name, value in (('artifact_files', manifest['files']), ('mode', mode), ('lines', lines)):
        if saved.get(name) != value:
            raise ValueError('{} holds a trade run with another {} ({!r}); use a new folder'.format(
                folder, name.replace('_', ' '), saved.get(name) if name != 'artifact_files' else 'artifact'))


@contextlib.contextmanager
def stop_on_signals(trader, flatten):
    """SIGINT and SIGTERM ask the trader to stop after the current decision while inside the block."""
    def handler(signum, _):
        trader.request_stop('signal {}'.format(signal.Signals(signum).name), flatten=flatten)

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def trade(artifact, feeds, out, mode='paper', backend='onnx', max_bar_delay=None, max_drawdown=None,
          flatten_on_exit=False, feed_options=None, show_progress=False):
    """Trades the bars of live feeds with a policy artifact until the feeds end, a stop rule of the strategy
    fires, `max_drawdown` is lost, or SIGINT / SIGTERM comes (the current decision is finished and saved).

    Args:
        artifact: the artifact folder (`btgym-aac export`).
        feeds: a feed spec (`live_feeds.open_feed`) or a feed object (with `next_bar(timeout)` and `close()`) for a
            single data line, or a dict data line -> spec or feed.
        out: the run's folder: journal.jsonl, state.json, bars.jsonl; a run in it is continued.
        mode: 'paper' or 'shadow'.
        backend: 'onnx' or 'tf'.
        max_bar_delay: seconds without a bar before a feed counts as silent (paper: positions are closed).
        max_drawdown: percent below the peak broker value at which positions are closed and the run stops.
        flatten_on_exit: on SIGINT / SIGTERM, close positions before stopping (paper mode).
        feed_options: dict of keyword options for `open_feed` (the same for every line).
        show_progress: show the bars processed (of a replayed file's, with the time left), their speed, the
            decisions, the latest bar's time and the broker value on stderr (`btgym_aac.progress.Progress`).

    Returns:
        dict: decisions (of this run, taken again ones included), journaled (new journal lines), bars (processed
        from the feeds), ended (why), end_message (the strategy's end rule, if one fired), positions, cash,
        broker_value, fills (every fill of this run, as `TradeLog` records them).

    Raises:
        ArtifactError: the artifact is damaged, foreign or cannot trade (before any feed is opened).
        ValueError: bad feeds, mode or folder. FeedError: a feed failed for good.
    """
    log = get_logger('Trade')
    policy = load_artifact(artifact, backend=backend)
    manifest = policy.manifest
    _, _, strategy_params, _, lines = live_settings(manifest)
    specs = feed_specs(feeds, lines['names'])
    folder = TradingFolder(out)
    saved = folder.read_state()
    check_resumable(saved, manifest, mode, lines['names'], out)
    journaled, history = folder.read_journal(), folder.read_bars()
    identity = {'artifact_files': manifest['files'], 'mode': mode, 'lines': lines['names']}
    opened = {}
    try:
        for line, spec in specs.items():
            feed = spec if hasattr(spec, 'next_bar') else open_feed(spec, **(feed_options or {}))
            opened[line] = GuardedFeed(feed, max_bar_delay, log)
        counts = [getattr(feed.feed, 'bar_count', None) for feed in opened.values()]
        records = counts[0] if None not in counts else LIVE_RECORDS
        source = BarSource(opened, history, on_bars=folder.append_bars, log=log)
        progress = Progress('bar', None if records == LIVE_RECORDS else records, enabled=show_progress)
        trader = Trader(policy, folder, mode, source, strategy_params, identity, journaled, saved, max_drawdown,
                        flatten_on_exit, log, progress)
        source.on_silence = trader.on_silence
        cerebro = live_cerebro(manifest, source, records, trader)
        with stop_on_signals(trader, flatten_on_exit), progress:
            cerebro.run(stdstats=False, preload=False, runonce=False, oldbuysell=True, tradehistory=True)
    finally:
        for feed in opened.values():
            feed.close()
        folder.close()
        policy.close()
    return dict(trader.broker_state(), fills=trader.trade_log.rets['fills'], decisions=trader.decisions,
                journaled=max(0, trader.decisions - len(journaled)), bars=source.delivered,
                ended=trader.stop_reason or source.ended or trader.end_message, end_message=trader.end_message)
