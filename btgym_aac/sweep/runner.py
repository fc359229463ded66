"""`sweep`: an Optuna search over a configuration's settings, every trial a walk-forward over the validation data,
the best trial then tested once on a lockbox no trial has seen, its score deflated for the number of trials.

The lockbox, the last stretch of the data's time span, is set aside before the search, so that no trial ever sees
it; the rest, the validation data, is what the trials' walk-forwards cut into folds. Everything goes under `out`:
`data/` (the validation part and the lockbox), `sweep.db` (the embedded study), `trials/trial_<n>/` (each trial's
walk-forward), `lockbox/trial_<n>/` (the best trial's lockbox test), `sweep.json` and the plots. Started again on
the same `out` (or the same storage and study), a sweep goes on: a trial a stop cut off runs again with its values,
from its last finished fold.
"""
import multiprocessing
import os
import signal
import sys
import time

import numpy as np
import optuna

from btgym_aac.config_modules import dumps_with_sources, load_with_sources
from btgym_aac.distributed.log_dir import LogDirLock
from btgym_aac.distributed.supervision import STOP_GRACE_SECONDS, signals_handled, stop_on_signal, terminate_and_wait
from btgym_aac.progress import Progress
from btgym_aac.sweep import PRUNERS
from btgym_aac.sweep import report as reports
from btgym_aac.sweep.space import builtin_space, check_space, configs_with, load_space
from btgym_aac.sweep.settings import sweep_settings
from btgym_aac.sweep.study import (DEFAULT_STUDY, SURPLUS, check_owner, claim_out, counted_numbers, fail_orphans,
                                   open_study, run_interrupted_again, running_elsewhere, safe_url, storage_url,
                                   wants_another)
from btgym_aac.sweep.trial import (DEFAULT_OBJECTIVE, ENVIRONMENT_ERROR, TrialObjective, TrialPlan, check_objective,
                                   equity_record)
from btgym_aac.validation import check_number, check_whole_number
from btgym_aac.walk_forward.blocks import block_windows, data_market, read_data, whole_block, write_block_file

LOCKBOX_DIR = 'lockbox'
DATA_DIR = 'data'
VALIDATION_FILE = 'validation.csv'
LOCKBOX_FILE = 'lockbox.csv'
OTHERS_POLL_SECONDS = 5


def sweep(configs, data, trials, out='runs/sweep', space=None, algo='a3c', storage=None, study_name=None, folds=2,
          train_steps=None, test_episodes=5, seed=0, embargo=None, objective=DEFAULT_OBJECTIVE, lockbox=0.2,
          pruner='median', parallel=1, episode_plots=True, search_only=False, show_progress=True):
    """Searches `space` for the settings of `configs` that score best out of sample (see the module docstring).

    Args:
        configs: the config dicts the trials start from (`run_config.default_configs()`'s layout).
        data: CSV path or list of paths; for a multi-asset env, a dict asset -> path(s) (see `walk_forward`).
        trials: the number of trials the study should hold (done, pruned or failed; those cut off by a stop do not
            count): a study holding them already only gets its lockbox test and report.
        out: the sweep's folder.
        space: dict of config key names to Optuna distributions, or the path of a space file defining `SPACE`;
            None: the built-in space of `algo` (`space.builtin_space`).
        algo: the trainer the built-in space is for ('a3c', 'unreal', 'ppo').
        storage: an SQLAlchemy URL of the study's storage (e.g. postgresql://user@host/db), shared by every sweep
            command given it; None: SQLite in `out`.
        study_name: the study's name in the storage (default 'sweep').
        folds, train_steps, test_episodes, seed, embargo, episode_plots: each trial's walk-forward's (see
            `walk_forward`); the seed is the same for every trial, so that trials differ by their settings alone.
        objective: 'vs-buy-and-hold' (default), 'return' or 'sharpe' (see `trial.score`).
        lockbox: the share of the data's time span, at its end, that no trial sees (0: none).
        pruner: 'median' (Optuna's MedianPruner, after every fold) or 'none'.
        parallel: trials run at a time by this command (each in a process of its own, each with its cluster).
        search_only: run trials only (a helper host of a shared `storage`): no wait for other commands' trials, no
            lockbox test, no report file; a command without it makes them. The returned report holds the trials.
        show_progress: show the trials done of `trials` and the time left on stdout, after every trial (a bar
            redrawn on a terminal, a line elsewhere; see `btgym_aac.progress`). The trials' and the lockbox test's
            clusters show no progress of their own (`quiet_training`).

    Returns:
        the report (also `<out>/sweep.json`): settings, trials, best trial, its validation summary, lockbox test,
        deflated Sharpe ratio, verdict, plots and summary `lines`.

    Raises:
        ValueError: a bad setting or space name, data too short for the folds, or a study started with other
            settings; nothing is run then.
        KeyboardInterrupt: the sweep was stopped (run it again to go on).
    """
    trials, parallel = check_whole_number('trials', trials, 1), check_whole_number('parallel', parallel, 1)
    test_episodes = check_whole_number('test_episodes', test_episodes, 1)
    space = _checked_search(space, algo, configs, objective, pruner, search_only and storage is None)
    out = os.path.abspath(out)
    paths, train_steps, validation, held_out, gap = _checked_data(data, train_steps, configs, lockbox, folds,
                                                                  test_episodes, embargo)
    with LogDirLock(out), signals_handled({signal.SIGTERM: stop_on_signal}):  # (a stop marks the trial it cuts)
        url, name = storage_url(storage, out), study_name or DEFAULT_STUDY
        check_owner(out, url, name)
        settings = sweep_settings(paths, configs, space, lockbox=lockbox, folds=folds, train_steps=train_steps,
                                  test_episodes=test_episodes, seed=seed, embargo=str(gap) if gap else None,
                                  objective=objective)
        study = open_study(url, name, settings)  # (a study of other settings is refused before anything is written)
        claim_out(out, url, name)
        market = data_market(paths)
        validation_file, lockbox_file = write_sweep_data(validation, held_out, out, market)
        plan = TrialPlan(quiet_training(configs), space, validation_file, out, folds, train_steps, test_episodes,
                         seed, embargo, objective, episode_plots, search_only)
        if storage is None:
            fail_orphans(study)
        run_interrupted_again(study)
        with Progress('trial', trials, sys.stdout, line_seconds=0, enabled=show_progress) as progress:
            progress.update(trials_done(study))
            _search_in_processes(plan, url, name, settings, trials, pruner, parallel, storage is not None, progress)
        return _finish(study, plan, settings, url, market, (validation, held_out) if lockbox_file else None)


def quiet_training(configs):
    """`configs` whose Launchers show no progress of their own (the sweep shows the trials'); `show_progress` is
    not part of the configs' digest."""
    return dict(configs, launcher_config=dict(configs.get('launcher_config') or {}, show_progress=False))


def split_lockbox(frame, fraction):
    """Cuts `frame` in time: the bars of the last `fraction` of its time span form the lockbox.

    Args:
        frame: OHLCV DataFrame sorted by time.
        fraction: in [0, 1); 0: no lockbox.

    Returns:
        (validation DataFrame, lockbox DataFrame; empty for fraction 0).

    Raises:
        ValueError: `fraction` out of range, or a part without bars.
    """
    check_number('lockbox', fraction, 0, 1)
    if fraction == 1:
        raise ValueError('lockbox must be below 1 (a share of the time span), got 1')
    whole = whole_block(0, frame)
    cut = whole.stop - (whole.stop - whole.start) * fraction
    validation, lockbox = frame[frame.index < cut], frame[frame.index >= cut]
    if not len(validation) or (fraction > 0 and not len(lockbox)):
        raise ValueError('a lockbox of {} of the time span leaves {} bars to search on and {} in the lockbox: give '
                         'a fraction that leaves bars on both sides'.format(fraction, len(validation), len(lockbox)))
    return validation, lockbox


def read_sweep_data(paths, env_kwargs, fraction):
    """Reads the data files and sets the lockbox aside (see `split_lockbox`).

    Args:
        paths: the data's CSV files (for several assets, a dict asset -> files: `walk_forward.blocks.read_data`).
        env_kwargs: the env's kwargs (its `parsing_params`, or its multi-asset `dataset`: how to read them).
        fraction: the lockbox's share of the time span.

    Returns:
        (validation DataFrame, lockbox DataFrame).
    """
    return split_lockbox(read_data(env_kwargs, paths), fraction)


def write_sweep_data(validation, lockbox, out, market=None):
    """Writes both parts of the data under `<out>/data/` (kept when they exist: written by a sweep of the same
    settings, which the study checks first).

    Args:
        validation, lockbox: the parts (`read_sweep_data`).
        out: the sweep's folder.
        market: the data's known-edge `MarketSpec` (written beside both parts), or None.

    Returns:
        (validation file, lockbox file or None).
    """
    folder = os.path.join(out, DATA_DIR)
    os.makedirs(folder, exist_ok=True)
    validation_file = write_block_file([validation], os.path.join(folder, VALIDATION_FILE), market)
    lockbox_file = write_block_file([lockbox], os.path.join(folder, LOCKBOX_FILE), market) if len(lockbox) else None
    return validation_file, lockbox_file


def _checked_data(data, train_steps, configs, lockbox, folds, test_episodes, embargo):
    """The data files and the steps per fold (`data_and_steps`), the data less its lockbox, the lockbox and the
    embargo, checked before anything is written: the lockbox's share, the folds of the rest and the lockbox each
    holding an episode window.

    Returns:
        (paths, train_steps, validation DataFrame, lockbox DataFrame, embargo Timedelta).
    """
    from btgym_aac.walk_forward.runner import data_and_steps, plan_frame_folds

    paths, train_steps = data_and_steps(data, train_steps, configs)
    env_kwargs = configs['env_config'].get('kwargs', {})
    validation, held_out = read_sweep_data(paths, env_kwargs, lockbox)
    gap = plan_frame_folds(env_kwargs, validation, folds, test_episodes, embargo)[1]
    _check_lockbox(held_out, env_kwargs, test_episodes)
    return paths, train_steps, validation, held_out, gap


def _check_lockbox(held_out, env_kwargs, test_episodes):
    """Raises ValueError naming --lockbox when the lockbox holds no episode window (checked before any trial)."""
    if len(held_out):
        try:
            block_windows(whole_block(1, held_out), env_kwargs, test_episodes)
        except ValueError as error:
            raise ValueError('the lockbox ({} to {}) is too short for a test episode: give a larger --lockbox, or '
                             'shorter episodes ({})'.format(held_out.index[0], held_out.index[-1], error)) from None


def _checked_search(space, algo, configs, objective, pruner, search_only_alone=False):
    """The search space (see `sweep`), checked against `configs`, after checking the objective, the pruner and that
    a search-only command shares its study (`search_only_alone`: it would not)."""
    if search_only_alone:
        raise ValueError('search_only needs a storage shared with a sweep command that tests the lockbox and '
                         'reports (--storage)')
    check_objective(objective)
    if pruner not in PRUNERS:
        raise ValueError('pruner must be one of {}, got {!r}'.format(', '.join(PRUNERS), pruner))
    space = load_space(space) if isinstance(space, (str, os.PathLike)) else dict(space or builtin_space(algo))
    check_space(space, configs)
    return space


def _search_in_processes(plan, url, name, settings, total, pruner, parallel, shared, progress):
    """Runs the search in this process and `parallel - 1` more, all on the same study, showing the trials done on
    `progress` (a `btgym_aac.progress.Progress`)."""
    context = multiprocessing.get_context('spawn')
    helpers = [context.Process(target=_helper_search, name='btgym_aac-sweep-{}'.format(index),
                               args=(dumps_with_sources(plan), url, name, settings, total, pruner, index))
               for index in range(1, parallel)]
    for helper in helpers:
        helper.start()
    try:
        search(plan, url, name, settings, total, pruner, 0, shared or parallel > 1, progress)
        if shared and not plan.search_only:
            _await_other_processes(plan, url, name, settings, total, pruner, progress)
    except BaseException:
        for helper in terminate_and_wait(helpers, STOP_GRACE_SECONDS):
            helper.kill()
        raise
    finally:
        for helper in helpers:
            helper.join()  # (the others finish the trials they run)
    failed = [helper.name for helper in helpers if helper.exitcode not in (0, None)]
    if failed:
        raise RuntimeError('sweep process(es) {} ended with an error (see their output above)'.format(failed))


def _await_other_processes(plan, url, name, settings, total, pruner, progress):
    """Waits until no trial of the shared study runs (in other commands, maybe on other hosts), running any trial
    that a lost host's left to be run again, so that the report covers them all; shows each trial they finish."""
    study = open_study(url, name, settings)
    done = trials_done(study)
    while running_elsewhere(study) or wants_another(study, total):
        if wants_another(study, total):
            search(plan, url, name, settings, total, pruner, 0, True, progress)
        else:
            time.sleep(OTHERS_POLL_SECONDS)
            finished = trials_done(study)
            if finished != done:
                progress.update(finished, 'trials of other processes')
        done = trials_done(study)


def _helper_search(pickled_plan, url, name, settings, total, pruner, index):
    """Entry point of a `--parallel` helper process."""
    try:
        with signals_handled({signal.SIGTERM: stop_on_signal}):
            search(load_with_sources(pickled_plan), url, name, settings, total, pruner, index, True)
    except KeyboardInterrupt:
        raise SystemExit(130) from None


def trials_done(study):
    """The number of the study's trials that count towards the sweep's (see `study.counted_numbers`)."""
    return len(counted_numbers(study.get_trials(deepcopy=False)))


def search(plan, url, name, settings, total, pruner, index=0, distinct=False, progress=None):
    """Runs trials of the study one after the other until it holds `total` (see `study.wants_another`).

    Args:
        plan: the sweep's `TrialPlan`.
        url, name, settings: the study's storage URL, name and settings (see `study.open_study`).
        total: the number of trials wanted.
        pruner: 'median' or 'none'.
        index: this process's number among the sweep's processes (seeds its sampler).
        distinct: other processes search the same study: the process id joins the sampler's seed.
        progress: a `btgym_aac.progress.Progress` updated after every trial with the trials done and the trial that
            ended; None: nothing shown.

    Raises:
        RuntimeError: a trial failed for a reason of the machine's (an OSError: a disk, a port, a lock), which every
            trial would meet; the trial is not counted and runs again in the next sweep.
    """
    study = open_study(url, name, settings)
    study.pruner = optuna.pruners.MedianPruner() if pruner == 'median' else optuna.pruners.NopPruner()
    objective = TrialObjective(plan, total)
    while wants_another(study, total):
        entropy = [plan.seed, index, len(study.get_trials(deepcopy=False))] + ([os.getpid()] if distinct else [])
        study.sampler = optuna.samplers.TPESampler(seed=int(np.random.SeedSequence(entropy).generate_state(1)[0]))
        finished = []
        study.optimize(objective, n_trials=1, catch=(Exception,), callbacks=[lambda _, trial: finished.append(trial)])
        latest = finished[-1]
        if ENVIRONMENT_ERROR in latest.user_attrs:
            raise RuntimeError('trial {} could not run: {}; the sweep stops (the trial runs again when the sweep is '
                               'started again)'.format(latest.number, latest.user_attrs[ENVIRONMENT_ERROR]))
        if progress is not None and not latest.user_attrs.get(SURPLUS):
            progress.update(trials_done(study), reports.trial_words(latest, plan.objective))


def _finish(study, plan, settings, url, market, lockbox_frames):
    """Tests the best trial on the lockbox and writes the report and the plots (a search-only command: the trials
    alone, nothing written)."""
    from btgym_aac.walk_forward.runner import holdout_test

    if plan.search_only:
        rows = reports.trial_rows(study)
        return {'settings': settings, 'storage': safe_url(url), 'study': study.study_name, 'trials': rows,
                'search_only': True, 'lines': [reports.trials_line(rows), reports.SEARCH_ONLY_LINE]}

    completed = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    best = study.best_trial if completed else None
    validation, lockbox, equity_records = None, None, []
    if best is not None:
        validation, equity_records = best.user_attrs['summary'], list(best.user_attrs['equity'])
        if lockbox_frames is not None:
            folder = os.path.join(plan.out, LOCKBOX_DIR, 'trial_{}'.format(best.number))
            lockbox = dict(holdout_test(configs_with(plan.configs, best.params), *lockbox_frames, out=folder,
                                        train_steps=plan.train_steps, test_episodes=plan.test_episodes,
                                        seed=plan.seed, embargo=plan.embargo, market=market,
                                        episode_plots=plan.episode_plots),
                           trial=best.number, folder=os.path.relpath(folder, plan.out))
            equity_records.append(dict(equity_record(lockbox['fold']), fold='lockbox'))
    dsr = reports.deflation(study, best) if best is not None else {'dsr': None, 'reason': 'no completed trial'}
    tested = reports.lockbox_tests(os.path.join(plan.out, LOCKBOX_DIR))
    survives, words = reports.verdict(best, lockbox and lockbox['summary'], dsr, tested)
    rows = reports.trial_rows(study)
    plots, skipped = reports.write_plots(study, plan.out, equity_records)
    report = {'settings': settings, 'storage': safe_url(url), 'study': study.study_name, 'trials': rows,
              'best_trial': next((row for row in rows if best is not None and row['number'] == best.number), None),
              'validation': validation, 'lockbox': lockbox, 'lockbox_tests': tested, 'deflated_sharpe': dsr,
              'survives': survives,
              'verdict': words, 'plots': plots, 'plots_skipped': skipped}
    report['lines'] = reports.summary_lines(report)
    reports.write_report(report, plan.out)
    return report
