"""The sweep's verdict statistics (`btgym_aac.sweep.deflation`) against hand computations, their properties and a
simulation of searches over trials of pure noise."""
import math

import numpy as np
import pytest

from btgym_aac.sweep.deflation import (deflated_sharpe_ratio, expected_maximum_sharpe, probabilistic_sharpe_ratio,
                                       sharpe_ratio, skew_and_kurtosis)


def normal_cdf(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


@pytest.mark.parametrize('sharpe, benchmark, observations, skew, kurtosis', [
    (0.1, 0.0, 101, 0.0, 3.0), (0.1, 0.05, 251, -1.0, 6.0), (-0.2, 0.0, 50, 0.5, 4.0)])
def test_psr_equals_the_formula_computed_by_hand(sharpe, benchmark, observations, skew, kurtosis):
    z = (sharpe - benchmark) * math.sqrt(observations - 1) / math.sqrt(
        1 - skew * sharpe + (kurtosis - 1) / 4 * sharpe ** 2)
    assert probabilistic_sharpe_ratio(sharpe, benchmark, observations, skew, kurtosis) == pytest.approx(
        normal_cdf(z), abs=1e-12)


def test_a_single_trial_is_not_deflated():
    returns = np.random.default_rng(0).normal(0.05, 1.0, 200)
    result = deflated_sharpe_ratio(returns, [sharpe_ratio(returns)])
    assert expected_maximum_sharpe(1, 0.3) == 0.0 and result['expected_maximum'] == 0.0
    assert result['dsr'] == result['psr'] == probabilistic_sharpe_ratio(
        result['sharpe'], 0.0, 200, result['skew'], result['kurtosis'])


def test_more_trials_more_spread_skew_and_fat_tails_lower_the_verdict():
    sharpe, observations = 0.15, 250
    by_trials = [probabilistic_sharpe_ratio(sharpe, expected_maximum_sharpe(n, 0.004), observations)
                 for n in (2, 10, 100, 1000)]
    by_variance = [probabilistic_sharpe_ratio(sharpe, expected_maximum_sharpe(50, v), observations)
                   for v in (0.001, 0.004, 0.016)]
    assert by_trials == sorted(by_trials, reverse=True) and by_trials[0] > by_trials[-1]
    assert by_variance == sorted(by_variance, reverse=True) and by_variance[0] > by_variance[-1]
    normal = probabilistic_sharpe_ratio(sharpe, 0.05, observations, 0.0, 3.0)
    assert probabilistic_sharpe_ratio(sharpe, 0.05, observations, -1.0, 3.0) < normal
    assert probabilistic_sharpe_ratio(sharpe, 0.05, observations, 0.0, 8.0) < normal


@pytest.mark.parametrize('trials, repetitions', [(10, 4000), (100, 2000), (1000, 500)])
def test_the_expected_maximum_is_close_to_the_simulated_maximum_of_normal_draws(trials, repetitions):
    simulated = np.random.default_rng(trials).standard_normal((repetitions, trials)).max(axis=1).mean()
    assert expected_maximum_sharpe(trials, 1.0) == pytest.approx(simulated, rel=0.04)
    assert expected_maximum_sharpe(trials, 4.0) == pytest.approx(2 * expected_maximum_sharpe(trials, 1.0))


def test_the_best_of_trials_of_pure_noise_is_rarely_called_skilled():
    rng = np.random.default_rng(7)
    trials, observations, repetitions = 20, 100, 500
    deflated, plain = [], []
    for _ in range(repetitions):
        returns = rng.standard_normal((trials, observations))
        sharpes = returns.mean(axis=1) / returns.std(axis=1, ddof=1)
        best = deflated_sharpe_ratio(returns[int(np.argmax(sharpes))], sharpes)
        deflated.append(best['dsr'])
        plain.append(best['psr'])
    assert np.mean(np.asarray(deflated) < 0.95) >= 0.95
    assert np.mean(np.asarray(plain) > 0.95) > 0.3  # undeflated, the best of 20 noise trials often looks skilled


def test_moments_and_bad_returns():
    skew, kurtosis = skew_and_kurtosis([1.0, 2.0, 3.0, 10.0])
    centred = np.array([1.0, 2.0, 3.0, 10.0]) - 4.0
    assert skew == pytest.approx(np.mean(centred ** 3) / np.mean(centred ** 2) ** 1.5)
    assert kurtosis == pytest.approx(np.mean(centred ** 4) / np.mean(centred ** 2) ** 2)
    normal = skew_and_kurtosis(np.random.default_rng(1).standard_normal(200000))
    assert normal == pytest.approx((0.0, 3.0), abs=0.05)
    with pytest.raises(ValueError, match='no spread'):
        sharpe_ratio([0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match='at least 2 returns'):
        sharpe_ratio([0.1])
    with pytest.raises(ValueError, match='trials >= 1'):
        expected_maximum_sharpe(0, 1.0)
