"""The bars of a `trade` run on their way to the strategy: `BarSource` lines up the bars of every data line's feed
by time, after the bars an earlier run on the folder processed, and `LiveBars` is the backtrader data feed of one
line, fed by it.

A Cerebro with live data runs bar by bar (no preloading): when a feed has no bar yet, `LiveBars._load` returns None
and backtrader polls again. Several lines are delivered only as whole groups of bars of the same time, so that the
strategy sees the lines aligned as in training, where the data of every line holds the same times.
"""
import collections
import datetime
import time

import backtrader as bt

from btgym_aac.deploy.live_feeds import FEED_ENDED, FEED_SILENT
from btgym_aac.logs import get_logger

POLL_SECONDS = 0.25
"""How long one `LiveBars._load` waits for the next group of bars before handing control back to backtrader."""
LIVE_RECORDS = 10 ** 12
"""The bar count a live line reports to the strategy (its end-of-data rule never fires)."""


class BarSource:
    """The bars of several data lines, grouped by time: first those an earlier run processed (the history), then the
    feeds' bars later than the history's last one (earlier ones are skipped, counted and reported).

    Args:
        feeds: dict data line -> feed (a `GuardedFeed`), in the lines' order.
        history: bars already processed by an earlier run, delivered first: list of dicts data line -> Bar.
        on_silence: callable(line) called when a line's feed goes silent.
        on_bars: callable(dict line -> Bar) called for every group delivered from the feeds (not for history).
        log: logbook logger.
        bar_interval: timedelta of one bar: a first new bar further than that from the history's last one is
            reported as a gap; None: no check.

    Attributes:
        received_at: wall-clock UTC time and monotonic seconds when the latest group was complete.
        replaying: True while the latest group delivered came from the history.
        skipped: bars of the first line's feed at or before the history's last bar time (already processed).
        gap: (last bar time processed before, first new bar time) when the feed continues after a gap, else None.
        stop_requested: set it to end the run at the next bar (the current decision is finished first).
        ended: why the source ended ('feed ended (<line>)', 'stopped'), or None.
        delivered: groups delivered from the feeds.
    """

    def __init__(self, feeds, history=(), on_silence=None, on_bars=None, log=None, bar_interval=None):
        self.feeds = dict(feeds)
        self.lines = list(self.feeds)
        self._history = collections.deque(history)
        self.history_length = len(self._history)
        self.after = self._history[-1][self.lines[0]].time if self._history else None
        self._pending = {line: None for line in self.lines}
        self._ready = {}
        self.on_silence, self.on_bars = on_silence, on_bars
        self.log = log or get_logger('BarSource')
        self.bar_interval = bar_interval
        self.received_at = (None, None)
        self.replaying = False
        self.skipped, self.gap = 0, None
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
            self.received_at, self.replaying = (None, None), True
            return self._history.popleft()
        deadline = time.monotonic() + POLL_SECONDS
        for line in self.lines:
            while self._pending[line] is None:
                item = self.feeds[line].next_bar(max(0.0, deadline - time.monotonic()))
                if item is None:
                    return None
                if item is FEED_ENDED:
                    self.ended = 'feed ended ({})'.format(line)
                    self._report_nothing_new()
                    return FEED_ENDED
                if item is FEED_SILENT:
                    if self.on_silence is not None:
                        self.on_silence(line)
                    continue
                if self.after is not None and item.time <= self.after:
                    self.skipped += line == self.lines[0]
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
        if self.delivered == 0 and self.after is not None:
            self._report_continuation(times.pop())
        self.received_at = (datetime.datetime.now(datetime.timezone.utc), time.monotonic())
        self.replaying = False
        self.delivered += 1
        if self.on_bars is not None:
            self.on_bars(group)
        return group

    def _report_continuation(self, first):
        """Says how the feed's first new bar (at `first`) continues the bars processed before."""
        if self.skipped:
            self.log.notice('skipped the feed\'s first {} bars, at or before {}: an earlier run on the folder '
                            'processed them', self.skipped, self.after)
        if self.bar_interval is not None and first - self.after > self.bar_interval:
            self.gap = (self.after, first)
            self.log.warning('gap: no bar between {}, the last one processed before, and {}, the first new one',
                             self.after, first)

    def _report_nothing_new(self):
        if self.delivered == 0 and self.after is not None:
            self.log.warning('the feed ended without a bar later than {}, the last one processed before ({} bars '
                             'skipped): nothing new to trade', self.after, self.skipped)


class LiveBars(bt.feed.DataBase):
    """A live backtrader data feed of one data line, reading its bars from a `BarSource`.

    Params: `source` (the BarSource), `line` (the data line's name), `records` (the bar count the strategy is told:
    `LIVE_RECORDS`, or a replay's bars when the strategy's end-of-data rule is to close the run).
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
