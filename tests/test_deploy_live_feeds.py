"""Live bar feeds of `btgym_aac.deploy`: a CSV replayed on a clock, an exchange polled through ccxt (a local fake of
Binance's REST API), a user's Python iterator, the bar guards, and the errors of bad specs."""
import datetime
import http.server
import json
import math
import sys
import textwrap
import threading
import urllib.parse

import logbook
import pytest

from btgym_aac.data.errors import DataError
from btgym_aac.data.parsing import read_ohlcv
from btgym_aac.deploy.live_feeds import FEED_ENDED, FEED_SILENT, Bar, FeedError, GuardedFeed, open_feed

T0 = datetime.datetime(2024, 1, 2, 3, 0)
MINUTE = datetime.timedelta(minutes=1)
HISTDATA_ROWS = ['20170102 010000;1.05155;1.05197;1.05155;1.05190;0',
                 '20170102 010100;1.05209;1.05209;1.05177;1.05198;0',
                 '20170102 010200;1.05198;1.05240;1.05196;1.05235;0',
                 '20170102 010300;1.05235;1.05242;1.05220;1.05221;0']


class FakeClock:
    """Monotonic seconds that move only when a test (or the injected sleep) moves them."""

    def __init__(self):
        self.now, self.slept = 0.0, []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)


@pytest.fixture
def histdata_csv(tmp_path):
    path = tmp_path / 'DAT_ASCII_EURUSD_M1_2017.csv'
    path.write_text('\n'.join(HISTDATA_ROWS) + '\n')
    return path


def frame_bars(frame):
    return [Bar(stamp.to_pydatetime(), *row) for stamp, row in
            zip(frame.index, frame[['open', 'high', 'low', 'close', 'volume']].itertuples(index=False))]


def drain(feed, timeout=5.0):
    bars = []
    while (item := feed.next_bar(timeout)) is not FEED_ENDED:
        assert item is not None, 'no bar within {} s'.format(timeout)
        bars.append(item)
    return bars


# Replay


def test_replay_at_max_speed_gives_the_rows_of_a_histdata_file_at_once(histdata_csv):
    clock = FakeClock()
    feed = open_feed('replay:{}'.format(histdata_csv), clock=clock, sleep=clock.sleep)
    bars = drain(feed, timeout=0)
    assert bars == frame_bars(read_ohlcv(str(histdata_csv)))
    assert bars[0] == Bar(datetime.datetime(2017, 1, 2, 1, 0), 1.05155, 1.05197, 1.05155, 1.05190, 0.0)
    assert clock.slept == []
    assert feed.next_bar(0) is FEED_ENDED


def test_replay_reads_a_generic_csv_with_its_parsing_params(tmp_path):
    path = tmp_path / 'bars.csv'
    path.write_text('when|o|h|l|c|v\n2024-01-02 03:00:00|10|12|9|11|5\n2024-01-02 03:05:00|11|13|10|12|6\n')
    params = dict(sep='|', names=['open', 'high', 'low', 'close', 'volume'])
    feed = open_feed('replay:{}:max'.format(path), parsing_params=params)
    assert drain(feed) == frame_bars(read_ohlcv(str(path), params))
    assert drain(open_feed('replay:{}'.format(path), parsing_params=params))[1] == Bar(T0 + 5 * MINUTE, 11, 13, 10,
                                                                                        12, 6)


def test_replay_at_a_speed_gives_each_bar_when_it_is_due_on_the_clock(histdata_csv):
    clock = FakeClock()
    feed = open_feed('replay:{}:60'.format(histdata_csv), clock=clock, sleep=clock.sleep)  # a minute per second
    expected = frame_bars(read_ohlcv(str(histdata_csv)))
    assert feed.next_bar(0) == expected[0]
    assert feed.next_bar(0.25) is None
    assert clock.slept == [0.25]
    clock.now = 0.999
    assert feed.next_bar(0) is None
    clock.now = 1.0
    assert feed.next_bar(0) == expected[1]
    clock.now = 1.5
    assert feed.next_bar(10) == expected[2]  # waits the half second the bar is due in, not the timeout
    assert clock.slept[-1] == pytest.approx(0.5)
    clock.now = 30.0
    assert feed.next_bar(None) == expected[3]
    assert feed.next_bar(None) is FEED_ENDED


def test_a_path_with_colons_is_split_only_at_a_speed(tmp_path, histdata_csv):
    path = tmp_path / 'EURUSD:M1:2017.csv'
    path.write_text(histdata_csv.read_text())
    assert len(drain(open_feed('replay:{}'.format(path)))) == 4
    assert len(drain(open_feed('replay:{}:max'.format(path)))) == 4


def test_a_replayed_bar_failing_a_data_check_is_named_by_its_line_with_what_trade_can_do(tmp_path):
    path = tmp_path / 'bars.csv'
    path.write_text('\n'.join(HISTDATA_ROWS[:2] + ['', HISTDATA_ROWS[2].replace('1.05198', '-1.05198', 1)]) + '\n')
    with pytest.raises(DataError, match=r'data file <{}>: open -1.05198 is not positive at line 4 \(2017-01-02 '
                                        r'01:02:00\)'.format(path)) as refused:
        open_feed('replay:{}'.format(path))
    assert refused.match(r"\(data check 'nonpositive_prices': a replayed file must pass it; correct the file\)$")
    assert 'parsing_params' not in str(refused.value)  # `btgym-aac trade` takes no parsing_params


def test_a_closed_replay_has_ended(histdata_csv):
    feed = open_feed('replay:{}'.format(histdata_csv))
    assert feed.next_bar(0) is not None
    feed.close()
    assert feed.next_bar(0) is FEED_ENDED


# Python


USER_MODULE = '''
import datetime
import threading

from btgym_aac.deploy.live_feeds import Bar

GATE = threading.Event()
T0 = datetime.datetime(2024, 1, 2, 3, 0)


def mixed():
    yield (T0, 1.0, 2.0, 0.5, 1.5, 10.0)
    yield {'time': '2024-01-02T05:01:00+02:00', 'open': 1.5, 'high': 2.5, 'low': 1.0, 'close': 2.0}
    yield [T0 + datetime.timedelta(minutes=2), 2, 3, 1.5, 2.5]
    yield Bar(T0 + datetime.timedelta(minutes=3), 2.0, 3.0, 1.5, 2.5, 5.0)


def failing():
    yield (T0, 1.0, 2.0, 0.5, 1.5)
    raise ConnectionError('broker socket lost')


def gated():
    GATE.wait(30)
    yield (T0, 1.0, 2.0, 0.5, 1.5)


def bad_item():
    yield 'not a bar'


def not_iterable():
    return 42
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    name = 'user_bar_source_{}'.format(abs(hash(str(tmp_path))))
    (tmp_path / '{}.py'.format(name)).write_text(textwrap.dedent(USER_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    module = sys.modules.pop(name, None)
    if module is not None:
        module.GATE.set()


def test_python_feed_converts_tuples_dicts_and_bars(user_module):
    feed = open_feed('python:{}:mixed'.format(user_module))
    assert drain(feed) == [Bar(T0, 1.0, 2.0, 0.5, 1.5, 10.0), Bar(T0 + MINUTE, 1.5, 2.5, 1.0, 2.0, 0.0),
                           Bar(T0 + 2 * MINUTE, 2.0, 3.0, 1.5, 2.5, 0.0), Bar(T0 + 3 * MINUTE, 2.0, 3.0, 1.5, 2.5, 5.0)]
    assert all(type(bar.time) is datetime.datetime and bar.time.tzinfo is None for bar in drain(
        open_feed('python:{}:mixed'.format(user_module))))
    assert feed.next_bar(0) is FEED_ENDED


def test_an_error_of_the_users_iterator_becomes_a_feed_error_naming_it(user_module):
    feed = open_feed('python:{}:failing'.format(user_module))
    assert feed.next_bar(5) == Bar(T0, 1.0, 2.0, 0.5, 1.5, 0.0)
    with pytest.raises(FeedError, match='{}:failing.*ConnectionError: broker socket lost'.format(user_module)):
        feed.next_bar(5)
    with pytest.raises(FeedError):  # and on every later call
        feed.next_bar(0)
    with pytest.raises(FeedError, match="{}:bad_item: bad item.*'not a bar'".format(user_module)):
        drain(open_feed('python:{}:bad_item'.format(user_module)))


def test_next_bar_times_out_while_the_users_iterator_blocks(user_module):
    feed = open_feed('python:{}:gated'.format(user_module))
    assert feed.next_bar(0.05) is None
    assert feed.next_bar(0) is None
    sys.modules[user_module].GATE.set()
    assert feed.next_bar(10) == Bar(T0, 1.0, 2.0, 0.5, 1.5, 0.0)
    assert feed.next_bar(10) is FEED_ENDED
    feed.close()


# ccxt, against a local fake of Binance's public REST API


BINANCE_SPOT = {'timezone': 'UTC', 'serverTime': 0, 'rateLimits': [], 'symbols': [
    {'symbol': 'BTCUSDT', 'status': 'TRADING', 'baseAsset': 'BTC', 'quoteAsset': 'USDT', 'baseAssetPrecision': 8,
     'quotePrecision': 8, 'quoteAssetPrecision': 8, 'orderTypes': ['LIMIT', 'MARKET'], 'filters': [],
     'isSpotTradingAllowed': True, 'isMarginTradingAllowed': False, 'permissions': ['SPOT']}]}
"""GET /api/v3/exchangeInfo: one spot market; the futures ones (/fapi, /dapi) list none."""


def kline(minute, open_, high, low, close, volume):
    """A row of GET /api/v3/klines: open time ms, prices and volume as strings, close time, ..."""
    start = int((T0 + minute * MINUTE - datetime.datetime(1970, 1, 1)).total_seconds() * 1000)
    return [start, str(open_), str(high), str(low), str(close), str(volume), start + 59999, '0', 1, '0', '0', '0']


class FakeBinance(http.server.ThreadingHTTPServer):
    """Answers the endpoints ccxt's binance calls for `fetch_ohlcv`; `failures` lists what the next requests get
    instead ('500': an HTTP 500, 'drop': the connection closed without an answer)."""

    def __init__(self):
        super().__init__(('127.0.0.1', 0), FakeBinanceHandler)
        self.klines = [kline(0, 100, 110, 95, 105, 3), kline(1, 105, 106, 101, 102, 4),
                       kline(2, 102, 120, 100, 119, 5), kline(3, 119, 125, 118, 121, 1)]  # the last is forming
        self.failures, self.paths, self.lock = [], [], threading.Lock()

    @property
    def url(self):
        return 'http://127.0.0.1:{}'.format(self.server_address[1])


class FakeBinanceHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        server = self.server
        path = urllib.parse.urlsplit(self.path).path
        with server.lock:
            server.paths.append(path)
            failure = server.failures.pop(0) if server.failures else None
            klines = list(server.klines)
        if failure == 'drop':
            self.close_connection = True
            return
        if failure == '500':
            return self.answer(500, {'code': -1000, 'msg': 'An unknown error occurred while processing the request.'})
        answers = {'/api/v3/exchangeInfo': BINANCE_SPOT, '/api/v3/klines': klines,
                   '/fapi/v1/exchangeInfo': {'symbols': []}, '/dapi/v1/exchangeInfo': {'symbols': []}}
        if path not in answers:
            return self.answer(404, {'code': -1, 'msg': 'not faked: {}'.format(path)})
        self.answer(200, answers[path])

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def binance():
    pytest.importorskip('ccxt')
    server = FakeBinance()
    thread = threading.Thread(target=server.serve_forever, kwargs=dict(poll_interval=0.01), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def binance_feed(server, **options):
    options = dict(dict(api_url=server.url, poll_seconds=0.02, backoff_seconds=0.001,
                        exchange_config={'enableRateLimit': False, 'timeout': 5000}), **options)
    return open_feed('ccxt:binance:BTC/USDT:1m', **options)


def test_ccxt_feed_gives_the_closed_bars_in_order_and_holds_the_forming_one_back(binance):
    feed = binance_feed(binance)
    try:
        assert [feed.next_bar(10) for _ in range(3)] == [
            Bar(T0, 100, 110, 95, 105, 3), Bar(T0 + MINUTE, 105, 106, 101, 102, 4),
            Bar(T0 + 2 * MINUTE, 102, 120, 100, 119, 5)]
        assert feed.next_bar(0.2) is None  # the bar of minute 3 is forming
        with binance.lock:
            binance.klines[-1] = kline(3, 119, 126, 117, 122, 2)
            binance.klines.append(kline(4, 122, 122, 122, 122, 0))
        assert feed.next_bar(10) == Bar(T0 + 3 * MINUTE, 119, 126, 117, 122, 2)
    finally:
        feed.close()
    assert '/api/v3/klines' in binance.paths and '/api/v3/exchangeInfo' in binance.paths


def test_ccxt_feed_starts_at_since(binance):
    feed = binance_feed(binance, since=T0 + MINUTE)
    try:
        assert feed.next_bar(10).time == T0 + MINUTE
    finally:
        feed.close()


def test_ccxt_feed_retries_failed_requests_with_a_warning_each(binance):
    binance.failures = ['500', 'drop']
    with logbook.TestHandler().applicationbound() as handler:
        feed = binance_feed(binance, retries=2)
        try:
            assert feed.next_bar(10) == Bar(T0, 100, 110, 95, 105, 3)
        finally:
            feed.close()
    retries = [record.message for record in handler.records if 'retry' in record.message]
    assert len(retries) == 2, handler.formatted_records
    assert 'retry 1 of 2' in retries[0] and 'retry 2 of 2' in retries[1]
    assert all('binance' in message and 'BTC/USDT' in message for message in retries)


def test_ccxt_feed_fails_naming_the_exchange_and_symbol_after_the_last_retry(binance):
    binance.failures = ['500'] * 20
    feed = binance_feed(binance, retries=2)
    with pytest.raises(FeedError, match=r'exchange binance, symbol BTC/USDT.*3 tries failed.*unknown error occurred'):
        feed.next_bar(10)
    assert len(binance.paths) == 3
    feed.close()


def test_ccxt_feed_fails_at_once_for_a_symbol_the_exchange_does_not_list(binance):
    feed = open_feed('ccxt:binance:ETH/BTC:1m', api_url=binance.url, retries=5, backoff_seconds=60,
                     exchange_config={'enableRateLimit': False})
    with pytest.raises(FeedError, match='exchange binance, symbol ETH/BTC.*BadSymbol'):
        feed.next_bar(10)
    feed.close()


def test_ccxt_feed_replaces_the_host_of_every_api_url(binance):
    feed = binance_feed(binance, poll_seconds=60)
    feed.close()
    urls = feed._exchange.urls['api']
    assert urls['public'] == binance.url + '/api/v3'
    assert all(url.startswith(binance.url + '/') for url in urls.values() if isinstance(url, str))


# Guards


class ListFeed:
    """A feed that gives its items one per call, then None (no bar within the timeout)."""

    def __init__(self, items=()):
        self.items, self.timeouts, self.closed = list(items), [], False

    def next_bar(self, timeout=None):
        self.timeouts.append(timeout)
        return self.items.pop(0) if self.items else None

    def close(self):
        self.closed = True


def guarded(items=(), **options):
    handler = logbook.TestHandler()
    clock = FakeClock()
    feed = GuardedFeed(ListFeed(items), log=logbook.Logger('guards test', level=logbook.DEBUG), clock=clock,
                       **options)
    return feed, clock, handler


def warnings_of(handler):
    return [record.message for record in handler.records if record.level == logbook.WARNING]


def test_duplicate_and_out_of_order_bars_are_dropped_with_a_warning():
    good = [Bar(T0 + i * MINUTE, 10, 11, 9, 10, 1) for i in range(3)]
    feed, _, handler = guarded([good[0], good[1], good[1]._replace(close=10.5), good[0], good[2]])
    with handler.applicationbound():
        assert [feed.next_bar(0) for _ in range(3)] == good
    messages = warnings_of(handler)
    assert len(messages) == 2 and feed.dropped == 2 and feed.accepted == 3
    assert 'duplicate' in messages[0] and '2024-01-02 03:01:00' in messages[0]
    assert 'out-of-order' in messages[1] and '2024-01-02 03:00:00' in messages[1] and '03:01:00' in messages[1]


@pytest.mark.parametrize('change, named', [
    (dict(close=math.nan), 'close=nan is not finite'),
    (dict(open=math.inf, high=math.inf), 'open=inf is not finite'),
    (dict(low=0.0), 'low=0.0 is not positive'),
    (dict(open=-1.0, low=-2.0), 'open=-1.0 is not positive'),
    (dict(high=8.0), 'high=8.0 is below low=9'),
    (dict(open=12.0), 'open=12.0 is outside [low=9'),
    (dict(close=8.5), 'close=8.5 is outside [low=9'),
    (dict(volume=math.nan), 'volume=nan'),
])
def test_unsound_bars_are_refused_naming_the_bar_and_the_field(change, named):
    bad = Bar(T0, 10.0, 11.0, 9.0, 10.0, 1.0)._replace(**change)
    good = Bar(T0 + MINUTE, 10.0, 11.0, 9.0, 10.0, 1.0)
    feed, _, handler = guarded([bad, good])
    with handler.applicationbound():
        assert feed.next_bar(0) == good
    [message] = warnings_of(handler)
    assert named in message and '2024-01-02 03:00:00' in message


def test_a_silent_feed_is_signalled_once_per_silence_and_resumes():
    feed, clock, handler = guarded(max_bar_delay=10)
    with handler.applicationbound():
        assert feed.next_bar(100) is None
        assert feed.feed.timeouts[-1] == 10  # the wait ends when the silence is due
        clock.now = 10.5
        assert feed.next_bar(1) is FEED_SILENT and feed.silent
        assert [feed.next_bar(1) for _ in range(3)] == [None] * 3  # once per silence
        clock.now = 60
        assert feed.next_bar(1) is None
        bar = Bar(T0, 10, 11, 9, 10, 1)
        feed.feed.items.append(bar)
        assert feed.next_bar(1) == bar and not feed.silent
        clock.now = 65
        assert feed.next_bar(1) is None
        clock.now = 70.5
        assert feed.next_bar(1) is FEED_SILENT
    silences = [message for message in warnings_of(handler) if 'silent' in message]
    assert len(silences) == 2
    assert 'no bar for 10.5 s since the start' in silences[0]
    assert 'no bar for 10.5 s since the last bar, at 2024-01-02 03:00:00' in silences[1]


def test_guards_pass_the_end_of_the_feed_and_close_it():
    feed, _, _ = guarded([FEED_ENDED])
    assert feed.next_bar(0) is FEED_ENDED
    feed.close()
    assert feed.feed.closed
    with pytest.raises(ValueError, match='max_bar_delay'):
        GuardedFeed(ListFeed(), max_bar_delay=0)


# Bad specs


@pytest.mark.parametrize('spec, error, message', [
    ('nope:somewhere', ValueError, "unknown scheme 'nope'; expected replay:FILE"),
    ('bars.csv', ValueError, "unknown scheme 'bars.csv'"),
    ('replay:{dir}/missing.csv', FileNotFoundError, "no file '.*missing.csv' to replay"),
    ('replay:{csv}:0', ValueError, "bad SPEED '0'"),
    ('replay:{csv}:-2', ValueError, "bad SPEED '-2'"),
    ('replay:{csv}:fast', ValueError, "bad SPEED 'fast'; expected a number > 0 or max"),
    ('python:json', ValueError, 'expected python:MODULE:CALLABLE'),
    ('python:no_such_module_for_feeds:bars', ValueError, "cannot import module 'no_such_module_for_feeds'"),
    ('python:json:no_such_function', ValueError, "module 'json' has no callable 'no_such_function'"),
    ('python:json:JSONDecodeError', FeedError, 'json:JSONDecodeError: calling it raised TypeError'),
    ('python:os:getpid', ValueError, 'returned .*, not an iterator of bars'),
])
def test_a_bad_spec_is_named_in_its_error(spec, error, message, histdata_csv):
    with pytest.raises(error, match=message):
        open_feed(spec.format(dir=histdata_csv.parent, csv=histdata_csv))


def test_an_option_the_feed_does_not_take_is_named(histdata_csv):
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['speed'\]"):
        open_feed('replay:{}'.format(histdata_csv), speed=2)


@pytest.mark.parametrize('spec, message', [
    ('ccxt:no_such_exchange:BTC/USDT:1m', "ccxt has no exchange 'no_such_exchange'"),
    ('ccxt:binance:BTCUSDT:1m', 'expected ccxt:EXCHANGE:SYMBOL:TIMEFRAME'),
    ('ccxt:binance:BTC/USDT', 'expected ccxt:EXCHANGE:SYMBOL:TIMEFRAME'),
    ('ccxt:binance:BTC/USDT:7q', "binance has no timeframe '7q'; it has 1s, 1m"),
])
def test_a_bad_ccxt_spec_is_named_in_its_error(spec, message):
    pytest.importorskip('ccxt')
    with pytest.raises(ValueError, match=message):
        open_feed(spec)


def test_a_ccxt_feed_without_ccxt_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, 'ccxt', None)
    with pytest.raises(ImportError, match='pip install ccxt'):
        open_feed('ccxt:binance:BTC/USDT:1m')
