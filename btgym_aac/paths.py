"""Files and folders the package writes and reads: the check that a folder can be made, files written so that no
reader sees half of one, file checksums, and the ownership check of files whose loading can run code.

Trusted files: a run's pickled `run_config.pkl` (and its log dir) runs whatever the pickle names when it is
loaded, so such a file is read only when it and its folder belong to the user (or to root) and no other user can
write them (not writable by every user, nor by a group with other members); anything else is refused unless the
caller explicitly allows it (`check_trusted`).
"""
import contextlib
import grp
import hashlib
import json
import os
import pwd
import stat

ALLOW_FLAG = '--allow-untrusted-config'
"""The command-line flag that skips the ownership check of run files."""


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


class UntrustedFileError(PermissionError):
    """A file that loading would run as code could have been written by another user."""


def _untrusted_reason(path):
    """Why `path` could have been written by another user, or None."""
    info = os.stat(path)
    if info.st_uid not in (os.getuid(), 0):
        return 'is owned by uid {}, not by you (uid {})'.format(info.st_uid, os.getuid())
    sticky_folder = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
    if info.st_mode & stat.S_IWOTH and not sticky_folder:
        return 'is writable by every user (mode {:o})'.format(stat.S_IMODE(info.st_mode))
    if info.st_mode & stat.S_IWGRP and not sticky_folder:
        others = _other_group_members(info.st_gid, info.st_uid)
        if others:
            return 'is writable by its group (mode {:o}), gid {}, which has other members ({})'.format(
                stat.S_IMODE(info.st_mode), info.st_gid, ', '.join(others[:3]))
    return None


def _other_group_members(gid, owner_uid):
    """Names of the users other than `owner_uid` (and root) in group `gid`, as members or by their primary
    group; an unknown group counts as having one ('?')."""
    try:
        members = set(grp.getgrgid(gid).gr_mem)
    except KeyError:
        return ['?']
    users = pwd.getpwall()
    members.update(user.pw_name for user in users if user.pw_gid == gid)
    excluded = {user.pw_name for user in users if user.pw_uid in (owner_uid, 0)}
    return sorted(members - excluded)


def check_trusted(path, folder, what, allow_untrusted=False):
    """Raises UntrustedFileError unless file `path` and `folder` (the run's log dir holding it) are owned by this
    user (or root) and not writable by other users (a sticky folder such as /tmp excepted).

    Args:
        path: the file to load.
        folder: the folder it belongs to.
        what: what loading it does, for the message (e.g. 'unpickling it').
        allow_untrusted: skip the check (the caller trusts whoever wrote the files).
    """
    if allow_untrusted:
        return
    for checked in (folder, path):
        reason = _untrusted_reason(checked)
        if reason is not None:
            raise UntrustedFileError(
                'refusing to load {}: {} {}, and {} can run any code its writer chose; load it only if you trust '
                'whoever can write there (allow_untrusted=True, or {} on the command line)'.format(
                    path, 'it' if checked == path else 'its folder', reason, what, ALLOW_FLAG))
