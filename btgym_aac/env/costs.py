"""Trading costs on backtrader's own broker: a bid/ask spread, backtrader's slippage and a commission scheme, with
what every fill paid for each recorded.

`CostBroker` is backtrader's `BackBroker` with a spread: a market buy fills half the spread above the price
backtrader fills it at (the next bar's open, moved by its slippage when that is set), a market sell half the spread
below. Slippage and commissions are backtrader's (`set_slippage_perc` / `set_slippage_fixed`, `setcommission`).
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


class CostBroker(bt.brokers.BackBroker):
    """Backtrader's broker with a bid/ask spread and the costs of every fill recorded.

    Params (besides BackBroker's):
        spread: the bid/ask spread in price units (>= 0), paid half on each side of a market order.
        commission_scheme: one of `COMMISSION_SCHEMES`, used by `apply_commission`.

    Attributes:
        costs: dict `COST_NAMES` -> money paid over the run so far (commission, spread, slippage); every completed
            order's `info` also holds its own `spread_cost` and `slippage_cost`.

    Raises (at submission):
        ValueError: an order other than a market order while the spread is not 0 (limit and stop orders are not
            yet priced with a spread).
    """
    params = (('spread', 0.0), ('commission_scheme', 'percent'))

    def start(self):
        super().start()
        self.costs = dict.fromkeys(COST_NAMES, 0.0)
        self._prices = None

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

    def submit(self, order, check=True):
        if self.p.spread and order.exectype not in (None, bt.Order.Market):
            raise ValueError('spread={} prices market orders only; got a {} order'.format(
                self.p.spread, order.ExecTypes[order.exectype]))
        return super().submit(order, check)

    def _slip_up(self, pmax, price, doslip=True, lim=False):
        return self._with_spread(price, super()._slip_up(pmax, price, doslip, lim), 0.5 * self.p.spread)

    def _slip_down(self, pmin, price, doslip=True, lim=False):
        return self._with_spread(price, super()._slip_down(pmin, price, doslip, lim), -0.5 * self.p.spread)

    def _with_spread(self, price, slipped, half_spread):
        """The fill price with the half spread; keeps (price, slipped price, fill price) for `_execute`."""
        if slipped is None:
            self._prices = None
            return None
        filled = slipped + half_spread
        self._prices = (price, slipped, filled)
        return filled

    def _execute(self, order, ago=None, price=None, cash=None, position=None, dtcoc=None):
        if ago is None:  # backtrader's pseudo-execution of the submission check
            return super()._execute(order, ago=ago, price=price, cash=cash, position=position, dtcoc=dtcoc)
        prices, self._prices = self._prices, None
        size_before, commission_before = order.executed.size, order.executed.comm
        result = super()._execute(order, ago=ago, price=price, cash=cash, position=position, dtcoc=dtcoc)
        filled = abs(order.executed.size - size_before)
        if filled:
            self._record(order, filled, order.executed.comm - commission_before,
                         prices if prices is not None and prices[2] == price else None)
        return result

    def _record(self, order, filled, commission, prices):
        """Adds one fill's costs to `costs` and to the order's info."""
        spread_cost = slippage_cost = 0.0
        if prices is not None:
            reference, slipped, fill = prices
            multiplier = self.getcommissioninfo(order.data).p.mult
            spread_cost = abs(fill - slipped) * filled * multiplier
            slippage_cost = abs(slipped - reference) * filled * multiplier
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
    check_number('spread', settings['spread'])
    check_number('slippage', settings['slippage'], high=1)
    check_number('slippage_fixed', settings['slippage_fixed'])
    if settings['slippage'] and settings['slippage_fixed']:
        raise ValueError('give slippage (a fraction of the price) or slippage_fixed (price units), not both: got '
                         '{} and {}'.format(settings['slippage'], settings['slippage_fixed']))
    if settings['commission_scheme'] not in COMMISSION_SCHEMES:
        raise ValueError('commission_scheme must be one of {}, got {!r}'.format(
            COMMISSION_SCHEMES, settings['commission_scheme']))


def cost_broker(settings):
    """A `CostBroker` with the spread, slippage and commission scheme of `settings` (dict with `COST_DEFAULTS`'
    keys, checked by `check_costs`). Slippage applies to fills at the open too, capped at the bar's high or low as
    backtrader caps it."""
    check_costs(settings)
    broker = CostBroker(spread=float(settings['spread']), commission_scheme=settings['commission_scheme'])
    if settings['slippage']:
        broker.set_slippage_perc(settings['slippage'], slip_open=True)
    elif settings['slippage_fixed']:
        broker.set_slippage_fixed(settings['slippage_fixed'], slip_open=True)
    return broker
