"""Memory figures read from /proc: this process's own, and None for a missing process or field."""
import os

from btgym_aac.proc_memory import memory_split_mb, proc_memory_mb


def test_the_peak_resident_memory_of_this_process_is_at_least_its_current_one():
    current = proc_memory_mb(os.getpid(), 'status', 'VmRSS')  # read first: the peak read after it includes it
    peak = proc_memory_mb(os.getpid(), 'status', 'VmHWM')
    assert 0 < current <= peak
    assert 0 < proc_memory_mb(os.getpid(), 'smaps_rollup', 'Pss') <= peak


def test_unique_memory_is_at_most_the_proportional_share_which_is_at_most_the_resident_memory():
    split = memory_split_mb(os.getpid())
    assert 0 < split['uss'] <= split['pss'] <= split['rss']
    # A forked child shares every page with this process at first: its unique memory is a small part of its RSS.
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.read(read_end, 1)
        os._exit(0)
    try:
        child_split = memory_split_mb(child)
        assert child_split['uss'] < 0.5 * child_split['rss']
        assert child_split['pss'] < child_split['rss']
    finally:
        os.write(write_end, b'x')
        os.waitpid(child, 0)
    assert memory_split_mb(child) is None


def test_a_missing_process_or_field_gives_none():
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    assert proc_memory_mb(child, 'status', 'VmHWM') is None
    assert proc_memory_mb(os.getpid(), 'status', 'NoSuchField') is None
