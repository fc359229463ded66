"""The flags of orders as actions (`strategy.orders`): stop-losses, take-profits, trailing stops and sizers set
from the command line, each replacing the config's env kwarg of the same name."""
import argparse

ORDER_FLAGS = ('stop_loss', 'take_profit', 'distance_unit', 'pip_size', 'atr_period', 'trailing_stop', 'sizer')
"""The flags, named as the strategy params (env kwargs) they set."""
DISCRETE_ACTIONS = ('hold', 'buy', 'sell', 'close')
"""Stands for the env's action names in the flags' check (without --portfolio the actions are discrete)."""


def add_order_flags(parser):
    """Adds the 'orders as actions' group of flags to `parser`."""
    orders = parser.add_argument_group('orders as actions', 'discrete actions only; each one given replaces the '
                                       'setting of the config; by default every order is a market order of the '
                                       'order size')
    orders.add_argument('--stop-loss', type=float, metavar='DISTANCE', help='a buy or sell opens a bracket whose '
                        'stop-loss child lies DISTANCE (in --distance-unit) from the decision bar\'s close')
    orders.add_argument('--take-profit', type=float, metavar='DISTANCE', help='the bracket\'s take-profit child, '
                        'DISTANCE from the decision bar\'s close')
    orders.add_argument('--distance-unit', choices=('price', 'pips', 'percent', 'atr'),
                        help='unit of the distances (default price; pips of --pip-size; atr: multiples of the '
                        'average true range over --atr-period bars)')
    orders.add_argument('--pip-size', type=float, metavar='PRICE', help='a pip in price units (default 0.0001)')
    orders.add_argument('--atr-period', type=int, metavar='BARS', help='bars of the average true range (default 14)')
    orders.add_argument('--trailing-stop', action='store_true', default=None,
                        help='the stop-loss trails the price at its distance (needs --stop-loss)')
    orders.add_argument('--sizer', type=_sizer, metavar='KIND=VALUE', help='size orders by fixed=UNITS, '
                        'percent=PERCENT (of the equity) or risk=PERCENT (of the equity lost at the stop-loss); '
                        'replaces the config\'s order_size')


def _sizer(text):
    """The `sizer` param of a --sizer value."""
    kind, sign, value = text.partition('=')
    keys = {'fixed': 'stake', 'percent': 'percent', 'risk': 'percent'}
    if not sign or kind not in keys:
        raise argparse.ArgumentTypeError('fixed=UNITS, percent=PERCENT or risk=PERCENT, got {!r}'.format(text))
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError('{}= takes a number, got {!r}'.format(kind, value)) from None
    return {'kind': kind, keys[kind]: int(number) if kind == 'fixed' and number.is_integer() else number}


def order_flags(args):
    """The order settings given as flags, checked as the strategy checks them (a sizer also sets `order_size` to
    None: the sizer sizes the orders).

    Returns:
        dict env kwarg -> value of those given.

    Raises:
        ValueError: a setting no episode can run with (named, as the strategy names it).
    """
    given = {name: getattr(args, name) for name in ORDER_FLAGS if getattr(args, name, None) is not None}
    if not given:
        return given
    from btgym_aac.strategy.orders import ORDER_PARAMS, check_order_params

    portfolio_actions = None if getattr(args, 'portfolio', False) else DISCRETE_ACTIONS
    try:
        check_order_params(dict(ORDER_PARAMS, **given, order_size=None, portfolio_actions=portfolio_actions))
    except ValueError as error:  # (named as the strategy names it, after the flags that set it)
        raise ValueError('{}: {}'.format(', '.join('--' + name.replace('_', '-') for name in given), error)) from None
    if 'sizer' in given:
        given['order_size'] = None
    return given
