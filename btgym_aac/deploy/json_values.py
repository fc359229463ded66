"""Settings as JSON and back: what a strategy and its broker were given, written into the artifact's manifest so that
`trade` rebuilds them without pickles.

Plain JSON values stay as they are. Other values become one-key objects: {"__tuple__": [...]},
{"__ndarray__": [...], "dtype": ..., "shape": [...]}, {"__class__": "module:name"} (classes and functions, imported
back by name), {"__box__": {...}} (gymnasium boxes), {"__spaces__": {...}, "class": ...} (dict spaces),
{"__datetime__": iso}, {"__timedelta__": seconds},
{"__float__": "inf"} (non-finite floats), {"__items__": [[key, value], ...]} (dicts with other keys than strings).
A value of any other type is written as {"__repr__": repr(value), "type": "module:name"}, which `from_json`
refuses, naming it.
"""
import datetime
import importlib
import inspect
import math

import numpy as np


class UnreadableValue(ValueError):
    """A JSON value that stands for an object no JSON can hold (written as its repr)."""


def type_name(value):
    """'module:qualified.name' of a class or function."""
    return '{}:{}'.format(value.__module__, value.__qualname__)


def _box(value):
    return {'__box__': {'low': to_json(np.asarray(value.low)), 'high': to_json(np.asarray(value.high)),
                        'shape': list(value.shape), 'dtype': np.dtype(value.dtype).name}}


def to_json(value):
    """`value` as a JSON value that `from_json` turns back into an equal one (see the module docstring)."""
    if value is None or isinstance(value, (bool, str, int)) and not isinstance(value, np.generic):
        return value
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else {'__float__': str(float(value))}
    if isinstance(value, np.generic):
        return to_json(value.item())
    if isinstance(value, np.ndarray):
        return {'__ndarray__': value.tolist(), 'dtype': value.dtype.name, 'shape': list(value.shape)}
    if isinstance(value, dict):
        if all(isinstance(key, str) and not key.startswith('__') for key in value):
            return {key: to_json(item) for key, item in value.items()}
        return {'__items__': [[to_json(key), to_json(item)] for key, item in value.items()]}
    if isinstance(value, list):
        return [to_json(item) for item in value]
    if isinstance(value, tuple):
        return {'__tuple__': [to_json(item) for item in value]}
    if inspect.isclass(value) or inspect.isfunction(value):
        return {'__class__': type_name(value)}
    if type(value).__name__ == 'Box' and hasattr(value, 'low') and hasattr(value, 'high'):
        return _box(value)
    if isinstance(getattr(value, 'spaces', None), dict) and hasattr(value, 'sample'):
        return {'__spaces__': {key: to_json(space) for key, space in value.spaces.items()},
                'class': type_name(type(value))}
    if isinstance(value, datetime.datetime):
        return {'__datetime__': value.isoformat()}
    if isinstance(value, datetime.timedelta):
        return {'__timedelta__': value.total_seconds()}
    return {'__repr__': repr(value), 'type': type_name(type(value))}


def import_name(reference):
    """The class or function named 'module:qualified.name'.

    Raises:
        ImportError: the module or the name cannot be imported (naming it).
    """
    module_name, _, name = str(reference).partition(':')
    try:
        target = importlib.import_module(module_name)
        for part in name.split('.'):
            target = getattr(target, part)
    except (ImportError, AttributeError, ValueError) as error:
        raise ImportError('{!r} cannot be imported ({}: {})'.format(reference, type(error).__name__, error)) from None
    return target


def _tagged(value):
    if '__tuple__' in value:
        return tuple(from_json(item) for item in value['__tuple__'])
    if '__ndarray__' in value:
        return np.asarray(value['__ndarray__'], dtype=value['dtype']).reshape(value['shape'])
    if '__items__' in value:
        return {from_json(key): from_json(item) for key, item in value['__items__']}
    if '__class__' in value:
        return import_name(value['__class__'])
    if '__box__' in value:
        from gymnasium import spaces

        box = value['__box__']
        return spaces.Box(low=from_json(box['low']), high=from_json(box['high']), shape=tuple(box['shape']),
                          dtype=box['dtype'])
    if '__spaces__' in value:
        return import_name(value['class'])({key: from_json(space) for key, space in value['__spaces__'].items()})
    if '__datetime__' in value:
        return datetime.datetime.fromisoformat(value['__datetime__'])
    if '__timedelta__' in value:
        return datetime.timedelta(seconds=value['__timedelta__'])
    if '__float__' in value:
        return float(value['__float__'])
    raise UnreadableValue('a {} ({}) was written as its repr and cannot be rebuilt'.format(
        value.get('type'), value.get('__repr__')))


def from_json(value):
    """The value `to_json` wrote.

    Raises:
        UnreadableValue: the value was an object written as its repr.
        ImportError: a class or function that cannot be imported.
    """
    if isinstance(value, list):
        return [from_json(item) for item in value]
    if isinstance(value, dict):
        if any(key.startswith('__') for key in value):
            return _tagged(value)
        return {key: from_json(item) for key, item in value.items()}
    return value
