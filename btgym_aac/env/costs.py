"""Trading costs on backtrader's own broker: a bid/ask spread, backtrader's slippage and a commission scheme, with
what every fill paid for each recorded.

`CostBroker` is backtrader's `BackBroker` on a two-sided market: the bars are mid prices, the ask lies half the
spread above them and the bid half the spread below. Buy orders of every type (market, limit, stop, trailing stop,
a bracket's children) are matched by backtrader's own rules against the ask's open, high, low and close, sell
orders against the bid's, so a buy limit at P fills once the ask reaches P and a stop-loss sell fills at the bid.
The spread is a number or, with `spread='data'`, each bar's own (the data feed's `spread` line: the ask minus the
bid at the bar's open, see `btgym_aac.data.bid_ask`). Slippage and commissions are backtrader's
(`set_slippage_perc` / `set_slippage_fixed`, `setcommission`), slippage moving the side's price.

`check_cost_sizes` refuses costs out of all proportion to the price (above `REFUSED_COST_FRACTION` of it: a unit
mistake, such as a spread of 1 meant as one pip) and words the large ones; `env_kwargs_costs` reads the cost
settings among an env's kwargs.
"""
import backtrader as bt

from btgym_aac.validation import check_number

COMMISSION_SCHEMES = ('percent', 'per_unit')
"""'percent': the commission is a fraction of the traded value (backtrader's stock-like percentage commission);
'per_unit': money per unit traded (backtrader's fixed commission; for FX, a commission in pips is pips times the
pip size per unit)."""
COST_NAMES = ('commission', 'spread', 'slippage')
COST_DEFAULTS = dict(spread=0.0, slippage=0.0, slippage_fixed=0.0, commission_scheme='percent')
"""Env settings of the costs, with their defaults (none: the original's fills at the bar's price)."""
SPREAD_FROM_DATA = 'data'
"""The `spread` setting that takes each bar's spread from the data's `spread` column."""
_TICK_PRICES = (('tick_open', 'open'), ('tick_high', 'high'), ('tick_low', 'low'), ('tick_close', 'close'))
"""The data attributes backtrader's broker matches orders against, with the lines they default to."""


class CostBroker(bt.brokers.BackBroker):
    """Backtrader's broker on a bid/ask market, with the costs of every fill recorded.

    Params (besides BackBroker's):
        spread: the bid/ask spread in price units (>= 0), or 'data': each bar's value of the data's `spread` line.
        commission_scheme: one of `COMMISSION_SCHEMES`, used by `apply_commission`.

    Attributes:
        costs: dict `COST_NAMES` -> money paid over the run so far: the commission, the spread (half the spread
            per unit filled: the distance from the mid to the side filled) and the slippage (the distance
            backtrader's slippage moved the side's price); every completed order's `info` also holds its own
            `spread_cost` and `slippage_cost`.
    """
    params = (('spread', 0.0), ('commission_scheme', 'percent'))

    def __init__(self):
        super().__init__()
        self.costs = dict.fromkeys(COST_NAMES, 0.0)
        self._half_spread, self._slipped = 0.0, None

    def start(self):
        super().start()
        self.costs = dict.fromkeys(COST_NAMES, 0.0)

    def apply_commission(self, commission, leverage=1.0):
        """Sets the commission of every asset in the broker's scheme.

        Args:
            commission: fraction of the traded value ('percent') or money per unit ('per_unit'), >= 0.
            leverage: backtrader's leverage (> 0).
        """
        if self.p.commission_scheme == 'per_unit':
            self.setcommission(commission=commission, commtype=bt.CommInfoBase.COMM_FIXED, stocklike=True,
                               leverage=leverage)
        else:
            self.setcommission(commission=commission, leverage=leverage)

    def half_spread(self, data):
        """Half the spread on `data`'s current bar (price units)."""
        if self.p.spread == SPREAD_FROM_DATA:
            return 0.5 * float(data.lines.spread[0])
        return 0.5 * self.p.spread

    def _try_exec(self, order):
        """Matches `order` by backtrader's rules against the ask (buys) or the bid (sells) of the current bar."""
        half = self.half_spread(order.data)
        if not half:
            return super()._try_exec(order)
        data, shift = order.data, half if order.isbuy() else -half
        saved = {name: getattr(data, name, None) for name, _ in _TICK_PRICES}
        for name, line in _TICK_PRICES:
            price = saved[name]
            setattr(data, name, (getattr(data, line)[0] if price is None else price) + shift)
        self._half_spread = half
        try:
            super()._try_exec(order)
        finally:
            self._half_spread = 0.0
            for name, price in saved.items():
                setattr(data, name, price)

    def _slip_up(self, pmax, price, doslip=True, lim=False):
        return self._keep_slip(price, super()._slip_up(pmax, price, doslip, lim))

    def _slip_down(self, pmin, price, doslip=True, lim=False):
        return self._keep_slip(price, super()._slip_down(pmin, price, doslip, lim))

    def _keep_slip(self, price, slipped):
        """Keeps (side price, slipped price) for `_execute` to tell the slippage of the fill it makes."""
        self._slipped = None if slipped is None else (price, slipped)
        return slipped

    def _execute(self, order, ago=None, price=None, cash=None, position=None, dtcoc=None):
        if ago is None:  # backtrader's pseudo-execution of the submission check
            return super()._execute(order, ago=ago, price=price, cash=cash, position=position, dtcoc=dtcoc)
        slipped, self._slipped = self._slipped, None
        size_before, commission_before = order.executed.size, order.executed.comm
        result = super()._execute(order, ago=ago, price=price, cash=cash, position=position, dtcoc=dtcoc)
        filled = abs(order.executed.size - size_before)
        if filled:
            slippage = abs(slipped[1] - slipped[0]) if slipped is not None and slipped[1] == price else 0.0
            self._record(order, filled, order.executed.comm - commission_before, slippage)
        return result

    def _record(self, order, filled, commission, slippage):
        """Adds one fill's costs to `costs` and to the order's info."""
        units = filled * self.getcommissioninfo(order.data).p.mult
        spread_cost, slippage_cost = self._half_spread * units, slippage * units
        self.costs['commission'] += commission
        self.costs['spread'] += spread_cost
        self.costs['slippage'] += slippage_cost
        order.addinfo(spread_cost=order.info.get('spread_cost', 0.0) + spread_cost,
                      slippage_cost=order.info.get('slippage_cost', 0.0) + slippage_cost)


def check_costs(settings):
    """Raises ValueError naming the first cost setting no broker can take.

    Args:
        settings: dict with `COST_DEFAULTS`' keys.
    """
    if isinstance(settings['spread'], str):
        if settings['spread'] != SPREAD_FROM_DATA:
            raise ValueError("spread must be a finite number >= 0 or {!r} (each bar's spread from the data), got "
                             "{!r}".format(SPREAD_FROM_DATA, settings['spread']))
    else:
        check_number('spread', settings['spread'])
    check_number('slippage', settings['slippage'], high=1)
    check_number('slippage_fixed', settings['slippage_fixed'])
    if settings['slippage'] and settings['slippage_fixed']:
        raise ValueError('give slippage (a fraction of the price) or slippage_fixed (price units), not both: got '
                         '{} and {}'.format(settings['slippage'], settings['slippage_fixed']))
    if settings['commission_scheme'] not in COMMISSION_SCHEMES:
        raise ValueError('commission_scheme must be one of {}, got {!r}'.format(
            COMMISSION_SCHEMES, settings['commission_scheme']))


REFUSED_COST_FRACTION = 0.01
"""A cost per unit above this fraction of the price is refused: no market charges it, and it is what a unit mistake
looks like (a spread of 1 meant as one pip, a slippage of 0.5 meant as half a percent)."""
LARGE_COST_FRACTION = 0.001
"""A cost per unit above this fraction of the price is large enough to warn of."""
_PRICE_UNITS = 'in price units (one pip of EURUSD is 0.0001)'
_A_FRACTION = 'not a percent (0.0001 is 0.01 %)'
COST_UNITS = {'spread': 'the spread is ' + _PRICE_UNITS,
              'slippage_fixed': 'slippage_fixed is ' + _PRICE_UNITS,
              'per_unit': 'a per_unit commission is money per unit traded, ' + _PRICE_UNITS,
              'slippage': 'slippage is a fraction of the price, ' + _A_FRACTION,
              'percent': 'a percent commission is a fraction of the traded value, ' + _A_FRACTION}
"""The unit of each cost setting (a commission's by its scheme), in the words of the messages."""
PRICE_UNIT_COSTS = ('spread', 'slippage_fixed', 'per_unit')
"""The units of `COST_UNITS` that are prices (the others are fractions)."""


def _cost_shares(costs, median_close, source):
    """(the cost in words, its unit in `COST_UNITS`, its fraction of the price, what it is a fraction of) of every
    cost of `costs` above zero (a spread taken from the data left out)."""
    scheme = costs.get('commission_scheme', 'percent')
    shares = []
    for name, unit in (('spread', 'spread'), ('slippage', 'slippage'), ('slippage_fixed', 'slippage_fixed'),
                       ('commission', scheme)):
        value = costs.get(name)
        if not value or value == SPREAD_FROM_DATA:
            continue
        words = '{} {:g}{}'.format(name, value, ' ({} scheme)'.format(scheme) if name == 'commission' else '')
        if unit in PRICE_UNIT_COSTS:
            shares.append((words, unit, value / median_close, 'of the median close {:.5g} of {}'.format(
                median_close, source)))
        else:
            shares.append((words, unit, value, 'of the traded value' if unit == 'percent' else 'of the price'))
    return shares


def check_cost_sizes(costs, median_close, source):
    """Refuses costs out of all proportion to the prices they are paid on, and words the large ones.

    A cost per unit above `REFUSED_COST_FRACTION` of the price is refused, one above `LARGE_COST_FRACTION` is
    large: the spread, slippage_fixed and a per_unit commission (price units) against the data's median close,
    slippage and a percent commission (fractions) as they are. A spread taken from the data is the data's own.

    Args:
        costs: dict of cost settings, valid as `check_costs` and the strategy check them: any of `spread`,
            `slippage`, `slippage_fixed`, `commission` (per fill) and `commission_scheme` (default 'percent').
        median_close: the median close of the bars the costs are paid on.
        source: those bars in words (a file name), for the messages.

    Returns:
        list of warnings, one per large cost.

    Raises:
        ValueError: naming the first refused cost, its share of the price, the median close and the cost's unit.
    """
    warnings = []
    for cost, unit, fraction, whole in _cost_shares(costs, median_close, source):
        percent = 100 * fraction
        words = '{} is {} % {}'.format(cost, '{:.3g}'.format(percent) if percent < 1000 else round(percent), whole)
        if fraction > REFUSED_COST_FRACTION:
            raise ValueError('{}: {}; costs above {:g} % of the price are refused'.format(
                words, COST_UNITS[unit], 100 * REFUSED_COST_FRACTION))
        if fraction > LARGE_COST_FRACTION:
            warnings.append('{}, a large cost (above {:g} % of the price): {}'.format(
                words, 100 * LARGE_COST_FRACTION, COST_UNITS[unit]))
    return warnings


def env_kwargs_costs(kwargs):
    """The cost settings given among an env's kwargs, checked as the env checks them.

    Args:
        kwargs: a BTgymEnv's keyword arguments.

    Returns:
        dict of those of `COST_DEFAULTS`' keys given, and `commission`: the strategy's `commission` where given,
        else `broker_commission` where given (the one the broker charges, see `EnvComponents.cost_settings`).

    Raises:
        ValueError: a cost setting no broker takes (see `check_costs`), or a commission that is no number >= 0.
    """
    costs = {name: kwargs[name] for name in COST_DEFAULTS if name in kwargs}
    check_costs(dict(COST_DEFAULTS, **costs))
    for name in ('commission', 'broker_commission'):
        if kwargs.get(name) is not None:
            costs['commission'] = check_number(name, kwargs[name])
            break
    return costs


def cost_broker(settings):
    """A `CostBroker` with the spread, slippage and commission scheme of `settings` (dict with `COST_DEFAULTS`'
    keys, checked by `check_costs`). Slippage applies to fills at the open too, capped at the bar's high or low as
    backtrader caps it."""
    check_costs(settings)
    spread = settings['spread']
    broker = CostBroker(spread=spread if spread == SPREAD_FROM_DATA else float(spread),
                        commission_scheme=settings['commission_scheme'])
    if settings['slippage']:
        broker.set_slippage_perc(settings['slippage'], slip_open=True)
    elif settings['slippage_fixed']:
        broker.set_slippage_fixed(settings['slippage_fixed'], slip_open=True)
    return broker


def check_spread_source(broker, feeds):
    """Raises ValueError when `broker` takes the spread from the data and a feed has no `spread` line.

    Args:
        broker: the engine's broker (any: only a `CostBroker` with spread='data' is checked).
        feeds: dict data line name -> backtrader feed of an episode.
    """
    if getattr(broker.params, 'spread', None) != SPREAD_FROM_DATA:
        return
    missing = [name for name, feed in feeds.items() if 'spread' not in feed.getlinealiases()]
    if missing:
        raise ValueError("spread='data' takes each bar's spread from the data, but data line(s) {} have none: give "
                         'them bid and ask prices or a spread column (see btgym_aac.data.bid_ask)'.format(missing))
