"""The policy artifact's manifest (`manifest.json`): what the artifact holds and how to check it before acting.

An artifact folder holds the checkpoint (as `btgym-aac export` always wrote it), `saved_model/`, `policy.onnx` and
`manifest.json`. The manifest is plain JSON: the package version, the spaces, the graph's inputs and outputs, the
env and strategy (class names and JSON values of their settings), the training data's span and checksums, the
global step, and the SHA-256 of every other file of the folder. Nothing in it is pickled. This module imports no
TensorFlow.
"""
import json
import os

from btgym_aac.deploy.json_values import import_name
from btgym_aac.paths import sha256_file

ARTIFACT_FORMAT = 'btgym_aac.policy_artifact'
FORMAT_VERSION = 1
MANIFEST_FILE = 'manifest.json'
ONNX_FILE = 'policy.onnx'
SAVED_MODEL_DIR = 'saved_model'


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
