"""The gymnasium ids of `btgym_aac.env.registration`: made in a fresh interpreter, and registered without importing
backtrader or TensorFlow."""
import ast
import subprocess
import sys

from btgym_aac.env import registration


def run_python(code):
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)


def test_a_fresh_interpreter_makes_a_namespaced_id_that_names_its_module():
    result = run_python(
        'import sys\nimport gymnasium\n'
        'print(sorted(name for name in ("tensorflow", "backtrader", "btgym_aac") if name in sys.modules))\n'
        'env = gymnasium.make("btgym_aac.env:btgym_aac/BTgymDevStrat_4_11-v0", render_enabled=False)\n'
        'print(env.spec.id, type(env.unwrapped).__name__, env.unwrapped.strategy.__name__)\n'
        'print(env.observation_space.contains(env.reset(seed=0)[0]))')
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split('\n')[:3] == ['[]', 'btgym_aac/BTgymDevStrat_4_11-v0 BTgymEnv DevStrat_4_11', 'True']


def test_importing_the_env_package_registers_every_id_without_backtrader_or_tensorflow():
    result = run_python(
        'import sys\nimport gymnasium\nimport btgym_aac.env\n'
        'print(sorted(env_id for env_id in gymnasium.registry if "btgym" in env_id.lower()))\n'
        'print(sorted(name for name in ("tensorflow", "backtrader", "btgym_aac.env.base") if name in sys.modules))\n'
        'from btgym_aac.env import PortfolioEnv\n'
        'print(PortfolioEnv.__module__, "backtrader" in sys.modules)')
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.split('\n')
    assert lines[0] == str(sorted(list(registration.ENV_IDS) + list(registration.LEGACY_IDS)))
    assert lines[0] == str(['BTgym-v0', 'BTgymDevStrat_4_11-v0', 'btgym_aac/BTgym-v0',
                            'btgym_aac/BTgymDevStrat_4_11-v0', 'btgym_aac/MultiDiscrete-v0', 'btgym_aac/Portfolio-v0'])
    assert lines[1:3] == ['[]', 'btgym_aac.env.multi_asset True']


def test_the_registration_module_imports_only_gymnasium_and_its_entry_points_are_strings():
    tree = ast.parse(open(registration.__file__).read())
    imported = [alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names] + \
        [node.module for node in tree.body if isinstance(node, ast.ImportFrom)]
    assert imported == ['gymnasium']
    nested = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert 'btgym_aac.env' not in nested, 'the env package imports this module: no import back'
    for env_id, (entry_point, kwargs) in registration.ENV_IDS.items():
        assert isinstance(entry_point, str) and entry_point.startswith('btgym_aac.env.'), env_id
