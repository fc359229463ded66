"""Guards between a live feed and the trading loop: duplicate, out-of-order and unsound bars are dropped with a
warning, and a feed silent for too long is signalled with `FEED_SILENT`."""
import time

from btgym_aac.deploy.bars import FEED_SILENT, Bar, bad_field
from btgym_aac.logs import get_logger


class GuardedFeed:
    """A feed that returns only sound bars in strictly increasing time order, and `FEED_SILENT` once per silence.

    Attributes:
        silent: True from a silence's `FEED_SILENT` until the next accepted bar.
        last_time: time of the last accepted bar (None before the first).
        accepted, dropped: counts of the bars returned, and of those dropped or refused.
    """

    def __init__(self, feed, max_bar_delay=None, log=None, clock=time.monotonic):
        """Args:
            feed: anything with `next_bar(timeout)` and `close()`, such as a feed of `feeds.open_feed`.
            max_bar_delay: seconds without an accepted bar (since the last one, or since the guard was made) after
                which `next_bar` returns FEED_SILENT, once per silence; None: no watch.
            log: logbook logger; None: the package's 'BarGuards' logger.
            clock: monotonic seconds.
        """
        if max_bar_delay is not None and not max_bar_delay > 0:
            raise ValueError('max_bar_delay must be a number of seconds > 0 or None, not {!r}'.format(max_bar_delay))
        self.feed, self.max_bar_delay = feed, max_bar_delay
        self._log = log if log is not None else get_logger('BarGuards')
        self._clock = clock
        self.silent, self.last_time, self.accepted, self.dropped = False, None, 0, 0
        self._last_at = clock()  # when the last bar was accepted, or the guard made

    def _silence_in(self):
        """Seconds until the feed counts as silent (<= 0: it does); None: not watched now."""
        if self.max_bar_delay is None or self.silent:
            return None
        return self._last_at + self.max_bar_delay - self._clock()

    def next_bar(self, timeout=None):
        """Args:
            timeout: seconds to wait at most; None: until a bar or a silence comes.

        Returns:
            Bar; None when none came within `timeout`; FEED_SILENT when the feed has gone silent (once per
            silence); or what else the feed returns, such as FEED_ENDED.

        Raises:
            FeedError: the feed failed.
        """
        deadline = None if timeout is None else self._clock() + timeout
        while True:
            silence_in = self._silence_in()
            if silence_in is not None and silence_in <= 0:
                return self._signal_silence()
            waits = [wait for wait in (silence_in, None if deadline is None else deadline - self._clock())
                     if wait is not None]
            item = self.feed.next_bar(max(0.0, min(waits)) if waits else None)
            if item is None:
                silence_in = self._silence_in()
                if silence_in is not None and silence_in <= 0:
                    continue  # the wait ended at the silence's due time
                return None
            if not isinstance(item, Bar) or self._accept(item):
                return item  # else the next item is asked for, within the time left

    def _signal_silence(self):
        self.silent = True
        since = 'the last bar, at {}'.format(self.last_time) if self.last_time is not None else 'the start'
        self._log.warning('feed silent: no bar for {:.1f} s since {} (max_bar_delay {} s)',
                          self._clock() - self._last_at, since, self.max_bar_delay)
        return FEED_SILENT

    def _accept(self, bar):
        """Whether a bar is returned: it is dropped or refused, with a warning, when it is no later than the last
        accepted one or unsound (see `bars.bad_field`)."""
        if self.last_time is not None and bar.time <= self.last_time:
            kind = 'a duplicate' if bar.time == self.last_time else 'an out-of-order'
            self._log.warning('dropped {} bar at {}: the last accepted bar is at {}', kind, bar.time, self.last_time)
            self.dropped += 1
            return False
        problem = bad_field(bar)
        if problem is not None:
            self._log.warning('refused the bar at {}: {}', bar.time, problem)
            self.dropped += 1
            return False
        now = self._clock()
        if self.silent:
            self._log.notice('feed resumed: a bar at {} after {:.1f} s of silence', bar.time, now - self._last_at)
        self.silent, self.last_time, self._last_at = False, bar.time, now
        self.accepted += 1
        return True

    def close(self):
        """Closes the feed."""
        self.feed.close()
