"""The known-edge markets made apart from the package (`benchmarks/outside_markets.py`): their rules against a plain
matrix Kalman filter, their edges against their twins', and their files and oracles in `known_edge.py`."""
import math
import os

import numpy as np
import pytest
from test_known_edge_summary import benchmark_module

outside = benchmark_module('outside_markets')


def matrix_kalman(observations, transition, process_noise, observation_row, observation_noise, mean, covariance):
    """Filtered state means of a linear Gaussian model, by the textbook equations (no shortcut), the first
    observation taken as already in the prior."""
    means = [mean]
    for y in observations[1:]:
        mean, covariance = transition @ mean, transition @ covariance @ transition.T + process_noise
        innovation_variance = observation_row @ covariance @ observation_row + observation_noise
        gain = covariance @ observation_row / innovation_variance
        mean = mean + gain * (y - observation_row @ mean)
        covariance = covariance - np.outer(gain, observation_row @ covariance)
        means.append(mean)
    return np.array(means)


def test_the_wandering_mean_rule_is_the_kalman_filter_of_fundamental_plus_deviation():
    df = outside.make_wandering_mean(num_bars=3000, seed=4, half_life=30.0)
    log_closes = np.log(df['close'].to_numpy())
    rule = outside.WanderingMeanRule(commission=1e-4, horizon=60, half_life=30.0)
    phi, stationary = rule.phi, rule.deviation_variance / (1.0 - rule.phi ** 2)
    states = matrix_kalman(log_closes, np.diag([1.0, phi]), np.diag([rule.mean_variance, rule.deviation_variance]),
                           np.ones(2), 0.0, np.array([log_closes[0], 0.0]),
                           np.array([[stationary, -stationary], [-stationary, stationary]]))
    np.testing.assert_allclose(rule.filtered_deviations(log_closes), states[:, 1], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(rule.expected_returns(log_closes, df.index), states[:, 1] * (phi ** 60 - 1.0),
                               rtol=1e-6, atol=1e-12)
    assert phi ** 30 == pytest.approx(0.5)


def test_the_drifting_trend_rule_is_the_kalman_filter_of_the_drift():
    df = outside.make_drifting_trend(num_bars=3000, seed=5, half_life=200.0)
    log_closes = np.log(df['close'].to_numpy())
    rule = outside.DriftingTrendRule(commission=1e-4, horizon=60, half_life=200.0)
    phi = rule.phi
    returns = np.concatenate([[0.0], np.diff(log_closes)])
    drifts = matrix_kalman(returns, np.array([[phi]]), np.array([[rule.drift_variance * (1 - phi ** 2)]]), np.ones(1),
                           rule.noise_variance, np.zeros(1), np.array([[rule.drift_variance]]))[:, 0]
    np.testing.assert_allclose(rule.filtered_drifts(log_closes), drifts, rtol=1e-6, atol=1e-15)
    expected = drifts * sum(phi ** k for k in range(1, 61))
    np.testing.assert_allclose(rule.expected_returns(log_closes, df.index), expected, rtol=1e-6, atol=1e-15)


def rule_net_returns(df, rule, every=10):
    """Per-bar log returns, net of the rule's commission, of holding the sign of the rule's expected return, decided
    every `every` bars where it beats the round trip."""
    log_closes = np.log(df['close'].to_numpy())
    expected = rule.expected_returns(log_closes, df.index)
    positions, side = np.zeros(len(df)), 0.0
    for bar in range(len(df)):
        if bar % every == 0 and abs(expected[bar]) > 2.0 * rule.commission:
            side = np.sign(expected[bar])
        positions[bar] = side
    return positions[:-1] * np.diff(log_closes) - rule.commission * np.abs(np.diff(positions))


@pytest.mark.parametrize('market', sorted(outside.OUTSIDE_MARKETS))
def test_each_market_has_an_edge_its_twin_of_the_same_variance_lacks(market):
    make, rule_class = outside.OUTSIDE_MARKETS[market]
    edge, twin = (make(num_bars=60000, seed=7, edge=flag) for flag in (True, False))
    assert list(edge.columns) == ['open', 'high', 'low', 'close', 'volume']
    assert (edge['high'] >= edge[['open', 'close']].max(axis=1)).all()
    assert (edge['low'] <= edge[['open', 'close']].min(axis=1)).all()
    edge_sd, twin_sd = (np.diff(np.log(df['close'].to_numpy())).std() for df in (edge, twin))
    assert twin_sd == pytest.approx(edge_sd, rel=0.05)
    rule = rule_class(commission=1e-4, horizon=60)
    earned = rule_net_returns(edge, rule)
    blocks = earned[:len(earned) // 100 * 100].reshape(-1, 100).sum(axis=1)
    assert blocks.mean() / blocks.std() * math.sqrt(len(blocks)) > 5.0
    assert rule_net_returns(twin, rule).mean() < 0.2 * earned.mean()


def test_known_edge_writes_outside_markets_without_a_recipe_and_gives_them_their_rule(tmp_path):
    from btgym_aac.data.markets import read_market_spec

    runs = benchmark_module('known_edge_runs')
    runs.check_market_params({'wandering_mean': {'half_life': 20.0}}, ['wandering_mean'])
    with pytest.raises(ValueError, match='half_lfe not among the arguments it takes'):
        runs.check_market_params({'drifting_trend': {'half_lfe': 20.0}}, ['drifting_trend'])
    train, test = runs.write_markets('wandering_mean', True, 0, str(tmp_path), 600, 400, {'half_life': 20.0})
    for path in (train, test):
        assert os.path.isfile(path) and read_market_spec(path) is None
    assert open(test).readline().startswith(runs.TEST_START.replace('-', ''))
    assert runs.market_oracle('mr') is None
    assert callable(runs.market_oracle('wandering_mean', {'half_life': 20.0}))
