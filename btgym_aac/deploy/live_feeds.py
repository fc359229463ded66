"""Live bar feeds: the `Bar` they deliver and their error and sentinels, the feeds a spec string names (a CSV
replayed on a clock, an exchange polled through ccxt, or a user's Python iterator), and `GuardedFeed`, which stands
between a feed and the trading loop.

A feed's `next_bar(timeout)` returns a `Bar`, None when none came within `timeout` seconds, or `FEED_ENDED` once the
feed has ended for good; `close()` stops it. `GuardedFeed` drops duplicate, out-of-order and unsound bars with a
warning, and signals a feed silent for too long with `FEED_SILENT`.
"""
import datetime
import importlib
import math
import os
import queue
import re
import threading
import time
import typing
import urllib.parse

from btgym_aac.data.errors import DataCheckError
from btgym_aac.data.parsing import read_ohlcv
from btgym_aac.logs import error_summary, get_logger

BAR_FIELDS = ('time', 'open', 'high', 'low', 'close', 'volume')
_EPOCH = datetime.datetime(1970, 1, 1)


class Bar(typing.NamedTuple):
    """One OHLCV bar; `time` is its open time, a naive datetime in UTC."""
    time: datetime.datetime
    open: float
    high: float
    low: float
    close: float
    volume: float = 0.0


class FeedError(RuntimeError):
    """A live feed failed for good: its source raised, or an exchange kept failing after the retries."""


class _Sentinel:
    """A named marker returned by `next_bar` instead of a bar (compare with `is`)."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return self._name


FEED_ENDED = _Sentinel('FEED_ENDED')
"""`next_bar` returns it when the feed has ended for good (and on every later call)."""
FEED_SILENT = _Sentinel('FEED_SILENT')
"""`GuardedFeed.next_bar` returns it once per silence longer than its `max_bar_delay`."""


def utc_naive(value):
    """Converts a bar time to a naive UTC datetime.

    Args:
        value: datetime (naive: taken as UTC; aware: converted), pandas Timestamp, numpy datetime64 or ISO 8601
            string.

    Returns:
        datetime.datetime without tzinfo.

    Raises:
        TypeError / ValueError: the value is no time.
    """
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value)
    elif not isinstance(value, datetime.datetime) and type(value).__name__ == 'datetime64':
        value = _EPOCH + datetime.timedelta(microseconds=int(value.astype('datetime64[us]').astype('int64')))
    if not isinstance(value, datetime.datetime):
        raise TypeError('bar time {!r} is not a datetime'.format(value))
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    if hasattr(value, 'to_pydatetime'):  # pandas Timestamp
        value = value.to_pydatetime()
    return value


def from_epoch_ms(milliseconds):
    """Naive UTC datetime of a time in milliseconds since the epoch (as exchanges give bar times)."""
    return _EPOCH + datetime.timedelta(milliseconds=int(milliseconds))


def to_epoch_ms(value):
    """Milliseconds since the epoch of a bar time (see `utc_naive` for the forms accepted)."""
    return (utc_naive(value) - _EPOCH) // datetime.timedelta(milliseconds=1)


def closed_bars(rows, floor_ms, step_ms):
    """The closed bars of OHLCV rows as ccxt gives them, whose newest row is the bar still forming.

    Args:
        rows: [time in ms, open, high, low, close, volume] lists; None values: missing (prices become NaN, which
            the guards refuse; volume 0).
        floor_ms: the earliest bar time kept, ms; None: no limit.
        step_ms: the bar size, ms.

    Returns:
        list of Bar, oldest first: the bars from `floor_ms` on that end by the open time of the newest row.
    """
    rows = sorted((row for row in rows or () if row and row[0] is not None), key=lambda row: row[0])
    return [Bar(from_epoch_ms(row[0]), *(math.nan if value is None else float(value) for value in row[1:5]),
                float(row[5] or 0.0))
            for row in rows if row[0] + step_ms <= rows[-1][0] and (floor_ms is None or row[0] >= floor_ms)]


def to_bar(item):
    """Converts a feed item to a `Bar`.

    Args:
        item: `Bar`; tuple / list (time, open, high, low, close[, volume]); or dict with keys time, open, high,
            low, close and optionally volume (default 0).

    Returns:
        Bar with a naive UTC time and float fields.

    Raises:
        TypeError / ValueError: the item has another form or a field does not convert.
    """
    if isinstance(item, dict):
        missing = [key for key in BAR_FIELDS[:5] if key not in item]
        if missing:
            raise ValueError('bar dict {!r} lacks key(s) {}'.format(item, missing))
        values = [item[key] for key in BAR_FIELDS[:5]] + [item.get('volume', 0.0)]
    elif isinstance(item, (tuple, list)) and len(item) in (5, 6):
        values = list(item) + [0.0] * (6 - len(item))
    else:
        raise TypeError('feed item {!r} is not a Bar, a (time, open, high, low, close[, volume]) tuple or a dict '
                        'with those keys'.format(item))
    return Bar(utc_naive(values[0]), *(float(value) for value in values[1:]))


def bad_field(bar):
    """Names what makes a bar unusable, or None for a sound one.

    Args:
        bar: Bar.

    Returns:
        str such as 'high=nan is not finite' or 'open=3.0 is outside [low=1.0, high=2.0]'; None when sound.
    """
    for name in BAR_FIELDS[1:5]:
        value = getattr(bar, name)
        if not math.isfinite(value):
            return '{}={} is not finite'.format(name, value)
        if value <= 0:
            return '{}={} is not positive'.format(name, value)
    if not math.isfinite(bar.volume) or bar.volume < 0:
        return 'volume={} is not a finite non-negative number'.format(bar.volume)
    if bar.high < bar.low:
        return 'high={} is below low={}'.format(bar.high, bar.low)
    for name in ('open', 'close'):
        value = getattr(bar, name)
        if not bar.low <= value <= bar.high:
            return '{}={} is outside [low={}, high={}]'.format(name, value, bar.low, bar.high)
    return None


SPEC_FORMS = 'replay:FILE[:SPEED], ccxt:EXCHANGE:SYMBOL:TIMEFRAME or python:MODULE:CALLABLE'
OPTIONS = {'replay': {'parsing_params', 'clock', 'sleep'},
           'ccxt': {'poll_seconds', 'api_url', 'retries', 'backoff_seconds', 'exchange_config', 'since'},
           'python': set()}  # the keyword options `open_feed` accepts for each scheme
QUEUE_SIZE = 1024  # bars a threaded feed reads ahead of its consumer
_PUT_WAIT_S = 0.1  # how often a reader blocked on a full queue looks whether the feed was closed
_JOIN_S = 1.0  # how long `close` waits for a reader thread
_SPEED = re.compile(r'max|[0-9]*\.?[0-9]+(e[-+]?[0-9]+)?', re.IGNORECASE)
REPLAY_REMEDY = 'a replayed file must pass it; correct the file'
"""What a replayed file's failed data check tells to do (the `btgym-aac trade` command sets no parsing_params)."""


def open_feed(spec, **options):
    """Opens the live feed that a spec names; the spec and options are checked before anything starts.

    Args:
        spec: 'replay:FILE[:SPEED]' (SPEED: a number > 0, times real time, or 'max', the default: at once),
            'ccxt:EXCHANGE:SYMBOL:TIMEFRAME' (e.g. 'ccxt:binance:BTC/USDT:1m') or 'python:MODULE:CALLABLE'.
        **options: replay: those of `ReplayFeed`; ccxt: those of `CcxtFeed`, `api_url` (replaces the scheme and
            host of the exchange's API URLs) and `exchange_config` (the ccxt exchange's config dict); python: none.

    Returns:
        ReplayFeed, CcxtFeed or PythonFeed.

    Raises:
        ValueError: unknown scheme, malformed spec, bad SPEED, unknown exchange or timeframe, unimportable module.
        FileNotFoundError: the replayed file does not exist.
        TypeError: an option the scheme does not take.
        ImportError: a ccxt feed without the ccxt library.
    """
    scheme, _, rest = str(spec).partition(':')
    if scheme not in OPTIONS or not rest:
        raise ValueError('feed spec {!r}: unknown scheme {!r}; expected {}'.format(spec, scheme, SPEC_FORMS))
    unknown = sorted(set(options) - OPTIONS[scheme])
    if unknown:
        raise TypeError('feed spec {!r}: unknown option(s) {}; a {} feed takes {}'.format(
            spec, unknown, scheme, sorted(OPTIONS[scheme])))
    return {'replay': _open_replay, 'ccxt': _open_ccxt, 'python': _open_python}[scheme](spec, rest, **options)


def _open_replay(spec, rest, parsing_params=None, clock=time.monotonic, sleep=time.sleep):
    path, separator, last = rest.rpartition(':')
    bad_speed = 'feed spec {!r}: bad SPEED {!r}; expected a number > 0 or max'.format(spec, last)
    if not (separator and _SPEED.fullmatch(last)):  # no SPEED, unless the path holds no file without it
        if separator and os.path.isfile(path) and not os.path.exists(rest):
            raise ValueError(bad_speed)
        path, last = rest, 'max'
    if last != 'max' and float(last) == 0:
        raise ValueError(bad_speed)
    if not os.path.isfile(path):
        raise FileNotFoundError('feed spec {!r}: no file {!r} to replay'.format(spec, path))
    return ReplayFeed(path, None if last == 'max' else float(last), parsing_params, clock, sleep)


class ReplayFeed:
    """Replays the bars of a file on a clock: bar i is due at start + (t_i - t_0) / speed. `bar_count`: how many
    bars the file holds."""

    def __init__(self, path, speed=None, parsing_params=None, clock=time.monotonic, sleep=time.sleep):
        """Args:
            path: HistData or generic CSV file, read with `read_ohlcv` and its `parsing_params`.
            speed: times real time; None: every bar at once.
            clock, sleep: monotonic seconds (the replay starts when the feed is made) and the wait for seconds.

        Raises:
            DataError: the file cannot be read or a bar is unsound, naming its line (a failed data check says to
                correct the file: `REPLAY_REMEDY`).
        """
        try:
            frame = read_ohlcv(path, parsing_params)
        except DataCheckError as error:
            raise DataCheckError(error.check, error.problem, REPLAY_REMEDY) from None
        index = frame.index if frame.index.tz is None else frame.index.tz_convert('UTC').tz_localize(None)
        self._times = [stamp.to_pydatetime(warn=False) for stamp in index]
        self._values = frame[['open', 'high', 'low', 'close', 'volume']].to_numpy(dtype=float).tolist()
        self.bar_count = len(self._times)
        self._speed, self._clock, self._sleep = speed, clock, sleep
        self._start, self._next = clock(), 0

    def bars_after(self, time):
        """How many of the file's bars are later than `time` (None: all)."""
        return self.bar_count if time is None else sum(1 for bar_time in self._times if bar_time > time)

    def _wait(self):
        """Seconds until the next bar is due (0 when it is)."""
        if self._speed is None:
            return 0.0
        offset = (self._times[self._next] - self._times[0]).total_seconds() / self._speed
        return max(0.0, self._start + offset - self._clock())

    def next_bar(self, timeout=None):
        """Args:
            timeout: seconds to wait at most; None: until the next bar is due.

        Returns:
            Bar, None when the next bar is not due within `timeout`, or FEED_ENDED after the last bar.
        """
        if self._next >= len(self._times):
            return FEED_ENDED
        wait = self._wait()
        if wait > 0:
            self._sleep(wait if timeout is None else max(0.0, min(wait, timeout)))
            if timeout is not None and timeout < wait and self._wait() > 0:
                return None
        bar = Bar(self._times[self._next], *self._values[self._next])
        self._next += 1
        return bar

    def close(self):
        """Ends the replay: later calls of `next_bar` return FEED_ENDED."""
        self._next = len(self._times)


def _open_python(spec, rest):
    module_name, _, attribute = rest.rpartition(':')
    if not module_name or not attribute:
        raise ValueError('feed spec {!r}: expected python:MODULE:CALLABLE'.format(spec))
    try:
        function = getattr(importlib.import_module(module_name), attribute, None)
    except Exception as error:
        raise ValueError('feed spec {!r}: cannot import module {!r}: {}'.format(
            spec, module_name, error_summary(error))) from error
    if not callable(function):
        raise ValueError('feed spec {!r}: module {!r} has no callable {!r}'.format(spec, module_name, attribute))
    try:
        items = function()
    except Exception as error:
        raise FeedError('feed {}: calling it raised {}'.format(rest, error_summary(error))) from error
    if not hasattr(items, '__iter__'):
        raise ValueError('feed spec {!r}: it returned {!r}, not an iterator of bars'.format(spec, items))
    return PythonFeed(items, rest)


class PythonFeed:
    """Reads the bars of an iterable in a daemon thread into a bounded queue, so that `next_bar` can time out."""

    def __init__(self, items, name):
        """Args:
            items: iterable of `Bar`s, (time, open, high, low, close[, volume]) tuples or dicts with those keys.
            name: named in errors, e.g. 'MODULE:CALLABLE'.
        """
        self.name = name
        self._items = iter(items)
        self._queue = queue.Queue(QUEUE_SIZE)
        self._stop = threading.Event()
        self._end = None  # FEED_ENDED or the FeedError that ended the feed, once `next_bar` met it
        self._thread = threading.Thread(target=self._read, name='feed {}'.format(name), daemon=True)
        self._thread.start()

    def _put(self, item):
        """Queues an item unless the feed is closed first; returns whether it was queued."""
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_PUT_WAIT_S)
                return True
            except queue.Full:
                continue
        return False

    def _read(self):
        try:
            for item in self._items:
                try:
                    bar = to_bar(item)
                except (TypeError, ValueError) as error:
                    raise FeedError('feed {}: bad item: {}'.format(self.name, error)) from error
                if not self._put(bar):
                    return
            self._put(FEED_ENDED)
        except FeedError as error:
            self._put(error)
        except Exception as error:  # the source's own error, handed to the consumer
            failure = FeedError('feed {}: {}'.format(self.name, error_summary(error)))
            failure.__cause__ = error
            self._put(failure)
        finally:  # a generator is closed at once, here in its own thread
            getattr(self._items, 'close', lambda: None)()

    def next_bar(self, timeout=None):
        """Args:
            timeout: seconds to wait at most; None: until a bar comes.

        Returns:
            Bar, None when none came within `timeout`, or FEED_ENDED when the source has ended.

        Raises:
            FeedError: the source failed (on this and every later call).
        """
        if self._end is None:
            try:
                item = self._queue.get(timeout=None if timeout is None else max(0.0, timeout))
            except queue.Empty:
                return None
            if isinstance(item, Bar):
                return item
            self._end = item
        if isinstance(self._end, FeedError):
            raise self._end
        return FEED_ENDED

    def close(self):
        """Stops the reader thread (waiting for it a moment); later calls of `next_bar` return FEED_ENDED."""
        self._stop.set()
        self._end = self._end if isinstance(self._end, FeedError) else FEED_ENDED
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(_JOIN_S)


def _open_ccxt(spec, rest, api_url=None, exchange_config=None, **options):
    try:
        ccxt = importlib.import_module('ccxt')
    except ImportError as error:
        raise ImportError('feed spec {!r} needs the ccxt library: pip install ccxt'.format(spec)) from error
    exchange_id, _, market = rest.partition(':')
    symbol, _, timeframe = market.rpartition(':')
    if not (exchange_id and timeframe) or '/' not in symbol:
        raise ValueError('feed spec {!r}: expected ccxt:EXCHANGE:SYMBOL:TIMEFRAME, e.g. '
                         'ccxt:binance:BTC/USDT:1m'.format(spec))
    if exchange_id not in ccxt.exchanges:
        raise ValueError('feed spec {!r}: ccxt has no exchange {!r} (see ccxt.exchanges)'.format(spec, exchange_id))
    exchange = getattr(ccxt, exchange_id)(dict({'enableRateLimit': True}, **(exchange_config or {})))
    if not exchange.has.get('fetchOHLCV'):
        raise ValueError('feed spec {!r}: ccxt fetches no OHLCV bars from {}'.format(spec, exchange_id))
    if timeframe not in (exchange.timeframes or {}):
        raise ValueError('feed spec {!r}: {} has no timeframe {!r}; it has {}'.format(
            spec, exchange_id, timeframe, ', '.join(exchange.timeframes or ())))
    if api_url is not None:
        exchange.urls['api'] = _pointed_at(exchange.urls['api'], api_url)
    return CcxtFeed(ccxt, exchange, symbol, timeframe, **options)


def _pointed_at(urls, api_url):
    """The exchange's API URLs (a str or nested dicts of them) with the scheme and host replaced by `api_url`."""
    if isinstance(urls, dict):
        return {key: _pointed_at(value, api_url) for key, value in urls.items()}
    if not isinstance(urls, str):
        return urls
    parts = urllib.parse.urlsplit(urls)
    return api_url.rstrip('/') + urllib.parse.urlunsplit(('', '', parts.path, parts.query, parts.fragment))


class CcxtFeed(PythonFeed):
    """The closed bars of an exchange's market, polled through ccxt in a thread."""

    def __init__(self, ccxt, exchange, symbol, timeframe, poll_seconds=None, retries=5, backoff_seconds=1.0,
                 since=None):
        """Args:
            ccxt, exchange: the ccxt module and a ccxt exchange.
            symbol, timeframe: e.g. 'BTC/USDT', '1m'.
            poll_seconds: seconds between polls; None: the timeframe / 10, at least 1.
            retries: retries of a request that failed with a network or exchange error, before FeedError (an
                unknown symbol, an authentication error or an unsupported call fail at once).
            backoff_seconds: wait before the first retry; doubled for each next one.
            since: time (naive UTC) of the first bar; None: the closed bars of the first poll (the exchange's recent
                history) come first.
        """
        name = 'ccxt exchange {}, symbol {}, timeframe {}'.format(exchange.id, symbol, timeframe)
        self._ccxt, self._exchange, self._symbol, self._timeframe = ccxt, exchange, symbol, timeframe
        self._step_ms = exchange.parse_timeframe(timeframe) * 1000
        self._poll_s = max(1.0, self._step_ms / 10000) if poll_seconds is None else float(poll_seconds)
        self._retries, self._backoff_s = int(retries), float(backoff_seconds)
        if not (self._poll_s > 0 and self._retries >= 0 and self._backoff_s >= 0):
            raise ValueError('{}: poll_seconds must be > 0, retries and backoff_seconds >= 0'.format(name))
        self._since_ms = None if since is None else to_epoch_ms(since)
        self._log = get_logger('LiveFeed', exchange.id)
        super().__init__(self._polls(), name)

    def _polls(self):
        """The closed bars of poll after poll."""
        floor = self._since_ms
        while not self._stop.is_set():
            rows = self._fetch(floor)
            if rows is None:
                return
            closed = closed_bars(rows, floor, self._step_ms)
            yield from closed
            if closed:  # polled again at once, for the bars that one answer did not hold
                floor = to_epoch_ms(closed[-1].time) + self._step_ms
            else:
                self._stop.wait(self._poll_s)

    def _fetch(self, since):
        """One poll, retried with backoff; None when the feed was closed meanwhile."""
        final = (self._ccxt.BadSymbol, self._ccxt.AuthenticationError, self._ccxt.NotSupported)
        for attempt in range(self._retries + 1):
            try:
                return self._exchange.fetch_ohlcv(self._symbol, self._timeframe, since=since)
            except final as error:  # retrying cannot help
                raise FeedError('{}: {}'.format(self.name, error_summary(error))) from error
            except (self._ccxt.OperationFailed, self._ccxt.ExchangeError) as error:  # OperationFailed: network too
                last = error
            if attempt < self._retries:
                delay = self._backoff_s * 2 ** attempt
                self._log.warning('{}: {}; retry {} of {} in {:.3g} s', self.name, error_summary(last), attempt + 1,
                                  self._retries, delay)
                if self._stop.wait(delay):
                    return None
        raise FeedError('{}: {} tries failed, the last with {}'.format(
            self.name, self._retries + 1, error_summary(last))) from last


class GuardedFeed:
    """A feed that returns only sound bars in strictly increasing time order, and `FEED_SILENT` once per silence.

    Attributes:
        silent: True from a silence's `FEED_SILENT` until the next accepted bar.
        last_time: time of the last accepted bar (None before the first).
        accepted, dropped: counts of the bars returned, and of those dropped or refused.
    """

    def __init__(self, feed, max_bar_delay=None, log=None, clock=time.monotonic):
        """Args:
            feed: anything with `next_bar(timeout)` and `close()`, such as a feed of `open_feed`.
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
        accepted one or unsound (see `bad_field`)."""
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
