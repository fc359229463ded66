"""The package's layout rules (docs/architecture.md): every package and root module imports only its own layer or
lower ones, and so do the layers of `algorithms` (imports at any depth of a file and module paths named in strings
both count), the legacy layer is reached at its seams only, and the module paths kept as aliases are the original
btgym's."""
import ast
import json
import pathlib
import re
import subprocess
import sys

from btgym_aac.legacy.module_paths import MOVED_MODULES

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / 'btgym_aac'

LAYERS = (
    ('class_refs', 'compat', 'config_modules', 'logs', 'paths', 'proc_memory', 'progress', 'spaces', 'validation'),
    ('data', 'nonfinite'),
    ('strategy',),
    ('env',),
    ('algorithms',),
    ('distributed',),
    ('evaluation',),
    ('deploy', 'walk_forward'),
    ('sweep',),
    ('research',),
    ('cli',),
)
"""The packages and root modules of `btgym_aac` (their names below it), lowest layer first: a module imports and
names modules of its own layer and lower ones only. `btgym_aac/__init__.py` (the package's lazy public names) is
above them all, and `btgym_aac` itself is no layer's (Python imports it before any of its modules; its
`__version__`, the logger name 'btgym_aac'). `legacy` is outside the order: it names every layer's modules under
the original's paths, and only `LEGACY_SEAMS` reach it."""

UPWARD_SEAMS = {
    ('btgym_aac.compat', 'btgym_aac.distributed.tasks'):
        "compat leaves the devices alone while the launcher's forkserver preload imports it: it looks the preload "
        'module up in sys.modules, never imports it',
    ('btgym_aac.compat', 'btgym_aac.algorithms.nn.rnn'):
        "compat's `tf` shows the original's TF1 names (`tf.nn.rnn_cell.LSTMCell`, `tf.contrib.rnn...`) as this "
        "package's cells, imported on first use (`compat.LEGACY_NAMES`)",
    ('btgym_aac.compat', 'btgym_aac.algorithms.nn.layer_norm'): 'the same, `tf.contrib.layers.layer_norm`',
    ('btgym_aac.compat', 'btgym_aac.algorithms.common.placeholders'): 'the same, `LSTMStateTuple`',
    ('btgym_aac.algorithms', 'btgym_aac.distributed.launcher'):
        "the original's `from btgym.algorithms import Launcher`: a lazy name of the package",
}
"""(module, module it names) pairs that run upwards by design, each with the reason."""

ALGORITHM_LAYERS = {'common': 0, 'nn': 1, 'policy': 2, 'acting': 3}
"""Subpackages of `btgym_aac.algorithms`, lowest first; the package's own modules (the trainers and the learner)
and its `__init__` are the top layer."""

LEGACY_SEAMS = {
    '__init__.py': 'installs the module paths; names `causal_names` for `BTgymCasualDataDomain`',
    'env/base.py': "the env's original `params`, step info and data master",
    'algorithms/aac.py': "the original trainers' arguments",
    'data/__init__.py': 'names `causal_names` for `BTgymCasualDataDomain` and `BTgymCasualTrial`',
}
"""Modules outside `btgym_aac/legacy` that may import or name it (paths relative to the package)."""

ORIGINAL_BTGYM_MODULES = {
    'btgym.algorithms.runner', 'btgym.algorithms.runner.base', 'btgym.algorithms.runner.threadrunner',
    'btgym.algorithms.runner.synchro', 'btgym.algorithms.memory', 'btgym.algorithms.rollout',
    'btgym.algorithms.math_utils',
}
"""Module files of the original btgym (github.com/Kismuz/btgym, `btgym/algorithms/runner/__init__.py`,
`runner/base.py`, ...) whose modules live elsewhere here: the only paths `MOVED_MODULES` may keep."""

MODULE_PATH = re.compile(r'(btgym_aac(?:\.[A-Za-z_]\w*)*)(?::[\w.]+)?')
"""A string naming a module of the package: `ClassRef('btgym_aac.x.y', 'Name')`, `importlib.import_module(...)`,
a lazy name table's values, a forkserver preload list's items, a 'module:attribute' entry point."""


def module_name(path, root=PACKAGE):
    parts = path.relative_to(root.parent).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def existing_module(name):
    """The deepest module of the package that dotted `name` reaches ('btgym_aac.algorithms.aac.A3C' ->
    'btgym_aac.algorithms.aac'; 'btgym_aac.__version__' -> 'btgym_aac')."""
    parts = name.split('.')
    for end in range(len(parts), 1, -1):
        path = PACKAGE.joinpath(*parts[1:end])
        if path.with_suffix('.py').is_file() or (path / '__init__.py').is_file():
            return '.'.join(parts[:end])
    return 'btgym_aac'


def references(path, name=None):
    """(line, module) of every module of the package that file `path` (module `name`, by default its own) imports,
    at any depth of the file (deferred imports count), or names in a string (see `MODULE_PATH`)."""
    name = name or module_name(path)
    package = name if path.name == '__init__.py' else name.rpartition('.')[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module
            if node.level:
                anchor = package.split('.')[:len(package.split('.')) - node.level + 1]
                base = '.'.join(anchor + ([node.module] if node.module else []))
            found += [(node.lineno, '{}.{}'.format(base, alias.name)) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_PATH.fullmatch(node.value):
            found.append((node.lineno, MODULE_PATH.fullmatch(node.value).group(1)))
    return sorted((line, existing_module(target)) for line, target in found if target.split('.')[0] == 'btgym_aac')


def unit(module):
    """The package or root module of `btgym_aac` that holds `module` (None for `btgym_aac` itself)."""
    parts = module.split('.')
    return parts[1] if len(parts) > 1 else None


def layer(module):
    """Index in `LAYERS` of `module`'s package or root module (`btgym_aac/__init__.py`: above them all; None for a
    package or root module that `LAYERS` lacks)."""
    if module == 'btgym_aac':
        return len(LAYERS)
    return next((index for index, names in enumerate(LAYERS) if unit(module) in names), None)


def upward_references(path, name=None):
    """'file:line module -> module' of every module `path` imports or names above its own layer."""
    name = name or module_name(path)
    upward = []
    for line, target in references(path, name):
        if unit(target) in (None, 'legacy', unit(name)) or (name, target) in UPWARD_SEAMS:
            continue
        if layer(target) is None or layer(target) > layer(name):
            shown = path.relative_to(PACKAGE.parent) if PACKAGE in path.parents else path.name
            upward.append('{}:{} {} -> {}'.format(shown, line, name, target))
    return upward


def algorithm_layer(module):
    """Layer of a module of `btgym_aac.algorithms` (None outside it)."""
    parts = module.split('.')
    if parts[:2] != ['btgym_aac', 'algorithms']:
        return None
    return ALGORITHM_LAYERS.get(parts[2], len(ALGORITHM_LAYERS)) if len(parts) > 2 else len(ALGORITHM_LAYERS)


def package_files():
    return sorted(PACKAGE.rglob('*.py'))


def layered_files():
    return [path for path in package_files() if path.relative_to(PACKAGE).parts[0] != 'legacy']


def test_every_package_and_root_module_has_one_layer():
    units = {path.relative_to(PACKAGE).parts[0].removesuffix('.py') for path in package_files()} - {'__init__'}
    placed = [name for names in LAYERS for name in names]
    assert len(placed) == len(set(placed))
    assert set(placed) == units - {'legacy'}, 'place new packages and root modules in LAYERS, drop gone ones'


def test_no_module_imports_or_names_a_layer_above_its_own():
    assert [reference for path in layered_files() for reference in upward_references(path)] == []


def test_the_upward_seams_are_still_there():
    named = {(module_name(path), target) for path in package_files() for _, target in references(path)}
    assert set(UPWARD_SEAMS) <= named


def test_the_layer_rule_sees_an_upward_import_and_an_upward_string(tmp_path):
    probe = tmp_path / 'probe.py'
    probe.write_text(
        'import importlib\n'
        'from btgym_aac.class_refs import ClassRef\n'
        'from btgym_aac.data import parsing\n'
        'PRELOAD = ["btgym_aac.distributed.launcher"]\n'
        'TRAINER = ClassRef("btgym_aac.algorithms.aac", "A3C")\n'
        'def deferred():\n'
        '    from btgym_aac.env.base import BTgymEnv\n'
        '    return importlib.import_module("btgym_aac.cli.commands"), BTgymEnv\n')
    assert [reference.split(' ', 1)[1] for reference in upward_references(probe, 'btgym_aac.data.probe')] == [
        'btgym_aac.data.probe -> btgym_aac.distributed.launcher',
        'btgym_aac.data.probe -> btgym_aac.algorithms.aac',
        'btgym_aac.data.probe -> btgym_aac.env.base',
        'btgym_aac.data.probe -> btgym_aac.cli.commands',
    ]
    assert upward_references(probe, 'btgym_aac.cli.probe') == []


def test_modules_of_algorithms_import_only_their_own_layer_or_lower_ones():
    upward = []
    for path in (PACKAGE / 'algorithms').rglob('*.py'):
        own = algorithm_layer(module_name(path))
        for line, target in references(path):
            if algorithm_layer(target) is not None and algorithm_layer(target) > own:
                upward.append('{}:{} -> {}'.format(path.relative_to(PACKAGE), line, target))
    assert upward == []


def test_the_algorithms_layer_rule_sees_an_upward_import(tmp_path):
    assert algorithm_layer('btgym_aac.algorithms.policy.base') > algorithm_layer('btgym_aac.algorithms.nn.layers')
    assert algorithm_layer('btgym_aac.algorithms.learner') > algorithm_layer('btgym_aac.algorithms.acting.replica')
    source = tmp_path / 'probe.py'
    source.write_text('def f():\n    from btgym_aac.algorithms.learner import Learner\n'
                      'LEARNER = "btgym_aac.algorithms.learner"\n')
    assert references(source, 'btgym_aac.algorithms.nn.probe') == [
        (2, 'btgym_aac.algorithms.learner'), (3, 'btgym_aac.algorithms.learner')]


def test_only_the_seams_import_or_name_the_legacy_package():
    importers = {str(path.relative_to(PACKAGE)) for path in layered_files()
                 if any(unit(target) == 'legacy' for _, target in references(path))}
    assert importers <= set(LEGACY_SEAMS)


def test_only_the_original_btgym_paths_are_kept_as_moved_modules():
    assert {'btgym' + old[len('btgym_aac'):] for old in MOVED_MODULES} <= ORIGINAL_BTGYM_MODULES


def test_every_original_module_path_is_the_module_that_moved():
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
