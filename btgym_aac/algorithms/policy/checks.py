"""Checks of the constructor arguments policies share: their spaces and their layer sizes."""
from btgym_aac.spaces import ActionDictSpace, DictSpace


def check_spaces(ob_space, ac_space, owner='policy'):
    """Validates the observation and action spaces of a policy (or of the env a trainer is given).

    Args:
        ob_space, ac_space: the spaces.
        owner: who checks, starting the messages ('policy', 'trainer').

    Raises:
        TypeError: `ob_space` is not a DictSpace or `ac_space` not an ActionDictSpace.
        ValueError: `ob_space` has no `external` key.
    """
    if not isinstance(ob_space, DictSpace):
        raise TypeError('{}: ob_space must be a btgym_aac.spaces.DictSpace, got {!r}'.format(owner, ob_space))
    if 'external' not in ob_space.spaces:
        raise ValueError('{}: ob_space needs an `external` key, got keys {}'.format(owner, list(ob_space.spaces)))
    if not isinstance(ac_space, ActionDictSpace):
        raise TypeError('{}: ac_space must be a btgym_aac.spaces.ActionDictSpace, got {!r}'.format(owner, ac_space))


def checked_layers(sizes, arg_name='lstm_layers'):
    """Returns layer `sizes` as a tuple of positive ints; raises ValueError naming `arg_name` if empty or invalid."""
    layers = tuple(sizes)
    if not layers or any(isinstance(size, bool) or int(size) != size or size <= 0 for size in layers):
        raise ValueError('policy: {} must be a non-empty sequence of positive ints, got {!r}'.format(arg_name, sizes))
    return tuple(int(size) for size in layers)
