"""The stake of a strategy's orders: the `order_size` param checked, or taken from the engine's fixed sizer (or
from the strategy's `sizer`, see `sizers.py`)."""
import numbers

from btgym_aac.validation import check_number


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
