"""Checks of numeric settings: a bad value raises ValueError naming the setting and the value it got."""
import math
import numbers


def is_finite_real(value):
    """True for a finite int or float (not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def check_number(name, value, low=0, high=None, low_open=False):
    """Returns `value` if it is a finite real number within the bounds.

    Args:
        name: setting named in the message.
        value: the setting's value.
        low: lower bound, included unless `low_open`.
        high: included upper bound, or None for none.
        low_open: exclude `low` itself.

    Returns:
        value.

    Raises:
        ValueError: naming the setting and the value.
    """
    wanted = 'in [{}, {}]'.format(low, high) if high is not None else '{} {}'.format('>' if low_open else '>=', low)
    if not is_finite_real(value) or value < low or (low_open and value == low) or (high is not None and value > high):
        raise ValueError('{} must be a finite number {}, got {!r}'.format(name, wanted, value))
    return value


def check_whole_number(name, value, minimum=1):
    """Returns `value` as an int if it is a whole number >= `minimum` (whole floats such as 1e6 included).

    Args:
        name: setting named in the message.
        value: the setting's value.
        minimum: smallest value allowed.

    Returns:
        int.

    Raises:
        ValueError: naming the setting and the value.
    """
    if not is_finite_real(value) or not float(value).is_integer() or value < minimum:
        raise ValueError('{} must be a whole number >= {}, got {!r}'.format(name, minimum, value))
    return int(value)


def setting_differences(previous, current):
    """The settings that differ between two dicts, in words ('folds 2, not 3'; a key missing from one is None
    there), sorted by key; empty when they agree."""
    return ['{} {!r}, not {!r}'.format(key, previous.get(key), current.get(key))
            for key in sorted(set(previous) | set(current)) if previous.get(key) != current.get(key)]
