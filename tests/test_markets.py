"""Markets with a known edge: bar format, recipes and files, process statistics, the oracles and the edge itself."""
import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

from btgym_aac.data import make_random_walk_data, read_ohlcv
from btgym_aac.data.markets import (MarketSpec, make_intraday_pattern_data, make_mean_reversion_data,
                                    make_regime_switching_data, net_return_summary, oracle_for, oracle_log_returns,
                                    read_market_spec, write_market_csv)
from btgym_aac.data.markets.intraday import intraday_drift, intraday_return_std
from btgym_aac.data.markets.mean_reversion import mean_reversion_return_std
from btgym_aac.data.markets.regime import regime_return_std, transition_matrix

GENERATORS = {
    'mean_reversion': make_mean_reversion_data,
    'regime_switching': make_regime_switching_data,
    'intraday_pattern': make_intraday_pattern_data,
}
KINDS = sorted(GENERATORS)
OHLCV = ['open', 'high', 'low', 'close', 'volume']
COMMISSION = 1e-4


def _log_returns(df):
    return np.diff(np.log(df['close'].to_numpy()))


def _prefix_positions(oracle, df):
    """Positions from `target_position` on the growing prefix, deciding every `horizon` bars."""
    closes, times = df['close'].to_numpy(), df.index.to_numpy()
    position, held = 0, []
    for t in range(len(df)):
        if t % oracle.horizon == 0:
            position = oracle.target_position(closes[:t + 1], times[:t + 1], position)
        held.append(position)
    return np.array(held)


# ---------------------------------------------------------------------------------------------------- bars and recipes


@pytest.mark.parametrize('kind', KINDS)
@pytest.mark.parametrize('edge', [True, False])
def test_bars_have_the_synthetic_format_and_carry_their_recipe(kind, edge):
    df = GENERATORS[kind](num_bars=500, edge=edge, seed=3)
    assert list(df.columns) == OHLCV and (df.dtypes == np.float64).all()
    assert isinstance(df.index, pd.DatetimeIndex) and df.index[0] == pd.Timestamp('2017-01-02 00:00')
    assert (df.index[1:] - df.index[:-1] == pd.Timedelta('1min')).all()
    assert df['open'].iloc[0] == 1.1 and (df['open'].to_numpy()[1:] == df['close'].to_numpy()[:-1]).all()
    assert (df['high'] >= df[['open', 'close']].max(axis=1)).all()
    assert (df['low'] <= df[['open', 'close']].min(axis=1)).all()
    recipe = df.attrs['market']
    assert json.loads(json.dumps(recipe)) == recipe
    assert (recipe['kind'], recipe['edge'], recipe['seed'], recipe['params']['num_bars']) == (kind, edge, 3, 500)


@pytest.mark.parametrize('kind', KINDS)
def test_a_seed_fixes_the_frame_and_the_spec_regenerates_it(kind):
    make = GENERATORS[kind]
    first = make(num_bars=400, seed=7)
    pd.testing.assert_frame_equal(first, make(num_bars=400, seed=7))
    assert not np.allclose(first['close'], make(num_bars=400, seed=8)['close'])
    assert not np.allclose(first['close'], make(num_bars=400, seed=7, edge=False)['close'])
    spec = MarketSpec.from_frame(first)
    assert MarketSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    pd.testing.assert_frame_equal(spec.make(), first)
    unseeded = make(num_bars=50)
    pd.testing.assert_frame_equal(MarketSpec.from_frame(unseeded).make(), unseeded)


def test_a_transition_matrix_is_recorded_and_regenerated():
    matrix = [[0.98, 0.01, 0.01], [0.02, 0.97, 0.01], [0.005, 0.005, 0.99]]
    df = make_regime_switching_data(num_bars=300, drifts=(3e-5, 0.0, -3e-5), transition=matrix, seed=2)
    spec = MarketSpec.from_frame(df)
    assert spec.params['transition'] == matrix and spec.params['mean_duration'] is None
    pd.testing.assert_frame_equal(spec.make(), df)


def test_frames_without_a_recipe_and_unknown_kinds():
    assert MarketSpec.from_frame(make_random_walk_data(num_bars=10, seed=0)) is None
    with pytest.raises(ValueError, match='unknown market kind'):
        MarketSpec.from_dict(dict(kind='sine', edge=True, seed=0, params={}))
    with pytest.raises(ValueError, match='transition'):
        make_regime_switching_data(num_bars=10, transition=[[0.5, 0.6], [0.5, 0.5]])


def test_csv_and_sidecar_round_trip(tmp_path):
    df = make_regime_switching_data(num_bars=300, seed=4)
    path = write_market_csv(df, str(tmp_path / 'regime.csv'))
    frame = read_ohlcv(path)
    np.testing.assert_allclose(frame[OHLCV].to_numpy(), df[OHLCV].to_numpy(), rtol=1e-12)
    assert (frame.index == df.index).all()
    spec = read_market_spec(path)
    assert spec == MarketSpec.from_frame(df)
    pd.testing.assert_frame_equal(spec.make(), df)
    assert read_market_spec(str(tmp_path / 'other.csv')) is None
    with pytest.raises(ValueError, match='no market spec'):
        write_market_csv(make_random_walk_data(num_bars=10, seed=0), str(tmp_path / 'plain.csv'))


@pytest.mark.parametrize('text', ['{not json', json.dumps(dict(kind='sine', edge=True, seed=0, params={}))])
def test_a_bad_sidecar_is_an_error_naming_the_file(tmp_path, text):
    path = str(tmp_path / 'bad.csv')
    (tmp_path / 'bad.csv.market.json').write_text(text)
    with pytest.raises(ValueError, match='bad.csv.market.json'):
        read_market_spec(path)


# --------------------------------------------------------------------------------------------------- process statistics


def test_half_life_is_recovered_from_the_noise_free_path():
    # AR(1) slope of the deviation from mu: std error sqrt((1 - phi**2) / n) ~ 3.4e-4 at n = 2e5, half life 60,
    # which is ~1.8 bars of half life; 10 % is over 3 standard errors.
    df = make_mean_reversion_data(num_bars=200000, half_life=60.0, noise=0.0, seed=11)
    deviation = np.log(df['close'].to_numpy()) - math.log(1.1)
    phi = deviation[1:] @ deviation[:-1] / (deviation[:-1] @ deviation[:-1])
    assert -math.log(2.0) / math.log(phi) == pytest.approx(60.0, rel=0.10)


def test_regimes_last_their_mean_duration():
    # ~1700 runs of geometric length 120: the mean's std error is ~2.5 %; 10 % is 4 of them.
    _, states = make_regime_switching_data(num_bars=200000, mean_duration=120.0, seed=12, return_states=True)
    run_count = 1 + np.count_nonzero(np.diff(states))
    assert len(states) / run_count == pytest.approx(120.0, rel=0.10)
    assert np.mean(states == 0) == pytest.approx(0.5, abs=0.05)


def test_the_intraday_profile_is_recovered_by_averaging_returns_by_minute():
    df = make_intraday_pattern_data(num_bars=1440 * 300, seed=13)
    returns = pd.Series(_log_returns(df), index=df.index[1:])
    by_minute = returns.groupby(returns.index.hour * 60 + returns.index.minute).mean()
    profile = intraday_drift(by_minute.index.to_numpy(dtype=float), 2.5e-5, 0.0)
    assert np.corrcoef(by_minute.to_numpy(), profile)[0, 1] > 0.9


@pytest.mark.parametrize('kind, expected_std', [
    ('intraday_pattern', intraday_return_std(2.5e-5, 1e-4)),
    ('mean_reversion', mean_reversion_return_std(60.0, 2e-4, 5e-5)),
    ('regime_switching', regime_return_std((3e-5, -3e-5), 1e-4, transition_matrix(2, 240.0))),
], ids=KINDS)
def test_twins_have_the_per_bar_return_std_of_the_edge_market(kind, expected_std):
    edge_std = _log_returns(GENERATORS[kind](num_bars=100000, seed=14)).std()
    twin_std = _log_returns(GENERATORS[kind](num_bars=100000, seed=15, edge=False)).std()
    assert edge_std == pytest.approx(expected_std, rel=0.03)
    assert twin_std == pytest.approx(edge_std, rel=0.03)


# ---------------------------------------------------------------------------------------------------- oracles


def _minutes(count, start='2017-01-02 00:00'):
    return pd.date_range(start, periods=count, freq='1min')


def test_mean_reversion_oracle_bets_on_the_way_back_to_the_mean():
    oracle = oracle_for(MarketSpec.from_frame(make_mean_reversion_data(num_bars=10, seed=0)), COMMISSION)
    times = _minutes(3)
    assert oracle.target_position(1.1 * np.exp([0.0, 0.0, 0.01]), times, 0) == -1
    assert oracle.target_position(1.1 * np.exp([0.0, 0.0, -0.01]), times, 0) == 1
    near_mean = 1.1 * np.exp([0.0, 0.0, 1e-5])
    assert abs(oracle.expected_return(near_mean, times)) < 2 * COMMISSION
    assert [oracle.target_position(near_mean, times, held) for held in (-1, 0, 1)] == [-1, 0, 1]


def test_regime_oracle_follows_the_filtered_regime():
    oracle = oracle_for(MarketSpec.from_frame(make_regime_switching_data(num_bars=10, seed=0)), COMMISSION)
    times, run = _minutes(61), np.arange(61)
    assert oracle.target_position(1.1 * np.exp(5e-5 * run), times, 0) == 1
    assert oracle.target_position(1.1 * np.exp(-5e-5 * run), times, 1) == -1
    flat = np.full(61, 1.1)
    assert abs(oracle.expected_return(flat, times)) < 2 * COMMISSION
    assert [oracle.target_position(flat, times, held) for held in (-1, 0, 1)] == [-1, 0, 1]


def test_regime_filter_tracks_the_hidden_regime():
    df, states = make_regime_switching_data(num_bars=20000, seed=5, return_states=True)
    probabilities = oracle_for(MarketSpec.from_frame(df)).regime_probabilities(np.log(df['close'].to_numpy()))
    assert np.allclose(probabilities.sum(axis=1), 1.0)
    assert np.mean(probabilities.argmax(axis=1) == states) > 0.75


def test_intraday_oracle_trades_the_profile_of_the_coming_minutes():
    oracle = oracle_for(MarketSpec.from_frame(make_intraday_pattern_data(num_bars=10, seed=0)), COMMISSION)
    closes = np.full(2, 1.1)
    assert oracle.target_position(closes, _minutes(2, '2017-01-03 05:59'), 0) == 1
    assert oracle.target_position(closes, _minutes(2, '2017-01-03 17:59').to_numpy(), 1) == -1
    at_midnight = _minutes(2, '2017-01-02 23:59')
    assert abs(oracle.expected_return(closes, at_midnight)) < 2 * COMMISSION
    assert [oracle.target_position(closes, at_midnight, held) for held in (-1, 0, 1)] == [-1, 0, 1]


SHORT_MARKETS = {
    'mean_reversion': dict(half_life=20.0, volatility=4e-4),
    'regime_switching': dict(drifts=(6e-5, -6e-5), mean_duration=60.0),
    'intraday_pattern': dict(amplitude=6e-5),
}
"""Parameters that make the oracle trade within a few hundred bars."""


@pytest.mark.parametrize('kind', KINDS)
def test_positions_are_the_prefix_decisions_and_ignore_the_future(kind):
    df = GENERATORS[kind](num_bars=300, seed=21, **SHORT_MARKETS[kind])
    oracle = oracle_for(MarketSpec.from_frame(df), COMMISSION, horizon=10)
    positions = oracle.positions(df)
    assert np.count_nonzero(positions) > 0
    np.testing.assert_array_equal(positions, _prefix_positions(oracle, df))
    changes = np.flatnonzero(np.diff(positions, prepend=0))
    assert (changes % 10 == 0).all()
    perturbed = df.copy()
    perturbed.iloc[150:, perturbed.columns.get_loc('close')] *= np.exp(
        np.random.default_rng(0).normal(0.0, 0.01, len(df) - 150))
    np.testing.assert_array_equal(oracle.positions(perturbed)[:150], positions[:150])


def test_oracle_log_returns_earn_the_next_bar_and_pay_per_unit_of_change():
    df = pd.DataFrame({'close': 1.1 * np.exp([0.0, 0.01, 0.03, 0.02])}, index=_minutes(4))
    net = oracle_log_returns(df, [1, 1, -1, -1], commission=0.001)
    np.testing.assert_allclose(net, [-0.001, 0.01, 0.02 - 0.002, 0.01], atol=1e-12)
    summary = net_return_summary(df, [1, 1, -1, -1], commission=0.001, block_bars=1)
    assert summary['trades'] == 2 and summary['bars'] == 4 and summary['mean'] == pytest.approx(net.mean())


# ---------------------------------------------------------------------------------------------------- the edge


@pytest.mark.parametrize('kind', KINDS)
def test_the_oracle_finds_the_edge_and_none_in_the_twin(kind):
    df = GENERATORS[kind](num_bars=100000, seed=31)
    twin = GENERATORS[kind](num_bars=100000, seed=31, edge=False)
    spec = MarketSpec.from_frame(df)
    assert MarketSpec.from_frame(twin) == dataclasses.replace(spec, edge=False)
    oracle = oracle_for(spec, COMMISSION, horizon=10)
    edge = net_return_summary(df, oracle.positions(df), COMMISSION)
    placebo = net_return_summary(twin, oracle_for(MarketSpec.from_frame(twin), COMMISSION).positions(twin),
                                 COMMISSION)
    assert edge['mean'] > 0 and edge['t_stat'] > 3 and edge['trades'] > 10
    assert placebo['t_stat'] < 2
