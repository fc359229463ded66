"""The package's layout rules (docs/architecture.md): layers of `algorithms` import only downwards, the legacy
layer is reached at its seams only, earlier module paths still import, and modules and functions stay small."""
import ast
import json
import pathlib
import subprocess
import sys

import pytest

from btgym_aac.legacy.module_paths import MOVED_MODULES

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / 'btgym_aac'

ALGORITHM_LAYERS = {'common': 0, 'nn': 1, 'policy': 2, 'acting': 3}
"""Subpackages of `btgym_aac.algorithms`, lowest first; the package's own modules (the trainers and the learner)
are the top layer."""

LEGACY_SEAMS = {'__init__.py', 'env/base.py', 'algorithms/aac.py'}
"""Modules outside `btgym_aac/legacy` that may import it (paths relative to the package)."""


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def imported_modules(path):
    """Every `btgym_aac...` module a file imports (at any depth of the file: deferred imports count)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith('btgym_aac'):
            names.add(node.module)
            names.update('{}.{}'.format(node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.startswith('btgym_aac'))
    return names


def algorithm_layer(name):
    """Layer of a module of `btgym_aac.algorithms` (None outside it)."""
    parts = name.split('.')
    if parts[:2] != ['btgym_aac', 'algorithms'] or len(parts) < 3:
        return None
    return ALGORITHM_LAYERS.get(parts[2], len(ALGORITHM_LAYERS))


def package_files():
    return sorted(PACKAGE.rglob('*.py'))


def test_modules_of_algorithms_import_only_their_own_layer_or_lower_ones():
    upward = []
    for path in (PACKAGE / 'algorithms').rglob('*.py'):
        layer = algorithm_layer(module_name(path))
        for imported in imported_modules(path):
            imported_layer = algorithm_layer(imported)
            if imported_layer is not None and imported != 'btgym_aac.algorithms' and imported_layer > layer:
                upward.append((module_name(path), imported))
    assert upward == []


def test_the_layer_rule_sees_an_upward_import(tmp_path):
    assert algorithm_layer('btgym_aac.algorithms.policy.base') > algorithm_layer('btgym_aac.algorithms.nn.layers')
    assert algorithm_layer('btgym_aac.algorithms.learner') > algorithm_layer('btgym_aac.algorithms.acting.replica')
    source = tmp_path / 'probe.py'
    source.write_text('def f():\n    from btgym_aac.algorithms.learner import Learner\n')
    assert imported_modules(source) == {'btgym_aac.algorithms.learner', 'btgym_aac.algorithms.learner.Learner'}


def test_only_the_seams_import_the_legacy_package():
    importers = {str(path.relative_to(PACKAGE)) for path in package_files()
                 if 'legacy' not in path.relative_to(PACKAGE).parts
                 and any(name.startswith('btgym_aac.legacy') for name in imported_modules(path))}
    assert importers <= LEGACY_SEAMS


def test_every_earlier_module_path_is_the_module_that_moved():
    code = ('import importlib, json, btgym_aac\n'
            'from btgym_aac.legacy.module_paths import MOVED_MODULES\n'
            'print(json.dumps({old: importlib.import_module(old) is importlib.import_module(new) and '
            'importlib.import_module(old).__spec__.name == new for old, new in sorted(MOVED_MODULES.items())}))\n')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {old: True for old in MOVED_MODULES}


def test_moved_paths_name_no_existing_file():
    for old in MOVED_MODULES:
        relative = pathlib.Path(*old.split('.')[1:])
        assert not (PACKAGE / relative).with_suffix('.py').exists(), old
        assert not (PACKAGE / relative / '__init__.py').exists(), old


@pytest.mark.parametrize('path', package_files(), ids=lambda path: str(path.relative_to(PACKAGE)))
def test_modules_and_functions_stay_small(path):
    text = path.read_text()
    assert len(text.splitlines()) <= 450
    long_functions = [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(text))
                      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.end_lineno - node.lineno + 1 > 60]
    assert long_functions == []
