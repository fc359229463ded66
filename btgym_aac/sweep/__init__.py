"""Searching a configuration's settings without fooling oneself: `sweep` (an Optuna search, each trial a
walk-forward, the best tested once on a lockbox), search spaces (`space`) and the verdict's statistics
(`deflation`).

Names are imported lazily: `import btgym_aac.sweep` does not import TensorFlow or Optuna until a name is used.
"""
from btgym_aac.class_refs import lazy_names

OBJECTIVES = ('vs-buy-and-hold', 'return', 'sharpe')
"""What a sweep can maximise (see `trial.score`); the first is the default."""
PRUNERS = ('median', 'none')

_PUBLIC = {
    'sweep': 'btgym_aac.sweep.runner',
    'load_space': 'btgym_aac.sweep.space',
    'builtin_space': 'btgym_aac.sweep.space',
    'deflated_sharpe_ratio': 'btgym_aac.sweep.deflation',
    'probabilistic_sharpe_ratio': 'btgym_aac.sweep.deflation',
}

__all__ = sorted(_PUBLIC)

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, globals())
