"""In-process backtrader episodes, stepped by an agent.

`run_episode` runs one configured Cerebro to the end (or until the agent stops it). Every `skip_frame` bars the
step analyzer asks a `decide(response)` callable for the next action; `response` carries the strategy's state,
reward, done flag and the info of the bars since the previous decision. The environment runs episodes in a
greenlet and hands control back and forth with `Handoff`; benchmarks call `decide` in-line.

Timing: the action returned at bar t is executed by the strategy on bar t+1 (market orders fill at the following
bar's open) and the next response comes `skip_frame` bars after t. The first decision point gets `response=None`
(the reset's initial action), so the first observation arrives `skip_frame` bars into the episode.
"""
import time
from collections import namedtuple
from datetime import timedelta

import backtrader as bt
import greenlet

from btgym_aac.strategy.base import SKIP_ACTION_KEY
from btgym_aac.strategy.observers import DrawDown

StepResponse = namedtuple('StepResponse', ['state', 'reward', 'done', 'infos', 'raw_state'])
PER_DATA_OBSERVERS = (bt.observers.BuySell,)
"""Observers added once per data line when there are several (the fills of every line are drawn)."""
STOP = object()


class DataIdCounter:
    """Cerebro's data-id counter (`next()` gives 1, 2, ...) as a plain object: the `itertools.count` Cerebro makes
    cannot be deep-copied or pickled from Python 3.14 on (3.12 and 3.13 warn), and every episode copies the engine.

    Args:
        start: the next id.
    """

    def __init__(self, start=1):
        self.next_id = start

    def __iter__(self):
        return self

    def __next__(self):
        self.next_id += 1
        return self.next_id - 1


def make_copyable(cerebro):
    """Replaces `cerebro`'s data-id counter by a `DataIdCounter` at the same position.

    Args:
        cerebro: bt.Cerebro (modified in place).

    Returns:
        the same cerebro.
    """
    if not isinstance(cerebro._dataid, DataIdCounter):
        cerebro._dataid = DataIdCounter(next(cerebro._dataid))
    return cerebro


class EngineError(RuntimeError):
    """The backtrader episode failed; the message carries its exception."""


class _StepAnalyzer(bt.Analyzer):
    """Drives the agent/strategy exchange once per bar (backtrader calls analyzers after the strategy)."""
    params = (('decide', None), ('capture_raw_state', False))

    def start(self):
        strategy = self.strategy
        self.infos = []
        self.record_bar, self.collect_infos = strategy.bar_infos_recorder()
        self.pending = False
        self.stopped = False
        self.skip_frame = strategy.p.skip_frame
        self.skip_action = dict(strategy.p.initial_portfolio_action or {}, **{SKIP_ACTION_KEY: True})

    def _respond(self, done):
        strategy = self.strategy
        raw_state = strategy.get_raw_state() if self.p.capture_raw_state else None
        response = StepResponse(strategy.get_state(), strategy.get_reward(), done, self.collect_infos(self.infos),
                                raw_state)
        self.infos = []
        strategy.env_iteration += 1
        self.pending = False
        return response

    def _stop(self):
        self.stopped = True
        self.strategy.env.runstop()

    def prenext(self):
        """Warm-up bars (strategy minimum period not reached): no decisions."""

    def next(self):
        if self.stopped:
            return
        strategy = self.strategy
        done = strategy._get_done()
        self.infos.append(self.record_bar())
        strategy.action = self.skip_action
        if done:
            self.p.decide(self._respond(done=True))
            self._stop()
            return
        if strategy.iteration % self.skip_frame == 0:
            action = self.p.decide(self._respond(done=False) if self.pending else None)
            if action is STOP:
                self._stop()
                return
            strategy.action = strategy.last_action = action
            self.pending = True
        strategy.iteration += 1
        strategy.broker_message = '-'


def prepare_cerebro(cerebro, feeds, strategy_params, decide, render_observers=(), capture_raw_state=False):
    """Adds an episode's data, strategy params, observers and the step analyzer to a fresh Cerebro copy.

    Args:
        cerebro: bt.Cerebro with exactly one strategy added (a per-episode copy: it is modified).
        feeds: dict data name -> backtrader feed.
        strategy_params: dict merged into the strategy's kwargs (metadata, stats, initial actions).
        decide: callable(StepResponse or None) -> action dict or STOP.
        render_observers: observer classes added for episode renderings (those of `PER_DATA_OBSERVERS` once per
            data line), after `observers.DrawDown` when there are any; an observer the cerebro has already (or a
            sub- or superclass of it) is not added again. Without them the episode runs with the cerebro's own
            observers only (the strategies keep their drawdown themselves).
        capture_raw_state: keep the OHLC window of every response (for 'human' renderings).

    Returns:
        the same cerebro.
    """
    cerebro.strats[0][0][2].update(strategy_params)
    cerebro.broker.set_shortcash(False)
    for name, feed in feeds.items():
        cerebro.adddata(feed, name=name)
    present = {observer_class for _, observer_class, _, _ in cerebro.observers}
    for observer in ((DrawDown,) + tuple(render_observers)) if render_observers else ():
        if any(issubclass(observer, kind) or issubclass(kind, observer) for kind in present):
            continue
        if observer in PER_DATA_OBSERVERS and len(feeds) > 1:
            cerebro.addobservermulti(observer)
        else:
            cerebro.addobserver(observer)
    cerebro.addanalyzer(_StepAnalyzer, decide=decide, capture_raw_state=capture_raw_state)
    return cerebro


def run_episode(cerebro, episode_number=0, trade_history=False):
    """Runs a prepared Cerebro to the end of its episode.

    Args:
        cerebro: output of `prepare_cerebro`.
        episode_number: stored in the result.
        trade_history: keep backtrader's history of every trade (`trade.history`, Cerebro's `tradehistory`).

    Returns:
        (strategy, episode_result) where episode_result = {'episode', 'runtime' (timedelta), 'length' (bars),
        <analyzer name>: analysis for every user analyzer}.
    """
    start = time.perf_counter()
    strategy = cerebro.run(stdstats=False, preload=True, runonce=True, oldbuysell=True,
                           tradehistory=trade_history)[0]
    result = {
        'episode': episode_number,
        'runtime': timedelta(seconds=time.perf_counter() - start),
        'length': len(strategy.data.close),
    }
    for name, analyzer in strategy.analyzers.getitems():
        if not isinstance(analyzer, _StepAnalyzer):
            result[name] = analyzer.get_analysis()
    return strategy, result


class Handoff:
    """Hands control back and forth between `env.step()` and a running backtrader episode.

    The episode runs in a greenlet: a helper execution context on the caller's own OS thread. `exchange()`
    switches into the episode with an action and comes back with the response; `decide()` (called by the step
    analyzer) switches back with a response and resumes with the next action. Exactly one side runs at a time,
    as in a blocking request/reply, but a switch stays on the caller's OS thread: a handoff between two OS threads
    would cost a thread wake-up and the GIL on every step (`benchmarks/env_throughput.py` measures the env against a
    bare backtrader run of the same episodes). An episode must be stepped from the thread that started it.
    """

    def __init__(self):
        self._episode = None
        self._first_action = None
        self.error = None
        self.finished = False
        self.result = None

    def start(self, target):
        """Prepares the episode context; `target()` runs at the first `exchange()`.

        Its return value is kept in `result`, its exception in `error`.
        """
        def run(first_action):
            self._first_action = first_action
            try:
                self.result = target()
            except Exception as exc:  # handed over to the caller by exchange()
                self.error = exc
            finally:
                self.finished = True

        self._episode = greenlet.greenlet(run)

    def exchange(self, action):
        """Caller side: sends an action, runs the episode to its next decision point.

        Returns:
            StepResponse, or None when the episode ended without answering.

        Raises:
            EngineError: the episode raised.
            RuntimeError: called from another thread than the one that started the episode.
        """
        if self.finished:
            return None
        try:
            response = self._episode.switch(action)
        except greenlet.error as exc:
            raise RuntimeError('an episode must be stepped from the thread that called reset(): {}'.format(exc)) \
                from None
        if self.error is not None:
            raise EngineError('backtrader episode failed: {}: {}'.format(type(self.error).__name__, self.error)) \
                from self.error
        return response

    def decide(self, response):
        """Episode side: hands a response to the caller and waits for the next action.

        Args:
            response: StepResponse, or None at the first decision point (answered by the first action).

        Returns:
            the next action, or STOP.
        """
        if response is None:
            action, self._first_action = self._first_action, None
            return action
        return self._episode.parent.switch(response)

    def stop(self):
        """Caller side: ends a running episode (the strategy stops at the current bar).

        The episode ends back in the caller's greenlet: the env's finalizer may run while another env's episode
        runs (a garbage collection inside it), and that episode must go on. Called from another thread than the
        episode's, it only drops the episode, which greenlet then collects in its own thread.
        """
        if self._episode is None or self.finished or not self._episode:
            return
        try:
            self._episode.parent = greenlet.getcurrent()
            self._episode.switch(STOP)
        except (greenlet.error, ValueError):  # ValueError: the caller's greenlet is of another thread
            self._episode = None
