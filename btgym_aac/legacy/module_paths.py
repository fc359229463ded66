"""The original btgym's module paths, under `btgym_aac`: `from btgym_aac.research.strategy_gen_4 import
DevStrat_4_11` works as `from btgym.research.strategy_gen_4 import DevStrat_4_11` did.

Only the paths that differ from this package's own layout are listed (`btgym_aac.strategy.observers`,
`btgym_aac.algorithms.policy.stacked_lstm` and the like exist as real modules). Each listed path is a module made
on import whose names are this package's objects, imported from their modules on first use: the classes are the
same objects, so `isinstance` checks and pickles see the real module paths.
"""
import importlib.abc
import importlib.util
import sys

from btgym_aac.lazy import lazy_names

_DATA = 'btgym_aac.data'
_GEN4 = ('DevStrat_4_6', 'DevStrat_4_7', 'DevStrat_4_8', 'DevStrat_4_9', 'DevStrat_4_10', 'DevStrat_4_11',
         'DevStrat_4_11_1', 'DevStrat_4_12')
_RENDERING = {name: 'btgym_aac.env.rendering' for name in ('BTgymRendering', 'BTgymNullRendering')}

ORIGINAL_MODULES = {
    'btgym_aac.datafeed': {name: _DATA for name in (
        'BTgymBaseData', 'DataSampleConfig', 'EnvResetConfig', 'BTgymEpisode', 'BTgymDataTrial',
        'BTgymRandomDataDomain', 'BTgymDataset', 'BTgymSequentialDataDomain')},
    'btgym_aac.datafeed.base': {name: _DATA for name in ('BTgymBaseData', 'DataSampleConfig', 'EnvResetConfig')},
    'btgym_aac.datafeed.derivative': {name: _DATA for name in (
        'BTgymEpisode', 'BTgymDataTrial', 'BTgymRandomDataDomain', 'BTgymDataset', 'BTgymDataset2')},
    'btgym_aac.datafeed.stateful': {'BTgymSequentialDataDomain': _DATA},
    'btgym_aac.datafeed.casual': {name: _DATA for name in ('BTgymCasualDataDomain', 'BTgymCasualTrial')},
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
}


class OriginalPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and builds the modules of `ORIGINAL_MODULES` (consulted after the real modules)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in ORIGINAL_MODULES:
            return None
        is_package = any(other.startswith(fullname + '.') for other in ORIGINAL_MODULES)
        return importlib.util.spec_from_loader(fullname, self, is_package=is_package)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        public = ORIGINAL_MODULES[module.__name__]
        original = 'btgym' + module.__name__[len('btgym_aac'):]
        module.__doc__ = 'The original path `{}`: its names, from btgym_aac\'s own modules.'.format(original)
        module.__all__ = sorted(public)
        module.__getattr__, module.__dir__ = lazy_names(module.__name__, public, vars(module))


def install():
    """Makes the original's module paths importable (once per process)."""
    if not any(isinstance(finder, OriginalPathFinder) for finder in sys.meta_path):
        sys.meta_path.append(OriginalPathFinder())
