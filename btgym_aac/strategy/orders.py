"""Orders as actions: how a strategy's actions become orders, and the order params of `ORDER_PARAMS`.

Discrete actions are executed once, continuous target-percent actions are sent again on the bars after a decision,
and the positions are closed at the end of an episode (`OrderExecution`). The params of `ORDER_PARAMS`, all off by
default, add brackets (backtrader's `buy_bracket` / `sell_bracket`: a market entry with a stop-loss and a
take-profit child), trailing stop-losses (backtrader's `StopTrail`) and sizers (`sizers.py`) (`BracketOrders`).
"""
import math

import backtrader as bt
import numpy as np

from btgym_aac.strategy.sizers import check_sizer, make_sizer
from btgym_aac.validation import check_number, check_whole_number

ORDER_PARAMS = dict(stop_loss=None, take_profit=None, distance_unit='price', pip_size=0.0001, atr_period=14,
                    trailing_stop=False, sizer=None)
"""The strategy params of the orders as actions, with their defaults (see `BracketOrders`)."""
DISTANCE_UNITS = ('price', 'pips', 'percent', 'atr')
DECISION_BAR = -1
"""The bar of the agent's decision, seen from the bar whose `next()` submits its orders (the env hands an action
decided at bar t to the strategy at bar t+1)."""
BRACKET_KEY = 'bracket'
"""Key of an order's `info` naming its part of a bracket: 'entry', 'stop_loss' or 'take_profit'."""


def check_order_params(params):
    """Raises ValueError naming the first param of `ORDER_PARAMS` no episode can run with.

    Args:
        params: dict of all the strategy's params.
    """
    if params['distance_unit'] not in DISTANCE_UNITS:
        raise ValueError('distance_unit must be one of {}, got {!r}'.format(DISTANCE_UNITS, params['distance_unit']))
    for name in ('stop_loss', 'take_profit'):
        if params[name] is not None:
            check_number(name, params[name], low_open=True)
    check_number('pip_size', params['pip_size'], low_open=True)
    check_whole_number('atr_period', params['atr_period'])
    if not isinstance(params['trailing_stop'], bool):
        raise ValueError('trailing_stop must be True or False, got {!r}'.format(params['trailing_stop']))
    if params['trailing_stop'] and params['stop_loss'] is None:
        raise ValueError('trailing_stop=True needs stop_loss (the trail distance), got stop_loss=None')
    check_sizer(params['sizer'], params['stop_loss'])
    if params['sizer'] is not None and params['order_size'] is not None:
        raise ValueError('give sizer or order_size, not both: got sizer={!r} and order_size={!r} (pass '
                         'order_size=None with a sizer)'.format(params['sizer'], params['order_size']))
    given = [name for name in ('stop_loss', 'take_profit', 'trailing_stop', 'sizer')
             if params[name] is not None and params[name] is not False]
    if given and not params['portfolio_actions']:
        raise ValueError('stop_loss, take_profit, trailing_stop and sizer need discrete actions (portfolio_actions), '
                         'got {} with portfolio_actions={!r} (continuous target-percent actions)'.format(
                             ', '.join('{}={!r}'.format(name, params[name]) for name in given),
                             params['portfolio_actions']))


def bracket_part(order):
    """The part of a bracket `order` is ('entry', 'stop_loss', 'take_profit'), or None for other orders."""
    return order.info.get(BRACKET_KEY)


class OrderExecution:
    """Mixin of `BTgymBaseStrategy` (it follows `bt.Strategy` in the bases, as `BrokerStatistics` does) turning
    actions into orders; the strategy's `next()` calls `next_process_fn` with the action of the bar.

    It reads the strategy's params (`portfolio_actions`, `skip_frame`), broker, positions, `traded_datas`,
    `order_size`, `is_done_enabled` and the bracket mode of `BracketOrders`, and sets `order` and
    `broker_message`.
    """

    def _set_action_mode(self):
        """Discrete actions (`portfolio_actions`) are executed once, as orders the broker checks at submission;
        continuous target-percent actions (None) are sent again on up to two of the bars skipped after a decision.

        Raises:
            ValueError: continuous actions with skip_frame <= 1.
        """
        if self.p.portfolio_actions:
            self.broker.set_checksubmit(True)
            self.next_process_fn = self._next_discrete
            self.num_action_repeats = 0
        else:
            if self.p.skip_frame <= 1:
                raise ValueError('continuous actions (portfolio_actions=None) need skip_frame > 1')
            self.broker.set_checksubmit(False)
            self.next_process_fn = self._next_target_percent
            self.num_action_repeats = 2
        self._init_order_options()

    def _close_positions(self):
        """Cancels every asset's open bracket orders and sends a closing order for every traded asset holding a
        position."""
        for asset, data in self.traded_datas.items():
            self.cancel_brackets(asset)
            if self.getposition(data).size:
                self.order = self.close(data=data)

    def _next_discrete(self, action):
        """Submits the orders of every asset whose action is 'buy', 'sell' or 'close' (none once the episode is
        ending): market orders of the asset's `order_size` (or of the sizer's stake), or in bracket mode those of
        `BracketOrders._bracket_action`.

        Args:
            action: dict asset -> action name of `portfolio_actions`.
        """
        for asset, name in action.items():
            if name not in ('buy', 'sell', 'close') or self.is_done_enabled:
                continue
            data = self.traded_datas[asset]
            if self.bracket_mode:
                self.broker_message = self._bracket_action(asset, data, name)
            elif name == 'close':
                self.order = self.close(data=data)
                self.broker_message = 'new {}_{} order submitted'.format(asset, name)
            else:
                self.order = (self.buy if name == 'buy' else self.sell)(data=data, size=self.order_size[asset])
                self.broker_message = 'new {}_{} order submitted'.format(asset, name) if self.order is not None \
                    else 'no {}_{} order: the sizer gives 0 units'.format(asset, name)

    def _next_target_percent(self, action):
        """Orders every traded asset towards a position worth `round(0.9 * weight, 2)` of the portfolio value at the
        current close (keys that are no traded asset, the cash weight among them, are skipped). The order is the
        value missing from the target in whole units, truncated toward zero, so a position less than one unit's
        price away from its target is left alone.

        The size is computed here, not by backtrader's `order_target_percent`, which sizes orders with the
        broker's leverage but values the held position without it, so with leverage above 1 positions overshoot
        their targets and swing between them on every re-sent order.
        """
        portfolio_value = self.broker.get_value()
        for asset, value in action.items():
            if asset not in self.traded_datas or self.is_done_enabled:
                continue
            target = round(0.9 * float(np.asarray(value).reshape(-1)[0]), 2)
            data = self.traded_datas[asset]
            units = int(target * portfolio_value / data.close[0] - self.getposition(data).size)
            if units > 0:
                self.order = self.buy(data=data, size=units)
            elif units < 0:
                self.order = self.sell(data=data, size=-units)
            self.broker_message = 'new {} target percent order: {}'.format(asset, target)


class BracketOrders:
    """Mixin of `BTgymBaseStrategy` (after `bt.Strategy` in the bases) for the params of `ORDER_PARAMS`.

    Bracket mode (`stop_loss` or `take_profit` set): 'buy' with the asset flat or long opens a bracket of the
    stake: a market entry with a sell stop at `stop_loss` below and a sell limit at `take_profit` above the
    reference price (the close of the decision bar); 'buy' with the asset short cancels its open bracket orders
    and closes the position, as 'close' does; 'sell' is symmetric; 'hold' leaves the orders working between
    decisions. Backtrader activates the children once the entry fills and cancels one when the other fills; the
    episode's end (`_close_positions`) cancels every open one. A 'buy' when long adds a bracket of its own.
    Distances are in `distance_unit`: 'price', 'pips' (times `pip_size`), 'percent' (of the reference price) or
    'atr' (multiples of backtrader's `ATR(period=atr_period)` of the asset at the decision bar). `trailing_stop`
    makes the stop a `StopTrail` trailing the close by the stop distance, from the reference price.

    `sizer` (a dict, see `sizers.make_sizer`) replaces the fixed `order_size` by a backtrader sizer.
    """

    def _init_order_options(self):
        """Bracket mode, each asset's open bracket orders and, in 'atr' units, one ATR per traded asset."""
        self.bracket_mode = self.p.stop_loss is not None or self.p.take_profit is not None
        self.bracket_orders = {asset: [] for asset in self.traded_datas}
        self.bracket_atrs = {}
        if self.bracket_mode and self.p.distance_unit == 'atr':
            for data in self.traded_datas.values():
                atr = self.bracket_atrs[data] = bt.indicators.ATR(data, period=self.p.atr_period)
                atr.plotinfo.plot = False
            self.warmup_bars = max(self.warmup_bars, self.p.atr_period + 1)
            self._check_episode_length(self.warmup_bars)

    def _set_sizer(self):
        """Sets the sizer of the `sizer` param (after the engine's default sizer, which it replaces)."""
        if self.p.sizer is not None:
            self.setsizer(make_sizer(self.p.sizer))

    def reference_price(self, data):
        """The close of `data` at the decision bar."""
        return float(data.close[DECISION_BAR])

    def price_distance(self, distance, data):
        """`distance` in `distance_unit` as a price difference on `data` (NaN before the ATR has a value)."""
        unit = self.p.distance_unit
        if unit == 'pips':
            return distance * self.p.pip_size
        if unit == 'percent':
            return distance / 100.0 * self.reference_price(data)
        if unit == 'atr':
            return distance * float(self.bracket_atrs[data][DECISION_BAR])
        return float(distance)

    def stop_distance(self, data):
        """The stop-loss distance on `data` in price units, or None without a stop-loss."""
        return None if self.p.stop_loss is None else self.price_distance(self.p.stop_loss, data)

    def _bracket_action(self, asset, data, name):
        """Executes the action `name` ('buy', 'sell' or 'close') of `asset` in bracket mode.

        Returns:
            the broker message.
        """
        position = self.getposition(data).size
        if name == 'close' or (position < 0 if name == 'buy' else position > 0):
            self.cancel_brackets(asset)
            self.order = self.close(data=data)
            return '{}_{}: bracket orders cancelled, position closed'.format(asset, name)
        return self._open_bracket(asset, data, name == 'buy')

    def _open_bracket(self, asset, data, isbuy):
        """Submits a bracket of the stake on `asset` (a buy bracket if `isbuy`).

        Returns:
            the broker message.
        """
        name = 'buy' if isbuy else 'sell'
        size = self.order_size[asset] or self.getsizing(data, isbuy=isbuy)
        if not size:
            return 'no {}_{} bracket: the sizer gives 0 units'.format(asset, name)
        price = self.reference_price(data)
        stop, limit = (None if distance is None else self.price_distance(distance, data)
                       for distance in (self.p.stop_loss, self.p.take_profit))
        if any(distance is not None and not math.isfinite(distance) for distance in (stop, limit)):
            return 'no {}_{} bracket: no {} distance yet'.format(asset, name, self.p.distance_unit)
        sign = 1.0 if isbuy else -1.0
        stop_args = {BRACKET_KEY: 'stop_loss'}
        if self.p.trailing_stop:
            stop_args['trailamount'] = stop
        kwargs = dict(
            data=data, size=size, exectype=bt.Order.Market, oargs={BRACKET_KEY: 'entry'},
            stopexec=None if stop is None else (bt.Order.StopTrail if self.p.trailing_stop else bt.Order.Stop),
            stopprice=None if stop is None else (price if self.p.trailing_stop else price - sign * stop),
            stopargs=stop_args, limitexec=None if limit is None else bt.Order.Limit,
            limitprice=None if limit is None else price + sign * limit, limitargs={BRACKET_KEY: 'take_profit'})
        orders = (self.buy_bracket if isbuy else self.sell_bracket)(**kwargs)
        self.order = orders[0]
        self.bracket_orders[asset] = [order for order in self.bracket_orders[asset] if order.alive()]
        self.bracket_orders[asset] += [order for order in orders if order is not None]
        return 'new {}_{} bracket submitted'.format(asset, name)

    def cancel_brackets(self, asset):
        """Cancels the open bracket orders of `asset` (a pending entry with its children); orders submitted on this
        bar, which backtrader accepts on the next, stay listed and are cancelled by the next call."""
        for order in self.bracket_orders[asset]:
            if order.alive():
                self.cancel(order)
        self.bracket_orders[asset] = [order for order in self.bracket_orders[asset] if order.alive()]

    def open_bracket_orders(self):
        """Dict asset -> its bracket orders still alive (submitted, accepted or partly filled)."""
        return {asset: [order for order in orders if order.alive()] for asset, orders in self.bracket_orders.items()}
