"""btgym_aac: BTGym's distributed actor-critic trading library, rebuilt for Python 3.11+ and TensorFlow 2.x.

Public names are imported lazily, so `import btgym_aac` stays cheap and never imports TensorFlow by itself. The
original's module paths (`btgym_aac.research.strategy_gen_4`, `btgym_aac.datafeed`, ...) resolve to this package's
classes (`btgym_aac.legacy`). It imports nothing but the standard library: a launcher's task process imports
it while still single-threaded (numpy's import starts threads), to join its private namespaces.
"""
from btgym_aac import legacy
from btgym_aac.class_refs import lazy_names

__version__ = '0.1.0'

_PUBLIC = {
    'BTgymEnv': 'btgym_aac.env',
    'MultiDiscreteEnv': 'btgym_aac.env',
    'PortfolioEnv': 'btgym_aac.env',
    'BTgymMultiData': 'btgym_aac.data',
    'BTgymDataset': 'btgym_aac.data',
    'BTgymDataset2': 'btgym_aac.data',
    'BTgymRandomDataDomain': 'btgym_aac.data',
    'BTgymSequentialDataDomain': 'btgym_aac.data',
    'BTgymCausalDataDomain': 'btgym_aac.data',
    'BTgymCasualDataDomain': 'btgym_aac.legacy.causal_names',  # the original's spelling of the name above
    'DataSampleConfig': 'btgym_aac.data',
    'EnvResetConfig': 'btgym_aac.data',
    'DictSpace': 'btgym_aac.spaces',
    'ActionDictSpace': 'btgym_aac.spaces',
    'BTgymBaseStrategy': 'btgym_aac.strategy',
    'BTgymRendering': 'btgym_aac.env.rendering',
    'start_forkserver_early': 'btgym_aac.distributed.tasks',
}

__all__ = sorted(_PUBLIC)

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, globals())

legacy.install()
