"""Speed and CPU per env step of the original btgym and of btgym_aac, side by side, on the reference notebook's
configuration (`notebook_run.py`: DevStrat_4_11 on the sine data, AacStackedRL2Policy (256, 256), A3C, renderings
every 10 episodes, 1 worker by default).

Every round runs each version once per `--envs` count (envs per worker: the original steps them one after the other,
btgym_aac acts for them in one batch), the order of the versions alternating between rounds. A run starts
`notebook_run.py` in a new session, polls every 0.25 s the global step its worker 0 logs and the CPU time (user +
system, with the children reaped) of every process in that session (launcher, parameter server, workers, env and
data servers, rendering processes), stops the session with SIGINT once `--max-steps` is reached (the original's
launcher runs until interrupted) and checks that no process of it is left. Reported per run: start-up (command start
to the first trained step), env steps per second and CPU milliseconds per env step between the first trained step
and the step target, the machine's 1-minute load before the run; per round, the ratios btgym_aac / original; and the
medians.

The original needs its own Python 3.7 environment; built here with:

    python3.7 -m venv /tmp/orig37
    /tmp/orig37/bin/pip install tensorflow==1.15.5 gym==0.10.11 backtrader==1.9.76.123 'pyzmq>=17,<18' \\
        pandas==0.23.4 'numpy<1.19' 'protobuf<3.21' opencv-python-headless==4.6.0.66 psutil logbook scipy \\
        pillow ipython
    /tmp/orig37/bin/pip install --no-binary :all: matplotlib==2.0.2

(the original pins `matplotlib<=2.0.2`: newer versions refuse backtrader's NaN volume axis of the sine data, the
episode rendering dies and the env hangs), and the original's source tree unpatched (`git clone` of Kismuz/btgym).
Writes `vs_original.json` to --out and prints a table.

Usage: python benchmarks/vs_original.py --original-python /tmp/orig37/bin/python --original-source /tmp/btgym
                                        [--rounds 2] [--max-steps 8000] [--workers 1] [--envs 1]
                                        [--out benchmarks/results]
"""
import argparse
import json
import os
import pathlib
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from notebook_run import write_sine_csv

BENCHMARKS = pathlib.Path(__file__).resolve().parent
REPOSITORY = BENCHMARKS.parent
POLL_SECONDS = 0.25
STOP_GRACE_SECONDS = 60
CLOCK_TICKS = os.sysconf('SC_CLK_TCK')


def interruptible():
    """Popen `preexec_fn`: SIGINT at its default in the child (a shell's background job inherits it ignored, and
    Python then raises no KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_in_session(command, cwd, environment, output):
    """Starts `command` in a new session (its process group too) with SIGINT at its default, stdout and stderr to
    the open file `output`.

    Returns:
        the Popen; its pid is the session id.
    """
    return subprocess.Popen(command, cwd=cwd, env=environment, stdout=output, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=interruptible)


def session_processes(session_id):
    """{pid: CPU seconds (user + system + reaped children's)} of the live (not zombie) processes in session
    `session_id`."""
    cpu = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/{}/stat'.format(entry)) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session_id and fields[0] != 'Z':
            cpu[int(entry)] = sum(int(value) for value in fields[11:15]) / CLOCK_TICKS
    return cpu


def last_step(progress_file):
    """(time, global step) of the last line of `progress_file`, or None before the first train step."""
    try:
        with open(progress_file, 'rb') as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None
    for line in reversed(lines):
        fields = line.split()
        if len(fields) == 2:
            return float(fields[0]), int(fields[1])
    return None


def stop_session(process, session_id):
    """SIGINT to the session's process group (as Ctrl-C in a terminal), SIGKILL to every process of the session left
    after `STOP_GRACE_SECONDS`.

    Returns:
        dict: seconds to exit after SIGINT, whether SIGKILL was needed, processes of the session left after it.
    """
    stopped = time.monotonic()
    try:
        os.killpg(session_id, signal.SIGINT)
    except ProcessLookupError:  # the whole group has ended already
        pass
    try:
        process.wait(timeout=STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    while session_processes(session_id) and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
    exit_seconds = time.monotonic() - stopped
    killed = bool(session_processes(session_id))
    if killed:
        for pid in session_processes(session_id):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        process.wait()
        deadline = time.monotonic() + 5
        while session_processes(session_id) and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
    return dict(exit_seconds_after_sigint=exit_seconds, needed_sigkill=killed,
                processes_left=len(session_processes(session_id)))


def run_once(version, envs, args, port, work_dir):
    """One training run of `version` ('original' or 'btgym_aac') with `envs` envs per worker to `args.max_steps`.

    Returns:
        dict of the run's figures (see the module docstring).
    """
    progress = os.path.join(work_dir, version + '_progress.txt')
    if version == 'original':
        python, package, cwd = args.original_python, 'btgym', work_dir
        path = [os.path.abspath(args.original_source), str(BENCHMARKS)]
    else:
        python, package, cwd = sys.executable, 'btgym_aac', str(REPOSITORY)
        path = [str(REPOSITORY), str(BENCHMARKS)]
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    command = [python, str(BENCHMARKS / 'notebook_run.py'), '--package', package, '--data', args.data,
               '--log-dir', os.path.join(work_dir, version + '_log'), '--progress', progress,
               '--workers', str(args.workers), '--envs', str(envs), '--max-steps', str(2 * args.max_steps),
               '--port', str(port)]
    load = os.getloadavg()[0]
    with open(os.path.join(work_dir, version + '_output.txt'), 'w') as output:
        started = time.time()
        process = start_in_session(command, cwd, environment, output)
        samples = []
        while True:
            time.sleep(POLL_SECONDS)
            step = last_step(progress)
            if step is not None:
                cpu = session_processes(process.pid)
                samples.append((time.time(), sum(cpu.values()), step[1], step[0], len(cpu)))
                if step[1] >= args.max_steps:
                    break
            if process.poll() is not None:
                stop_session(process, process.pid)
                raise RuntimeError('{} ended with exit code {} before step {}; see {}'.format(
                    version, process.returncode, args.max_steps, output.name))
        stop = stop_session(process, process.pid)
    first, last = samples[0], samples[-1]
    steps, seconds, cpu_seconds = last[2] - first[2], last[0] - first[0], last[1] - first[1]
    return dict(version=version, envs_per_worker=envs, load_before=load, startup_seconds=first[3] - started,
                window_env_steps=steps, window_seconds=seconds, env_steps_per_s=steps / seconds,
                cpu_ms_per_env_step=1000 * cpu_seconds / steps, env_steps_per_cpu_s=steps / cpu_seconds,
                processes_at_target=last[4], **stop)


def ratios(ours, original):
    """btgym_aac / original of speed per wall second, per CPU second, and original / btgym_aac of start-up."""
    return dict(wall=ours['env_steps_per_s'] / original['env_steps_per_s'],
                per_cpu_second=ours['env_steps_per_cpu_s'] / original['env_steps_per_cpu_s'],
                startup_original_over_ours=original['startup_seconds'] / ours['startup_seconds'])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--original-python', required=True, help="python of the original's environment")
    parser.add_argument('--original-source', required=True, help="the original btgym's source tree")
    parser.add_argument('--data', help='the sine CSV; default: make_sine_data() (the bundled file, unrounded)')
    parser.add_argument('--rounds', type=int, default=2)
    parser.add_argument('--max-steps', type=int, default=8000)
    parser.add_argument('--workers', type=int, default=1)
    parser.add_argument('--envs', type=int, nargs='+', default=[1], help='envs per worker counts, each run by both')
    parser.add_argument('--port', type=int, default=14230, help='first cluster port; every run takes new ones')
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()

    rounds = []
    with tempfile.TemporaryDirectory() as scratch:
        if args.data is None:
            args.data = write_sine_csv(scratch)
        port = args.port
        for index in range(args.rounds):
            order = ('btgym_aac', 'original') if index % 2 == 0 else ('original', 'btgym_aac')
            for envs in args.envs:
                runs = {}
                for version in order:
                    runs[version] = run_once(version, envs, args, port, tempfile.mkdtemp(dir=scratch))
                    port += 200
                    print('round {} {} x{}: {}'.format(index, version, envs, json.dumps(runs[version])), flush=True)
                rounds.append(dict(round=index, envs_per_worker=envs, order=list(order), runs=runs,
                                   ratios=ratios(runs['btgym_aac'], runs['original'])))

    keys = ('env_steps_per_s', 'cpu_ms_per_env_step', 'env_steps_per_cpu_s', 'startup_seconds')
    by_envs = {envs: [r for r in rounds if r['envs_per_worker'] == envs] for envs in args.envs}
    medians = {str(envs): {version: {key: statistics.median(r['runs'][version][key] for r in group) for key in keys}
                           for version in ('btgym_aac', 'original')} for envs, group in by_envs.items()}
    median_ratios = {str(envs): {key: statistics.median(r['ratios'][key] for r in group) for key in group[0]['ratios']}
                     for envs, group in by_envs.items()}
    result = dict(
        benchmark='vs_original', machine=dict(cpus=os.cpu_count(), platform=platform.platform()),
        configuration='notebook_run.py: unreal_stacked_lstm_strat_4_11 env, AacStackedRL2Policy (256, 256), A3C, '
                      'env_render_freq 10, {} worker(s), 1 ps'.format(args.workers),
        max_steps=args.max_steps, rounds=rounds, medians=medians, median_ratios=median_ratios)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'vs_original.json'), 'w') as f:
        json.dump(result, f, indent=1)
    print('{:<10} {:>5} {:>12} {:>16} {:>16} {:>11}'.format(
        'version', 'envs', 'env steps/s', 'CPU ms/env step', 'env steps/CPU s', 'start-up s'))
    for envs, versions in medians.items():
        for version, figures in versions.items():
            print('{:<10} {:>5} {:>12.1f} {:>16.2f} {:>16.1f} {:>11.1f}'.format(
                version, envs, *(figures[key] for key in keys)))
        print('{:<10} {:>5} btgym_aac / original (median of rounds): {:.2f}x per wall second, {:.2f}x per CPU '
              'second'.format('', envs, median_ratios[envs]['wall'], median_ratios[envs]['per_cpu_second']))

if __name__ == '__main__':
    main()
