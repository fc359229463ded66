"""Path checks shared by the commands that write folders, files written so that no reader sees half of one, and
file checksums."""
import contextlib
import hashlib
import json
import os


def file_in_the_way(path):
    """`path`, or its nearest existing ancestor, when that is not a folder (no folder can be made at `path`), else
    None.

    Args:
        path: absolute path of a folder to write.

    Returns:
        the blocking path or None.
    """
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return None if os.path.isdir(path) else path


@contextlib.contextmanager
def written_in_place_of(path, mode=0o644):
    """Opens a staging file beside `path` for binary writing; once the block ends without error it replaces
    `path` (atomically: a reader sees the old file or the new one, never half of it), else it is removed.

    Args:
        path: the file to write.
        mode: permission bits of a new file (before the umask).

    Yields:
        the staging file, open for binary writing (its `name` is the staging path, for writers that take a path).
    """
    staging = '{}.{}.writing'.format(path, os.getpid())
    try:
        with open(staging, 'wb', opener=lambda name, flags: os.open(name, flags, mode)) as f:
            yield f
        os.replace(staging, path)
    finally:
        if os.path.exists(staging):
            os.remove(staging)


def write_json(value, path):
    """Writes `value` as indented JSON at `path` atomically (see `written_in_place_of`); returns `path`."""
    with written_in_place_of(path) as f:
        f.write(json.dumps(value, indent=2).encode())
    return path


def sha256_file(path):
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()
