"""Maps the column names of CSV headers and DataFrames onto the canonical OHLCV columns."""
import re

from btgym_aac.data.errors import DataError

PRICE_COLUMNS = ('open', 'high', 'low', 'close')
OHLCV_COLUMNS = PRICE_COLUMNS + ('volume',)

_ALIASES = {
    'open': ('open', 'o'),
    'high': ('high', 'h'),
    'low': ('low', 'l'),
    'close': ('close', 'c'),
    'volume': ('volume', 'vol', 'v', 'tickvol', 'tick_volume'),
    'datetime': ('datetime', 'date_time', 'timestamp', 'dt', 'gmt time', 'local time'),
    'date': ('date', 'day'),
    'time': ('time',),
}
_DECORATION = re.compile(r'^[\d_\s<]+|[>\s]+$')


def normalize_name(name):
    """Lower-cases a column name and strips decorations: '1_O' -> 'o', '<CLOSE>' -> 'close', ' Date ' -> 'date'."""
    return _DECORATION.sub('', str(name).strip().lower())


def match_columns(names):
    """Finds which given column names are the datetime and OHLCV columns.

    Args:
        names: column names in file / DataFrame order.

    Returns:
        dict role -> position in `names`, for the roles found among 'datetime', 'date', 'time', 'open', 'high',
        'low', 'close', 'volume' (first match wins).
    """
    normalized = [normalize_name(name) for name in names]
    roles = {}
    for role, aliases in _ALIASES.items():
        for alias in aliases:
            if alias in normalized:
                roles[role] = normalized.index(alias)
                break
    return roles


def require_prices(roles, where):
    """Raises DataError naming the price columns missing from `roles` (see `match_columns`).

    Args:
        roles: dict role -> position.
        where: description of the source for the message (file name or 'DataFrame').
    """
    missing = [name for name in PRICE_COLUMNS if name not in roles]
    if missing:
        raise DataError('{}: missing price column(s) {}; expected open, high, low, close (volume optional)'
                        .format(where, ', '.join(missing)))
