"""Guided policy search: a look-ahead expert (`Oracle`) advises actions, a strategy puts its advice in the
observations (`GuidedStrategy_0_0`), a policy exposes it (`GuidedPolicy_0_0`) and imitation losses pull the
policy towards it, trained by `GuidedAAC`.

Names are imported lazily: the strategy and the experts do not import TensorFlow.
"""
from btgym_aac.class_refs import lazy_names

_NAMES_BY_MODULE = {
    'oracle': ('Oracle', 'Oracle2'),
    'strategy': ('GuidedStrategy_0_0', 'ExpertObserver'),
    'policy': ('GuidedPolicy_0_0',),
    'loss': ('guided_aac_loss_def_0_0', 'guided_aac_loss_def_0_1', 'guided_aac_loss_def_0_3'),
    'aac': ('GuidedAAC', 'VerboseGuidedAAC'),
}
_PUBLIC = {name: '{}.{}'.format(__name__, module) for module, names in _NAMES_BY_MODULE.items() for name in names}

__all__ = sorted(_PUBLIC)

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, globals())
