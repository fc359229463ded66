"""The probabilistic and the deflated Sharpe ratio: how likely a selected strategy's true Sharpe ratio exceeds a
benchmark, and exceeds what the best of N trials of zero skill would show.

Sharpe ratios here are per period (per test episode, or per bar: the caller says which) and never annualised;
kurtosis is the plain one (3 for a normal distribution). Sources: Bailey and López de Prado, "The Sharpe Ratio
Efficient Frontier" (2012) for the probabilistic Sharpe ratio (PSR) and "The Deflated Sharpe Ratio" (2014) for the
expected maximum of N zero-skill Sharpe ratios and the deflated ratio (DSR = PSR against that maximum).
"""
import math
import statistics

import numpy as np

EULER_GAMMA = 0.5772156649015329
_NORMAL = statistics.NormalDist()


def sharpe_ratio(returns):
    """Mean over standard deviation (ddof 1) of per-period returns.

    Raises:
        ValueError: fewer than 2 returns, or returns without spread.
    """
    returns = np.asarray(returns, dtype=np.float64)
    if returns.size < 2:
        raise ValueError('a Sharpe ratio needs at least 2 returns, got {}'.format(returns.size))
    spread = returns.std(ddof=1)
    if not spread > 0 or np.all(returns == returns[0]):
        raise ValueError('the returns have no spread: their Sharpe ratio is undefined')
    return float(returns.mean() / spread)


def skew_and_kurtosis(returns):
    """(skewness, plain kurtosis) of returns, from their population moments."""
    returns = np.asarray(returns, dtype=np.float64)
    centred = returns - returns.mean()
    variance = np.mean(centred ** 2)
    return float(np.mean(centred ** 3) / variance ** 1.5), float(np.mean(centred ** 4) / variance ** 2)


def probabilistic_sharpe_ratio(sharpe, benchmark, observations, skew=0.0, kurtosis=3.0):
    """P(true Sharpe ratio > `benchmark`) given an estimate from `observations` returns with that skew and kurtosis:
    Phi((SR - SR*) sqrt(T - 1) / sqrt(1 - skew SR + (kurtosis - 1) / 4 SR^2)).

    Raises:
        ValueError: fewer than 2 observations, or moments that make the variance term non-positive.
    """
    if observations < 2:
        raise ValueError('need at least 2 observations, got {}'.format(observations))
    spread = 1.0 - skew * sharpe + (kurtosis - 1.0) / 4.0 * sharpe ** 2
    if not spread > 0:
        raise ValueError('skew {} and kurtosis {} give no valid spread at Sharpe ratio {}'.format(
            skew, kurtosis, sharpe))
    return _NORMAL.cdf((sharpe - benchmark) * math.sqrt(observations - 1) / math.sqrt(spread))


def expected_maximum_sharpe(trials, variance):
    """The Sharpe ratio the best of `trials` independent zero-skill trials is expected to show, their estimates'
    variance across trials being `variance`: sqrt(V) ((1 - gamma) PhiInv(1 - 1/N) + gamma PhiInv(1 - 1/(N e))); 0
    for a single trial.

    Raises:
        ValueError: fewer than 1 trial or a negative variance.
    """
    if trials < 1 or variance < 0:
        raise ValueError('need trials >= 1 and variance >= 0, got {} and {}'.format(trials, variance))
    if trials == 1:
        return 0.0
    bracket = ((1.0 - EULER_GAMMA) * _NORMAL.inv_cdf(1.0 - 1.0 / trials)
               + EULER_GAMMA * _NORMAL.inv_cdf(1.0 - 1.0 / (trials * math.e)))
    return math.sqrt(variance) * bracket


def deflated_sharpe_ratio(returns, trial_sharpes):
    """The deflated Sharpe ratio of a selected strategy.

    Args:
        returns: the selected trial's per-period returns (out of sample).
        trial_sharpes: the Sharpe ratios (same periods) of every trial of the search, the selected one included;
            their number is taken as the number of independent trials (correlated trials make it an over-count,
            which lowers the DSR: the verdict errs on the side of no edge).

    Returns:
        dict: sharpe, observations, skew, kurtosis, trials, trial_variance, expected_maximum (SR0), psr (against
        0) and dsr (against SR0).
    """
    sharpe = sharpe_ratio(returns)
    skew, kurtosis = skew_and_kurtosis(returns)
    trials = len(trial_sharpes)
    variance = float(np.var(trial_sharpes, ddof=1)) if trials > 1 else 0.0
    maximum = expected_maximum_sharpe(trials, variance)
    observations = len(returns)
    return {'sharpe': sharpe, 'observations': observations, 'skew': skew, 'kurtosis': kurtosis, 'trials': trials,
            'trial_variance': variance, 'expected_maximum': maximum,
            'psr': probabilistic_sharpe_ratio(sharpe, 0.0, observations, skew, kurtosis),
            'dsr': probabilistic_sharpe_ratio(sharpe, maximum, observations, skew, kurtosis)}
