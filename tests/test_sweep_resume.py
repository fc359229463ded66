"""Sweeps through the command line: one stopped in a trial's second fold continues that trial from its finished
fold, `--parallel 2` runs the study's trials in two processes, each trial once, and one killed at random moments
ends with every trial counted once."""
import json
import os
import random
import signal
import subprocess
import sys
import time

import optuna
import pytest

from proc_helpers import wait_until_group_ends
from small_runs import CONFIG_FILE, three_days_csv

SPACE_FILE = '''
from optuna.distributions import FloatDistribution
SPACE = {'trainer_config.kwargs.opt_learn_rate': FloatDistribution(1e-5, 1e-3, log=True)}
'''


def sweep_command(tmp_path, out, trials, *more):
    (tmp_path / 'config.py').write_text(CONFIG_FILE)
    (tmp_path / 'space.py').write_text(SPACE_FILE)
    data = tmp_path / 'bars.csv'
    if not data.exists():
        three_days_csv(tmp_path)
    return [sys.executable, '-m', 'btgym_aac.cli', 'sweep', str(tmp_path / 'config.py'), '--data', str(data),
            '--trials', str(trials), '--folds', '2', '--train-steps', '200', '--test-episodes', '2', '--out',
            str(out), '--space', str(tmp_path / 'space.py'), '--pruner', 'none'] + list(more)


def load_study(out):
    return optuna.load_study(study_name='sweep', storage='sqlite:///{}'.format(out / 'sweep.db'))


@pytest.mark.slow
def test_a_sweep_stopped_in_a_trial_continues_that_trial_from_its_finished_fold(tmp_path):
    out = tmp_path / 'sweep'
    command = sweep_command(tmp_path, out, 2, '--lockbox', '0')
    first_fold = out / 'trials' / 'trial_0' / 'fold_0' / 'fold.json'
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        deadline = time.time() + 300
        while not first_fold.exists() and process.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        assert first_fold.exists(), process.communicate()[1][-3000:]
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, err[-3000:]
    assert 'sweep interrupted: run the same command again to continue it' in err
    assert wait_until_group_ends(process.pid, 60) == []
    stopped = load_study(out).trials
    assert [(trial.number, trial.state.name, trial.user_attrs.get('interrupted')) for trial in stopped] == [
        (0, 'FAIL', True)]
    fold_record = first_fold.read_text()

    finished = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr[-3000:]
    trials = load_study(out).trials
    assert [trial.state.name for trial in trials] == ['FAIL', 'COMPLETE', 'COMPLETE']
    assert trials[1].user_attrs['continues'] == 0 and trials[1].params == stopped[0].params
    assert trials[1].user_attrs['folder'] == os.path.join('trials', 'trial_0')
    assert first_fold.read_text() == fold_record  # its finished fold was read back, not trained again
    report = json.loads((out / 'sweep.json').read_text())
    assert [row['counted'] for row in report['trials']] == [False, True, True]
    assert report['lockbox'] is None and 'there is no lockbox to confirm it' in report['verdict']


@pytest.mark.slow
def test_parallel_trials_run_in_two_processes_each_trial_once(tmp_path):
    out = tmp_path / 'sweep'
    finished = subprocess.run(sweep_command(tmp_path, out, 4, '--parallel', '2', '--lockbox', '0'),
                              capture_output=True, text=True, timeout=900)
    assert finished.returncode == 0, finished.stderr[-3000:]
    trials = load_study(out).trials
    assert [trial.number for trial in trials] == [0, 1, 2, 3]
    assert all(trial.state.name == 'COMPLETE' for trial in trials)
    assert sorted(os.listdir(out / 'trials')) == ['trial_{}'.format(n) for n in range(4)]
    starts = sorted((trial.datetime_start, trial.datetime_complete) for trial in trials)
    overlapping = any(later[0] < earlier[1] for earlier, later in zip(starts, starts[1:]))
    assert overlapping  # two trials ran at the same time


@pytest.mark.slow
def test_a_sweep_killed_at_random_moments_ends_with_every_trial_counted_once(tmp_path):
    """SIGKILL of the sweep's whole process group three times, each at a random moment 5 to 25 s after its start
    (seeded), then a run to the end: the study holds the 4 trials asked for, each counted once, and the trials the
    kills cut off are recorded and not counted."""
    rng = random.Random(61)
    out = tmp_path / 'sweep'
    command = sweep_command(tmp_path, out, 4, '--lockbox', '0')
    kills = 0
    for _ in range(3):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   start_new_session=True)
        try:
            process.wait(timeout=rng.uniform(5, 25))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            kills += 1
        process.communicate(timeout=60)
        assert wait_until_group_ends(process.pid, 60) == []
    finished = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert kills == 3
    report = json.loads((out / 'sweep.json').read_text())
    counted = [row for row in report['trials'] if row['counted']]
    assert len(counted) == 4 and len({row['folder'] for row in counted}) == 4
    trials = load_study(out).trials
    assert sum(trial.state.name == 'COMPLETE' for trial in trials) == 4
    assert all(trial.state.name in ('COMPLETE', 'FAIL') for trial in trials)  # the cut-off ones recorded as failed
