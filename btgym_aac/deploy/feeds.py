"""Live bar feeds named by a spec string: a CSV replayed on a clock, an exchange polled through ccxt, or a user's
Python iterator. A feed's `next_bar(timeout)` returns a `Bar`, None when none came within `timeout` seconds, or
`FEED_ENDED` once the feed has ended for good; `close()` stops it."""
import importlib
import os
import queue
import re
import threading
import time
import urllib.parse

from btgym_aac.data.parsing import read_ohlcv
from btgym_aac.deploy.bars import FEED_ENDED, Bar, FeedError, closed_bars, to_bar, to_epoch_ms
from btgym_aac.logs import error_summary, get_logger

SPEC_FORMS = 'replay:FILE[:SPEED], ccxt:EXCHANGE:SYMBOL:TIMEFRAME or python:MODULE:CALLABLE'
OPTIONS = {'replay': {'parsing_params', 'clock', 'sleep'},
           'ccxt': {'poll_seconds', 'api_url', 'retries', 'backoff_seconds', 'exchange_config', 'since'},
           'python': set()}  # the keyword options `open_feed` accepts for each scheme
QUEUE_SIZE = 1024  # bars a threaded feed reads ahead of its consumer
_PUT_WAIT_S = 0.1  # how often a reader blocked on a full queue looks whether the feed was closed
_JOIN_S = 1.0  # how long `close` waits for a reader thread
_SPEED = re.compile(r'max|[0-9]*\.?[0-9]+(e[-+]?[0-9]+)?', re.IGNORECASE)


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
        """
        frame = read_ohlcv(path, parsing_params)
        index = frame.index if frame.index.tz is None else frame.index.tz_convert('UTC').tz_localize(None)
        self._times = [stamp.to_pydatetime(warn=False) for stamp in index]
        self._values = frame[['open', 'high', 'low', 'close', 'volume']].to_numpy(dtype=float).tolist()
        self.bar_count = len(self._times)
        self._speed, self._clock, self._sleep = speed, clock, sleep
        self._start, self._next = clock(), 0

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
