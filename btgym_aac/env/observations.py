"""Observations of a BTgymEnv: the observation space made from the strategy's `state_shape`, the check of a
strategy state against it, and the copy of a state into fresh arrays of the space's dtypes."""
import numpy as np
from gymnasium import spaces

from btgym_aac.data.columns import PRICE_COLUMNS
from btgym_aac.spaces import DictSpace


def observation_space(state_shape, data):
    """The observation space of `state_shape` (dict key -> space); its `raw` Box, if any, takes the range of the
    prices in `data` (DataFrame of bars) as its bounds."""
    shapes = dict(state_shape)
    if 'raw' in shapes:
        prices = data[list(PRICE_COLUMNS)]
        raw = shapes['raw']
        shapes['raw'] = spaces.Box(low=float(prices.min().min()), high=float(prices.max().max()),
                                   shape=raw.shape, dtype=raw.dtype)
    return DictSpace(shapes)


def space_dtypes(space):
    """Dict key -> dtype of a Dict space, nested like it."""
    return {key: (space_dtypes(sub) if isinstance(sub, spaces.Dict) else sub.dtype)
            for key, sub in space.spaces.items()}


def check_state(state, space, path='observation'):
    """Raises ValueError naming the first key of `space` whose state is missing or not of its space's shape."""
    for key, subspace in space.spaces.items():
        where = '{}[{!r}]'.format(path, key)
        if key not in state:
            raise ValueError('the strategy gives no {} (its state keys: {}); state_shape must name what '
                             'the strategy returns'.format(where, sorted(state)))
        if isinstance(subspace, spaces.Dict):
            check_state(state[key], subspace, where)
        elif np.shape(state[key]) != subspace.shape:
            raise ValueError('{} has shape {} but the state_shape space says {}'.format(
                where, np.shape(state[key]), subspace.shape))


def state_arrays(state, dtypes):
    """Copies a strategy state into fresh arrays of `dtypes` (see `space_dtypes`), one per key of `dtypes`."""
    return {key: ({k: np.array(v, dtype=dtype[k]) for k, v in state[key].items()}
                  if isinstance(dtype, dict) else np.array(state[key], dtype=dtype))
            for key, dtype in dtypes.items()}
