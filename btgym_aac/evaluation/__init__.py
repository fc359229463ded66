"""Evaluation of trained runs: `load_policy` restores a run's policy for acting, `evaluate` compares it with
buy-and-hold and random baselines on the same episodes and writes a JSON report and PNG plots.

Names are imported lazily: `import btgym_aac.evaluation` does not import TensorFlow until a name is used.
"""
from btgym_aac.class_refs import lazy_names

_PUBLIC = {
    'load_policy': 'btgym_aac.evaluation.loading',
    'LoadedPolicy': 'btgym_aac.evaluation.loading',
    'evaluate': 'btgym_aac.evaluation.evaluator',
}

__all__ = sorted(_PUBLIC)

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, globals())
