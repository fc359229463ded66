"""The policy artifact's manifest (`manifest.json`): what the artifact holds, the JSON descriptions it is written
from, and how it is checked before acting.

An artifact folder holds the checkpoint (as `btgym-aac export` always wrote it), `saved_model/`, `policy.onnx` and
`manifest.json`. The manifest is plain JSON: the package version, the spaces, the graph's inputs and outputs, the
env and strategy (class names and JSON values of their settings, see `json_values`), the broker, the training
data (each file's path and SHA-256, the bars' span and checksum), the global step, and the SHA-256 of every other
file of the folder. Nothing in it is pickled. This module imports no TensorFlow.
"""
import hashlib
import json
import os

import numpy as np

from btgym_aac.deploy.json_values import import_name, to_json
from btgym_aac.paths import sha256_file

ARTIFACT_FORMAT = 'btgym_aac.policy_artifact'
FORMAT_VERSION = 1
MANIFEST_FILE = 'manifest.json'
ONNX_FILE = 'policy.onnx'
SAVED_MODEL_DIR = 'saved_model'
DATA_KWARGS = ('dataset', 'dataframe', 'data', 'filename')
"""Env kwargs that give the training data: described by `data_description`, not copied as settings."""


class ArtifactError(ValueError):
    """A policy artifact that cannot be used: a file missing or changed, another package major version, a class
    that cannot be imported, a manifest that is not one."""


def folder_checksums(folder):
    """{path relative to `folder` ('/'-separated): SHA-256} of every file under `folder` but the manifest."""
    checksums = {}
    for root, _, names in os.walk(folder):
        for name in names:
            relative = os.path.relpath(os.path.join(root, name), folder).replace(os.sep, '/')
            if relative != MANIFEST_FILE:
                checksums[relative] = sha256_file(os.path.join(root, name))
    return dict(sorted(checksums.items()))


def write_manifest(folder, content):
    """Writes `content` plus the checksums of the folder's files as `<folder>/manifest.json`.

    Returns:
        the manifest written (dict).
    """
    manifest = dict(content, files=folder_checksums(folder))
    with open(os.path.join(folder, MANIFEST_FILE), 'w') as f:
        json.dump(manifest, f, indent=1)
        f.write('\n')
    return manifest


def read_manifest(folder):
    """The manifest of the artifact in `folder`, checked to be one.

    Raises:
        ArtifactError: no folder, no manifest, not JSON, or not an artifact's manifest.
    """
    if not os.path.isdir(folder):
        raise ArtifactError('policy artifact {!r} is not a folder (make one with `btgym-aac export RUN OUT`)'.format(
            folder))
    path = os.path.join(folder, MANIFEST_FILE)
    if not os.path.isfile(path):
        raise ArtifactError('{!r} holds no {} (is it a policy artifact written by `btgym-aac export`? a folder '
                            'exported with --checkpoint-only has none)'.format(folder, MANIFEST_FILE))
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (ValueError, UnicodeDecodeError) as error:
        raise ArtifactError('{} is not valid JSON: {}'.format(path, error)) from None
    if not isinstance(manifest, dict) or manifest.get('format') != ARTIFACT_FORMAT:
        raise ArtifactError('{} is not the manifest of a policy artifact (no "format": "{}")'.format(
            path, ARTIFACT_FORMAT))
    if manifest.get('format_version') != FORMAT_VERSION:
        raise ArtifactError('{} has format version {!r}; this btgym-aac reads version {}'.format(
            path, manifest.get('format_version'), FORMAT_VERSION))
    return manifest


def check_files(folder, manifest):
    """Raises ArtifactError naming a file the manifest lists that is missing or whose checksum differs, or a file
    the manifest does not list."""
    listed = manifest.get('files') or {}
    present = folder_checksums(folder)
    missing = sorted(set(listed) - set(present))
    if missing:
        raise ArtifactError('policy artifact {!r} misses {} (listed in its manifest)'.format(
            folder, ', '.join(missing)))
    changed = sorted(name for name in listed if present[name] != listed[name])
    if changed:
        raise ArtifactError('policy artifact {!r}: the SHA-256 of {} does not match its manifest (the file was '
                            'changed or damaged)'.format(folder, ', '.join(changed)))
    unlisted = sorted(set(present) - set(listed))
    if unlisted:
        raise ArtifactError('policy artifact {!r} holds {}, which its manifest does not list'.format(
            folder, ', '.join(unlisted)))


def check_version(manifest, installed):
    """Raises ArtifactError when the artifact was written by another major version of the package than
    `installed` (a version string)."""
    written = str(manifest.get('package', {}).get('version', ''))
    if written.split('.')[0] != installed.split('.')[0]:
        raise ArtifactError('the policy artifact was written by btgym-aac {}, another major version than the '
                            'installed {}'.format(written or '(unknown)', installed))


def import_class(reference):
    """The class named 'module:qualified.name'.

    Raises:
        ArtifactError: the module or the name cannot be imported.
    """
    try:
        return import_name(reference)
    except ImportError as error:
        raise ArtifactError("the policy artifact's class {}".format(error)) from None


def verify_artifact(folder, installed_version):
    """Reads and checks the artifact in `folder`: manifest, files and checksums, package major version, and that
    its strategy and env classes import.

    Returns:
        the manifest (dict).

    Raises:
        ArtifactError: naming the problem.
    """
    manifest = read_manifest(folder)
    check_files(folder, manifest)
    check_version(manifest, installed_version)
    for role in ('env', 'strategy'):
        reference = (manifest.get(role) or {}).get('class')
        if reference:
            import_class(reference)
    return manifest


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
    """{'path': absolute path, 'sha256'} of a data file; a path that is no file (now) is kept as given, sha256 None."""
    path = os.fspath(path)
    if os.path.isfile(path):
        return {'path': os.path.abspath(path), 'sha256': sha256_file(path)}
    return {'path': path, 'sha256': None}


def _files_description(filename):
    """The description of each file of a data line's `filename` (a path or a list of them), in order; [] for
    None (data not read from files)."""
    if filename is None:
        return []
    return [_file_description(path) for path in (filename if isinstance(filename, (list, tuple)) else [filename])]


def data_description(dataset):
    """The training data of an env's dataset: per data line, its files (`files`: the path and SHA-256 of each file
    it was read from, in order; [] for a DataFrame) and its bars (span, count, SHA-256). Manifests written before
    held `path` and `sha256` in place of `files`; nothing that loads an artifact reads them.

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
    return {line: dict(files=_files_description(files.get(line)),
                       **(_frame_description(frame) if frame is not None and len(frame) else {}))
            for line, frame in frames.items()}


def settings_description(kwargs):
    """JSON values (`json_values.to_json`) of an env's kwargs, leaving out those that give its data."""
    return {key: to_json(value) for key, value in sorted(kwargs.items()) if key not in DATA_KWARGS}


def data_lines(dataset):
    """{'names': the data lines in feed order, 'timeframe_minutes': minutes per bar} of an env's dataset."""
    names = list(dataset.data) if hasattr(dataset, 'frames') else [dataset.data_name]
    return {'names': names, 'timeframe_minutes': to_json(dataset.timeframe)}


def episode_description(dataset):
    """{'bars': the bars of an episode} of an env's dataset (the test episodes `evaluate` plays), or None when the
    dataset does not say."""
    bars = getattr(getattr(dataset, 'master_data', dataset), 'sample_num_records', None)
    return None if bars is None else {'bars': int(bars)}


def broker_description(env_kwargs, engine_defaults):
    """The broker settings an env built its engine with (`engine_defaults` updated by the env's kwargs), or
    {'custom_engine': True} when the env was given an `engine=` of its own."""
    if env_kwargs.get('engine') is not None:
        return {'custom_engine': True}
    return {key: to_json(env_kwargs.get(key, default)) for key, default in engine_defaults.items()}
