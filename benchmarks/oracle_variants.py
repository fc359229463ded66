"""Plays variants of the oracle of the markets of several assets on `known_edge.py`'s test episodes: what each
earns per episode in the env of `btgym-aac train --assets`, so that the oracle a fraction is taken of leaves as
little of the edge as the env allows (docs/multi-asset.md, "Oracles that use the margin").

For every seed the market's test file is made as `known_edge.py` makes it (`write_markets`), the env is the one a
run of PPO under `--preset` is evaluated on (`reference_configs`, the benchmark's episodes), and every variant plays
the same `--episodes` episodes (episode i seeded EVAL_SEED + i) through `MultiAssetOracleAgent`. Pair variants: the
assets traded (both legs hedged, or Y alone) and the threshold the spread's expected change must beat, in round trips
of one leg; basket variants: how many assets of the largest expected returns are held (the others closed) and the
threshold in round trips. More pair variants take the spread's level from the bars instead of knowing it: from the
episode's bars so far (`EpisodeSpreadOracle`: the rule within a policy's reach,
`known_edge_runs.reachable_rule_returns`) and from trailing windows of fixed length; one trades Y on its own
level, X ignored.

Usage:
    python benchmarks/oracle_variants.py --seeds 3 --episodes 100 --out benchmarks/results/oracle_variants.json
"""
import argparse
import json
import os
import tempfile
import time

import numpy as np
from known_edge_runs import ENV_OVERRIDES, episode_returns, evaluation_data, reference_configs, write_markets

from btgym_aac.data.markets import BasketOracle, PairOracle, pair
from btgym_aac.evaluation.oracle_agent import (FLAT, LOOKAHEAD_DECISIONS, MultiAssetOracleAgent, largest_moves_sides,
                                               lookahead_bars, market_closes, multi_asset_market)

PAIR_VARIANTS = {'hedged, both legs\' round trip (before 2026-12-07)': ('hedged', 2.0),
                 'Y alone, both legs\' round trip': ('y', 2.0),
                 'Y alone, its round trip (current)': ('y', 1.0),
                 'Y alone, half its round trip': ('y', 0.5)}
"""Name -> (legs traded, threshold in round trips of one leg)."""
EPISODE_SPREAD_VARIANT = 'Y alone, its round trip, the level from the episode\'s bars'
"""The name of `EpisodeSpreadOracle`'s row."""
TRAILING_SPREAD_VARIANT = 'Y alone, its round trip, the level from the last {} bars'
TRAILING_WINDOWS = (32, 128, 512)
"""`EpisodeSpreadOracle` with the level from trailing windows: 32 and 128 bars are periods of the moving averages
`MultiAssetStrategy` shows the closes against."""
OWN_LEVEL_WINDOW = 128
OWN_LEVEL_VARIANT = 'Y alone, its round trip, on Y\'s own log close less its mean over the last 128 bars'
"""`EpisodeSpreadOracle` on Y's own level, X ignored."""
BASKET_VARIANTS = {'every asset (before 2026-12-07)': (4, 1.0), 'the best one': (1, 1.0),
                   'the best two (current)': (2, 1.0), 'the best three': (3, 1.0),
                   'the best two, twice the round trip': (2, 2.0)}
"""Name -> (assets held, threshold in round trips)."""


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--markets', nargs='+', choices=('pair', 'basket'), default=['pair', 'basket'])
    parser.add_argument('--seeds', type=int, default=3, help='run seeds 0 .. N-1 of known_edge.py')
    parser.add_argument('--episodes', type=int, default=100, help='test episodes per variant and seed')
    parser.add_argument('--train-bars', type=int, default=60000)
    parser.add_argument('--test-bars', type=int, default=100000)
    parser.add_argument('--preset', default='tuned')
    parser.add_argument('--out', required=True, help='the JSON file written')
    args = parser.parse_args(argv)
    for name in ('seeds', 'episodes', 'train_bars', 'test_bars'):
        if getattr(args, name) < 1:
            parser.error('--{} must be >= 1'.format(name.replace('_', '-')))
    return args


def pair_sides(oracle, names, closes, legs, round_trips):
    """{data line: side wanted} of a pair variant (`names`: the lines of X and Y)."""
    expected = oracle.expected_changes(closes[:, 0], closes[:, 1])
    side = np.where(np.abs(expected) > round_trips * oracle.leg_round_trip, np.sign(expected), 0).astype(int)
    return {names[1]: side, names[0]: -side if legs == 'hedged' else np.full(len(side), FLAT)}


def basket_sides(oracle, names, closes, held, round_trips):
    """{data line: side wanted} of a basket variant: the `held` assets of the largest expected returns on their
    signs, the others flat."""
    sides = largest_moves_sides(oracle.expected_returns(closes), round_trips * oracle.round_trip, held)
    return {line: sides[:, column] for column, line in enumerate(names)}


class EpisodeSpreadOracle(MultiAssetOracleAgent):
    """The pair's oracle (Y alone on the spread's expected change where it beats Y's round trip, X flat) with the
    spread's level taken from the bars: the spread less its mean over the episode's bars so far (warm-up included),
    or over the last `window` bars, in place of the spread less its known mean, zero. A policy sees the closes only as
    deviations from their moving averages, the same whatever the level, so the level is what the oracle knows beyond
    the episode (docs/multi-asset.md, "What the pair's oracle knows").

    Args:
        oracle: the pair's `PairOracle` (its costs and horizon).
        times: the bars' times.
        closes: (bars, 2) closes of X and Y.
        lines: the data lines of X and Y.
        action_names: the env's discrete action names per asset.
        env: the env played (its `episode_window`).
        window: the number of bars up to now whose mean is the spread's level; None: the episode's so far.
        own_level: True to take Y's own log close for the spread, X ignored (what a policy that reads Y's
            deviations from its moving averages alone can trade).
    """

    def __init__(self, oracle, times, closes, lines, action_names, env, window=None, own_level=False):
        super().__init__(times, {}, action_names)  # the sides wanted are taken at each decision (`wanted_now`)
        self.oracle, self.env, self.lines, self.window = oracle, env, tuple(lines), window
        self.levels = np.log(closes[:, 1]) if own_level else oracle.spreads(closes[:, 0], closes[:, 1])

    def expected_now(self):
        """The spread's expected change over the oracle's horizon, from its level less its mean over the episode so
        far or the last `window` bars."""
        now = self.now()
        if self.window is None:
            first = self.times.searchsorted(self.env.episode_window[0])
        else:
            first = max(0, now + 1 - self.window)
        return -(self.levels[now] - self.levels[first:now + 1].mean()) * self.oracle.pull

    def wanted_now(self):
        """Y: the side of the expected change where it beats Y's round trip, else 0 (keep); X: `FLAT`."""
        expected = self.expected_now()
        line_x, line_y = self.lines
        return {line_y: int(np.sign(expected)) if abs(expected) > self.oracle.leg_round_trip else 0, line_x: FLAT}


def market_setting(env):
    """(spec, bar times, (bars, assets) closes in the market's order of its assets, their data lines, the cost per
    side) of a multi-asset evaluation env on a market of several assets (`oracle_agent.multi_asset_market`), or None
    where its bars are of none."""
    market = multi_asset_market(env)
    if market is None:
        return None
    spec, lines, frames, times, cost = market
    names, closes = market_closes(spec, lines, frames)
    return spec, times, closes, names, cost


def episode_spread_oracle(env, window=None, own_level=False):
    """`EpisodeSpreadOracle` (its level from the last `window` bars, None: the episode's; with `own_level` of Y's
    log close alone) for a MultiDiscreteEnv on a pair, with the env's costs and horizon; None on any other env."""
    setting = market_setting(env) if env.action_space.is_discrete else None
    if setting is None or setting[0].kind != pair.KIND:
        return None
    spec, times, closes, names, cost = setting
    oracle = PairOracle(spec, commission=cost, horizon=lookahead_bars(env))
    return EpisodeSpreadOracle(oracle, times, closes, names, env.portfolio_actions, env, window=window,
                               own_level=own_level)


def play_variants(market, seed, args, work_dir):
    """{variant name: mean return per episode (%)} of `market`'s variants on seed `seed`'s test episodes."""
    train, test = write_markets(market, True, seed, os.path.join(work_dir, '{}_{}'.format(market, seed)),
                                args.train_bars, args.test_bars)
    from btgym_aac.evaluation.episodes import make_evaluation_env

    env = make_evaluation_env(reference_configs('ppo', train, dict(ENV_OVERRIDES), preset=args.preset),
                              evaluation_data(test))
    try:
        spec, times, closes, names, cost = market_setting(env)
        if market == 'pair':
            oracle = PairOracle(spec, commission=cost, horizon=lookahead_bars(env))
            variants = {name: pair_sides(oracle, names, closes, *variant) for name, variant in PAIR_VARIANTS.items()}
        else:
            oracle = BasketOracle(spec, commission=cost, horizon=lookahead_bars(env))
            variants = {name: basket_sides(oracle, names, closes, *variant)
                        for name, variant in BASKET_VARIANTS.items()}
        agents = {name: MultiAssetOracleAgent(times, sides, env.portfolio_actions) for name, sides in variants.items()}
        if market == 'pair':
            agents[EPISODE_SPREAD_VARIANT] = episode_spread_oracle(env)
            agents.update({TRAILING_SPREAD_VARIANT.format(window): episode_spread_oracle(env, window)
                           for window in TRAILING_WINDOWS})
            agents[OWN_LEVEL_VARIANT] = episode_spread_oracle(env, OWN_LEVEL_WINDOW, own_level=True)
        return {name: float(np.mean(episode_returns(env, agent, args.episodes))) for name, agent in agents.items()}
    finally:
        env.close()


def main(argv=None):
    args = parse_args(argv)
    start = time.time()
    results = {}
    with tempfile.TemporaryDirectory(prefix='oracle_variants_') as work_dir:
        for market in args.markets:
            by_seed = {seed: play_variants(market, seed, args, work_dir) for seed in range(args.seeds)}
            results[market] = {name: {'by_seed': [by_seed[seed][name] for seed in range(args.seeds)],
                                      'mean': float(np.mean([by_seed[seed][name] for seed in range(args.seeds)]))}
                               for name in by_seed[0]}
            for name, result in results[market].items():
                print('{}: {}: {:+.2f} % per episode ({})'.format(market, name, result['mean'], ', '.join(
                    '{:+.2f}'.format(value) for value in result['by_seed'])), flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump({'benchmark': 'oracle_variants', 'settings': dict(vars(args), lookahead_decisions=LOOKAHEAD_DECISIONS,
                                                                    env_overrides=ENV_OVERRIDES),
                   'results': results, 'wall_seconds': time.time() - start}, f, indent=1)
    print('written: {} ({:.0f} s)'.format(args.out, time.time() - start))


if __name__ == '__main__':
    main()
