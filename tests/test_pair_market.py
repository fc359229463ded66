"""Markets of several assets with a known edge. The cointegrated pair: its spread reverts with the half-life asked
for (the twin's wanders with the same per-bar variance), its recipe regenerates each asset, its oracle is causal and
earns on the edge and not on the twin, its discrete orders trade Y alone, and `evaluate` plays it beside the
baselines of a MultiDiscreteEnv and a PortfolioEnv run. The basket with relative momentum: the same checks, its
oracle holding the assets of the largest expected moves."""
import numpy as np
import pytest
from test_evaluation_multi_asset import untrained_run

from btgym_aac.data.markets import (BasketOracle, MarketSpec, PairOracle, make_basket_market, make_pair_market,
                                    read_market_spec, write_market_csv)
from btgym_aac.data.markets.pair import spread_reversion
from btgym_aac.evaluation import evaluate
from btgym_aac.evaluation.oracle_agent import BASKET_ASSETS_HELD, FLAT, order_towards, wanted_sides

pytestmark = pytest.mark.xdist_group('evaluation_multi_asset')  # the untrained runs are made in that group too


def ar1_coefficient(values):
    """Least-squares slope of values[t + 1] on values[t]."""
    previous, following = values[:-1] - values[:-1].mean(), values[1:] - values[1:].mean()
    return float(previous @ following / (previous @ previous))


@pytest.fixture(scope='module')
def pairs():
    """(edge, twin) pairs of 200,000 bars of the same seed."""
    return tuple(make_pair_market(num_bars=200000, half_life=60.0, seed=3, edge=edge) for edge in (True, False))


def spreads(frames):
    oracle = PairOracle(MarketSpec.from_frame(frames['Y']))
    return oracle.spreads(frames['X']['close'].to_numpy(), frames['Y']['close'].to_numpy())


def test_the_spread_reverts_with_its_half_life_and_the_twins_wanders(pairs):
    edge, twin = (spreads(frames) for frames in pairs)
    assert ar1_coefficient(edge) == pytest.approx(1 - spread_reversion(60.0), abs=2e-3)
    assert 0.5 ** (1 / 60.0) == pytest.approx(1 - spread_reversion(60.0))
    assert ar1_coefficient(twin) > 0.999
    assert np.diff(twin).std() == pytest.approx(np.diff(edge).std(), rel=0.02)


def test_the_recipe_regenerates_each_asset_and_travels_with_its_file(pairs, tmp_path):
    frames = pairs[0]
    specs = {name: MarketSpec.from_frame(frame) for name, frame in frames.items()}
    assert {name: spec.asset for name, spec in specs.items()} == {'X': 'X', 'Y': 'Y'}
    assert specs['X'].same_market(specs['Y']) and not specs['X'].same_market(MarketSpec.from_frame(pairs[1]['X']))
    for name, spec in specs.items():
        np.testing.assert_array_equal(spec.make()['close'].to_numpy(), frames[name]['close'].to_numpy())
        assert read_market_spec(write_market_csv(frames[name][:100], str(tmp_path / '{}.csv'.format(name)))) == spec


def test_the_oracle_is_causal_and_earns_on_the_edge_and_not_on_the_twin(pairs):
    results = []
    for frames in pairs:
        oracle = PairOracle(MarketSpec.from_frame(frames['Y']), commission=1e-5, horizon=10)
        closes_x, closes_y = frames['X']['close'].to_numpy(), frames['Y']['close'].to_numpy()
        expected = oracle.expected_changes(closes_x, closes_y)
        assert expected[999] == oracle.expected_changes(closes_x[:1000], closes_y[:1000])[-1]
        returns = oracle.log_returns(closes_x, closes_y, oracle.positions(closes_x, closes_y))
        blocks = returns[:len(returns) // 100 * 100].reshape(-1, 100).sum(axis=1)
        results.append(blocks.mean() / blocks.std(ddof=1) * np.sqrt(len(blocks)))
    edge_t, twin_t = results
    assert edge_t > 10 and abs(twin_t) < 3


@pytest.mark.parametrize('kind', ['discrete', 'portfolio'])
def test_evaluate_plays_the_pairs_oracle_beside_the_baselines(tmp_path, kind):
    """An untrained two-asset run (assets A and B) evaluated on a pair's files (A: X, B: Y), X moving little so that
    three episodes of Y alone show the spread's edge through X's walk."""
    frames = make_pair_market(num_bars=2 * 1440, half_life=30.0, spread_volatility=3e-4, volatility=5e-5, seed=5,
                              start='2019-01-07')
    files = {'A': write_market_csv(frames['X'], str(tmp_path / 'x.csv')),
             'B': write_market_csv(frames['Y'], str(tmp_path / 'y.csv'))}
    log_dir = untrained_run(kind, str(tmp_path / 'run'))
    report = evaluate(log_dir, data=files, episodes=3, out=str(tmp_path / 'evaluation'), seed=1, plots=False)
    oracle = report['agents']['oracle']
    assert report['fraction_of_oracle']['oracle_return_pct'] == oracle['mean']['return_pct'] > 0
    assert oracle['mean']['orders'] > 0
    assert oracle['assets']['B']['mean']['fills'] > 0
    if kind == 'discrete':  # orders go to Y alone: X expects no move
        assert oracle['assets']['A']['mean']['fills'] == 0
    else:  # a long-only portfolio holds X where Y is expected to fall
        assert oracle['assets']['A']['mean']['fills'] > 0


def test_the_pairs_orders_trade_y_alone_past_its_round_trip_and_the_portfolio_both_legs(pairs):
    frames = {'x_line': pairs[0]['X'][:5000], 'y_line': pairs[0]['Y'][:5000]}
    spec = MarketSpec.from_frame(frames['y_line'])
    commission, horizon = 2e-5, 60
    sides, favoured = wanted_sides(spec, {'X': 'x_line', 'Y': 'y_line'}, frames, commission, horizon)
    oracle = PairOracle(spec, commission=commission, horizon=horizon)
    expected = oracle.expected_changes(frames['x_line']['close'].to_numpy(), frames['y_line']['close'].to_numpy())
    assert (sides['x_line'] == FLAT).all()
    beats_y = np.abs(expected) > 2 * commission
    np.testing.assert_array_equal(sides['y_line'], np.where(beats_y, np.sign(expected), 0))
    beats_both = np.abs(expected) > 4 * commission  # a switch of the portfolio trades both legs
    assert ((favoured == 'y_line') == (beats_both & (expected > 0))).all()
    assert ((favoured == 'x_line') == (beats_both & (expected < 0))).all()
    assert (beats_y & ~beats_both).any()  # Y alone trades on signals too weak for both legs


# ------------------------------------------------------------------------------------- a basket with relative momentum

@pytest.fixture(scope='module')
def baskets():
    """(edge, twin) baskets of 4 assets and 100,000 bars of the same seed."""
    return tuple(make_basket_market(num_bars=100000, seed=2, edge=edge) for edge in (True, False))


def closes_of(frames):
    return np.column_stack([frame['close'].to_numpy() for frame in frames.values()])


def test_the_baskets_drifts_are_relative_and_its_twin_has_the_same_return_variance(baskets):
    edge, twin = (np.diff(np.log(closes_of(frames)), axis=0) for frames in baskets)
    assert edge.sum(axis=1).std() == pytest.approx(2 * 1e-4, rel=0.01)  # the drifts cancel: 4 noises of 1e-4 left
    assert twin.std(axis=0) == pytest.approx(edge.std(axis=0), rel=0.02)
    specs = [MarketSpec.from_frame(frame) for frame in baskets[0].values()]
    assert [spec.asset for spec in specs] == ['A', 'B', 'C', 'D'] and all(spec.same_market(specs[0]) for spec in specs)
    np.testing.assert_array_equal(specs[2].make()['close'].to_numpy(), baskets[0]['C']['close'].to_numpy())


def test_the_baskets_oracle_is_causal_and_earns_on_the_edge_and_not_on_the_twin(baskets):
    results = []
    for frames in baskets:
        oracle = BasketOracle(MarketSpec.from_frame(frames['A']), commission=1e-4, horizon=10)
        closes = closes_of(frames)
        np.testing.assert_array_equal(oracle.expected_returns(closes)[:3000],
                                      oracle.expected_returns(closes[:3000]))
        returns = oracle.log_returns(closes, oracle.sides(closes))
        blocks = returns[:len(returns) // 100 * 100].reshape(-1, 100).sum(axis=1)
        results.append(blocks.mean() / blocks.std(ddof=1) * np.sqrt(len(blocks)))
    edge_t, twin_t = results
    assert edge_t > 10 and abs(twin_t) < 3


def test_the_baskets_oracle_holds_the_assets_of_the_largest_expected_moves(baskets):
    frames = dict(baskets[0])
    spec = MarketSpec.from_frame(frames['A'])
    commission, horizon = 1e-5, 60
    sides, favoured = wanted_sides(spec, {name: name for name in frames}, frames, commission, horizon)
    wanted = np.column_stack([sides[name] for name in frames])
    expected = BasketOracle(spec, commission=commission, horizon=horizon).expected_returns(closes_of(frames))
    held = wanted != FLAT
    assert (held.sum(axis=1) == BASKET_ASSETS_HELD).all()
    smallest_held = np.where(held, np.abs(expected), np.inf).min(axis=1)
    largest_flat = np.where(held, -np.inf, np.abs(expected)).max(axis=1)
    assert (smallest_held >= largest_flat).all()
    signal = np.where(np.abs(expected) > 2 * commission, np.sign(expected), 0)
    np.testing.assert_array_equal(wanted[held], signal[held])
    best = np.asarray(list(frames), dtype=object)[expected.argmax(axis=1)]
    np.testing.assert_array_equal(favoured, np.where(expected.max(axis=1) > 2 * commission, best, None))


@pytest.mark.parametrize('wanted, held, order', [(FLAT, 1, 'close'), (FLAT, -1, 'close'), (FLAT, 0, 'hold'),
                                                 (0, 1, 'hold'), (1, -1, 'close'), (1, 1, 'buy'), (-1, 0, 'sell')])
def test_the_oracles_order_moves_the_position_towards_the_side_wanted(wanted, held, order):
    assert order_towards(wanted, held) == order


def test_evaluate_plays_the_baskets_oracle(tmp_path):
    """An untrained two-asset run evaluated on two assets of a basket generated with those two names."""
    frames = make_basket_market(num_bars=2 * 1440, names=('A', 'B'), drift_volatility=4e-6, seed=6,
                                start='2019-01-07')
    files = {name: write_market_csv(frame, str(tmp_path / '{}.csv'.format(name))) for name, frame in frames.items()}
    log_dir = untrained_run('discrete', str(tmp_path / 'run'))
    report = evaluate(log_dir, data=files, episodes=3, out=str(tmp_path / 'evaluation'), seed=1, plots=False)
    oracle = report['agents']['oracle']
    assert oracle['mean']['return_pct'] > 0 and oracle['mean']['orders'] > 0
