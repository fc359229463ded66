"""A sweep's progress: after every trial, the trials done of those asked for, the time left (measured on this
command's trials alone) and the trial that ended, as plain lines where the output is not a terminal. Trials are
stand-ins that end at once and time is a fake clock: nothing here waits or measures real time."""
import io
import re

import optuna
from optuna.distributions import FloatDistribution

from btgym_aac.progress import Progress
from btgym_aac.sweep import runner
from btgym_aac.sweep.study import open_study
from btgym_aac.sweep.trial import TrialPlan

SPACE = {'trainer_config.kwargs.opt_learn_rate': FloatDistribution(1e-5, 1e-3, log=True)}


class EndsAtOnce:
    """A stand-in for `trial.TrialObjective`: trial 0 completes, trial 1 is pruned, the others fail."""

    def __init__(self, plan, total):
        self.plan = plan

    def __call__(self, trial):
        trial.suggest_float('trainer_config.kwargs.opt_learn_rate', 1e-5, 1e-3, log=True)
        if trial.number == 0:
            return 0.5
        if trial.number == 1:
            raise optuna.TrialPruned()
        raise ValueError('a value the trainer refuses')


def search_with_progress(tmp_path, monkeypatch, total, clock, done_before=0):
    """Runs `runner.search` with `EndsAtOnce` trials after `done_before` finished ones, showing its progress as a
    sweep does (a first update with the trials the study holds); returns the lines shown."""
    monkeypatch.setattr(runner, 'TrialObjective', EndsAtOnce)
    url = 'sqlite:///{}'.format(tmp_path / 'study.db')
    study = open_study(url, 'test', {'folds': 2})
    for _ in range(done_before):
        study.add_trial(optuna.trial.create_trial(params={name: 1e-4 for name in SPACE}, distributions=SPACE,
                                                  value=1.0))
    plan = TrialPlan({}, SPACE, 'validation.csv', str(tmp_path), 2, 200, 2, 0, None, 'return')
    stream = io.StringIO()
    with Progress('trial', total, stream, line_seconds=0, terminal=False, clock=iter(clock).__next__) as progress:
        progress.update(runner.trials_done(study))
        runner.search(plan, url, 'test', {'folds': 2}, total, 'none', progress=progress)
    return stream.getvalue().splitlines()


def test_every_trial_that_ends_shows_the_trials_done_of_all_and_the_time_left(tmp_path, monkeypatch):
    lines = search_with_progress(tmp_path, monkeypatch, 3, clock=[0, 60, 120, 180])
    assert len(lines) == 4  # the start, then one line per trial: no redrawn bar in a non-terminal
    assert lines[0].startswith('trials 0/3 ') and 'no estimate yet' in lines[0]
    for line, pattern in zip(lines[1:], (r'trials 1/3 .*time left 02:00 .*trial 0 complete \(return \+0\.5000\)$',
                                         r'trials 2/3 .*time left 01:00 .*trial 1 pruned$',
                                         r'trials 3/3 .*time left 00:00 .*trial 2 failed$')):
        assert '\r' not in line and re.match(pattern, line), line


def test_a_continued_sweep_estimates_the_time_left_from_its_own_trials(tmp_path, monkeypatch):
    lines = search_with_progress(tmp_path, monkeypatch, 4, clock=[0, 100, 150], done_before=2)
    assert lines[0].startswith('trials 2/4 ') and 'no estimate yet' in lines[0]  # the study's, not this command's
    assert lines[1].startswith('trials 3/4 ') and 'time left 01:40' in lines[1]  # 1 trial in 100 s, 1 left
    assert lines[2].startswith('trials 4/4 ') and 'time left 00:00' in lines[2]


def test_the_trials_clusters_show_no_progress_of_their_own_and_the_digest_is_the_same():
    from btgym_aac.distributed.run_config import config_digest, default_configs
    from btgym_aac.sweep.runner import quiet_training

    configs = default_configs(import_classes=False)
    quiet = quiet_training(configs)
    assert quiet['launcher_config'] == dict(configs['launcher_config'], show_progress=False)
    assert 'show_progress' not in configs['launcher_config']  # the caller's configs are left alone
    assert config_digest(quiet) == config_digest(configs)
