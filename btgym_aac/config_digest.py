"""A digest of a run's config dicts, so that a walk-forward or a sweep continued with other configs is told apart
from the one it continues."""
import hashlib
import json

from btgym_aac.class_refs import ClassRef

DATA_SOURCE_KWARGS = ('dataset', 'dataframe', 'filename')
"""The env kwargs that give an env its data (evaluations, walk-forwards and sweeps replace them with their own)."""
UNSEEN_CONFIG_KEYS = {'cluster_config': ('log_dir', 'port', 'network_isolation', 'initial_ckpt_dir'),
                      'launcher_config': ('show_progress',)}
"""Config keys that do not change what a run trains (where it logs, how it is watched)."""


def config_digest(configs):
    """SHA-256 (first 16 hex digits) of the config dicts as runs train them: classes by their import paths, arrays
    as lists, the keys of UNSEEN_CONFIG_KEYS and the env's data source left out (walk-forwards and sweeps supply
    the data)."""
    seen = {}
    for name, config in sorted(configs.items()):
        config = {key: value for key, value in dict(config).items() if key not in UNSEEN_CONFIG_KEYS.get(name, ())}
        if name == 'env_config':
            config['kwargs'] = {key: value for key, value in dict(config.get('kwargs') or {}).items()
                                if key not in DATA_SOURCE_KWARGS}
        seen[name] = config
    text = json.dumps(seen, sort_keys=True, default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _plain(value):
    """A JSON-ready stand-in for a value json cannot write: a class (or ClassRef) by its path, an array as a list,
    an object whose repr is object's (it holds a memory address, other in every process) by its class path and
    attributes, anything else by its repr."""
    if isinstance(value, ClassRef):
        return '{}.{}'.format(value.module, value.name)
    if hasattr(value, 'tolist'):
        return value.tolist()
    module, name = getattr(value, '__module__', None), getattr(value, '__qualname__', None)
    if callable(value) and module and name:
        return '{}.{}'.format(module, name)
    if type(value).__repr__ is object.__repr__:
        kind = type(value)
        return {'class': '{}.{}'.format(kind.__module__, kind.__qualname__), 'attributes': vars(value)
                if hasattr(value, '__dict__') else None}
    return repr(value)
