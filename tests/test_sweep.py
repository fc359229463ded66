"""Sweeps: search spaces and their checks, objectives, the lockbox split, the study's book-keeping, the verdict,
and a tiny sweep on generated data (3 trials x 2 folds x 200 steps) through the API and the CLI."""
import json
import os
import re
import shutil
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import optuna
import pandas as pd
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from btgym_aac.cli import main as cli_main
from btgym_aac.data import make_random_walk_data
from btgym_aac.data.parsing import read_ohlcv
from btgym_aac.distributed.run_config import default_configs
from btgym_aac.sweep import sweep
from btgym_aac.sweep import runner
from btgym_aac.sweep.runner import search, split_lockbox
from btgym_aac.sweep.deflation import deflated_sharpe_ratio
from btgym_aac.sweep.report import trial_rows, verdict
from btgym_aac.sweep.space import builtin_space, check_space, configs_with, load_space
from btgym_aac.sweep.trial import SurplusTrial, TrialObjective, TrialPlan, episode_sharpe, score
from small_runs import CONFIG_FILE, small_configs, three_days_csv
from btgym_aac.sweep.study import (CONTINUES, INTERRUPTED, SURPLUS, _run_again_if_stale, counted_numbers,
                                   fail_orphans, is_surplus, open_study, run_interrupted_again, wants_another)

LEARN_RATE = 'trainer_config.kwargs.opt_learn_rate'
TINY_SPACE = {LEARN_RATE: FloatDistribution(1e-5, 1e-3, log=True)}
HAND_ASKED_TRIALS = pytest.mark.filterwarnings('ignore:Heartbeat of storage is supposed to be used with Study.optimize')
"""For tests that ask the study for trials by hand, outside `optimize` (which beats the heartbeat)."""


# ---------------------------------------------------------------------------------------------- spaces

def test_the_builtin_spaces_fit_the_reference_configurations():
    for algo in ('a3c', 'unreal', 'ppo'):
        check_space(builtin_space(algo), default_configs(algo, import_classes=False))
    assert 'trainer_config.kwargs.clip_epsilon' in builtin_space('ppo')
    assert 'trainer_config.kwargs.clip_epsilon' not in builtin_space('a3c')


def test_a_name_no_config_accepts_is_refused_naming_it():
    space = {'trainer_config.kwargs.opt_learn_rat': FloatDistribution(1e-5, 1e-3),  # misspelt
             'env_config.kwargs.skip_frame': IntDistribution(5, 20),  # a strategy param: accepted
             'env_config.kwargs.broker_commission': FloatDistribution(0, 1e-3),  # a broker setting: accepted
             'policy_config.kwargs.normalize_observations': CategoricalDistribution([True, False]),  # a policy argument
             'policy_config.kwargs.lstm_size': IntDistribution(10, 60),
             'launcher_config.save_secs': IntDistribution(10, 60),
             'launcher_config.max_steps': IntDistribution(10, 60),
             'env.kwargs.reward_scale': FloatDistribution(1, 2),
             'trainer_config.opt_learn_rate': FloatDistribution(1e-5, 1e-3)}
    with pytest.raises(ValueError) as error:
        check_space(space, default_configs(import_classes=False))
    message = str(error.value)
    assert "'trainer_config.kwargs.opt_learn_rat': trainer_config takes no 'opt_learn_rat' (did you mean " \
           "'opt_learn_rate'?)" in message
    assert "'policy_config.kwargs.lstm_size': policy_config takes no 'lstm_size'" in message
    assert "'launcher_config.max_steps': launcher_config takes no 'max_steps'" in message
    assert "'env.kwargs.reward_scale' names no config" in message
    assert "'trainer_config.opt_learn_rate' is not of the form trainer_config.kwargs.KEY" in message
    for accepted in ('skip_frame', 'broker_commission', 'normalize_observations', 'save_secs'):
        assert accepted not in message


def test_a_space_file_defines_space(tmp_path):
    good = tmp_path / 'space.py'
    good.write_text('from optuna.distributions import FloatDistribution\n'
                    'SPACE = {"trainer_config.kwargs.model_beta": FloatDistribution(0.01, 0.1, log=True)}\n')
    assert load_space(str(good)) == {'trainer_config.kwargs.model_beta': FloatDistribution(0.01, 0.1, log=True)}
    for text, message in (('X = 1\n', 'defines no SPACE'), ('SPACE = {"a.b": (1, 2)}\n', 'are not Optuna'),
                          ('SPACE = {}\n', 'non-empty dict'), ('1 / 0\n', 'failed: ZeroDivisionError')):
        bad = tmp_path / 'bad.py'
        bad.write_text(text)
        with pytest.raises(ValueError, match=message):
            load_space(str(bad))
    with pytest.raises(FileNotFoundError, match='does not exist'):
        load_space(str(tmp_path / 'missing.py'))


def test_values_go_into_a_copy_of_the_configs():
    configs = default_configs(import_classes=False)
    changed = configs_with(configs, {LEARN_RATE: 3e-4, 'env_config.kwargs.reward_scale': 2.0,
                                     'launcher_config.save_secs': 30})
    assert changed['trainer_config']['kwargs']['opt_learn_rate'] == 3e-4
    assert changed['env_config']['kwargs']['reward_scale'] == 2.0
    assert changed['launcher_config']['save_secs'] == 30
    assert configs['trainer_config']['kwargs']['opt_learn_rate'] == 1e-3  # the original is left alone
    assert changed['trainer_config']['kwargs']['time_flat'] is True


# ------------------------------------------------------------------------------------------- objectives

def _fold(policy, hold):
    return {'agents': {'policy': {'return_pct': policy}, 'buy_and_hold': {'return_pct': hold}}}


def test_objectives_against_numpy():
    folds = [_fold([1.0, -0.5], [0.2, 0.1]), _fold([0.3], [-0.4])]
    policy, hold = np.array([1.0, -0.5, 0.3]), np.array([0.2, 0.1, -0.4])
    assert score(folds, 'vs-buy-and-hold') == pytest.approx(np.mean(policy - hold))
    assert score(folds, 'return') == pytest.approx(policy.mean())
    assert score(folds, 'sharpe') == pytest.approx(policy.mean() / policy.std(ddof=1))
    assert score([_fold([0.5], [0.1])], 'sharpe') == 0.0  # undefined with one episode
    assert episode_sharpe([0.2, 0.2, 0.2]) == 0.0


# ---------------------------------------------------------------------------------------------- lockbox

def test_the_lockbox_is_the_last_share_of_the_time_span():
    frame = make_random_walk_data(num_bars=1000, seed=0)
    validation, lockbox = split_lockbox(frame, 0.2)
    assert len(validation) == 800 and len(lockbox) == 200
    assert validation.index[-1] < lockbox.index[0] and validation.index[-1] + pd.Timedelta(minutes=1) == \
        lockbox.index[0]
    pd.testing.assert_frame_equal(pd.concat([validation, lockbox]), frame)
    assert len(split_lockbox(frame, 0)[1]) == 0
    for fraction in (-0.1, 1, 1.5, float('nan')):
        with pytest.raises(ValueError, match='lockbox'):
            split_lockbox(frame, fraction)


# ---------------------------------------------------------------------------------- study book-keeping

def _study(tmp_path, settings=None):
    return open_study('sqlite:///{}'.format(tmp_path / 'study.db'), 'test', settings or {'folds': 2})


def test_a_study_started_with_other_settings_is_refused_naming_them(tmp_path):
    _study(tmp_path, {'folds': 2, 'objective': 'return'})
    assert _study(tmp_path, {'folds': 2, 'objective': 'return'}).user_attrs['settings']['folds'] == 2
    with pytest.raises(ValueError) as error:
        _study(tmp_path, {'folds': 3, 'objective': 'return', 'seed': 1})
    assert str(error.value).splitlines()[1:4] == ['  setting  then  now', '  --folds  2     3', '  --seed   none  1']


def test_a_sweep_continued_with_other_flags_is_refused_with_a_table_of_them(tmp_path, capsys, monkeypatch):
    from btgym_aac.sweep import runner

    # the study records its settings, and nothing is run
    monkeypatch.setattr(runner, '_search_in_processes', lambda *args, **kwargs: None)
    monkeypatch.setattr(runner, '_finish', lambda *args: {'lines': []})
    config = tmp_path / 'config.py'
    config.write_text(CONFIG_FILE)
    command = ['sweep', str(config), '--data', three_days_csv(tmp_path), '--trials', '2', '--out',
               str(tmp_path / 'sweep'), '--train-steps', '200', '--test-episodes', '2']
    assert cli_main(command) == 0
    capsys.readouterr()
    assert cli_main(command + ['--algo', 'ppo', '--lockbox', '0.25']) == 2
    refusal = capsys.readouterr().err
    assert 'was started with other settings:\n' in refusal, refusal
    lines = refusal.split('was started with other settings:\n')[1].splitlines()
    assert [line.split() for line in lines[:5]] == [
        ['setting', 'then', 'now'],
        ['--lockbox', '0.2', '0.25'],
        ['space', 'trainer_config.kwargs.clip_epsilon', 'not', 'searched', 'float', '[0.05,', '0.3]'],
        ['space', 'trainer_config.kwargs.num_epochs', 'not', 'searched', 'int', '[1,', '4]'],
        ['trainer_config.class_ref', '(--algo)', 'btgym_aac.algorithms.aac.A3C', 'btgym_aac.algorithms.aac.PPO']]
    assert lines[5].startswith('continue it with the same ones')


def test_the_table_of_changed_settings_names_each_change_and_nothing_else(tmp_path):
    from btgym_aac.sweep.settings import CONFIG_DICTS, changed_settings, changes_table, sweep_settings

    paths = [str(tmp_path / 'a.csv'), str(tmp_path / 'b.csv')]
    for path in paths:
        Path(path).write_text(path)
    configs = default_configs(import_classes=False)
    configs['env_config']['kwargs']['scale'] = float('nan')  # NaN is the same NaN in both
    walk = dict(lockbox=0.2, folds=2, train_steps=200, test_episodes=2, seed=0, embargo=None, objective='return')
    then = sweep_settings(paths, configs, dict(TINY_SPACE, **{'trainer_config.kwargs.rollout_length':
                                                              CategoricalDistribution([10, 20])}), **walk)
    assert changed_settings(then, json.loads(json.dumps(then))) == []
    other = default_configs(import_classes=False)
    other['env_config']['kwargs'].update(scale=float('nan'), reward_scale=2.0)
    del other['policy_config']['kwargs']['heads_read_features']
    space = {LEARN_RATE: FloatDistribution(1e-5, 1e-2, log=True),
             'launcher_config.save_secs': IntDistribution(10, 60, step=10)}
    now = sweep_settings(paths[::-1], other, space, **dict(walk, embargo='0 days 02:00:00'))
    rows = changed_settings(then, now)
    files = [['{} (SHA-256 {}...)'.format(name, checksum[:12]) for name, checksum in settings['data']]
             for settings in (then, now)]
    assert rows == [
        ('--data file 1', files[0][0], files[1][0]), ('--data file 2', files[0][1], files[1][1]),
        ('--embargo', 'none', '0 days 02:00:00'),
        ('space launcher_config.save_secs', 'not searched', 'int [10, 60] step 10'),
        ('space trainer_config.kwargs.opt_learn_rate', 'float [1e-05, 0.001] log', 'float [1e-05, 0.01] log'),
        ('space trainer_config.kwargs.rollout_length', 'one of [10, 20]', 'not searched'),
        ('env_config.kwargs.reward_scale', '7', '2.0'),
        ('policy_config.kwargs.heads_read_features', 'True', 'not set')]
    table = changes_table(rows).splitlines()
    assert table[0].split() == ['setting', 'then', 'now'] and len(table) == len(rows) + 1
    assert {line.index(then, len(setting) + 2) for line, (setting, then, _) in zip(table[1:], rows)} == {
        table[0].index('then')}  # the column of the values before starts at one place
    before = {key: value for key, value in then.items() if key != CONFIG_DICTS}  # a study that predates them
    assert changed_settings(before, dict(then, configs='0123456789abcdef')) == [
        ('configs (digest)', then['configs'], '0123456789abcdef')]
    assert changed_settings(before, then) == []  # continued by a command that records them: the same search


@HAND_ASKED_TRIALS
def test_cut_off_trials_run_again_once_and_do_not_count(tmp_path):
    study = _study(tmp_path)
    done = study.ask({'x': FloatDistribution(0, 1)})
    study.tell(done, 1.0)
    broken = study.ask({'x': FloatDistribution(0, 1)})
    broken.set_user_attr('error', 'ValueError: bad value')
    study.tell(broken, state=TrialState.FAIL)
    stopped = study.ask({'x': FloatDistribution(0, 1)})
    stopped.set_user_attr(INTERRUPTED, True)
    study.tell(stopped, state=TrialState.FAIL)
    orphan = study.ask({'x': FloatDistribution(0, 1)})  # left running by a killed process
    assert fail_orphans(study) == [orphan.number]
    trials = study.get_trials()
    assert counted_numbers(trials) == {done.number, broken.number}
    assert wants_another(study, 3) and not wants_another(study, 2)
    assert run_interrupted_again(study) == [stopped.number, orphan.number]
    assert run_interrupted_again(study) == []  # queued once
    waiting = study.get_trials(states=(TrialState.WAITING,))
    assert [(trial.system_attrs['fixed_params'], trial.user_attrs[CONTINUES]) for trial in waiting] == [
        (stopped.params, stopped.number), (orphan.params, orphan.number)]
    for _ in waiting:  # the queued runs: taken up, finished
        study.tell(study.ask(), 1.0)
    lost = study.ask({'x': FloatDistribution(0, 1)})
    study.tell(lost, state=TrialState.FAIL)  # as Optuna fails a trial whose host stopped beating
    assert lost.number in counted_numbers(study.get_trials())
    _run_again_if_stale(study, study.get_trials()[lost.number])  # its callback: queued again, no longer counted
    assert lost.number not in counted_numbers(study.get_trials())
    again = study.ask()  # the lost trial's run again, itself cut off by a stop
    assert again.user_attrs[CONTINUES] == lost.number
    again.set_user_attr(INTERRUPTED, True)
    study.tell(again, state=TrialState.FAIL)
    assert run_interrupted_again(study) == [again.number]  # queued once more: its folder is not lost
    assert not {lost.number, again.number} & counted_numbers(study.get_trials())


@HAND_ASKED_TRIALS
def test_a_trial_two_hosts_start_beyond_the_total_gives_way_unrun_and_uncounted(tmp_path):
    study = _study(tmp_path)
    for value in (1.0, 2.0):
        study.tell(study.ask({'x': FloatDistribution(0, 1)}), value)
    first, second = study.ask(), study.ask()  # both hosts found one trial wanting at the same moment
    objective = TrialObjective(TrialPlan({}, TINY_SPACE, 'validation.csv', str(tmp_path), 2, 200, 2, 0, None,
                                         'vs-buy-and-hold'), total=3)
    with pytest.raises(SurplusTrial, match='trial 3 would be one more than the 3 asked for'):
        objective(second)
    assert second.user_attrs[SURPLUS] and second.params == {}  # nothing suggested, nothing run
    assert not is_surplus(first, 3) and is_surplus(first, 2)
    study.tell(second, state=TrialState.FAIL)
    assert counted_numbers(study.get_trials()) == {0, 1} and not wants_another(study, 3)
    study.tell(first, 3.0)
    assert counted_numbers(study.get_trials()) == {0, 1, 2}
    assert [row['number'] for row in trial_rows(study)] == [0, 1, 2]


@HAND_ASKED_TRIALS
def test_the_progress_moves_after_every_trial_but_one_that_gave_way(tmp_path, monkeypatch):
    """`search` updates the progress after a trial that ran (here one that failed at once) and not after a trial
    that gave way as surplus: another host had started the last one wanted after this host found it wanting."""
    study = _study(tmp_path)
    for value in (1.0, 2.0):
        study.tell(study.ask({'x': FloatDistribution(0, 1)}), value)
    found_wanting = iter([True, True, False])  # the second time, another host takes trial 2's place
    monkeypatch.setattr(runner, 'wants_another', lambda *_: next(found_wanting))
    updates = []
    validation = tmp_path / 'validation.csv'
    validation.write_text('no bars here\n')  # the trial fails on it at once
    plan = TrialPlan({}, TINY_SPACE, str(validation), str(tmp_path), 2, 200, 2, 0, None, 'vs-buy-and-hold')
    search(plan, 'sqlite:///{}'.format(tmp_path / 'study.db'), 'test', {'folds': 2}, 3, 'none',
           progress=SimpleNamespace(update=lambda *values: updates.append(values)))
    failed, surplus = _study(tmp_path).get_trials()[2:]
    assert failed.user_attrs['error'] and not failed.user_attrs.get(SURPLUS)
    assert surplus.user_attrs[SURPLUS] and surplus.state == TrialState.FAIL
    assert [done for done, _ in updates] == [3]  # trial 2's update alone


def test_a_trial_the_machine_fails_stops_the_sweep_uncounted(tmp_path):
    settings = {'folds': 2}
    url = 'sqlite:///{}'.format(tmp_path / 'study.db')
    plan = TrialPlan(small_configs(), TINY_SPACE, str(tmp_path / 'gone.csv'), str(tmp_path), 2, 200, 2, 0, None,
                     'vs-buy-and-hold')  # its data file is missing: an OSError, as a full disk or a held lock
    with pytest.raises(RuntimeError, match=r"trial 0 could not run: FileNotFoundError: .*gone\.csv.*; the sweep "
                                           r"stops \(the trial runs again when the sweep is started again\)"):
        search(plan, url, 'test', settings, total=3, pruner='none')
    trials = open_study(url, 'test', settings).get_trials()
    assert [(trial.state, trial.user_attrs[INTERRUPTED]) for trial in trials] == [(TrialState.FAIL, True)]
    assert counted_numbers(trials) == set()


def test_a_stop_before_the_walk_forward_marks_the_trial_cut_off(tmp_path, monkeypatch):
    from btgym_aac.distributed.supervision import StopRequested
    from btgym_aac.sweep import trial as trial_module

    def stopped(trial, space):
        raise StopRequested('SIGTERM')

    monkeypatch.setattr(trial_module, 'suggest', stopped)
    study = optuna.create_study(direction='maximize')
    objective = TrialObjective(TrialPlan({}, TINY_SPACE, 'validation.csv', str(tmp_path), 2, 200, 2, 0, None,
                                         'vs-buy-and-hold'), total=1)
    with pytest.raises(StopRequested):
        study.optimize(objective, n_trials=1, catch=(Exception,))
    trial = study.trials[0]
    assert trial.state == TrialState.FAIL and trial.user_attrs[INTERRUPTED] and 'seconds' in trial.user_attrs
    assert counted_numbers(study.trials) == set()


def _fold_record(policy, hold):
    agents = {name: {'return_pct': values, 'mean': {'return_pct': float(np.mean(values))}}
              for name, values in (('policy', policy), ('buy_and_hold', hold))}
    return {'fold': 0, 'test_window': {'first_bar': None, 'last_bar': None, 'bars': 0}, 'global_step': 200,
            'agents': agents}


def test_a_trial_below_the_median_after_a_fold_is_pruned_and_keeps_its_fold(tmp_path):
    study = optuna.create_study(direction='maximize', pruner=optuna.pruners.MedianPruner(n_startup_trials=2))
    for value in (1.0, 2.0):
        trial = study.ask()
        trial.report(value, 0)
        study.tell(trial, value)
    objective = TrialObjective(TrialPlan({}, {}, 'validation.csv', str(tmp_path), 2, 200, 2, 0, None,
                                         'vs-buy-and-hold'), total=5)
    low = study.ask()
    with pytest.raises(optuna.TrialPruned, match='pruned after fold 0'):
        objective._after_fold(low, [_fold_record([0.5, -0.5], [1.0, 1.0])])
    assert low.user_attrs['folds'][0]['score'] == -1.0 and low.user_attrs['returns'] == [-0.5, -1.5]
    high = study.ask()
    objective._after_fold(high, [_fold_record([3.0, 2.0], [0.0, 0.0])])  # above the median: goes on
    assert high.user_attrs['folds'][0]['policy_return_pct'] == 2.5
    last = study.ask()
    one_fold = TrialObjective(TrialPlan({}, {}, 'validation.csv', str(tmp_path), 1, 200, 2, 0, None,
                                        'vs-buy-and-hold'), total=5)
    one_fold._after_fold(last, [_fold_record([0.5, -0.5], [1.0, 1.0])])  # a last fold: scored, not pruned
    assert last.user_attrs['returns'] == [-0.5, -1.5]


# ------------------------------------------------------------------------------------------------- verdict

def test_the_verdict_needs_both_the_lockbox_and_the_deflation():
    best = SimpleNamespace(number=4)
    above = {'excess_return_pct': {'ci_low': 0.1, 'ci_high': 0.3}}
    across = {'excess_return_pct': {'ci_low': -0.1, 'ci_high': 0.3}}
    assert verdict(best, above, {'dsr': 0.97, 'trials': 12})[0] is True
    survives, words = verdict(best, across, {'dsr': 0.97, 'trials': 12})
    assert not survives and 'interval of policy minus buy-and-hold includes zero [-0.100 %, +0.300 %]' in words
    survives, words = verdict(best, above, {'dsr': 0.5, 'trials': 12})
    assert not survives and 'deflated Sharpe ratio 0.500 over 12 trials is below 0.95' in words
    assert verdict(best, None, {'dsr': 0.99, 'trials': 3})[0] is False
    assert verdict(None, None, {'dsr': None}) == (False, 'no trial completed: nothing to select')
    assert verdict(best, above, {'dsr': 0.97, 'trials': 12}, tested=[4])[0] is True
    survives, words = verdict(best, above, {'dsr': 0.97, 'trials': 12}, tested=[2, 4])
    assert not survives and 'the lockbox has been tested with 2 trials (2, 4): after its first test' in words


def test_the_verdict_says_where_the_lockbox_interval_lies():
    best, dsr = SimpleNamespace(number=4), {'dsr': 0.97, 'trials': 12}
    below = verdict(best, {'excess_return_pct': {'ci_low': -2.043, 'ci_high': -0.5}}, dsr)
    assert below == (False, 'the edge of trial 4 does not survive: on the lockbox the interval of policy minus '
                            'buy-and-hold lies entirely below zero [-2.043 %, -0.500 %]')
    across = verdict(best, {'excess_return_pct': {'ci_low': -2.043, 'ci_high': 0.5}}, dsr)[1]
    assert across.endswith('on the lockbox the interval of policy minus buy-and-hold includes zero [-2.043 %, '
                           '+0.500 %]')
    above = verdict(best, {'excess_return_pct': {'ci_low': 0.25, 'ci_high': 0.5}}, dsr)
    assert above == (True, 'the edge of trial 4 survives: on the lockbox the interval of policy minus buy-and-hold '
                           'lies entirely above zero [+0.250 %, +0.500 %], and its deflated Sharpe ratio is 0.970 over '
                           '12 trials')


def test_one_fold_one_episode_and_one_trial_are_counted_in_the_singular():
    from btgym_aac.sweep.report import trials_line
    from btgym_aac.walk_forward.summary import summarize

    assert summarize([_fold_record([0.5, -0.5, 0.2], [1.0, 1.0, 0.1])])['lines'][0] == \
        'out of sample: 3 test episodes over 1 fold'  # a lockbox test
    assert summarize([_fold_record([0.5], [1.0])])['lines'][0] == 'out of sample: 1 test episode over 1 fold'
    assert summarize([_fold_record([0.5], [1.0])] * 2)['lines'][0] == 'out of sample: 2 test episodes over 2 folds'
    row = {'counted': True, 'state': 'COMPLETE', 'interrupted': False}
    assert trials_line([row]) == '1 trial (1 complete)'
    assert trials_line([row, dict(row, state='PRUNED')]) == '2 trials (1 complete, 1 pruned)'


def test_the_experimental_features_a_sweep_uses_warn_of_nothing(tmp_path):
    from optuna.exceptions import ExperimentalWarning

    from btgym_aac.sweep.report import write_plots
    from btgym_aac.sweep.study import running_elsewhere

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        study = _study(tmp_path)  # the heartbeat
        _study(tmp_path)  # opened again, as every search process does
        running_elsewhere(study)  # failing a lost host's trials
        for value in (1.0, 2.0):
            trial = study.ask({'x': FloatDistribution(0, 1), 'y': FloatDistribution(0, 1)})
            study.tell(trial, value)
        assert sorted(write_plots(study, str(tmp_path), [])[0]) == ['optimisation_history.png',
                                                                     'parameter_importances.png']
        optuna.storages.RDBStorage('sqlite:///{}'.format(tmp_path / 'study.db'), heartbeat_interval=30)  # not ours
    assert [str(warning.message) for warning in caught if warning.category is ExperimentalWarning] == [
        'Argument ``heartbeat_interval`` is an experimental feature. The interface can change in the future.']


def test_the_docs_name_the_keys_of_a_trials_fold_record():
    from btgym_aac.sweep.trial import fold_metrics

    docs = (Path(__file__).parents[1] / 'docs' / 'sweep.md').read_text()
    per_fold = re.search(r'`folds` \(per fold: ([^)]*)\)', docs).group(1)  # the report's list of a trial's keys
    assert sorted(re.findall(r'`(\w+)`', per_fold)) == sorted(fold_metrics(_fold_record([0.5], [0.1]), 'return'))


# ------------------------------------------------------------------------------------------- tiny sweeps

@pytest.mark.xdist_group('sweep')
def test_a_tiny_sweep_keeps_the_lockbox_out_of_every_trial_and_reports_it(tmp_path):
    data = three_days_csv(tmp_path)
    out = tmp_path / 'sweep'
    report = sweep(small_configs(), data, trials=2, out=str(out), folds=1, train_steps=200, test_episodes=2,
                   space=TINY_SPACE, seed=3, episode_plots=False)
    assert json.loads((out / 'sweep.json').read_text()) == json.loads(json.dumps(report))
    trials = report['trials']
    assert [trial['number'] for trial in trials] == [0, 1]
    assert all(trial['state'] == 'COMPLETE' and trial['seed'] == 3 and len(trial['folds']) == 1 for trial in trials)
    frame = read_ohlcv([data])
    lockbox_start = split_lockbox(frame, 0.2)[1].index[0]
    for trial in trials:
        folder = out / trial['folder']
        walk = json.loads((folder / 'walk_forward.json').read_text())
        assert trial['value'] == pytest.approx(np.mean(trial['returns']))
        assert trial['returns'] == pytest.approx(np.subtract(
            *[[v for fold in walk['folds'] for v in fold['agents'][name]['return_pct']]
              for name in ('policy', 'buy_and_hold')]).tolist())
        for part in ('train.csv', 'test.csv'):
            bars = read_ohlcv([str(folder / 'fold_0' / part)])
            assert bars.index[-1] < lockbox_start  # no trial saw a lockbox bar
        assert os.listdir(folder / 'fold_0' / 'evaluation') == ['report.json']  # no episode plot
    best = max(trials, key=lambda trial: trial['value'])
    assert report['best_trial'] == best
    lockbox = report['lockbox']
    assert lockbox['trial'] == best['number']
    tested = read_ohlcv([str(out / lockbox['folder'] / 'fold_0' / 'test.csv')])
    assert tested.index[0] >= lockbox_start and tested.index[-1] == frame.index[-1]
    assert lockbox['fold']['train_window']['bars'] == len(frame[frame.index < lockbox_start])
    assert os.listdir(out / lockbox['folder'] / 'fold_0' / 'evaluation') == ['report.json']
    dsr = deflated_sharpe_ratio(best['returns'], [episode_sharpe(trial['returns']) for trial in trials])
    assert report['deflated_sharpe'] == pytest.approx(dsr)
    assert report['verdict'] == verdict(SimpleNamespace(number=best['number']), lockbox['summary'], dsr)[1]
    assert report['lines'][-1] == report['verdict']
    assert sorted(report['plots']) == ['best_trial_equity.png', 'optimisation_history.png',
                                       'parameter_importances.png']
    assert all((out / name).stat().st_size > 10000 for name in report['plots'])

    assert report['lockbox_tests'] == [best['number']]
    again = sweep(small_configs(), data, trials=2, out=str(out), folds=1, train_steps=200, test_episodes=2,
                  space=TINY_SPACE, seed=3)
    assert again['trials'] == trials and again['lockbox'] == lockbox  # nothing is run again
    assert again['lockbox_tests'] == [best['number']] and again['verdict'] == report['verdict']
    earlier = out / 'lockbox' / 'trial_99' / 'fold_0'  # as a test of an earlier best trial would have left it
    earlier.mkdir(parents=True)
    (earlier / 'fold.json').write_text((out / lockbox['folder'] / 'fold_0' / 'fold.json').read_text())
    os.utime(earlier / 'fold.json', (1, 1))
    spent = sweep(small_configs(), data, trials=2, out=str(out), folds=1, train_steps=200, test_episodes=2,
                  space=TINY_SPACE, seed=3)
    assert spent['lockbox_tests'] == [99, best['number']] and spent['survives'] is False
    assert 'the lockbox has been tested with 2 trials (99, {})'.format(best['number']) in spent['verdict']
    shutil.rmtree(out / 'lockbox' / 'trial_99')
    with pytest.raises(ValueError, match=r"other settings:\n  setting +then +now\n  --test-episodes +2 +3\ncontinue"):
        sweep(small_configs(), data, trials=2, out=str(out), folds=1, train_steps=200, test_episodes=3,
              space=TINY_SPACE, seed=3)
    wider = small_configs()
    wider['policy_config']['kwargs']['lstm_layers'] = (32, 32)
    with pytest.raises(ValueError, match=r"other settings:\n  setting +then +now\n  "
                                         r"policy_config\.kwargs\.lstm_layers +\[16\] +\[32, 32\]\ncontinue"):
        sweep(wider, data, trials=2, out=str(out), folds=1, train_steps=200, test_episodes=2, space=TINY_SPACE,
              seed=3)
    with pytest.raises(ValueError, match="holds the trials of study 'sweep' in sqlite:///.+: give study 'other' "
                                         "another --out"):
        sweep(small_configs(), data, trials=2, out=str(out), folds=1, train_steps=200, test_episodes=2,
              space=TINY_SPACE, seed=3, study_name='other')
    assert len(json.loads((out / 'sweep.json').read_text())['trials']) == 2


@pytest.mark.xdist_group('sweep')
def test_a_failing_trial_is_recorded_with_its_error_and_the_sweep_goes_on(tmp_path):
    space = {'trainer_config.kwargs.model_gamma': CategoricalDistribution([1.5])}  # out of [0, 1]
    report = sweep(small_configs(), three_days_csv(tmp_path), trials=2, out=str(tmp_path / 'sweep'), folds=2,
                   train_steps=200, test_episodes=2, space=space)
    assert [trial['state'] for trial in report['trials']] == ['FAIL', 'FAIL']
    assert all('could not set up' in trial['error'] and 'model_gamma' in trial['error'] and trial['counted']
               for trial in report['trials'])  # the worker's own reason reaches the trial's record
    assert report['best_trial'] is None and report['lockbox'] is None
    assert report['verdict'] == 'no trial completed: nothing to select'


def test_bad_sweep_settings_exit_2_before_any_trial(tmp_path, capsys):
    data = three_days_csv(tmp_path)
    space = tmp_path / 'space.py'
    space.write_text('from optuna.distributions import FloatDistribution\n'
                     'SPACE = {"trainer_config.kwargs.learn_rate": FloatDistribution(1e-5, 1e-3)}\n')
    cases = ((['--space', str(space)], "trainer_config takes no 'learn_rate'"),
             (['--trials', '0'], 'trials must be a whole number >= 1'),
             (['--lockbox', '1'], 'lockbox must be below 1'),
             (['--folds', '30'], 'is too short for an episode'),
             (['--train-steps', '0'], 'train_steps must be a whole number >= 1'),
             (['--search-only'], 'search_only needs a storage shared with a sweep command that tests the lockbox'),
             (['--storage', 'nonsense'], '--storage nonsense: the study cannot be opened there (ArgumentError'))
    config = tmp_path / 'config.py'
    config.write_text(CONFIG_FILE)
    for number, (arguments, message) in enumerate(cases):
        out = tmp_path / 'sweep_{}'.format(number)
        assert cli_main(['sweep', str(config), '--data', data, '--trials', '2', '--out', str(out)] + arguments) == 2
        assert message in capsys.readouterr().err
        # nothing written (a storage is tried under the folder's lock): no data, and the folder is not claimed for
        # a study, so the same --out takes the corrected command
        assert sorted(os.listdir(out)) == ['.launcher.lock'] if arguments[0] == '--storage' else not out.exists()


def test_a_lockbox_too_short_for_an_episode_is_refused_before_any_trial(tmp_path):
    with pytest.raises(ValueError, match=r'the lockbox \(2017-01-03 \S+ to 2017-01-03 23:59:00\) is too short for a '
                                         r'test episode: give a larger --lockbox'):
        sweep(small_configs(), three_days_csv(tmp_path), trials=1, out=str(tmp_path / 'sweep'), lockbox=0.05,
              train_steps=200, test_episodes=2, space=TINY_SPACE)
    assert not (tmp_path / 'sweep' / 'trials').exists()
