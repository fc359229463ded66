"""Cluster training speed (env steps/s) for 1 and 2 workers (or any counts given) of these configurations:

- `a3c`: the A3C reference configuration: BaseAacPolicy with one 256-unit LSTM, rollout 20, time_flat;
- `a3c_no_replica`: the same with `acting_replica=False` (runners act in the worker session, as the original);
- `unreal`: the UNREAL notebook configuration: AacStackedRL2Policy (256, 256), Unreal without auxiliary tasks;

all on DevStrat_4_11 with skip_frame 10 on the built-in sine data, one parameter server, rendering off; and

- `reference`: the package's reference configuration as `btgym-aac train --preset reference` runs it
  (`run_config.default_configs('a3c', preset='reference')`: its env kwargs, AacStackedRL2Policy (256, 256) with
  lstm_2_init_period 60, A3C with its trainer kwargs, its checkpoint interval), rendering as shipped: the Launcher
  renders on worker 0's last env only.

Every worker has `--envs-per-worker` envs (default 1; the cluster's `num_envs`); with several, they are stepped in
lockstep by one runner thread acting for all of them (batched acting), or with `--no-batch-acting` by a runner
thread each.

Every configuration and worker count runs `--repeats` times, interleaved; the JSON keeps every run and the medians,
from which the scaling is computed. Speed is measured between the first progress
report after every worker has trained and the first report of the run's final step (start-up, including a second
worker's, and shut-down excluded). Then every configuration runs once more as a 2-worker cluster whose worker 1 is
paused and resumed in turn every few seconds (`--alternation-pairs`, 0: no such run, `--window-seconds`): each
2-worker window's speed over the mean of the 1-worker windows either side gives the scaling from measurements
seconds apart rather than minutes, which the slow and fast spells of a shared machine do not bias (the 1-worker
windows run one worker of a 2-worker cluster, a paused worker costing no CPU). Also reported: the time from
`Launcher.run()` to the first trained step (for the process's first cluster also from the command's start:
`first_step_from_command_seconds`; `startup.py` times whole commands), the peak memory of every process, the scaling
ratio 2 workers / 1 worker, the cost of one env step inside worker 0: policy act (with the acting replica's refresh
every rollout), env step, and train time without the wait for rollouts, and, over the same window as the speed, the
machine's busy and hypervisor-stolen CPU shares and its busy CPU time per env step (from /proc/stat, where there is
one); in every alternating window, the CPU time of each task process per env step (from /proc/<pid>/stat), which
shows what the same work costs with one worker busy and with two.

Every run also reports, over its speed window, the CPU milliseconds per env step of the whole cluster
(`cluster_cpu_ms_per_env_step`: the CPU time, user + system, of every task process, parameter servers and workers,
from /proc/<pid>/stat read at the window's first and last progress reports, per global step of the window), of the
envs alone (`env_cpu_ms_per_env_step`: the thread CPU time of every `env.step` and `env.reset` of every env of
every worker that ended in the window, per such step, as `env_throughput.py` counts an env's own cost; renderings
are not in it: they are reported apart, as are the resets), and their
ratio (`cpu_ratio_cluster_to_env`); the medians per worker count are reported too. Where a task process has
ended by the window's last report, the CPU window ends at the last report before it where all still ran (the
JSON says so). Writes `train_throughput.json` and prints a table.

Usage:
    python benchmarks/train_throughput.py [--configs a3c a3c_no_replica reference unreal] [--workers 1 2]
                                          [--repeats 2] [--max-steps 5000] [--envs-per-worker 1] [--no-batch-acting]
                                          [--alternation-pairs 6] [--window-seconds 5] [--out benchmarks/results]
"""
import argparse
import json
import os
import platform
import signal
import tempfile
import time

import numpy as np

from btgym_aac.algorithms import A3C, AacStackedRL2Policy, BaseAacPolicy, Launcher, Unreal
from btgym_aac.algorithms.acting.replica import ActingReplica
from btgym_aac.env import BTgymEnv
from btgym_aac.distributed.run_config import default_configs
from btgym_aac.strategy import DevStrat_4_11

SETTLE_SECONDS = 1.0
TIMERS = {'act': [], 'act_batch': [], 'train': [], 'wait': []}
ENV_TIMERS = ('env_step', 'env_step_cpu', 'env_step_end', 'env_reset_cpu', 'env_reset_end', 'env_render_cpu',
              'env_render_end')


def _timed(name, method):
    def timed(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            TIMERS[name].append(time.perf_counter() - start)
    return timed


class TimedEnv(BTgymEnv):
    """BTgymEnv that times its steps (wall and thread CPU time: the env runs in its runner's thread, its episode in a
    greenlet on that thread, so the thread's CPU time is the env's own), notes when each ends (`time.time()`), notes
    the thread CPU time and end of its resets and renderings too, and, when closed, writes its own timers and this
    process's (`TIMERS`) to `<timings_dir>/worker_<task>.json`, the task number with two decimals (`worker_0.00`;
    the second env of worker 1 is task 1.01: `worker_1.01`)."""

    def __init__(self, timings_dir=None, **kwargs):
        self.timings_path = timings_dir and os.path.join(
            timings_dir, 'worker_{:.2f}.json'.format(float(kwargs.get('task', 0))))
        self.timers = {name: [] for name in ENV_TIMERS}
        super().__init__(**kwargs)

    def _cpu_timed(self, name, method, *args, **kwargs):
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return method(self, *args, **kwargs)
        finally:
            self.timers[name + '_cpu'].append(time.thread_time() - cpu)
            self.timers[name + '_end'].append(time.time())
            if name == 'env_step':
                self.timers['env_step'].append(time.perf_counter() - wall)

    def step(self, action):
        return self._cpu_timed('env_step', BTgymEnv.step, action)

    def reset(self, *args, **kwargs):
        return self._cpu_timed('env_reset', BTgymEnv.reset, *args, **kwargs)

    def render(self, *args, **kwargs):
        return self._cpu_timed('env_render', BTgymEnv.render, *args, **kwargs)

    def close(self):
        super().close()
        if self.timings_path:
            with open(self.timings_path, 'w') as f:
                json.dump(dict(TIMERS, **self.timers), f)


def read_timings(timings_dir):
    """The timers every `TimedEnv` wrote to `timings_dir`, as {worker task: [timers of each of its envs]}."""
    timings = {}
    for name in sorted(os.listdir(timings_dir)):
        if name.startswith('worker_') and name.endswith('.json'):
            with open(os.path.join(timings_dir, name)) as f:
                timings.setdefault(int(float(name[len('worker_'):-len('.json')])), []).append(json.load(f))
    return timings


def worker_timers(env_timers):
    """One worker's timers from those of its envs: the env timers of all its envs joined, the process timers (act,
    act_batch, train, wait: the same lists, written by every env) from the env that wrote the most."""
    merged = dict(max(env_timers, key=lambda timers: len(timers['train'])))
    for name in ENV_TIMERS:
        merged[name] = [value for timers in env_timers for value in timers[name]]
    return merged


class TimedActingReplica(ActingReplica):
    act = _timed('act', ActingReplica.act)
    if hasattr(ActingReplica, 'act_batch'):  # absent in trees before batched acting (measured as baselines)
        act_batch = _timed('act_batch', ActingReplica.act_batch)


class TimedBaseAacPolicy(BaseAacPolicy):
    act = _timed('act', BaseAacPolicy.act)
    if hasattr(BaseAacPolicy, 'act_batch'):
        act_batch = _timed('act_batch', BaseAacPolicy.act_batch)


class TimedA3C(A3C):
    acting_replica_class = TimedActingReplica
    process = _timed('train', A3C.process)
    get_data = _timed('wait', A3C.get_data)


class TimedUnreal(Unreal):
    acting_replica_class = TimedActingReplica
    process = _timed('train', Unreal.process)
    get_data = _timed('wait', Unreal.get_data)


ENV_KWARGS = dict(
    strategy=DevStrat_4_11, skip_frame=10, start_cash=2000, commission=0.0001, leverage=10.0, order_size=2000,
    drawdown_call=10, target_call=10, gamma=0.99, reward_scale=7, state_ext_scale=np.linspace(3e3, 1e3, 5),
    episode_duration={'days': 1, 'hours': 23, 'minutes': 40}, render_enabled=False)
A3C_KWARGS = dict(opt_learn_rate=1e-4, model_beta=0.05, rollout_length=20, time_flat=True, model_summary_freq=100)
REFERENCE = default_configs('a3c', preset='reference')
CONFIGS = {
    'a3c': dict(
        description='A3C reference: BaseAacPolicy lstm 256, rollout 20, time_flat, DevStrat_4_11, skip_frame 10, '
                    'sine data, 1 ps, 1 env per worker',
        policy_config={'class_ref': BaseAacPolicy, 'kwargs': {'lstm_layers': (256,)}},
        trainer_config={'class_ref': TimedA3C, 'kwargs': A3C_KWARGS}),
    'a3c_no_replica': dict(
        description='A3C reference as `a3c`, runners acting in the worker session (acting_replica=False)',
        policy_config={'class_ref': TimedBaseAacPolicy, 'kwargs': {'lstm_layers': (256,)}},
        trainer_config={'class_ref': TimedA3C, 'kwargs': dict(A3C_KWARGS, acting_replica=False)}),
    'unreal': dict(
        description='UNREAL notebook: AacStackedRL2Policy (256, 256), lstm_2_init_period 60, Unreal without '
                    'auxiliary tasks, rollout 20, time_flat, DevStrat_4_11, skip_frame 10, sine data, 1 ps, '
                    '1 env per worker',
        policy_config={'class_ref': AacStackedRL2Policy,
                       'kwargs': {'lstm_layers': (256, 256), 'lstm_2_init_period': 60}},
        trainer_config={'class_ref': TimedUnreal, 'kwargs': dict(
            opt_learn_rate=1e-4, opt_end_learn_rate=1e-5, opt_decay_steps=50e6, model_gamma=0.99,
            model_gae_lambda=1.0, model_beta=0.05, rollout_length=20, time_flat=True, use_value_replay=False,
            model_summary_freq=100, episode_summary_freq=1)}),
    'reference': dict(
        description='the reference configuration as `btgym-aac train --preset reference` runs it '
                    '(run_config.default_configs(\'a3c\', preset=\'reference\')): '
                    'AacStackedRL2Policy (256, 256), lstm_2_init_period 60, A3C, rollout 20, time_flat, summaries '
                    'every 10 train steps, episode summaries, renderings every 10 episodes (worker 0\'s last env), '
                    'DevStrat_4_11, skip_frame 10, sine data, checkpoints every {} s, 1 ps'.format(
                        REFERENCE['launcher_config']['save_secs']),
        env_kwargs=REFERENCE['env_config']['kwargs'],
        policy_config={'class_ref': AacStackedRL2Policy, 'kwargs': REFERENCE['policy_config']['kwargs']},
        trainer_config={'class_ref': TimedA3C, 'kwargs': REFERENCE['trainer_config']['kwargs']},
        save_secs=REFERENCE['launcher_config']['save_secs']),
}


def make_launcher(config, num_workers, max_env_steps, log_dir, timings_dir, envs_per_worker=1):
    return Launcher(
        env_config={'class_ref': TimedEnv, 'kwargs': dict(config.get('env_kwargs', ENV_KWARGS),
                                                           timings_dir=timings_dir)},
        cluster_config={'num_workers': num_workers, 'num_ps': 1, 'num_envs': envs_per_worker, 'log_dir': log_dir},
        policy_config=config['policy_config'], trainer_config=config['trainer_config'],
        max_env_steps=max_env_steps, save_secs=config.get('save_secs', 3600), root_random_seed=0,
        show_progress=False)


def cost_split(timers):
    """Per env step costs in milliseconds from one worker's timers (see `worker_timers`), over the whole run; the
    policy's acting is its `act` and `act_batch` (one call for all the worker's envs) time per env step."""
    steps = max(len(timers['env_step']), 1)
    return {
        'policy_act_ms': 1e3 * (sum(timers['act']) + sum(timers['act_batch'])) / steps,
        'env_step_ms': 1e3 * float(np.mean(timers['env_step'])),
        'train_ms_per_env_step': 1e3 * (sum(timers['train']) - sum(timers['wait'])) / steps,
        'worker_env_steps': len(timers['env_step']),
    }


def process_start_time():
    """Wall-clock time at which this process started (from /proc), or None where there is no /proc."""
    try:
        with open('/proc/self/stat') as f:
            start_ticks = int(f.read().rsplit(')', 1)[1].split()[19])
        with open('/proc/stat') as f:
            boot_time = next(int(line.split()[1]) for line in f if line.startswith('btime '))
    except (OSError, ValueError, StopIteration):
        return None
    return boot_time + start_ticks / os.sysconf('SC_CLK_TCK')


PROCESS_START = process_start_time()


def machine_cpu_times():
    """Cumulative CPU times of the whole machine from /proc/stat (user, nice, system, idle, iowait, irq, softirq,
    steal), or None where there is no /proc/stat."""
    try:
        with open('/proc/stat') as f:
            return [int(value) for value in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None


def machine_cpu_shares(before, after):
    """Shares (percent of all CPUs) of busy time and of time stolen by the hypervisor between two
    `machine_cpu_times` readings; None where either is missing."""
    if before is None or after is None:
        return None
    delta = [b - a for a, b in zip(before, after)]
    total = max(sum(delta), 1)
    user, nice, system, _, _, irq, softirq, steal = delta
    return {'busy_percent': 100.0 * (user + nice + system + irq + softirq) / total,
            'steal_percent': 100.0 * steal / total}


def process_cpu_seconds(launcher):
    """Cumulative CPU seconds (user + system) of every live task process of `launcher`, as {'worker_0': s, ...,
    'ps_0': s}, from /proc/<pid>/stat; None where there is no /proc."""
    if not os.path.isdir('/proc'):
        return None
    seconds = {}
    for (job, task), process in dict(launcher.processes).items():
        try:
            with open('/proc/{}/stat'.format(process.pid)) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        seconds['{}_{}'.format(job, task)] = (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    return seconds


def all_workers_trained(launcher, num_workers):
    """True once every worker of `launcher` has reported a trained step."""
    progress = launcher.progress
    return all(progress.get(task, {}).get('step', 0) > progress.get(task, {}).get('start_step', 0)
               for task in range(num_workers))


def after_each_drain(launcher, callback):
    """Has `launcher` call `callback()` each time it has drained its progress queue (every poll)."""
    drain = launcher._drain

    def drain_then_call(progress, start):
        drain(progress, start)
        callback()

    launcher._drain = drain_then_call


def env_cpu_in_window(env_timers, name, start, end):
    """Thread CPU seconds of the `name` calls ('env_step', 'env_reset', 'env_render') of every env in `env_timers`
    (list of `TimedEnv` timers) that ended in [start, end], and the number of those calls."""
    cpu = [seconds for timers in env_timers
           for seconds, ended in zip(timers[name + '_cpu'], timers[name + '_end']) if start <= ended <= end]
    return float(sum(cpu)), len(cpu)


def cluster_cpu_window(first, end, reports):
    """The reports bounding the whole-cluster CPU window: `first` and `end` (the speed window's), or, where a task
    process read at `first` could no longer be read at `end` (it ended), the last report before `end` where all
    could; None without /proc readings."""
    if first[4] is None or end[4] is None:
        return None
    for report in [end] + [r for r in reversed(reports) if first[0] < r[0] < end[0] and r[1] > first[1]]:
        if report[4] is not None and set(first[4]) <= set(report[4]):
            return first, report
    return None


def cpu_per_env_step(first, end, reports, env_timers):
    """Whole-cluster and env CPU per env step of one run (see `measure`): the CPU seconds (user + system) of every
    task process between the reports bounding the window (`cluster_cpu_window`) per global step of the window,
    and the thread CPU time of the env steps and resets of every env of every worker that ended in the same window
    per env step; their ratio; the envs' resets and renderings in the window per env step; None without /proc."""
    window = cluster_cpu_window(first, end, reports)
    if window is None:
        return None
    (t0, s0, _, _, tasks0), (t1, s1, _, _, tasks1) = window
    processes = task_cpu_per_step(tasks0, tasks1, s1 - s0)
    step_cpu, env_steps = env_cpu_in_window(env_timers, 'env_step', t0, t1)
    reset_cpu, _ = env_cpu_in_window(env_timers, 'env_reset', t0, t1)
    env_ms = 1e3 * (step_cpu + reset_cpu) / max(env_steps, 1)
    return {
        'window': 'speed window' if window == (first, end) else
                  'speed window, ending at the last report before its end where every task process still ran',
        'seconds': t1 - t0, 'global_steps': s1 - s0, 'env_steps': env_steps,
        'cluster_cpu_ms_per_env_step': processes['all'],
        'env_cpu_ms_per_env_step': env_ms,
        'cpu_ratio_cluster_to_env': processes['all'] / env_ms if env_ms > 0 else None,
        'process_cpu_ms_per_env_step': processes,
        'env_reset_cpu_ms_per_env_step': 1e3 * reset_cpu / max(env_steps, 1),
        'env_render_cpu_ms_per_env_step': 1e3 * env_cpu_in_window(env_timers, 'env_render', t0, t1)[0] / max(
            env_steps, 1),
    }


def measure(config, num_workers, max_env_steps, envs_per_worker=1, first_of_process=False):
    """Runs one cluster; returns its speed, start-up and memory figures, the cost split of worker 0, the machine's
    CPU use while it stepped, and the CPU per env step of the whole cluster and of the envs alone over the same
    window (`cpu_per_env_step`). `first_of_process`: this process's first cluster, whose start-up is also timed
    from the command's start."""
    reports = []
    with tempfile.TemporaryDirectory() as log_dir:
        launcher = make_launcher(config, num_workers, max_env_steps, os.path.join(log_dir, 'run'), log_dir,
                                 envs_per_worker)

        def record():
            step = max((r['step'] for r in launcher.progress.values()), default=0)
            reports.append((time.time(), step, machine_cpu_times(), all_workers_trained(launcher, num_workers),
                            process_cpu_seconds(launcher)))

        after_each_drain(launcher, record)
        start = time.time()
        result = launcher.run()
        timings = read_timings(log_dir)
    split = cost_split(worker_timers(timings[0]))
    stepped = [report for report in reports if report[3]]
    final_step = stepped[-1][1]
    first, end = stepped[0], next(report for report in stepped if report[1] == final_step)
    (t0, s0, cpu0), (t1, s1, cpu1) = first[:3], end[:3]
    cpu = machine_cpu_shares(cpu0, cpu1)
    if cpu is not None:
        cpu['cpu_ms_per_env_step'] = (
            1e3 * cpu['busy_percent'] / 100.0 * (os.cpu_count() or 1) * (t1 - t0) / max(s1 - s0, 1))
    per_step = cpu_per_env_step(first, end, stepped, [timers for envs in timings.values() for timers in envs])
    return {
        'workers': num_workers,
        'envs_per_worker': envs_per_worker,
        'env_steps': result['global_step'],
        'env_steps_per_s': (s1 - s0) / max(t1 - t0, 1e-9),
        'first_step_seconds': result['first_step_seconds'],
        'first_step_from_command_seconds': (
            start + result['first_step_seconds'] - PROCESS_START
            if first_of_process and PROCESS_START is not None and result['first_step_seconds'] is not None else None),
        'total_seconds': time.time() - start,
        'peak_rss_mb': result['peak_rss_mb'],
        'restarts': result['restarts'],
        'cost_split_worker_0': split,
        'machine_cpu': cpu,
        'cluster_cpu_ms_per_env_step': per_step and per_step['cluster_cpu_ms_per_env_step'],
        'env_cpu_ms_per_env_step': per_step and per_step['env_cpu_ms_per_env_step'],
        'cpu_ratio_cluster_to_env': per_step and per_step['cpu_ratio_cluster_to_env'],
        'cpu_per_env_step': per_step,
    }


class WorkerAlternation:
    """Pauses (SIGSTOP) and resumes (SIGCONT) worker 1 of a 2-worker launcher in turn, `window_seconds` each, from
    the moment both workers have trained, for `windows` windows (an odd number, starting and ending paused); then
    resumes it and stops both workers (SIGTERM: they end as if stopped from outside). Driven from the launcher's
    progress polling; `switches` holds (time, paused, machine CPU times, CPU seconds of every task process) per
    window start, then the end."""

    def __init__(self, launcher, windows, window_seconds):
        self.launcher, self.windows, self.window_seconds = launcher, windows, window_seconds
        self.switches = []

    def _signal(self, job_task, signum):
        process = self.launcher.processes.get(job_task)
        if process is not None and process.is_alive():
            os.kill(process.pid, signum)

    def poll(self):
        if len(self.switches) > self.windows or not all_workers_trained(self.launcher, 2):
            return
        now = time.time()
        if self.switches and now - self.switches[-1][0] < self.window_seconds:
            return
        paused = len(self.switches) % 2 == 0 and len(self.switches) < self.windows
        self._signal(('worker', 1), signal.SIGSTOP if paused else signal.SIGCONT)
        self.switches.append((now, paused, machine_cpu_times(), process_cpu_seconds(self.launcher)))
        if len(self.switches) > self.windows:
            for task in (0, 1):
                self._signal(('worker', task), signal.SIGTERM)


def alternation_windows(switches, step_ends, settle_seconds):
    """Cluster env steps/s and machine busy share of every window of a `WorkerAlternation`.

    Args:
        switches: its `switches`.
        step_ends: end times of every env step of every worker.
        settle_seconds: time left out at the start of each window.

    Returns:
        list of dicts: `workers` (1 or 2), `env_steps_per_s`, `busy_percent`, and `cpu_ms_per_env_step`: the CPU
        time of every task process over the whole window per env step of the window (None without /proc).
    """
    ends = np.sort(np.asarray(step_ends, dtype=np.float64))
    windows = []
    for (start, paused, cpu_start, tasks_start), (end, _, cpu_end, tasks_end) in zip(switches, switches[1:]):
        last = np.searchsorted(ends, end)
        count = last - np.searchsorted(ends, start + settle_seconds)
        shares = machine_cpu_shares(cpu_start, cpu_end)
        windows.append({'workers': 1 if paused else 2,
                        'env_steps_per_s': float(count) / (end - start - settle_seconds),
                        'busy_percent': shares and shares['busy_percent'],
                        'cpu_ms_per_env_step': task_cpu_per_step(tasks_start, tasks_end,
                                                                 last - np.searchsorted(ends, start))})
    return windows


def task_cpu_per_step(before, after, steps):
    """Milliseconds of CPU per env step of every task process present in both `process_cpu_seconds` readings,
    with their sum under 'all'; None where either is missing."""
    if before is None or after is None:
        return None
    per_step = {name: 1e3 * (after[name] - before[name]) / max(steps, 1) for name in sorted(before) if name in after}
    per_step['all'] = sum(per_step.values())
    return per_step


def median_task_cpu(windows, workers):
    """Median over the `workers`-worker windows of each process's CPU per env step (see `alternation_windows`)."""
    readings = [window['cpu_ms_per_env_step'] for window in windows
                if window['workers'] == workers and window['cpu_ms_per_env_step']]
    if not readings:
        return None
    return {name: float(np.median([reading[name] for reading in readings])) for name in readings[0]}


def alternation_ratios(windows):
    """Speed of every 2-worker window over the mean of the 1-worker windows either side of it."""
    return [windows[i]['env_steps_per_s'] / (0.5 * (windows[i - 1]['env_steps_per_s'] +
                                                     windows[i + 1]['env_steps_per_s']))
            for i in range(1, len(windows) - 1, 2)]


def measure_alternating(config, pairs, window_seconds, settle_seconds=SETTLE_SECONDS, envs_per_worker=1):
    """Runs one 2-worker cluster whose worker 1 is paused and resumed in turn (see `WorkerAlternation`): the
    scaling 2 workers / 1 worker from windows a few seconds apart, which a shared machine's slow and fast spells
    (lasting minutes) do not separate the way they separate two clusters run one after the other."""
    windows_count = 2 * pairs + 1
    with tempfile.TemporaryDirectory() as log_dir:
        launcher = make_launcher(config, 2, 10 ** 9, os.path.join(log_dir, 'run'), log_dir, envs_per_worker)
        alternation = WorkerAlternation(launcher, windows_count, window_seconds)
        after_each_drain(launcher, alternation.poll)
        launcher.run()
        step_ends = [end for envs in read_timings(log_dir).values() for timers in envs
                     for end in timers['env_step_end']]
    windows = alternation_windows(alternation.switches, step_ends, settle_seconds)
    ratios = alternation_ratios(windows)
    return {'window_seconds': window_seconds, 'settle_seconds': settle_seconds, 'windows': windows,
            'ratios_2_over_1': ratios, 'median_ratio_2_over_1': float(np.median(ratios)),
            'median_cpu_ms_per_env_step': {str(workers): median_task_cpu(windows, workers) for workers in (1, 2)}}


def summarize(name, runs):
    """Medians over the repeats of one configuration, per worker count, and the scaling from them."""
    by_workers = {}
    for run in runs:
        by_workers.setdefault(run['workers'], []).append(run)
    medians = {n: float(np.median([run['env_steps_per_s'] for run in group])) for n, group in by_workers.items()}
    result = {
        'configuration': CONFIGS[name]['description'],
        'median_env_steps_per_s': {str(n): speed for n, speed in medians.items()},
    }
    for key in ('cluster_cpu_ms_per_env_step', 'env_cpu_ms_per_env_step', 'cpu_ratio_cluster_to_env'):
        result['median_' + key] = {
            str(n): float(np.median(values)) if values else None
            for n, values in ((n, [run[key] for run in group if run[key] is not None])
                              for n, group in by_workers.items())}
    result.update({
        'scaling_2_over_1': medians[2] / medians[1] if 1 in medians and 2 in medians else None,
        'runs': runs,
    })
    return result


def run_all(names, workers, repeats, max_env_steps, alternation_pairs, window_seconds, envs_per_worker=1):
    """Runs every configuration and worker count `repeats` times, interleaved so that slow and fast spells of a
    shared machine fall on all of them; then, with `alternation_pairs`, one alternating 2-worker run of every
    configuration."""
    runs = {name: [] for name in names}
    for repeat in range(repeats):
        for name in names:
            for num_workers in workers:
                first = not any(runs.values())
                runs[name].append(dict(measure(CONFIGS[name], num_workers, max_env_steps, envs_per_worker,
                                               first_of_process=first), repeat=repeat))
    results = {name: summarize(name, runs[name]) for name in names}
    if alternation_pairs:
        for name in names:
            results[name]['alternating'] = measure_alternating(CONFIGS[name], alternation_pairs, window_seconds,
                                                               envs_per_worker=envs_per_worker)
    return results


def _number(value):
    return '-' if value is None else '{:.2f}'.format(value)


def print_table(results):
    print('{:>16}{:>9}{:>14}{:>20}{:>9}{:>9}{:>10}{:>12}{:>12}{:>15}{:>14}{:>13}'.format(
        'config', 'workers', 'env steps/s', 'first step after s', 'act ms', 'env ms', 'train ms', 'busy/steal',
        'cpu ms/step', 'cluster cpu ms', 'env cpu ms', 'cluster/env'))
    for name, result in results.items():
        for run in result['runs']:
            split, cpu = run['cost_split_worker_0'], run['machine_cpu']
            shares = '{:.0f}%/{:.1f}%'.format(cpu['busy_percent'], cpu['steal_percent']) if cpu else '-'
            cpu_ms = '{:.2f}'.format(cpu['cpu_ms_per_env_step']) if cpu else '-'
            print('{:>16}{:>9}{:>14.1f}{:>20.1f}{:>9.2f}{:>9.2f}{:>10.2f}{:>12}{:>12}{:>15}{:>14}{:>13}'.format(
                name, run['workers'], run['env_steps_per_s'], run['first_step_seconds'], split['policy_act_ms'],
                split['env_step_ms'], split['train_ms_per_env_step'], shares, cpu_ms,
                *(_number(run[key]) for key in ('cluster_cpu_ms_per_env_step', 'env_cpu_ms_per_env_step',
                                                 'cpu_ratio_cluster_to_env'))))
        if result['median_env_steps_per_s']:
            medians = ', '.join('{} workers {:.1f}'.format(n, speed)
                                for n, speed in result['median_env_steps_per_s'].items())
            print('{}: median env steps/s: {}'.format(name, medians))
        for n in result['median_env_steps_per_s']:
            print('{}: {} workers, median CPU ms per env step: cluster {}, env {}, cluster / env {}'.format(
                name, n, *(_number(result['median_' + key][n]) for key in (
                    'cluster_cpu_ms_per_env_step', 'env_cpu_ms_per_env_step', 'cpu_ratio_cluster_to_env'))))
        if result['scaling_2_over_1'] is not None:
            print('{}: scaling 2 / 1 workers {:.2f}'.format(name, result['scaling_2_over_1']))
        if 'alternating' in result:
            alternating = result['alternating']
            print('{}: alternating 1 / 2 workers every {:.0f} s: scaling {:.2f} (each 2-worker window: {})'.format(
                name, alternating['window_seconds'], alternating['median_ratio_2_over_1'],
                ', '.join('{:.2f}'.format(ratio) for ratio in alternating['ratios_2_over_1'])))
            for workers, cpu in alternating['median_cpu_ms_per_env_step'].items():
                if cpu:
                    print('{}: alternating, {}-worker windows: CPU ms per env step {}'.format(
                        name, workers, ', '.join('{} {:.2f}'.format(task, ms) for task, ms in cpu.items())))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--configs', nargs='+', choices=sorted(CONFIGS), default=sorted(CONFIGS))
    parser.add_argument('--workers', type=int, nargs='+', default=[1, 2])
    parser.add_argument('--repeats', type=int, default=2, help='runs of every configuration and worker count')
    parser.add_argument('--max-steps', type=int, default=5000)
    parser.add_argument('--alternation-pairs', type=int, default=6,
                        help='2-worker windows of the alternating run of every configuration (0: no such run)')
    parser.add_argument('--window-seconds', type=float, default=5.0, help='length of an alternating window')
    parser.add_argument('--envs-per-worker', type=int, default=1, help='envs of every worker (cluster num_envs)')
    parser.add_argument('--no-batch-acting', action='store_true',
                        help="trainers with batch_acting=False: a runner thread per env (the original's way)")
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()
    if args.repeats < 0:
        parser.error('--repeats must be >= 0, got {}'.format(args.repeats))
    if args.envs_per_worker < 1:
        parser.error('--envs-per-worker must be >= 1, got {}'.format(args.envs_per_worker))
    if args.alternation_pairs < 0:
        parser.error('--alternation-pairs must be >= 0, got {}'.format(args.alternation_pairs))
    if not args.window_seconds > SETTLE_SECONDS:
        parser.error('--window-seconds must exceed the {} s left out at the start of every window, got {}'.format(
            SETTLE_SECONDS, args.window_seconds))
    if args.no_batch_acting:
        for config in CONFIGS.values():
            config['trainer_config']['kwargs'] = dict(config['trainer_config']['kwargs'], batch_acting=False)
    results = run_all(args.configs, args.workers, args.repeats, args.max_steps, args.alternation_pairs,
                      args.window_seconds, args.envs_per_worker)
    output = {
        'benchmark': 'train_throughput',
        'envs_per_worker': args.envs_per_worker,
        'batch_acting': not args.no_batch_acting,
        'configurations': results,
        'machine': {'python': platform.python_version(), 'cpus': os.cpu_count()},
    }
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, 'train_throughput.json')
    with open(path, 'w') as f:
        json.dump(output, f, indent=2)
    print_table(results)
    print('written: {}'.format(path))


if __name__ == '__main__':
    main()
