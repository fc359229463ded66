"""Module paths that are not this package's layout: the original btgym's.

Three kinds of path resolve here, all consulted before the file system (a path listed here is never also loaded
from a file):
- `ORIGINAL_MODULES`: the original's paths under `btgym_aac` (`from btgym_aac.research.strategy_gen_4 import
  DevStrat_4_11` works as `from btgym.research.strategy_gen_4 import DevStrat_4_11` did). Each is a module made
  on import whose names are this package's objects, imported from their modules on first use.
- `MOVED_MODULES`: the original's paths of modules that now live elsewhere (`btgym_aac.algorithms.runner.synchro`,
  `btgym_aac.algorithms.memory`, ...). The old path is the same module object as the new one, so pickles and
  config files that name a class by its old module path still load it.
- `causal_names.RENAMED_MODULES`: paths spelled "casual", as the original spelled causal (`btgym_aac.data.casual`,
  `btgym_aac.research.casual_conv.strategy`, ...). Each is a module made on import that shows the names of the
  module now holding it, and their old names (`CasualConvStrategy_0` for `CausalConvStrategy_0`): see
  `causal_names`, which also keeps the old names' table.
In all three, the classes are the same objects, so `isinstance` checks see one class.
"""
import importlib
import importlib.abc
import importlib.util
import sys

from btgym_aac.class_refs import lazy_names
from btgym_aac.legacy import causal_names

_DATA = 'btgym_aac.data'
_GEN4 = ('DevStrat_4_6', 'DevStrat_4_7', 'DevStrat_4_8', 'DevStrat_4_9', 'DevStrat_4_10', 'DevStrat_4_11',
         'DevStrat_4_11_1', 'DevStrat_4_12')
_RENDERING = {name: 'btgym_aac.env.rendering' for name in ('BTgymRendering', 'BTgymNullRendering')}
_BATCHES = 'btgym_aac.algorithms.common.batches'
_PLACEHOLDERS = 'btgym_aac.algorithms.common.placeholders'

ORIGINAL_MODULES = {
    'btgym_aac.datafeed': {name: _DATA for name in (
        'BTgymBaseData', 'DataSampleConfig', 'EnvResetConfig', 'BTgymEpisode', 'BTgymDataTrial',
        'BTgymRandomDataDomain', 'BTgymDataset', 'BTgymSequentialDataDomain')},
    'btgym_aac.datafeed.base': {name: _DATA for name in ('BTgymBaseData', 'DataSampleConfig', 'EnvResetConfig')},
    'btgym_aac.datafeed.derivative': {name: _DATA for name in (
        'BTgymEpisode', 'BTgymDataTrial', 'BTgymRandomDataDomain', 'BTgymDataset', 'BTgymDataset2')},
    'btgym_aac.datafeed.stateful': {'BTgymSequentialDataDomain': _DATA},
    'btgym_aac.datafeed.casual': {name: 'btgym_aac.legacy.causal_names' for name in (
        'BTgymCasualDataDomain', 'BTgymCasualTrial')},
    'btgym_aac.datafeed.multi': {'BTgymMultiData': _DATA},
    'btgym_aac.envs': {name: 'btgym_aac.env' for name in ('BTgymEnv', 'MultiDiscreteEnv')},
    'btgym_aac.envs.base': {'BTgymEnv': 'btgym_aac.env'},
    'btgym_aac.envs.multidiscrete': {'MultiDiscreteEnv': 'btgym_aac.env'},
    'btgym_aac.envs.portfolio': {'PortfolioEnv': 'btgym_aac.env'},
    'btgym_aac.rendering': _RENDERING,
    'btgym_aac.rendering.renderer': _RENDERING,
    'btgym_aac.research.strategy_gen_4': {name: 'btgym_aac.strategy' for name in _GEN4},
    'btgym_aac.algorithms.launcher': {},
    'btgym_aac.algorithms.launcher.base': {'Launcher': 'btgym_aac.distributed.launcher'},
    'btgym_aac.algorithms.worker': {'Worker': 'btgym_aac.distributed.worker'},
    'btgym_aac.algorithms.envs': {'AtariRescale42x42': 'btgym_aac.env.gym_wrappers'},
    'btgym_aac.algorithms.utils': dict(
        {name: _BATCHES for name in ('MASK_KEY', 'ONE_HOT_KEYS', 'as_array', 'batch_pad', 'batch_stack',
                                     'is_subdict', 'map_nested', 'same_tuple_type')},
        **{name: _PLACEHOLDERS for name in ('LSTMStateTuple', 'check_variable_pairing', 'feed_dict_from_nested',
                                            'feed_dict_rnn_context', 'nested_placeholders', 'rnn_placeholders',
                                            'structure_differences')}),
}
"""Original path -> {name: module of this package that holds it}."""

_ALGORITHMS = 'btgym_aac.algorithms.'
MOVED_MODULES = dict(
    {_ALGORITHMS + name: _ALGORITHMS + 'common.' + name for name in ('math_utils', 'rollout', 'memory')},
    **{_ALGORITHMS + old: _ALGORITHMS + new for old, new in (
        ('runner', 'acting'),
        ('runner.base', 'acting.env_runner'),
        ('runner.threadrunner', 'acting.thread_runner'),
        ('runner.synchro', 'acting.synchro_runner'),
    )},
)
"""The original's path -> the module's path now. Only the original's: the paths of this package's own earlier
layouts are gone (a run whose `run_config.pkl` names one is refused, see `evaluation.loading`)."""


_RENAMED = causal_names.RENAMED_MODULES


class LegacyPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the modules of `ORIGINAL_MODULES` and `causal_names.RENAMED_MODULES` (built on import) and
    `MOVED_MODULES` (the modules they name). Below a moved package's old path only the paths listed resolve: the
    package's own files do not load again under it (`btgym_aac.algorithms.runner.aux_renderings` is no module)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in ORIGINAL_MODULES and fullname not in MOVED_MODULES and fullname not in _RENAMED:
            if fullname.rpartition('.')[0] in MOVED_MODULES:
                raise ModuleNotFoundError('No module named {!r}'.format(fullname), name=fullname)
            return None
        is_package = any(other.startswith(fullname + '.') for other in (*ORIGINAL_MODULES, *MOVED_MODULES, *_RENAMED))
        return importlib.util.spec_from_loader(fullname, self, is_package=is_package)

    def create_module(self, spec):
        if spec.name not in MOVED_MODULES:
            return None
        module = importlib.import_module(MOVED_MODULES[spec.name])
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        if module.__spec__.loader_state is not None:
            module.__spec__ = module.__spec__.loader_state  # the import system gave the module the old path's spec
            return
        if module.__name__ in _RENAMED:
            causal_names.fill_module(module)
            return
        public = ORIGINAL_MODULES[module.__name__]
        original = 'btgym' + module.__name__[len('btgym_aac'):]
        module.__doc__ = 'The original path `{}`: its names, from btgym_aac\'s own modules.'.format(original)
        module.__all__ = sorted(public)
        module.__getattr__, module.__dir__ = lazy_names(module.__name__, public, vars(module))


def install():
    """Makes the paths of `ORIGINAL_MODULES`, `MOVED_MODULES` and `causal_names.RENAMED_MODULES` importable (once
    per process)."""
    if not any(isinstance(finder, LegacyPathFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, LegacyPathFinder())
