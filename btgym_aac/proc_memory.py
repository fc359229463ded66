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
