"""An agent's action, checked against the env's action space and turned into the strategy's action names."""
import numpy as np


def strategy_action(action, action_space, asset_names, portfolio_actions):
    """The strategy's per-asset action for an agent's action.

    Args:
        action: dict asset -> action index (in `action_space`), or an integer index applied to every asset.
        action_space: the env's `ActionDictSpace`.
        asset_names: the traded assets.
        portfolio_actions: the strategy's action names (empty: continuous actions, passed as floats).

    Returns:
        dict asset -> action name (or float).

    Raises:
        ValueError: the action is outside the action space.
    """
    if isinstance(action, dict):
        if action not in action_space:
            raise ValueError('action {!r} is not in the action space {}'.format(action, action_space))
        values = action
    else:
        try:
            index = int(action)
        except (TypeError, ValueError):
            raise ValueError('action {!r} is neither a dict in {} nor an integer'.format(action, action_space)) \
                from None
        values = {asset: index for asset in asset_names}
        if np.ndim(action) != 0 or values not in action_space:
            raise ValueError('action {!r} is outside the action space {}'.format(action, action_space))
    if portfolio_actions:
        return {asset: portfolio_actions[int(values[asset])] for asset in asset_names}
    return {asset: float(np.asarray(values[asset]).reshape(-1)[0]) for asset in asset_names}
