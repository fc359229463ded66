"""An agent's action, checked against the env's action space and turned into the strategy's action names (discrete
actions) or target weights (continuous ones)."""
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


def normalized_weights(action, keys, cash_name):
    """The target weights of a continuous (PortfolioEnv) action, checked and normalised to sum 1.

    Args:
        action: dict key -> weight in [0, 1] (a number or a 1-element array), for exactly `keys`.
        keys: the action space's keys (the assets and `cash_name`).
        cash_name: the cash key, which takes the whole weight when every weight is 0.

    Returns:
        dict key -> float weight.

    Raises:
        ValueError: a key missing or unknown, or a weight that is not one finite number in [0, 1].
    """
    if not isinstance(action, dict) or set(action) != set(keys):
        raise ValueError('a PortfolioEnv action is a dict of weights for exactly {}, got {!r}'.format(
            sorted(keys), action))
    weights = {}
    for key, value in action.items():
        array = np.asarray(value, dtype=np.float64).reshape(-1)
        if array.size != 1 or not np.isfinite(array[0]) or not 0.0 <= array[0] <= 1.0:
            raise ValueError('the weight of {!r} must be one finite number in [0, 1], got {!r}'.format(key, value))
        weights[key] = float(array[0])
    total = sum(weights.values())
    if total == 0:
        return {key: float(key == cash_name) for key in weights}
    return {key: weight / total for key, weight in weights.items()}
