"""JSON descriptions of what a trained policy depends on, for the artifact's manifest: settings as JSON values
(classes by name), the observation and action spaces, and the training data (span and checksums)."""
import datetime
import hashlib
import inspect
import math
import os

import numpy as np

from btgym_aac.deploy.manifest import sha256_file

DATA_KWARGS = ('dataset', 'dataframe', 'data', 'filename')
"""Env kwargs that give the training data: described by `data_description`, not copied as settings."""


def class_name(cls):
    """'module:qualified.name' of a class or function."""
    return '{}:{}'.format(cls.__module__, cls.__qualname__)


def json_value(value):
    """`value` as JSON: numbers, strings, lists and dicts as they are (numpy values converted, non-finite floats as
    the strings 'inf', '-inf', 'nan'), classes and functions as {'class': 'module:name'}, dates and durations as
    ISO strings, anything else as {'object': 'module:name of its type', 'repr': repr(value)}."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else str(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return json_value(value.tolist())
    if isinstance(value, dict):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    if inspect.isclass(value) or inspect.isfunction(value):
        return {'class': class_name(value)}
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return str(value)
    return {'object': class_name(type(value)), 'repr': repr(value)}


def observation_leaves(nested, prefix='observation'):
    """{'observation/<key>[/<subkey>...]': leaf} of a nested dict (of tensors, arrays or spaces), keys sorted."""
    leaves = {}
    for key in sorted(nested):
        name = '{}/{}'.format(prefix, key)
        if isinstance(nested[key], dict):
            leaves.update(observation_leaves(nested[key], name))
        else:
            leaves[name] = nested[key]
    return leaves


def _box(space):
    low, high = np.asarray(space.low), np.asarray(space.high)
    uniform = low.size and np.all(low == low.flat[0]) and np.all(high == high.flat[0])
    return {'shape': list(space.shape), 'dtype': np.dtype(space.dtype).name,
            'low': json_value(low.flat[0]) if uniform else None, 'high': json_value(high.flat[0]) if uniform else None}


def observation_space_description(space, prefix='observation'):
    """{'observation/<key>[/<subkey>]': {'shape', 'dtype', 'low', 'high'}} of a (nested) dict space of boxes;
    low and high are None where they differ across the box."""
    leaves = {}
    for key in sorted(space.spaces):
        name = '{}/{}'.format(prefix, key)
        sub_space = space.spaces[key]
        if hasattr(sub_space, 'spaces') and isinstance(sub_space.spaces, dict):
            leaves.update(observation_space_description(sub_space, name))
        else:
            leaves[name] = _box(sub_space)
    return leaves


def action_space_description(space, initial_action):
    """The `ActionDictSpace`'s constructor arguments and the env's 'do nothing' action."""
    return {'assets': list(space.assets),
            'base_actions': None if space.base_actions is None else list(space.base_actions),
            'encoding': space.encoding, 'initial_action': json_value(dict(initial_action))}


def _frame_description(frame):
    """Span, bar count and a SHA-256 of the bars (times and values) of a DataFrame."""
    digest = hashlib.sha256(np.ascontiguousarray(frame.index.asi8).tobytes())
    digest.update(np.ascontiguousarray(frame.to_numpy(dtype=np.float64)).tobytes())
    return {'first_bar': frame.index[0].isoformat(), 'last_bar': frame.index[-1].isoformat(), 'bars': len(frame),
            'columns': [str(column) for column in frame.columns], 'bars_sha256': digest.hexdigest()}


def _file_description(path):
    if isinstance(path, str) and os.path.isfile(path):
        return {'path': os.path.abspath(path), 'sha256': sha256_file(path)}
    return {'path': None if path is None else str(path), 'sha256': None}


def data_description(dataset):
    """The training data of an env's dataset: per data line, its file (path and SHA-256, where it was read from a
    file) and its bars (span, count, SHA-256).

    Args:
        dataset: the env's data (a `BTgymDataset`-like object with `data` and `filename`, or a multi-line one with
            `frames` and a dict `filename`).

    Returns:
        dict data line -> description ('data' for a single line).
    """
    if hasattr(dataset, 'frames'):
        frames, files = dict(dataset.frames), dict(dataset.filename)
    else:
        frames, files = {'data': dataset.data}, {'data': dataset.filename}
    return {line: dict(_file_description(files.get(line)),
                       **(_frame_description(frame) if frame is not None and len(frame) else {}))
            for line, frame in frames.items()}


def settings_description(kwargs):
    """JSON values of an env's or strategy's kwargs, leaving out those that give its data."""
    return {key: json_value(value) for key, value in sorted(kwargs.items()) if key not in DATA_KWARGS}
