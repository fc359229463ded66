"""btgym_aac: BTGym's distributed actor-critic trading library, rebuilt for Python 3.11+ and TensorFlow 2.x.

Public names are imported lazily, so `import btgym_aac` stays cheap and never imports TensorFlow by itself.
"""
import importlib

__version__ = '0.1.0'

_PUBLIC = {
    'BTgymEnv': 'btgym_aac.env',
    'BTgymDataset': 'btgym_aac.data',
    'BTgymDataset2': 'btgym_aac.data',
    'BTgymRandomDataDomain': 'btgym_aac.data',
    'DataSampleConfig': 'btgym_aac.data',
    'EnvResetConfig': 'btgym_aac.data',
    'DictSpace': 'btgym_aac.spaces',
    'ActionDictSpace': 'btgym_aac.spaces',
    'BTgymBaseStrategy': 'btgym_aac.strategy',
}

__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError('module {!r} has no attribute {!r}'.format(__name__, name))


def __dir__():
    return sorted(list(globals()) + __all__)
