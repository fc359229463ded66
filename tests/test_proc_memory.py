"""Memory figures read from /proc: this process's own, and None for a missing process or field."""
import os

from btgym_aac.proc_memory import proc_memory_mb


def test_the_peak_resident_memory_of_this_process_is_at_least_its_current_one():
    current = proc_memory_mb(os.getpid(), 'status', 'VmRSS')  # read first: the peak read after it includes it
    peak = proc_memory_mb(os.getpid(), 'status', 'VmHWM')
    assert 0 < current <= peak
    assert 0 < proc_memory_mb(os.getpid(), 'smaps_rollup', 'Pss') <= peak


def test_a_missing_process_or_field_gives_none():
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    assert proc_memory_mb(child, 'status', 'VmHWM') is None
    assert proc_memory_mb(os.getpid(), 'status', 'NoSuchField') is None
