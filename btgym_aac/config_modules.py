"""Config files run as modules of their own, so that the classes and functions they define (a strategy, a policy)
can be pickled by reference like any module's.

A pickle made by `dumps_with_sources` starts with a plain header holding the source of every config module the
pickled object refers to; `load_with_sources` runs those sources as modules again (where this process lacks
them) before unpickling the object. That is how the cluster's task processes, and a later `evaluate` of the run's
`run_config.pkl`, get the classes of a config file.
"""
import io
import os
import pickle
import pickletools
import re
import sys
import types

MODULE_PREFIX = 'btgym_aac_config_'
HEADER_KEY = 'btgym_aac_config_modules'
_SOURCES = {}


class ConfigModuleError(ValueError):
    """A config file's source, kept with a pickle, fails to run."""


def module_name(path):
    """Module name of config file `path`: 'btgym_aac_config_' and the file's name without extension, with
    characters other than letters, digits and '_' replaced by '_'."""
    return MODULE_PREFIX + re.sub(r'\W', '_', os.path.splitext(os.path.basename(path))[0])


def _run_as_module(name, path, source):
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    try:
        exec(compile(source, path, 'exec'), vars(module))
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_config_module(path):
    """Runs config file `path` as module `module_name(path)` (replacing an earlier module of that name) and keeps
    its source for `dumps_with_sources`.

    Args:
        path: the config file; tracebacks name it as given.

    Returns:
        the module's namespace dict.

    Raises:
        whatever reading or running the file raises (SyntaxError, SystemExit included).
    """
    with open(path, encoding='utf-8') as f:
        source = f.read()
    name = module_name(path)
    module = _run_as_module(name, path, source)
    _SOURCES[name] = (os.path.abspath(path), source)
    return vars(module)


def _referenced_modules(data):
    """Names of the modules pickle `data` takes globals from (and of any other string it holds)."""
    names = set()
    for opcode, arg, _ in pickletools.genops(data):
        if opcode.name == 'GLOBAL':
            names.add(arg.split(' ')[0])
        elif isinstance(arg, str):
            names.add(arg)
    return names


def dumps_with_sources(obj):
    """Pickles `obj` after a header with the sources of the config modules it refers to.

    Returns:
        bytes for `load_with_sources`.
    """
    data = pickle.dumps(obj)
    sources = {name: _SOURCES[name] for name in _referenced_modules(data) if name in _SOURCES}
    return pickle.dumps({HEADER_KEY: sources}) + data


def load_with_sources(file):
    """Reads what `dumps_with_sources` wrote (or a plain pickle) from binary `file` or bytes.

    Config modules of the header that this process lacks are run from their kept sources first.

    Returns:
        the pickled object.

    Raises:
        ConfigModuleError: a kept source fails to run. Unpickling errors as `pickle.load`.
    """
    if isinstance(file, bytes):
        file = io.BytesIO(file)
    first = pickle.load(file)
    if not (isinstance(first, dict) and list(first) == [HEADER_KEY]):
        return first
    for name, (path, source) in first[HEADER_KEY].items():
        if name not in sys.modules:
            try:
                _run_as_module(name, path, source)
            except Exception as error:
                raise ConfigModuleError('config file {} (the copy kept with the run) fails to run: {}: {}'.format(
                    path, type(error).__name__, error)) from error
    return pickle.load(file)
