"""The oracle baseline: where the evaluated bars came from a known-edge market (`btgym_aac.data.markets`), the rule
that knows the market's process plays the same windows through the same env, so with the same costs. A single-asset
env gets its market's oracle (`OracleAgent`); a multi-asset env whose assets are those of a market of several assets
(a cointegrated pair, `markets.make_pair_market`; a basket with relative momentum, `markets.make_basket_market`)
gets that market's, its margin on the assets of the largest expected moves (`MultiAssetOracleAgent` for discrete
orders, `FavouredAssetOracleAgent` for a PortfolioEnv's weights)."""
import functools

import numpy as np

from btgym_aac.data.markets import BasketOracle, MarketSpec, PairOracle, oracle_for, read_market_spec
from btgym_aac.data.markets import pair
from btgym_aac.evaluation.baselines import KEEP_POSITIONS, BaselineAgent
from btgym_aac.env.costs import SPREAD_FROM_DATA

LOOKAHEAD_DECISIONS = 6
"""The oracle in the env weighs its signal by the expected move over this many decisions (skip_frame bars each):
it builds a position one order per decision and holds it over several, so a move over one decision undersells
what a position earns. On ten windows of each market (docs/learning.md) one decision made +0.41 / +1.22 / +0.58 %
per episode (mean reversion / regime switching / intraday), six +0.58 / +1.71 / +1.68 %."""

BASKET_ASSETS_HELD = 2
"""A basket's oracle holds positions in at most this many assets, those of the largest expected moves: the broker's
margin is shared, so a position in an asset of a small expected move takes room from one of a large move. On 100
test episodes of three seeds of the basket (`benchmarks/oracle_variants.py`, docs/multi-asset.md) holding the best 1
/ 2 / 3 / all 4 made +4.09 / +4.79 / +4.45 / +3.90 % per episode, the best one alone trading every change of the
leader."""

FLAT = 2
"""The side `MultiAssetOracleAgent` is asked for where an asset should hold no position: it closes what is held."""


def market_spec_of(dataset):
    """The `MarketSpec` of a single-asset dataset's bars, or None for bars of no known-edge market.

    Args:
        dataset: the env's dataset (its `data` frame read, see `BTgymBaseData.read_csv`).

    Returns:
        the spec carried by the frame (`attrs['market']`), else by the sidecar of its one CSV file, else None.
    """
    data = getattr(dataset, 'data', None)
    spec = MarketSpec.from_frame(data) if data is not None else None
    filename = getattr(dataset, 'filename', None)
    if spec is None and isinstance(filename, str):
        spec = read_market_spec(filename)
    return spec


def env_cost_per_side(env, price):
    """What one fill costs in the env's episodes, as a fraction of the traded value at `price`: the commission,
    half the spread and the slippage of the engine's broker (`EnvComponents.cost_settings`; backtrader's slippage,
    before its capping at the bar's range; a spread taken from the data is its median over the dataset).

    Args:
        env: the evaluation env.
        price: a typical price of its bars.

    Returns:
        float >= 0.
    """
    costs = env.cost_settings()
    commission = costs['commission'] / price if costs['commission_scheme'] == 'per_unit' else costs['commission']
    slippage = costs['slippage'] or costs['slippage_fixed'] / price
    spread = costs['spread']
    if spread == SPREAD_FROM_DATA:
        spread = float(env.dataset.data['spread'].median())
    return commission + spread / 2.0 / price + slippage


ORDER_ACTIONS = ('hold', 'buy', 'sell', 'close')


def order_actions(action_names):
    """{name: index} of the env's discrete actions an oracle sends (`ORDER_ACTIONS`).

    Raises:
        ValueError: the env lacks one of them, naming both lists.
    """
    names = list(action_names or ())
    missing = [name for name in ORDER_ACTIONS if name not in names]
    if missing:
        raise ValueError('the oracle needs the actions {}; the env has {}'.format(missing, names))
    return {name: names.index(name) for name in ORDER_ACTIONS}


def order_towards(wanted, held):
    """The order an oracle sends to take a position of side `held` towards the side `wanted`.

    Args:
        wanted: +1 or -1 (one more order that way, after closing a position held against it), 0 (keep the
            position) or `FLAT` (close what is held).
        held: the side of the position held (-1, 0, +1).

    Returns:
        one of `ORDER_ACTIONS`.
    """
    if wanted == FLAT:
        return 'close' if held else 'hold'
    if wanted == 0:
        return 'hold'
    if held == -wanted:
        return 'close'
    return 'buy' if wanted > 0 else 'sell'


class _BarClock(BaselineAgent):
    """Reads the env's current bar time and the sides of its positions from the step infos."""

    def __init__(self, times):
        self.times, self.time, self.sides = times, None, {}

    def reset(self, observation=None):
        """Starts an episode flat."""
        self.time, self.sides = None, {}

    def observe_info(self, info):
        """Takes the env's current bar time and the sides of its positions from a step's (or the reset's) info."""
        self.time = info['time']
        if info.get('bars'):
            self.sides = {asset: int(np.sign(size)) for asset, size in info['bars'][-1]['positions'].items()}

    def now(self):
        """The index of the env's current bar (the last one at or before its time)."""
        return self.times.searchsorted(self.time, side='right') - 1


class OracleAgent(_BarClock):
    """Trades a single-asset BTgymEnv on an oracle's signal, with the exposure a policy of the env can take: while
    the signal is strong enough to trade on (the oracle's expected move beats the round trip cost) it sends one
    more order of the env's order size at every decision (the broker refuses orders past its margin), so it builds
    the largest position the broker allows; while it is weaker it holds; to turn around it closes, and opens the
    other way at its next decision. Its oracle looks `LOOKAHEAD_DECISIONS` decisions ahead. It reads its position
    from the step infos.

    The oracle's expected return at every bar of the dataset is computed once, from the closes up to each bar
    (`Oracle.expected_returns`, causal: tests/test_markets.py checks it against the growing prefix); a decision
    reads it at the env's current bar.

    Args:
        oracle: a `btgym_aac.data.markets.Oracle`.
        bars: the dataset's OHLCV frame, time-ordered.
        action_names: the env's discrete action names (needs hold, buy, sell and close).
    """

    def __init__(self, oracle, bars, action_names):
        super().__init__(bars.index)
        self.actions = order_actions(action_names)
        self.oracle = oracle
        self.expected = oracle.expected_returns(np.log(bars['close'].to_numpy(dtype=np.float64)), bars.index)
        self.side = 0

    def reset(self, observation=None):
        """Starts an episode flat."""
        super().reset(observation)
        self.side = 0

    def observe_info(self, info):
        """Takes the time of the env's current bar and the side of its position from a step's (or the reset's)
        info."""
        self.time = info['time']
        self.side = int(np.sign(info['position']))

    def expected_now(self):
        """The oracle's expected return at the env's current bar."""
        return self.expected[self.now()]

    def act(self, observation):
        """The action moving towards the side of the oracle's signal at the current bar: 'hold' while the signal is
        too weak to trade on (the expected move does not beat the round trip cost), 'close' when it points against
        the position held, else one more order its way."""
        expected = self.expected_now()
        wanted = int(np.sign(expected)) if abs(expected) > 2.0 * self.oracle.commission else 0
        return self.actions[order_towards(wanted, self.side)]


def market_lines(dataset):
    """(spec, {asset name in the market: data line}) of a multi-line dataset whose lines are every asset of one
    generated market of several assets (each line's spec naming its asset, under any data line names), else None."""
    streams = getattr(dataset, 'data', None)
    if not isinstance(streams, dict) or len(streams) < 2:
        return None
    specs = {line: market_spec_of(stream) for line, stream in streams.items()}
    first = next(iter(specs.values()))
    if any(spec is None or spec.asset is None or not spec.same_market(first) for spec in specs.values()):
        return None
    lines = {spec.asset: line for line, spec in specs.items()}
    return (first, lines) if set(lines) == set(first.params['names']) else None


def market_closes(spec, lines, frames):
    """(the data lines of the market's assets in its order, (bars, assets) float array of their closes).

    Args:
        spec, lines: as `market_lines` gives them.
        frames: {data line: its bars}, aligned.
    """
    names = [lines[name] for name in spec.params['names']]
    return names, np.column_stack([frames[line]['close'].to_numpy(dtype=np.float64) for line in names])


def wanted_sides(spec, lines, frames, commission, horizon):
    """What the oracle of a market of several assets wants at every bar of `frames` (each from the bars up to it).

    For a pair (`PairOracle`) the discrete orders trade Y alone, on the spread's expected change where it beats
    Y's round trip: X is a random walk, so a hedge leg in X expects nothing and takes half the margin the spread's
    edge could use; a long-only portfolio holds Y or X, whichever the spread's expected change favours beyond both
    legs' round trip (the switch sells one and buys the other). For a basket (`BasketOracle`) each of the
    `BASKET_ASSETS_HELD` assets of the largest expected relative returns on the sign of its own where it beats the
    round trip, the others flat; a portfolio holds the best one.

    Args:
        spec, lines: as `market_lines` gives them.
        frames: {data line: its bars}, aligned.
        commission: cost per side, as a log return.
        horizon: bars the oracle looks ahead.

    Returns:
        ({data line: int array of the side wanted: +1 or -1, 0 where the signal does not beat the round trip
        (the position is kept), `FLAT` where the asset should be flat}, object array of the data line a long-only
        portfolio would hold, None where none).
    """
    names, closes = market_closes(spec, lines, frames)
    if spec.kind == pair.KIND:
        oracle = PairOracle(spec, commission=commission, horizon=horizon)
        expected = oracle.expected_changes(closes[:, 0], closes[:, 1])
        side_y = np.where(np.abs(expected) > oracle.leg_round_trip, np.sign(expected), 0).astype(int)
        hedged = np.where(np.abs(expected) > oracle.round_trip, np.sign(expected), 0)
        favoured = np.where(hedged > 0, names[1], np.where(hedged < 0, names[0], None))
        return {names[1]: side_y, names[0]: np.full(len(side_y), FLAT)}, favoured
    oracle = BasketOracle(spec, commission=commission, horizon=horizon)
    expected = oracle.expected_returns(closes)
    sides = largest_moves_sides(expected, oracle.round_trip, BASKET_ASSETS_HELD)
    favoured = np.where(expected.max(axis=1) > oracle.round_trip, np.asarray(names, dtype=object)[expected.argmax(
        axis=1)], None)
    return {line: sides[:, column] for column, line in enumerate(names)}, favoured


def largest_moves_sides(expected, threshold, held):
    """The sides wanted of the `held` assets of the largest expected moves at every bar, each on the sign of its own
    where its size beats `threshold` (else 0, keeping the position), the other assets `FLAT`.

    Args:
        expected: (bars, assets) expected returns.
        threshold: what an expected return must beat (the round trip).
        held: how many assets to hold.

    Returns:
        (bars, assets) int array.
    """
    sides = np.where(np.abs(expected) > threshold, np.sign(expected), 0).astype(int)
    ranks = np.argsort(np.argsort(-np.abs(expected), axis=1, kind='stable'), axis=1)
    return np.where(ranks < held, sides, FLAT)


class MultiAssetOracleAgent(_BarClock):
    """Trades a MultiDiscreteEnv on its market's oracle (`wanted_sides`): per asset, 'hold' where the oracle wants no
    side (or `FLAT` and none is held), 'close' for a position held against the side wanted (or held where `FLAT` is
    wanted), else one more order its way at every decision (so it builds the largest position the broker allows).

    Args:
        times: the bars' times.
        sides: {data line: the side wanted at every bar: +1, -1, 0 or `FLAT`}.
        action_names: the env's discrete action names per asset (needs hold, buy, sell and close).
    """

    def __init__(self, times, sides, action_names):
        super().__init__(times)
        self.actions = order_actions(action_names)
        self.wanted = sides

    def wanted_now(self):
        """{data line: the side wanted at the current bar}."""
        now = self.now()
        return {line: int(sides[now]) for line, sides in self.wanted.items()}

    def act(self, observation):
        """Per asset: hold, close, or one more order towards the side wanted at the current bar."""
        return {line: self.actions[order_towards(side, self.sides.get(line, 0))]
                for line, side in self.wanted_now().items()}


class FavouredAssetOracleAgent(_BarClock):
    """A PortfolioEnv's oracle: its weights cannot be short, so it puts all the weight on the asset the oracle
    favours at the current bar (`wanted_sides`) and keeps its positions (`KEEP_POSITIONS`) where it favours none.

    Args:
        times: the bars' times.
        favoured: the favoured data line at every bar, or None.
        lines: the env's data lines.
        cash_name: the env's cash key (weight 0).
    """

    def __init__(self, times, favoured, lines, cash_name):
        super().__init__(times)
        self.favoured, self.lines, self.cash_name = favoured, list(lines), cash_name

    def act(self, observation):
        """All the weight on the favoured asset, or `KEEP_POSITIONS`."""
        favoured = self.favoured[self.now()]
        if favoured is None:
            return KEEP_POSITIONS
        weights = {line: np.full(1, float(line == favoured), dtype=np.float32) for line in self.lines}
        weights[self.cash_name] = np.zeros(1, dtype=np.float32)
        return weights


def oracle_agent(env):
    """The oracle baseline for `env`, or None where its bars come from no known-edge market (for several assets:
    from no market of several assets whose every asset the env trades).

    Args:
        env: the evaluation env (its dataset read).

    Returns:
        OracleAgent, MultiAssetOracleAgent, FavouredAssetOracleAgent or None.
    """
    if len(env.action_space.assets) > 1:
        return _multi_asset_oracle_agent(env, lookahead_bars(env))
    if not env.action_space.is_discrete:
        return None
    spec = market_spec_of(env.dataset)
    if spec is None:
        return None
    return rule_oracle_agent(env, functools.partial(oracle_for, spec))


def lookahead_bars(env):
    """The bars an oracle of `env` looks ahead: `LOOKAHEAD_DECISIONS` decisions of its `skip_frame` bars."""
    return LOOKAHEAD_DECISIONS * int(env.strategy_params['skip_frame'])


def rule_oracle_agent(env, make_rule):
    """An `OracleAgent` trading a single-asset env on a causal rule, looking `lookahead_bars(env)` ahead and
    weighing the env's costs per fill (`env_cost_per_side` at the data's median close), as the package's oracles
    are played.

    Args:
        env: the evaluation env (its dataset read).
        make_rule: callable (commission, horizon) -> an object with `commission` and
            `expected_returns(log_closes, times)` (a `btgym_aac.data.markets.Oracle`, or a rule of a market this
            package did not make).

    Returns:
        OracleAgent.
    """
    cost = env_cost_per_side(env, float(env.dataset.data['close'].median()))
    return OracleAgent(make_rule(cost, lookahead_bars(env)), env.dataset.data, env.portfolio_actions)


def multi_asset_market(env):
    """What an oracle of a multi-asset env reads of its market: (spec, {asset name in the market: data line},
    {data line: its bars}, the bars' times, the cost per fill as `env_cost_per_side` gives it at the median close of
    the lines), or None where the env's lines are not every asset of one market of several assets (`market_lines`)."""
    market = market_lines(env.dataset)
    if market is None:
        return None
    spec, lines = market
    frames = dict(env.dataset.frames)
    cost = env_cost_per_side(env, float(np.median([frame['close'].median() for frame in frames.values()])))
    return spec, lines, frames, next(iter(frames.values())).index, cost


def _multi_asset_oracle_agent(env, lookahead):
    market = multi_asset_market(env)
    if market is None:
        return None
    spec, lines, frames, times, cost = market
    sides, favoured = wanted_sides(spec, lines, frames, cost, lookahead)
    if env.action_space.is_discrete:
        return MultiAssetOracleAgent(times, sides, env.portfolio_actions)
    return FavouredAssetOracleAgent(times, favoured, list(frames), env.cash_name)
