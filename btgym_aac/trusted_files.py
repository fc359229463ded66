"""Ownership checks of files whose loading can run code (a run's pickled `run_config.pkl` and its log dir).

Unpickling runs whatever the pickle names, so such a file is read only when it and its folder belong to the user
(or to root) and no other user can write them (not writable by every user, nor by a group with other members);
anything else is refused unless the caller explicitly allows it.
"""
import grp
import os
import pwd
import stat

ALLOW_FLAG = '--allow-untrusted-config'


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
