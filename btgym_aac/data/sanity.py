"""Sanity checks of price data at load: what would make a run train on nonsense without a word.

| check | default | finds |
|---|---|---|
| `nonpositive_prices` | error | an open, high, low or close <= 0 (the broker's values and log returns break) |
| `price_scale` | error | a price outside 1e-8 .. 1e12 (orders round to nothing, or values overflow) |
| `constant_prices` | error | close prices that never change (zero variance: features divide by zero) |
| `unsorted_timestamps` | warn | a bar earlier than the one before it in its file (the bars are sorted) |
| `duplicated_timestamps` | warn | a bar at the time of an earlier one (the later one is dropped) |

`parsing_params['checks']` sets any of them to 'error', 'warn' or 'off' (say, 'warn' for a spread series that
goes negative, or 'error' where unsorted files mean a broken export). Messages name the source, the column and the
first offending bar: its line in a file as an editor shows it (or its row in a DataFrame) and its timestamp. A check
set to 'error' raises a `DataCheckError`, whose remedy says to correct the data or how to accept it.
"""
import numpy as np

from btgym_aac.data.columns import PRICE_COLUMNS
from btgym_aac.data.errors import DataCheckError
from btgym_aac.data.locations import bar_at
from btgym_aac.logs import get_logger

DEFAULT_CHECKS = {'nonpositive_prices': 'error', 'price_scale': 'error', 'constant_prices': 'error',
                  'unsorted_timestamps': 'warn', 'duplicated_timestamps': 'warn'}
ACTIONS = ('error', 'warn', 'off')
PRICE_RANGE = (1e-8, 1e12)
ACCEPT_REMEDY = ("correct the data, or set parsing_params['checks'][{!r}] to 'warn' or 'off' in the env config to "
                 'accept it')
"""What a failed check's error says to do, for its check's name."""

_log = get_logger('DataChecks')


def resolve_checks(checks=None):
    """The actions of every check: DEFAULT_CHECKS updated by `checks`.

    Raises:
        ValueError: an unknown check or action, named.
    """
    if checks is None:
        return dict(DEFAULT_CHECKS)
    if not isinstance(checks, dict):
        raise ValueError("parsing_params['checks'] must be a dict of check name -> 'error', 'warn' or 'off', got "
                         '{!r}'.format(checks))
    unknown = sorted(set(checks) - set(DEFAULT_CHECKS))
    if unknown:
        raise ValueError("unknown data check(s) {} in parsing_params['checks']; known: {}".format(
            unknown, sorted(DEFAULT_CHECKS)))
    for name, action in checks.items():
        if action not in ACTIONS:
            raise ValueError("parsing_params['checks'][{!r}] must be 'error', 'warn' or 'off', got {!r}".format(
                name, action))
    return dict(DEFAULT_CHECKS, **checks)


def report_check(checks, name, message):
    """Raises DataCheckError (with `ACCEPT_REMEDY`) or logs a warning for check `name` as `checks` say (nothing
    when 'off')."""
    if checks[name] == 'error':
        raise DataCheckError(name, message, ACCEPT_REMEDY.format(name))
    if checks[name] == 'warn':
        _log.warning(message)


def _first_row(mask):
    """Position of the first True of a (rows, columns) or (rows,) mask, or None."""
    rows = np.flatnonzero(mask.any(axis=1) if mask.ndim == 2 else mask)
    return int(rows[0]) if len(rows) else None


def _source_findings(frame, where, rows=None):
    """(check name, message) of each per-source check that the bars of one source, in their order there, fail;
    `rows`: the source's locator (see `locations`), or None to name bars by their time alone."""
    findings = []
    prices = frame[list(PRICE_COLUMNS)].to_numpy(np.float64)
    for name, bad, what in (('nonpositive_prices', prices <= 0, 'is not positive'),
                            ('price_scale', (prices > 0) & ((prices < PRICE_RANGE[0]) | (prices > PRICE_RANGE[1])),
                             'lies outside {:g} .. {:g}'.format(*PRICE_RANGE))):
        first = _first_row(bad)
        if first is not None:
            column = int(np.flatnonzero(bad[first])[0])
            findings.append((name, '{}: {} {} {} at {}; {} bar(s) like it'.format(
                where, PRICE_COLUMNS[column], prices[first][column], what, bar_at(frame, first, rows),
                int(bad.any(axis=1).sum()))))
    times = frame.index.to_numpy()
    earlier = _first_row(np.concatenate([[False], times[1:] < times[:-1]]))
    if earlier is not None:
        findings.append(('unsorted_timestamps', '{}: datetime of {} is earlier than the bar before it; the bars '
                         'are sorted by time'.format(where, bar_at(frame, earlier, rows))))
    duplicated = frame.index.duplicated(keep='first')
    if duplicated.any():
        findings.append(('duplicated_timestamps', '{}: datetime of {} repeats an earlier bar\'s; dropped {} '
                         'bar(s) with duplicated timestamps, keeping the first'.format(
                             where, bar_at(frame, _first_row(duplicated), rows), int(duplicated.sum()))))
    return findings


def _series_findings(frame, where):
    """(check name, message) of each whole-series check that the sorted bars of all sources fail."""
    close = frame['close'].to_numpy(np.float64)
    if len(close) > 1 and np.all(close == close[0]):
        return [('constant_prices', '{}: column close is {} in all {} bars (zero variance: no price moves to learn '
                 'from, and the features divide by zero)'.format(where, close[0], len(close)))]
    return []


def check_source(frame, where, checks, rows):
    """Runs the per-source checks on the bars of one source in their order there.

    Args:
        frame: canonical OHLCV DataFrame, not yet sorted or de-duplicated.
        where: the source, for messages ('data file <...>').
        checks: from `resolve_checks`.
        rows: the source's locator (see `locations`), naming a bar's line (or DataFrame row).

    Raises:
        DataCheckError: a check set to 'error' fails.
    """
    for name, message in _source_findings(frame, where, rows):
        report_check(checks, name, message)


def check_series(frame, where, checks):
    """Runs the whole-series checks on the sorted bars of all sources.

    Raises:
        DataCheckError: a check set to 'error' fails.
    """
    for name, message in _series_findings(frame, where):
        report_check(checks, name, message)


def data_problems(frame, where):
    """What the price checks find in loaded bars whatever their settings (the timestamp checks, whose findings
    loading repairs, left out): a list of messages."""
    return [message for name, message in _source_findings(frame, where) + _series_findings(frame, where)
            if name not in ('unsorted_timestamps', 'duplicated_timestamps')]
