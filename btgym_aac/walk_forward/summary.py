"""The verdict of a walk-forward: out-of-sample returns of every agent over all test episodes, and the policy's
return difference against buy-and-hold with a bootstrap confidence interval."""
import numpy as np

from btgym_aac.evaluation.metrics import CONFIDENCE, RESAMPLES, bootstrap_mean_interval

POLICY, BUY_AND_HOLD, RANDOM, ORACLE = 'policy', 'buy_and_hold', 'random', 'oracle'


def fraction_of_oracle(policy_returns, oracle_returns, confidence=CONFIDENCE, resamples=RESAMPLES, seed=0):
    """The policy's mean return per episode as a fraction of the oracle's on the same episodes, with a percentile
    bootstrap interval (episodes resampled in pairs).

    Args:
        policy_returns, oracle_returns: per-episode returns of the two agents, same episodes in the same order.
        confidence, resamples, seed: as in `bootstrap_mean_interval`.

    Returns:
        {'fraction', 'ci_low', 'ci_high'}, all None when the oracle's mean return is not positive.
    """
    policy, oracle = (np.asarray(values, dtype=np.float64) for values in (policy_returns, oracle_returns))
    if oracle.mean() <= 0:
        return {'fraction': None, 'ci_low': None, 'ci_high': None}
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(policy), size=(resamples, len(policy)))
    oracle_means = oracle[picks].mean(axis=1)
    ratios = policy[picks].mean(axis=1)[oracle_means > 0] / oracle_means[oracle_means > 0]
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return {'fraction': float(policy.mean() / oracle.mean()), 'ci_low': float(low), 'ci_high': float(high)}


def out_of_sample_returns(folds):
    """Every agent's per-episode returns (percent) over all folds' test episodes, in time order.

    Args:
        folds: fold records (see `runner`), each with `agents` {name: {'return_pct': [...]}}.

    Returns:
        dict agent name -> list of floats.
    """
    names = list(folds[0]['agents'])
    return {name: [value for fold in folds for value in fold['agents'][name]['return_pct']] for name in names}


def verdict(low, high):
    """Plain words for where the interval lies."""
    if low > 0:
        return 'the interval lies above zero: out of sample, the policy did better than buy-and-hold'
    if high < 0:
        return 'the interval lies below zero: out of sample, the policy did worse than buy-and-hold'
    return ('the interval includes zero: no evidence that the policy does better or worse than buy-and-hold out of '
            'sample')


def summarize(folds, seed=0):
    """The walk-forward's summary.

    Args:
        folds: fold records, in fold order.
        seed: seed of the bootstrap.

    Returns:
        dict with `episodes`, `mean_return_pct` per agent, `excess_return_pct` (policy minus buy-and-hold:
        `mean`, `ci_low`, `ci_high`, `confidence`, `includes_zero`), `lines` (the summary in words) and, where
        the folds have an oracle (a known-edge market), `fraction_of_oracle` (see `fraction_of_oracle`).
    """
    returns = out_of_sample_returns(folds)
    excess = np.subtract(returns[POLICY], returns[BUY_AND_HOLD])
    mean, low, high = bootstrap_mean_interval(excess, seed=seed)
    means = {name: float(np.mean(values)) for name, values in returns.items()}
    lines = [
        'out of sample: {} test episode{} over {} fold{}'.format(len(excess), '' if len(excess) == 1 else 's',
                                                                 len(folds), '' if len(folds) == 1 else 's'),
        'mean return per episode: {}'.format(', '.join('{} {:+.3f} %'.format(name, value)
                                                       for name, value in means.items())),
        'policy minus buy-and-hold: {:+.3f} % per episode, {:.0f} % bootstrap interval [{:+.3f} %, {:+.3f} %]'.format(
            mean, 100 * CONFIDENCE, low, high),
        verdict(low, high),
    ]
    summary = {'episodes': int(len(excess)), 'mean_return_pct': means,
               'excess_return_pct': {'mean': mean, 'ci_low': low, 'ci_high': high, 'confidence': CONFIDENCE,
                                     'resamples': RESAMPLES, 'includes_zero': bool(low <= 0 <= high)},
               'lines': lines}
    if ORACLE in returns:
        summary['fraction_of_oracle'] = fraction_of_oracle(returns[POLICY], returns[ORACLE], seed=seed)
        lines.append(oracle_words(summary['fraction_of_oracle']))
    return summary


def oracle_words(fraction):
    """The fraction of the oracle in words."""
    if fraction['fraction'] is None:
        return 'the oracle did not gain out of sample: no fraction of it to report'
    return 'policy = {:.1f} % of the oracle, {:.0f} % bootstrap interval [{:.1f} %, {:.1f} %]'.format(
        100 * fraction['fraction'], 100 * CONFIDENCE, 100 * fraction['ci_low'], 100 * fraction['ci_high'])
