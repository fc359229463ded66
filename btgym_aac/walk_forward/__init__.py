"""Walk-forward out-of-sample tests: train on blocks of the past, evaluate on the next block, fold by fold.

Names are imported lazily: `import btgym_aac.walk_forward` does not import TensorFlow until a name is used.
"""
from btgym_aac.class_refs import lazy_names

_PUBLIC = {'walk_forward': 'btgym_aac.walk_forward.runner', 'holdout_test': 'btgym_aac.walk_forward.runner'}

__all__ = sorted(_PUBLIC)

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, globals())
