"""The oracle baseline: where the evaluated bars came from a known-edge market (`btgym_aac.data.markets`), the rule
that knows the market's process plays the same windows through the same env, so with the same costs."""
import numpy as np

from btgym_aac.data.markets import MarketSpec, oracle_for, read_market_spec
from btgym_aac.evaluation.baselines import BaselineAgent
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


def oracle_agent(env):
    """The oracle baseline for `env`, or None where its bars come from no known-edge market or it trades several
    assets.

    Args:
        env: the evaluation env (its dataset read).

    Returns:
        OracleAgent or None.
    """
    if len(env.action_space.assets) != 1 or not env.action_space.is_discrete:
        return None
    spec = market_spec_of(env.dataset)
    if spec is None:
        return None
    lookahead = LOOKAHEAD_DECISIONS * int(env.strategy_params['skip_frame'])
    cost = env_cost_per_side(env, float(env.dataset.data['close'].median()))
    oracle = oracle_for(spec, commission=cost, horizon=lookahead)
    return OracleAgent(oracle, env.dataset.data, env.portfolio_actions)
