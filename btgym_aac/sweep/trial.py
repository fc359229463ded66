"""One trial of a sweep: the configs with the trial's values, a walk-forward over the validation data's folds, the
objective reported to Optuna after every fold (where its pruner may stop the trial) and what the report needs kept
in the trial's user attributes (seed, folder, per-fold metrics, per-episode returns, duration, error, and at the end
the walk-forward's summary and equity records).

The objective, what a sweep maximises, is computed from a trial's walk-forward folds: the out-of-sample mean of the
policy's return minus buy-and-hold's per episode (the walk-forward's own metric, the default), the policy's mean
return, or the Sharpe ratio of its per-episode returns."""
import dataclasses
import math
import os
import time

import numpy as np
import optuna

from btgym_aac.logs import error_summary
from btgym_aac.sweep import OBJECTIVES
from btgym_aac.sweep.deflation import sharpe_ratio
from btgym_aac.sweep.space import configs_with, suggest
from btgym_aac.sweep.study import INTERRUPTED, SURPLUS, is_surplus, root_number
from btgym_aac.walk_forward.summary import BUY_AND_HOLD, POLICY, out_of_sample_returns

TRIALS_DIR = 'trials'
ENVIRONMENT_ERROR = 'environment_error'
DEFAULT_OBJECTIVE = OBJECTIVES[0]


def check_objective(objective):
    """Returns `objective` when it is one of OBJECTIVES, else raises ValueError naming them."""
    if objective not in OBJECTIVES:
        raise ValueError('objective must be one of {}, got {!r}'.format(', '.join(OBJECTIVES), objective))
    return objective


def episode_returns(folds, objective):
    """The per-episode series (percent) the objective is about, over all folds' test episodes in time order: the
    policy's return less buy-and-hold's for 'vs-buy-and-hold', the policy's return otherwise.

    Args:
        folds: walk-forward fold records.
        objective: one of OBJECTIVES.

    Returns:
        1-D float array.
    """
    returns = out_of_sample_returns(folds)
    policy = np.asarray(returns[POLICY], dtype=np.float64)
    if objective == 'vs-buy-and-hold':
        return policy - np.asarray(returns[BUY_AND_HOLD], dtype=np.float64)
    return policy


def score(folds, objective):
    """The objective's value over `folds`: the mean of `episode_returns`, or its Sharpe ratio for 'sharpe' (0 when
    it is undefined: fewer than 2 episodes or no spread)."""
    series = episode_returns(folds, objective)
    if objective == 'sharpe':
        return episode_sharpe(series)
    return float(series.mean())


def episode_sharpe(series):
    """The Sharpe ratio of a per-episode series, 0 where it is undefined (fewer than 2 values or no spread)."""
    try:
        value = sharpe_ratio(series)
    except ValueError:
        return 0.0
    return value if math.isfinite(value) else 0.0


@dataclasses.dataclass
class TrialPlan:
    """What every trial of a sweep shares: the configs, the space, the validation data and the walk-forward's
    settings (`walk_forward`'s arguments of those names)."""
    configs: dict
    space: dict
    validation_file: str
    out: str
    folds: int
    train_steps: int
    test_episodes: int
    seed: int
    embargo: object
    objective: str
    episode_plots: bool = True
    search_only: bool = False

    def folder(self, number):
        """The folder of the walk-forward of trial `number` (a trial run again uses its first run's)."""
        return os.path.join(self.out, TRIALS_DIR, 'trial_{}'.format(number))


def fold_metrics(record, objective):
    """A fold's line of the report: its test window, global step, the policy's and buy-and-hold's mean return
    per episode and the objective's value on it."""
    return {'fold': record['fold'], 'test_window': record['test_window'], 'global_step': record['global_step'],
            'policy_return_pct': record['agents'][POLICY]['mean']['return_pct'],
            'buy_and_hold_return_pct': record['agents'][BUY_AND_HOLD]['mean']['return_pct'],
            'score': score([record], objective)}


def equity_record(record):
    """What the equity plot needs of a fold record (kept in the study, where every process of a shared sweep finds
    it): its number, test window and every agent's per-episode returns and last bar times."""
    return {'fold': record['fold'], 'test_window': record['test_window'],
            'agents': {name: {'return_pct': agent['return_pct'], 'last_bar_time': agent['last_bar_time']}
                       for name, agent in record['agents'].items()}}


class SurplusTrial(Exception):
    """A trial one more than the sweep asks for (see `study.is_surplus`)."""


class TrialObjective:
    """The Optuna objective of a sweep's trials.

    Args:
        plan: the sweep's `TrialPlan`.
        total: the number of trials the sweep asks for: a trial started beyond it by processes sharing the study at
            the same moment gives way (`study.is_surplus`).
    """

    def __init__(self, plan, total):
        self.plan = plan
        self.total = total

    def __call__(self, trial):
        """Runs the trial's walk-forward; returns the objective over all its folds.

        Raises:
            SurplusTrial: the trial is one more than the sweep asks for (it runs nothing).
            optuna.TrialPruned: the pruner stopped it after a fold.
            KeyboardInterrupt: a stop (the trial is marked interrupted: a later sweep runs it again).
            OSError: the machine failed the trial (a disk, a port, a lock; marked interrupted and kept as its
                `environment_error`: `runner.search` stops the sweep).
            Exception: whatever failed (kept as the trial's `error`).
        """
        from btgym_aac.walk_forward import walk_forward

        plan = self.plan
        if is_surplus(trial, self.total):
            trial.set_user_attr(SURPLUS, True)
            raise SurplusTrial('trial {} would be one more than the {} asked for: another process started one at '
                               'the same moment, and this one gives way'.format(trial.number, self.total))
        started = time.time()
        try:
            values = suggest(trial, plan.space)
            folder = plan.folder(root_number(trial))
            trial.set_user_attr('seed', plan.seed)
            trial.set_user_attr('folder', os.path.relpath(folder, plan.out))
            report = walk_forward(configs_with(plan.configs, values), plan.validation_file, plan.folds,
                                  train_steps=plan.train_steps, test_episodes=plan.test_episodes, out=folder,
                                  seed=plan.seed, embargo=plan.embargo, episode_plots=plan.episode_plots,
                                  on_fold=lambda records: self._after_fold(trial, records))
        except optuna.TrialPruned:
            raise
        except KeyboardInterrupt:
            trial.set_user_attr(INTERRUPTED, True)
            raise
        except OSError as error:  # the machine's, not the values' (a disk, a port, a lock): run it again later
            trial.set_user_attr(INTERRUPTED, True)
            trial.set_user_attr(ENVIRONMENT_ERROR, error_summary(error))
            raise
        except Exception as error:
            trial.set_user_attr('error', error_summary(error))
            raise
        finally:
            trial.set_user_attr('seconds', round(time.time() - started, 1))
        trial.set_user_attr('summary', report['summary'])
        trial.set_user_attr('equity', [equity_record(record) for record in report['folds']])
        return score(report['folds'], plan.objective)

    def _after_fold(self, trial, records):
        """Keeps the folds' metrics and returns, reports the objective so far and prunes where the pruner says so."""
        objective = self.plan.objective
        trial.set_user_attr('folds', [fold_metrics(record, objective) for record in records])
        trial.set_user_attr('returns', [float(value) for value in episode_returns(records, objective)])
        trial.report(score(records, objective), len(records) - 1)
        if len(records) < self.plan.folds and trial.should_prune():  # (after the last fold: nothing left to save)
            raise optuna.TrialPruned('pruned after fold {}'.format(len(records) - 1))
