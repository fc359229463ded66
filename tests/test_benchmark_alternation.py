"""The alternating scaling measurement of `benchmarks/train_throughput.py`: window speeds and ratios against
hand-computed values, and arguments that would never end the run refused."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / 'benchmarks' / 'train_throughput.py'


@pytest.fixture(scope='module')
def bench():
    spec = importlib.util.spec_from_file_location('train_throughput', str(SCRIPT))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_window_speeds_leave_out_the_settling_time_and_ratios_use_both_neighbours(bench):
    cpu = [0, 0, 0, 0, 0, 0, 0, 0]
    switches = [(100.0, True, cpu), (105.0, False, cpu), (110.0, True, cpu), (115.0, None, cpu)]
    # window 1 (1 worker): 40 steps in [101, 105); window 2 (2 workers): 120 in [106, 110); window 3: 60 in [111, 115)
    step_ends = [100.5] * 7 + [101.0 + 0.1 * i for i in range(40)] + [105.5] * 9 + \
        [106.0 + 4.0 * i / 120 for i in range(120)] + [110.2] * 3 + [111.0 + 4.0 * i / 60 for i in range(60)]
    windows = bench.alternation_windows(switches, step_ends, settle_seconds=1.0)
    assert [window['workers'] for window in windows] == [1, 2, 1]
    assert [window['env_steps_per_s'] for window in windows] == [10.0, 30.0, 15.0]
    assert bench.alternation_ratios(windows) == [30.0 / 12.5]


@pytest.mark.parametrize('flags, message', [
    (['--alternation-pairs', '-1'], '--alternation-pairs must be >= 0'),
    (['--window-seconds', '1'], '--window-seconds must exceed the 1.0 s'),
])
def test_arguments_that_could_not_end_the_run_are_refused(flags, message):
    finished = subprocess.run([sys.executable, str(SCRIPT)] + flags, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 2
    assert message in finished.stderr
