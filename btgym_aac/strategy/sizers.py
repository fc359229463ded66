"""The stake of a strategy's orders: the `order_size` param checked, or taken from the engine's fixed sizer; or,
with the `sizer` param, one of the sizers of discrete actions: backtrader's fixed size, a percent of the portfolio
value, and a risk per trade. They are backtrader `Sizer`s, asked by `Strategy.getsizing`."""
import math
import numbers

import backtrader as bt

from btgym_aac.validation import check_number

SIZER_KINDS = {'fixed': 'stake', 'percent': 'percent', 'risk': 'percent'}
"""`sizer['kind']` -> the one other key it takes."""


def _whole_units(units):
    """`units` rounded down to a whole number >= 0 (0 for NaN or inf)."""
    return int(math.floor(units)) if math.isfinite(units) and units > 0 else 0


class EquityPercentSizer(bt.Sizer):
    """Units worth `percent` of the broker value (the equity, not the cash as backtrader's `PercentSizer`) at the
    strategy's `reference_price(data)`: floor(percent / 100 * value / price)."""
    params = (('percent', 10.0),)

    def _getsizing(self, comminfo, cash, data, isbuy):
        price = self.strategy.reference_price(data)
        return _whole_units(self.p.percent / 100.0 * self.broker.getvalue() / price) if price > 0 else 0


class RiskSizer(bt.Sizer):
    """Units whose loss at the stop-loss is `percent` of the broker value: floor(percent / 100 * value / stop
    distance), the distance in price units from the strategy's `stop_distance(data)`."""
    params = (('percent', 1.0),)

    def _getsizing(self, comminfo, cash, data, isbuy):
        distance = self.strategy.stop_distance(data)
        if distance is None or not distance > 0:
            return 0
        return _whole_units(self.p.percent / 100.0 * self.broker.getvalue() / distance)


def make_sizer(spec):
    """The backtrader sizer of a `sizer` param (checked by `check_sizer`).

    Args:
        spec: dict {'kind': 'fixed', 'stake': N}, {'kind': 'percent', 'percent': P} or {'kind': 'risk', 'percent': P}.

    Returns:
        `bt.sizers.FixedSize`, `EquityPercentSizer` or `RiskSizer`.
    """
    kind = spec['kind']
    if kind == 'fixed':
        return bt.sizers.FixedSize(stake=spec['stake'])
    return (EquityPercentSizer if kind == 'percent' else RiskSizer)(percent=spec['percent'])


def check_sizer(spec, stop_loss):
    """Raises ValueError naming `sizer` unless it is None or a dict `make_sizer` takes.

    Args:
        spec: the `sizer` param.
        stop_loss: the `stop_loss` param ('risk' needs it).
    """
    if spec is None:
        return
    if not isinstance(spec, dict) or spec.get('kind') not in SIZER_KINDS:
        raise ValueError("sizer must be None or a dict with 'kind' one of {}, got {!r}".format(
            tuple(SIZER_KINDS), spec))
    kind, key = spec['kind'], SIZER_KINDS[spec['kind']]
    if set(spec) != {'kind', key}:
        raise ValueError('sizer of kind {!r} takes the keys kind and {}, got {!r}'.format(kind, key, spec))
    check_number('sizer[{!r}]'.format(key), spec[key], high=100 if kind == 'risk' else None, low_open=True)
    if kind == 'risk' and stop_loss is None:
        raise ValueError("sizer {!r} needs stop_loss (the risk of a trade is its stop distance), got "
                         "stop_loss=None".format(spec))


def check_order_size(size, asset_names):
    """Raises ValueError unless `size` is None, a number > 0, or a dict giving every asset a number > 0."""
    if size is None:
        return
    if isinstance(size, dict):
        missing = set(asset_names) - set(size)
        if missing:
            raise ValueError('order_size has no entry for assets {}'.format(sorted(missing)))
        for asset, stake in size.items():
            check_number('order_size[{!r}]'.format(asset), stake, low_open=True)
    elif isinstance(size, numbers.Real) and not isinstance(size, bool):
        check_number('order_size', size, low_open=True)
    else:
        raise ValueError('order_size must be None, a number or a dict asset -> size, got {!r}'.format(size))


def order_sizes(params, sizers):
    """Order size per asset (the env calls this at construction to check the engine's sizer).

    Args:
        params: dict of the strategy's params, checked by `check_params`.
        sizers: the engine's `sizers` dict (index -> (class, args, kwargs)).

    Returns:
        dict asset -> size: `order_size`, or the stake of the engine's one sizer with a `stake` when it is None;
        None for every asset with a `sizer` param (the strategy's sizer gives the stakes).

    Raises:
        ValueError: `order_size` and `sizer` are None and the engine has no such sizer, several, or a stake <= 0.
    """
    size = params['order_size']
    assets = list(params['asset_names'])
    if params.get('sizer') is not None:
        return dict.fromkeys(assets)
    if size is None:
        stakes = [kwargs['stake'] for _, _, kwargs in sizers.values() if 'stake' in kwargs]
        if len(stakes) != 1:
            raise ValueError(
                'order_size is not set and the engine has {} sizers with a `stake`; '
                'pass order_size= or add exactly one SizerFix'.format(len(stakes))
            )
        check_number("the engine's sizer stake (fixed_stake), which order_size=None takes,", stakes[0],
                     low_open=True)
        return {asset: stakes[0] for asset in assets}
    if isinstance(size, dict):
        return dict(size)
    return {asset: size for asset in assets}
