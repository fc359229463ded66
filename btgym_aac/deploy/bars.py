"""The bar that live feeds deliver, their error, their sentinels and the conversion of user items to bars."""
import datetime
import math
import typing

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
