"""JSON descriptions of what a trained policy depends on, for the artifact's manifest: settings (see `json_values`),
the observation and action spaces, the broker, and the training data (span and checksums)."""
import hashlib
import os

import numpy as np

from btgym_aac.deploy.json_values import to_json
from btgym_aac.paths import sha256_file

DATA_KWARGS = ('dataset', 'dataframe', 'data', 'filename')
"""Env kwargs that give the training data: described by `data_description`, not copied as settings."""


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
            'low': to_json(low.flat[0]) if uniform else None, 'high': to_json(high.flat[0]) if uniform else None}


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
            'encoding': space.encoding, 'initial_action': to_json(dict(initial_action))}


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
    """JSON values (`json_values.to_json`) of an env's kwargs, leaving out those that give its data."""
    return {key: to_json(value) for key, value in sorted(kwargs.items()) if key not in DATA_KWARGS}


def data_lines(dataset):
    """{'names': the data lines in feed order, 'timeframe_minutes': minutes per bar} of an env's dataset."""
    names = list(dataset.data) if hasattr(dataset, 'frames') else [dataset.data_name]
    return {'names': names, 'timeframe_minutes': to_json(dataset.timeframe)}


def broker_description(env_kwargs, engine_defaults):
    """The broker settings an env built its engine with (`engine_defaults` updated by the env's kwargs), or
    {'custom_engine': True} when the env was given an `engine=` of its own."""
    if env_kwargs.get('engine') is not None:
        return {'custom_engine': True}
    return {key: to_json(env_kwargs.get(key, default)) for key, default in engine_defaults.items()}
