"""Reading processes from /proc in the tests."""
import os
import time

PARENT, GROUP = 1, 2  # fields of /proc/PID/stat after the command name: state, ppid, pgrp, ...


def live_processes(field, value):
    """PIDs of the running (not zombie) processes whose /proc stat `field` (PARENT or GROUP) equals `value`."""
    pids = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/{}/stat'.format(entry)) as f:
                    fields = f.read().rsplit(')', 1)[1].split()
            except OSError:
                continue
            if int(fields[field]) == value and fields[0] != 'Z':
                pids.append(int(entry))
    return pids


def live_descendants(pid):
    """PIDs of the running processes below `pid`: its children, theirs (a forkserver's tasks), and so on."""
    found, parents = [], [pid]
    while parents:
        children = [child for parent in parents for child in live_processes(PARENT, parent)]
        found += children
        parents = children
    return found


def command_line(pid):
    """The NUL-separated command line of process `pid` (b'' once it is gone)."""
    try:
        with open('/proc/{}/cmdline'.format(pid), 'rb') as f:
            return f.read()
    except OSError:
        return b''


def wait_until_group_ends(group, seconds):
    """The live processes of process group `group` once it has ended or `seconds` have passed."""
    deadline = time.time() + seconds
    while time.time() < deadline and live_processes(GROUP, group):
        time.sleep(0.2)
    return live_processes(GROUP, group)
