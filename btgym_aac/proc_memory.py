"""Memory figures of a process read from Linux's /proc."""


def proc_memory_mb(pid, file, field):
    """The `field` line (in kB) of `/proc/<pid>/<file>`, in MB, or None where the process or the line is missing.

    Args:
        pid: process id.
        file: 'status' (fields such as 'VmHWM', peak resident memory) or 'smaps_rollup' ('Pss', ...).
        field: field name without the colon.
    """
    try:
        with open('/proc/{}/{}'.format(pid, file)) as f:
            for line in f:
                if line.startswith(field + ':'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def memory_split_mb(pid):
    """Resident (RSS), proportional (PSS: shared pages divided among their users) and unique (USS: pages of this
    process alone) memory of a process, in MB.

    Args:
        pid: process id.

    Returns:
        dict with 'rss', 'pss' and 'uss', or None where the process is gone (or /proc has no smaps_rollup).
    """
    fields = {}
    try:
        with open('/proc/{}/smaps_rollup'.format(pid)) as f:
            for line in f:
                name, _, rest = line.partition(':')
                if name in ('Rss', 'Pss', 'Private_Clean', 'Private_Dirty'):
                    fields[name] = int(rest.split()[0]) / 1024.0
    except OSError:
        return None
    if len(fields) < 4:
        return None
    return {'rss': fields['Rss'], 'pss': fields['Pss'], 'uss': fields['Private_Clean'] + fields['Private_Dirty']}
