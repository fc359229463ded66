"""The oracle baseline: where the evaluated bars came from a known-edge market (`btgym_aac.data.markets`), the rule
that knows the market's process plays the same windows through the same env, so with the same costs. A single-asset
env gets its market's oracle (`OracleAgent`); a multi-asset env whose assets are the two legs of a cointegrated pair
(`markets.make_pair_market`) gets the pair's (`PairOracleAgent` for discrete orders, `PairWeightsOracleAgent` for a
PortfolioEnv's weights)."""
import numpy as np

from btgym_aac.data.markets import MarketSpec, PairOracle, oracle_for, read_market_spec
from btgym_aac.data.markets import pair
from btgym_aac.evaluation.baselines import KEEP_POSITIONS, BaselineAgent
from btgym_aac.env.costs import SPREAD_FROM_DATA

LOOKAHEAD_DECISIONS = 6
"""The oracle in the env weighs its signal by the expected move over this many decisions (skip_frame bars each):
it builds a position one order per decision and holds it over several, so a move over one decision undersells
what a position earns. On ten windows of each market (docs/learning.md) one decision made +0.41 / +1.22 / +0.58 %
per episode (mean reversion / regime switching / intraday), six +0.58 / +1.71 / +1.68 %."""


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


class OracleAgent(BaselineAgent):
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
        names = list(action_names or ())
        missing = [name for name in ('hold', 'buy', 'sell', 'close') if name not in names]
        if missing:
            raise ValueError('the oracle needs the actions {}; the env has {}'.format(missing, names))
        self.actions = {name: names.index(name) for name in ('hold', 'buy', 'sell', 'close')}
        self.oracle = oracle
        self.times = bars.index
        self.expected = oracle.expected_returns(np.log(bars['close'].to_numpy(dtype=np.float64)), bars.index)
        self.side = 0
        self.time = None

    def reset(self, observation=None):
        """Starts an episode flat."""
        self.side = 0
        self.time = None

    def observe_info(self, info):
        """Takes the time of the env's current bar and the side of its position from a step's (or the reset's)
        info."""
        self.time = info['time']
        self.side = int(np.sign(info['position']))

    def expected_now(self):
        """The oracle's expected return at the env's current bar (the last bar at or before its time)."""
        return self.expected[self.times.searchsorted(self.time, side='right') - 1]

    def act(self, observation):
        """The action moving towards the side of the oracle's signal at the current bar: 'hold' while the signal is
        too weak to trade on (the expected move does not beat the round trip cost), 'close' when it points against
        the position held, else one more order its way."""
        expected = self.expected_now()
        if abs(expected) <= 2.0 * self.oracle.commission:
            return self.actions['hold']
        if self.side == -np.sign(expected):
            return self.actions['close']
        return self.actions['buy'] if expected > 0 else self.actions['sell']


def pair_lines(dataset):
    """{'X': data line, 'Y': data line} of a multi-line dataset whose two lines are the legs of one cointegrated
    pair (`markets.make_pair_market`, each line's spec naming its role), else None."""
    streams = getattr(dataset, 'data', None)
    if not isinstance(streams, dict) or len(streams) != 2:
        return None
    specs = {line: market_spec_of(stream) for line, stream in streams.items()}
    first = next(iter(specs.values()))
    if any(spec is None or spec.kind != pair.KIND or not spec.same_market(first) for spec in specs.values()):
        return None
    roles = {spec.asset: line for line, spec in specs.items()}
    return roles if set(roles) == set(pair.ROLES) else None


class PairOracleAgent(BaselineAgent):
    """Trades a MultiDiscreteEnv on a cointegrated pair with its oracle (`markets.PairOracle`): while the expected
    change of the spread beats the round trip of both legs, one more order on each leg at every decision (Y its
    way, X the other), so it builds the largest hedged position the broker allows; while it is weaker it holds; a
    leg held against the signal is closed first. It reads the positions from the step infos.

    Args:
        oracle: a `PairOracle`.
        lines: {'X': data line, 'Y': data line} (`pair_lines`).
        frames: {data line: its bars}, aligned, time-ordered.
        action_names: the env's discrete action names per asset (needs hold, buy, sell and close).
    """

    def __init__(self, oracle, lines, frames, action_names):
        names = list(action_names or ())
        missing = [name for name in ('hold', 'buy', 'sell', 'close') if name not in names]
        if missing:
            raise ValueError('the oracle needs the actions {}; the env has {}'.format(missing, names))
        self.actions = {name: names.index(name) for name in ('hold', 'buy', 'sell', 'close')}
        self.oracle, self.lines = oracle, lines
        bars_x, bars_y = frames[lines['X']], frames[lines['Y']]
        self.times = bars_x.index
        self.expected = oracle.expected_changes(bars_x['close'].to_numpy(), bars_y['close'].to_numpy())
        self.sides, self.time = {}, None

    def reset(self, observation=None):
        """Starts an episode flat."""
        self.sides, self.time = {}, None

    def observe_info(self, info):
        """Takes the env's current bar time and the sides of its positions from a step's (or the reset's) info."""
        self.time = info['time']
        if info.get('bars'):
            self.sides = {asset: int(np.sign(size)) for asset, size in info['bars'][-1]['positions'].items()}

    def expected_now(self):
        """The oracle's expected change of the spread at the env's current bar."""
        return self.expected[self.times.searchsorted(self.time, side='right') - 1]

    def act(self, observation):
        """Per leg: 'hold' while the signal does not beat the round trip; 'close' for a leg held against it; else
        one more order its way (Y with the spread, X against it)."""
        expected = self.expected_now()
        if abs(expected) <= self.oracle.round_trip:
            return {line: self.actions['hold'] for line in self.lines.values()}
        wanted = {self.lines['Y']: int(np.sign(expected)), self.lines['X']: -int(np.sign(expected))}
        return {line: self.actions['close'] if self.sides.get(line, 0) == -side else
                self.actions['buy' if side > 0 else 'sell'] for line, side in wanted.items()}


class PairWeightsOracleAgent(PairOracleAgent):
    """A PortfolioEnv's pair oracle: its weights cannot be short, so it holds the leg the spread's expected change
    favours (all the weight on Y while the spread should widen, on X while it should narrow) and keeps its
    positions (`KEEP_POSITIONS`) while the signal does not beat the round trip.

    Args:
        oracle, lines, frames: as `PairOracleAgent`.
        cash_name: the env's cash key (weight 0).
    """

    def __init__(self, oracle, lines, frames, cash_name):
        super().__init__(oracle, lines, frames, ('hold', 'buy', 'sell', 'close'))
        self.cash_name = cash_name

    def act(self, observation):
        """All the weight on the favoured leg, or `KEEP_POSITIONS`."""
        expected = self.expected_now()
        if abs(expected) <= self.oracle.round_trip:
            return KEEP_POSITIONS
        favoured = self.lines['Y' if expected > 0 else 'X']
        weights = {line: np.full(1, float(line == favoured), dtype=np.float32) for line in self.lines.values()}
        weights[self.cash_name] = np.zeros(1, dtype=np.float32)
        return weights


def oracle_agent(env):
    """The oracle baseline for `env`, or None where its bars come from no known-edge market (or, for several
    assets, from no cointegrated pair).

    Args:
        env: the evaluation env (its dataset read).

    Returns:
        OracleAgent, PairOracleAgent, PairWeightsOracleAgent or None.
    """
    lookahead = LOOKAHEAD_DECISIONS * int(env.strategy_params['skip_frame'])
    if len(env.action_space.assets) > 1:
        return _pair_oracle_agent(env, lookahead)
    if not env.action_space.is_discrete:
        return None
    spec = market_spec_of(env.dataset)
    if spec is None:
        return None
    cost = env_cost_per_side(env, float(env.dataset.data['close'].median()))
    oracle = oracle_for(spec, commission=cost, horizon=lookahead)
    return OracleAgent(oracle, env.dataset.data, env.portfolio_actions)


def _pair_oracle_agent(env, lookahead):
    lines = pair_lines(env.dataset)
    if lines is None:
        return None
    frames = dict(env.dataset.frames)
    spec = market_spec_of(env.dataset.data[lines['Y']])
    cost = env_cost_per_side(env, float(frames[lines['Y']]['close'].median()))
    oracle = PairOracle(spec, commission=cost, horizon=lookahead)
    if env.action_space.is_discrete:
        return PairOracleAgent(oracle, lines, frames, env.portfolio_actions)
    return PairWeightsOracleAgent(oracle, lines, frames, env.cash_name)
