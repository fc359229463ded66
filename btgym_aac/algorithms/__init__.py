"""Actor-critic algorithms: policies, rollouts, replay memory (trainers, runners and launcher to come).

Names are imported lazily: `import btgym_aac.algorithms` does not import TensorFlow until a name is used.
"""
import importlib

_PUBLIC = {
    'BaseAacPolicy': 'btgym_aac.algorithms.policy',
    'Aac1dPolicy': 'btgym_aac.algorithms.policy',
    'StackedLstmPolicy': 'btgym_aac.algorithms.policy',
    'AacStackedRL2Policy': 'btgym_aac.algorithms.policy',
    'AacDensePolicy': 'btgym_aac.algorithms.policy',
    'Memory': 'btgym_aac.algorithms.memory',
    'Rollout': 'btgym_aac.algorithms.rollout',
}

__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError('module {!r} has no attribute {!r}'.format(__name__, name))


def __dir__():
    return sorted(list(globals()) + __all__)
