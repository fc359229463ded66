"""The alternating scaling measurement of `benchmarks/train_throughput.py`: window speeds and ratios against
hand-computed values, and arguments that would never end the run refused."""
import importlib.util
import pathlib
import sys

import pytest

pytestmark = pytest.mark.xdist_group('benchmark_alternation')  # one xdist worker builds the module's fixtures

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / 'benchmarks' / 'train_throughput.py'


@pytest.fixture(scope='module')
def bench():
    spec = importlib.util.spec_from_file_location('train_throughput', str(SCRIPT))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_window_speeds_leave_out_the_settling_time_and_ratios_use_both_neighbours(bench):
    cpu = [0, 0, 0, 0, 0, 0, 0, 0]
    tasks = [{'ps_0': 1.0, 'worker_0': 10.0, 'worker_1': 5.0}, {'ps_0': 1.01, 'worker_0': 10.2, 'worker_1': 5.0},
             {'ps_0': 1.05, 'worker_0': 10.5, 'worker_1': 5.3}, {'ps_0': 1.065, 'worker_0': 10.8, 'worker_1': 5.3}]
    switches = [(100.0, True, cpu, tasks[0]), (105.0, False, cpu, tasks[1]), (110.0, True, cpu, tasks[2]),
                (115.0, None, cpu, tasks[3])]
    # window 1 (1 worker): 40 steps in [101, 105); window 2 (2 workers): 120 in [106, 110); window 3: 60 in [111, 115)
    step_ends = [100.5] * 7 + [101.0 + 0.1 * i for i in range(40)] + [105.5] * 9 + \
        [106.0 + 4.0 * i / 120 for i in range(120)] + [110.2] * 3 + [111.0 + 4.0 * i / 60 for i in range(60)]
    windows = bench.alternation_windows(switches, step_ends, settle_seconds=1.0)
    assert [window['workers'] for window in windows] == [1, 2, 1]
    assert [window['env_steps_per_s'] for window in windows] == [10.0, 30.0, 15.0]
    assert bench.alternation_ratios(windows) == [30.0 / 12.5]
    # CPU over whole windows (settling included) per env step of the whole window: 47, 129 and 63 steps
    expected = [{'ps_0': 10.0 / 47, 'worker_0': 200.0 / 47, 'worker_1': 0.0},
                {'ps_0': 40.0 / 129, 'worker_0': 300.0 / 129, 'worker_1': 300.0 / 129},
                {'ps_0': 15.0 / 63, 'worker_0': 300.0 / 63, 'worker_1': 0.0}]
    for window, cpu_ms in zip(windows, expected):
        cpu_ms['all'] = sum(cpu_ms.values())
        assert window['cpu_ms_per_env_step'] == pytest.approx(cpu_ms)
    medians = bench.median_task_cpu(windows, 1)
    assert medians == pytest.approx({name: 0.5 * (expected[0][name] + expected[2][name]) for name in expected[0]})
    assert bench.median_task_cpu(windows, 2) == pytest.approx(expected[1])
    no_proc = [switch[:3] + (None,) for switch in switches]
    assert [window['cpu_ms_per_env_step'] for window in bench.alternation_windows(no_proc, step_ends, 1.0)] == \
        [None] * 3
    assert bench.median_task_cpu(bench.alternation_windows(no_proc, step_ends, 1.0), 1) is None


@pytest.mark.parametrize('flags, message', [
    (['--alternation-pairs', '-1'], '--alternation-pairs must be >= 0'),
    (['--window-seconds', '1'], '--window-seconds must exceed the 1.0 s'),
])
def test_arguments_that_could_not_end_the_run_are_refused(bench, flags, message, monkeypatch, capsys):
    monkeypatch.setattr(sys, 'argv', [str(SCRIPT)] + flags)
    with pytest.raises(SystemExit) as exited:
        bench.main()
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_cluster_and_env_cpu_per_env_step_over_the_speed_window(bench, tmp_path):
    # two envs of worker 0 (tasks 0.00, 0.01) and one of worker 1, as `TimedEnv` writes them
    process = {'act': [], 'act_batch': [0.002] * 4, 'train': [0.1], 'wait': [0.05]}
    envs = {'0.00': ([0.001, 0.002, 0.003], [9.0, 10.5, 12.0]), '0.01': ([0.004, 0.005], [11.0, 21.0]),
            '1.00': ([0.006], [16.0])}
    for task, (cpu, ends) in envs.items():
        timers = dict(process, env_step=cpu, env_step_cpu=cpu, env_step_end=ends, env_reset_cpu=[0.01],
                      env_reset_end=[14.0], env_render_cpu=[0.02], env_render_end=[30.0])
        (tmp_path / 'worker_{}.json'.format(task)).write_text(bench.json.dumps(timers))
    timings = bench.read_timings(str(tmp_path))
    assert sorted(timings) == [0, 1] and len(timings[0]) == 2
    worker_0 = bench.worker_timers(timings[0])
    assert worker_0['env_step_cpu'] == [0.001, 0.002, 0.003, 0.004, 0.005] and worker_0['act_batch'] == [0.002] * 4
    assert bench.cost_split(worker_0)['policy_act_ms'] == pytest.approx(1.6)
    # reports: (time, global step, machine CPU, all trained, CPU seconds of every task process)
    first = (10.0, 100, None, True, {'ps_0': 1.0, 'worker_0': 5.0, 'worker_1': 4.0})
    middle = (15.0, 150, None, True, {'ps_0': 1.1, 'worker_0': 5.5, 'worker_1': 4.3})
    end = (20.0, 200, None, True, {'ps_0': 1.2, 'worker_0': 6.0, 'worker_1': 4.6})
    env_timers = [timers for group in timings.values() for timers in group]
    per_step = bench.cpu_per_env_step(first, end, [first, middle, end], env_timers)
    # 1.8 CPU seconds over 100 global steps; env steps ending in [10, 20]: 0.002, 0.003, 0.004, 0.006 s, and
    # three resets of 0.01 s (at 14.0): the env's own cost counts both
    assert per_step['window'] == 'speed window' and per_step['env_steps'] == 4
    assert per_step['cluster_cpu_ms_per_env_step'] == pytest.approx(18.0)
    assert per_step['env_cpu_ms_per_env_step'] == pytest.approx(1e3 * (0.015 + 0.03) / 4)
    assert per_step['cpu_ratio_cluster_to_env'] == pytest.approx(18.0 / 11.25)
    assert per_step['env_reset_cpu_ms_per_env_step'] == pytest.approx(30.0 / 4)
    assert per_step['env_render_cpu_ms_per_env_step'] == 0.0
    # worker 1 ended before the last report: the window ends at the report before, where all still ran
    ended = end[:4] + ({'ps_0': 1.2, 'worker_0': 6.0},)
    per_step = bench.cpu_per_env_step(first, ended, [first, middle, ended], env_timers)
    assert per_step['window'] != 'speed window' and per_step['global_steps'] == 50
    assert per_step['cluster_cpu_ms_per_env_step'] == pytest.approx(1e3 * 0.9 / 50)
    assert per_step['env_cpu_ms_per_env_step'] == pytest.approx(1e3 * (0.009 + 0.03) / 3)
    assert bench.cpu_per_env_step(first[:4] + (None,), end, [first, end], env_timers) is None
