"""Stacking the inputs of several envs into one acting batch, and splitting the contexts it returns."""
import numpy as np

from btgym_aac.algorithms.common.batches import map_nested


def stack_observations(observations):
    """Stacks K observations (identically nested dicts) leaf by leaf into arrays with a new batch axis [K, ...]."""
    return map_nested(lambda *leaves: np.stack([np.asarray(leaf) for leaf in leaves]), *observations)


def stack_contexts(contexts):
    """Concatenates K RNN contexts (nested tuples of [1, units] arrays) along their batch axis: leaves [K, units]."""
    return map_nested(lambda *leaves: np.concatenate([np.asarray(leaf) for leaf in leaves], axis=0), *contexts)


def split_context(context, count):
    """The K single-env contexts (leaves [1, units]) of a batched context (leaves [K, units])."""
    return [map_nested(lambda leaf, index=index: leaf[index:index + 1], context) for index in range(count)]
