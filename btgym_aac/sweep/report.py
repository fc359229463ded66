"""A sweep's report: every trial, the best one, its lockbox test, the deflated Sharpe ratio of its validation
returns and the verdict in words (`sweep.json`), the plots, and the summary lines printed at the end."""
import collections
import os

from optuna.trial import TrialState

from btgym_aac.sweep.deflation import deflated_sharpe_ratio
from btgym_aac.sweep.study import CONTINUES, INTERRUPTED, counted_numbers, experimental_feature, ran
from btgym_aac.sweep.trial import episode_sharpe
from btgym_aac.walk_forward.runner import FOLD_FILE

REPORT_FILE = 'sweep.json'
HISTORY_PLOT = 'optimisation_history.png'
IMPORTANCE_PLOT = 'parameter_importances.png'
EQUITY_PLOT = 'best_trial_equity.png'
DSR_THRESHOLD = 0.95
SEARCH_ONLY_LINE = ('search only: the lockbox test, the verdict and the report are made by a sweep command without '
                    '--search-only sharing the study')


def trial_rows(study):
    """Every trial of the study that ran (not a surplus one, `study.is_surplus`) as a JSON-ready dict: number,
    state, params, value, seed, folder, per-fold metrics, per-episode out-of-sample returns of the objective (see
    `trial.episode_returns`), seconds, error, whether a stop cut it off and which trial it continues."""
    rows = []
    trials = study.get_trials(deepcopy=False)
    counted = counted_numbers(trials)
    for trial in ran(trials):
        attrs = trial.user_attrs
        rows.append({'number': trial.number, 'state': trial.state.name, 'params': trial.params,
                     'value': trial.value if trial.state == TrialState.COMPLETE else None,
                     'seed': attrs.get('seed'), 'folder': attrs.get('folder'), 'folds': attrs.get('folds', []),
                     'returns': attrs.get('returns', []), 'seconds': attrs.get('seconds'), 'error': attrs.get('error'),
                     'interrupted': bool(attrs.get(INTERRUPTED)), 'continues': attrs.get(CONTINUES),
                     'counted': trial.number in counted})
    return rows


def deflation(study, best):
    """The deflated Sharpe ratio of the best trial's per-episode validation returns, against the Sharpe ratios of
    every trial that has out-of-sample returns (completed and pruned ones: all were tried).

    Returns:
        `deflation.deflated_sharpe_ratio`'s dict, or {'dsr': None, 'reason': ...} where it is undefined.
    """
    scored = [trial for trial in study.get_trials(deepcopy=False)
              if trial.state in (TrialState.COMPLETE, TrialState.PRUNED) and trial.user_attrs.get('returns')]
    returns = best.user_attrs.get('returns') or []
    try:
        return deflated_sharpe_ratio(returns, [episode_sharpe(trial.user_attrs['returns']) for trial in scored])
    except ValueError as error:
        return {'dsr': None, 'reason': str(error)}


def lockbox_tests(folder):
    """The trials tested on the lockbox so far, in the order of their tests: those whose test folder in `folder`
    (the sweep's `lockbox/`) holds a finished fold record."""
    finished = []
    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        record = os.path.join(folder, name, 'fold_0', FOLD_FILE)
        if name.startswith('trial_') and name[len('trial_'):].isdigit() and os.path.isfile(record):
            finished.append((os.path.getmtime(record), int(name[len('trial_'):])))
    return [number for _, number in sorted(finished)]


def verdict(best, lockbox, dsr, tested=None):
    """Plain words: does the best trial's edge survive the lockbox and the deflation?

    Args:
        best: the best FrozenTrial, or None.
        lockbox: the lockbox test's summary (`walk_forward.summary.summarize`), or None without a lockbox.
        dsr: `deflation`'s dict.
        tested: the trials tested on the lockbox (`lockbox_tests`); None: the best one alone. A lockbox tested with
            more than one trial (a larger --trials found another best) no longer tests the one selected last.

    Returns:
        (survives: bool, sentence).
    """
    if best is None:
        return False, 'no trial completed: nothing to select'
    reasons = []
    if tested is not None and len(tested) > 1:
        reasons.append('the lockbox has been tested with {} trials ({}): after its first test it is a second '
                       'validation set, not a test'.format(len(tested), ', '.join(map(str, tested))))
    if lockbox is None:
        reasons.append('there is no lockbox to confirm it')
    elif not lockbox['excess_return_pct']['ci_low'] > 0:
        reasons.append('on the lockbox ' + interval_words(lockbox['excess_return_pct']))
    if dsr.get('dsr') is None:
        reasons.append('its deflated Sharpe ratio is undefined ({})'.format(dsr.get('reason')))
    elif dsr['dsr'] < DSR_THRESHOLD:
        reasons.append('its deflated Sharpe ratio {:.3f} over {} trials is below {}'.format(
            dsr['dsr'], dsr['trials'], DSR_THRESHOLD))
    if reasons:
        return False, 'the edge of trial {} does not survive: {}'.format(best.number, '; '.join(reasons))
    return True, ('the edge of trial {} survives: on the lockbox {}, and its deflated Sharpe ratio is {:.3f} over {} '
                  'trials'.format(best.number, interval_words(lockbox['excess_return_pct']), dsr['dsr'], dsr['trials']))


def interval_words(interval):
    """Where the bootstrap interval of policy minus buy-and-hold (`summarize`'s `excess_return_pct`) lies, in words:
    entirely above zero, entirely below zero, or including zero."""
    low, high = interval['ci_low'], interval['ci_high']
    where = ('lies entirely above zero' if low > 0 else 'lies entirely below zero' if high < 0 else
             'includes zero' if low <= 0 <= high else 'is undefined')
    return 'the interval of policy minus buy-and-hold {} [{:+.3f} %, {:+.3f} %]'.format(where, low, high)


def trial_words(trial, objective):
    """A finished trial in words, e.g. 'trial 4 complete (vs-buy-and-hold +0.1420)', 'trial 6 pruned', 'trial 2
    failed'."""
    if trial.state == TrialState.COMPLETE:
        return 'trial {} complete ({} {:+.4f})'.format(trial.number, objective, trial.value)
    return 'trial {} {}'.format(trial.number, 'failed' if trial.state == TrialState.FAIL else trial.state.name.lower())


def trials_line(rows):
    """The count of the study's trials (`trial_rows`) by state, and of those a stop cut off, in words."""
    trials = [row for row in rows if row['counted']]
    states = collections.Counter(row['state'].lower() for row in trials)
    cut_off = sum(row['interrupted'] for row in rows)
    return '{} trial{} ({}){}'.format(len(trials), '' if len(trials) == 1 else 's',
                                      ', '.join('{} {}'.format(n, s) for s, n in sorted(states.items())),
                                      '; {} cut off by a stop and run again'.format(cut_off) if cut_off else '')


def summary_lines(report):
    """The summary printed at the end of a sweep."""
    lines = [trials_line(report['trials'])]
    best = report['best_trial']
    if best is not None:
        lines.append('best: trial {} ({} {:+.4f} on validation), {}'.format(
            best['number'], report['settings']['objective'], best['value'],
            ', '.join('{}={:.4g}'.format(k.rsplit('.', 1)[-1], v) if isinstance(v, float) else
                      '{}={}'.format(k.rsplit('.', 1)[-1], v) for k, v in best['params'].items())))
    if report['lockbox'] is not None:
        lines.extend('lockbox: {}'.format(line) for line in report['lockbox']['summary']['lines'][1:3])
    dsr = report['deflated_sharpe']
    if dsr.get('dsr') is not None:
        lines.append('deflated Sharpe ratio {:.3f} (Sharpe {:+.3f} per episode over {} episodes; {} trials, expected '
                     'maximum of zero-skill trials {:+.3f})'.format(dsr['dsr'], dsr['sharpe'], dsr['observations'],
                                                                    dsr['trials'], dsr['expected_maximum']))
    lines.append(report['verdict'])
    return lines


def write_plots(study, out, equity_records):
    """Optuna's optimisation history and parameter importances, and the best trial's stitched out-of-sample and
    lockbox equity, as PNGs in `out`.

    Returns:
        (file names written, {plot: why it was not drawn}).
    """
    import matplotlib.pyplot as plt
    from optuna.visualization.matplotlib import plot_optimization_history, plot_param_importances

    from btgym_aac.walk_forward.plots import plot_stitched_equity

    written, skipped = [], {}
    completed = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    plots = {HISTORY_PLOT: (plot_optimization_history, 1), IMPORTANCE_PLOT: (plot_param_importances, 2)}
    for name, (plot, needed) in plots.items():
        if len(completed) < needed:
            skipped[name] = 'needs {} completed trial(s), the study has {}'.format(needed, len(completed))
            continue
        with experimental_feature(plot.__name__):
            try:
                axes = plot(study)
            except (ValueError, RuntimeError) as error:
                skipped[name] = str(error)
                continue
        axes.figure.savefig(os.path.join(out, name), dpi=90, bbox_inches='tight')
        plt.close(axes.figure)
        written.append(name)
    if equity_records:
        plot_stitched_equity(os.path.join(out, EQUITY_PLOT), equity_records,
                             title='best trial: validation folds{}, test episodes chained (1 = start)'.format(
                                 ' then the lockbox' if equity_records[-1]['fold'] == 'lockbox' else ''))
        written.append(EQUITY_PLOT)
    return written, skipped


def write_report(report, out):
    """Writes `report` as `<out>/sweep.json` atomically; returns the path."""
    from btgym_aac.paths import write_json

    return write_json(report, os.path.join(out, REPORT_FILE))
