"""Maps the column names of CSV headers and DataFrames onto the canonical OHLCV columns (and the optional spread,
given as a column or as bid and ask prices)."""
import re

from btgym_aac.data.errors import DataError

PRICE_COLUMNS = ('open', 'high', 'low', 'close')
OHLCV_COLUMNS = PRICE_COLUMNS + ('volume',)
SPREAD_COLUMN = 'spread'
"""The optional column of a canonical frame: the ask minus the bid at the bar's open (price units)."""
SIDES = ('bid', 'ask')
BID_ASK_COLUMNS = tuple('{}_{}'.format(side, price) for side in SIDES for price in PRICE_COLUMNS)
"""Roles of bars given as bid and ask prices: bid_open ... bid_close, ask_open ... ask_close."""

_ALIASES = {
    'open': ('open', 'o'),
    'high': ('high', 'h'),
    'low': ('low', 'l'),
    'close': ('close', 'c'),
    'volume': ('volume', 'vol', 'v', 'tickvol', 'tick_volume'),
    'datetime': ('datetime', 'date_time', 'timestamp', 'dt', 'gmt time', 'local time'),
    'date': ('date', 'day'),
    'time': ('time',),
    SPREAD_COLUMN: (SPREAD_COLUMN,),
    **{role: (role, role.replace('_', ''), role.replace('_', ' '), '{1}_{0}'.format(*role.split('_')),
              '{1}{0}'.format(*role.split('_')))
       for role in BID_ASK_COLUMNS},
}
_DECORATION = re.compile(r'^[\d_\s<]+|[>\s]+$')


def normalize_name(name):
    """Lower-cases a column name and strips decorations: '1_O' -> 'o', '<CLOSE>' -> 'close', ' Date ' -> 'date'."""
    return _DECORATION.sub('', str(name).strip().lower())


def match_columns(names):
    """Finds which given column names are the datetime, OHLCV, spread and bid/ask price columns.

    Args:
        names: column names in file / DataFrame order.

    Returns:
        dict role -> position in `names`, for the roles found among 'datetime', 'date', 'time', 'open', 'high',
        'low', 'close', 'volume', 'spread' and `BID_ASK_COLUMNS` (first match wins; bid/ask names are matched as
        'bid_open', 'bidopen', 'bid open', 'open_bid' or 'openbid').
    """
    normalized = [normalize_name(name) for name in names]
    roles = {}
    for role, aliases in _ALIASES.items():
        for alias in aliases:
            if alias in normalized:
                roles[role] = normalized.index(alias)
                break
    return roles


def has_bid_ask(roles, where):
    """True when `roles` give bars as bid and ask prices in place of OHLC prices.

    Args:
        roles: dict role -> position (see `match_columns`).
        where: description of the source for the message.

    Raises:
        DataError: some bid/ask price columns are given, the OHLC prices are not and the bid/ask set is not whole.
    """
    given = [role for role in BID_ASK_COLUMNS if role in roles]
    if not given or all(name in roles for name in PRICE_COLUMNS):
        return False
    missing = [role for role in BID_ASK_COLUMNS if role not in roles]
    if missing:
        raise DataError('{}: has bid/ask price column(s) {} but not {}; give all eight, or open, high, low, close'
                        .format(where, ', '.join(given), ', '.join(missing)))
    return True


def require_prices(roles, where):
    """Raises DataError naming the price columns missing from `roles` (see `match_columns`).

    Args:
        roles: dict role -> position.
        where: description of the source for the message (file name or 'DataFrame').
    """
    missing = [name for name in PRICE_COLUMNS if name not in roles]
    if missing:
        raise DataError('{}: missing price column(s) {}; expected open, high, low, close (volume optional), or bid '
                        'and ask prices (bid_open ... ask_close)'.format(where, ', '.join(missing)))
