"""The orders of a strategy: discrete actions executed once, continuous target-percent actions sent again on the
bars after a decision, and the closing orders at the end of an episode."""
import numpy as np


class OrderExecution:
    """Mixin of `BTgymBaseStrategy` (it follows `bt.Strategy` in the bases, as `BrokerStatistics` does) turning
    actions into orders; the strategy's `next()` calls `next_process_fn` with the action of the bar.

    It reads the strategy's params (`portfolio_actions`, `skip_frame`), broker, positions, `traded_datas`,
    `order_size`, `is_done_enabled` and the bracket mode of `brackets.BracketOrders`, and sets `order` and
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
