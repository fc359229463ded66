"""Non-finite values stop a run with one message naming where they first appeared, and the data when it explains them.

An observation holding NaN or inf (`NonFiniteObservationError`, raised by the env) or a train step whose loss or
gradients are not finite (`NonFiniteTrainingError`, raised by the trainer, whose guard has kept that step from
changing any weight) ends training: a restart would meet the same data again. The messages append what the data
sanity checks find in the env's data (`data.sanity`), since constant or non-positive prices are the usual cause.
"""
import numpy as np

from btgym_aac.data.sanity import data_problems


class NonFiniteError(RuntimeError):
    """Training met NaN or inf values; the message says where first."""


class NonFiniteObservationError(NonFiniteError):
    """An env produced an observation holding NaN or inf."""


class NonFiniteTrainingError(NonFiniteError):
    """A train step's loss or gradients were not finite (the step changed no weight)."""


def data_explanation(dataset):
    """A sentence on what the sanity checks find in `dataset`'s data (whatever the checks' settings), or ''."""
    data = getattr(dataset, 'data', None)
    if data is None or not len(data):
        return ''
    source = getattr(dataset, 'filename', None)
    problems = data_problems(data, 'data file <{}>'.format(source) if source else 'the data')
    if not problems:
        return ''
    return '; the data explains it: {}'.format('; '.join(problems))


def holds_non_finite(value):
    """True for a float array (or number) holding NaN or inf."""
    array = np.asarray(value)
    return array.dtype.kind == 'f' and not np.isfinite(array).all()


def first_non_finite_key(arrays, path='observation'):
    """Key path of the first float array of a (nested) dict holding NaN or inf, or None."""
    for key, value in arrays.items():
        if isinstance(value, dict):
            found = first_non_finite_key(value, '{}[{!r}]'.format(path, key))
            if found:
                return found
        elif holds_non_finite(value):
            return '{}[{!r}]'.format(path, key)
    return None


def first_non_finite_feed(feed_dict):
    """Name of the first fed placeholder (in feed order) whose float value holds NaN or inf, or None."""
    for placeholder, value in feed_dict.items():
        if holds_non_finite(value):
            return 'the fed input {}'.format(placeholder.op.name)
    return None
