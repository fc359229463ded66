"""What a sweep maximises, from a trial's walk-forward folds: the out-of-sample mean of the policy's return minus
buy-and-hold's per episode (the walk-forward's own metric, the default), the policy's mean return, or the Sharpe
ratio of its per-episode returns."""
import math

import numpy as np

from btgym_aac.sweep import OBJECTIVES
from btgym_aac.sweep.deflation import sharpe_ratio
from btgym_aac.walk_forward.summary import BUY_AND_HOLD, POLICY, out_of_sample_returns

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
