"""Runs written by btgym_aac 0.1.0 before its module layout of 2026-12-04: a `run_config.pkl` that names a module
path of an earlier layout (no alias resolves those any more) is refused, naming the module and the version that
reads it; one that names the original btgym's paths still loads."""
import importlib
import inspect
import pickle
import sys
import types

import pytest

from btgym_aac.cli import main as cli_main
from btgym_aac.config_modules import dumps_with_sources
from btgym_aac.distributed.run_config import RUN_CONFIG_DICTS
from btgym_aac.evaluation.loading import EARLIER_LAYOUT_MODULES, earlier_layout_module, read_run_config
from btgym_aac.legacy.module_paths import MOVED_MODULES


def run_configs(policy_class):
    configs = {name: {'kwargs': {}} for name in RUN_CONFIG_DICTS}
    configs['policy_config']['class_ref'] = policy_class
    return configs


def pickled_naming(module_name, protocol=None):
    """Run configs whose policy class is `module_name`.Policy, pickled as a run of that layout pickled them
    (`dumps_with_sources`, or plain `pickle.dumps` with `protocol`)."""
    module = types.ModuleType(module_name)
    policy = type('Policy', (), {'__module__': module_name})
    module.Policy = policy
    sys.modules[module_name] = module  # (while pickling only: pickle finds a class by its module path)
    try:
        configs = run_configs(policy)
        return dumps_with_sources(configs) if protocol is None else pickle.dumps(configs, protocol)
    finally:
        del sys.modules[module_name]


def run_dir(tmp_path, data):
    log_dir = tmp_path / 'run'
    log_dir.mkdir()
    (log_dir / 'run_config.pkl').write_bytes(data)
    return log_dir


def refusal(log_dir, module):
    return ('{} names module {}, a path of an earlier btgym_aac layout; read this run with btgym_aac 0.1.0 (git '
            'tag/commit 7413806) or train it again'.format(log_dir / 'run_config.pkl', module))


def test_no_earlier_layout_path_is_an_alias_any_more():
    assert not set(EARLIER_LAYOUT_MODULES) & set(MOVED_MODULES)
    for name in (*EARLIER_LAYOUT_MODULES, 'btgym_aac.algorithms.runner.thread_runner'):
        with pytest.raises(ModuleNotFoundError):  # (nor a file of the moved package loaded again under its old path)
            importlib.import_module(name)


@pytest.mark.parametrize('module', EARLIER_LAYOUT_MODULES)
def test_a_run_config_naming_an_earlier_layout_path_is_refused(tmp_path, module):
    log_dir = run_dir(tmp_path, pickled_naming(module))
    with pytest.raises(ValueError) as refused:
        read_run_config(str(log_dir))
    assert str(refused.value) == refusal(log_dir, module)
    assert module not in sys.modules  # nothing was unpickled


@pytest.mark.parametrize('protocol', [0, 2, pickle.HIGHEST_PROTOCOL])
def test_evaluate_refuses_it_with_exit_code_2_and_the_message(tmp_path, capsys, protocol):
    module = 'btgym_aac.algorithms.runner.batched'
    log_dir = run_dir(tmp_path, pickled_naming(module, protocol))
    assert cli_main(['evaluate', str(log_dir)]) == 2
    err = capsys.readouterr().err
    assert refusal(log_dir, module) in err and 'Traceback' not in err


def test_so_is_one_naming_any_other_module_btgym_aac_no_longer_has(tmp_path, capsys):
    module = 'btgym_aac.algorithms.acting.gone_in_a_later_layout'
    log_dir = run_dir(tmp_path, pickled_naming(module))
    with pytest.raises(ValueError) as refused:
        read_run_config(str(log_dir))
    assert str(refused.value) == refusal(log_dir, module)
    assert cli_main(['evaluate', str(log_dir)]) == 2
    assert refusal(log_dir, module) in capsys.readouterr().err


def test_a_missing_module_of_another_package_is_reported_as_before(tmp_path):
    log_dir = run_dir(tmp_path, pickled_naming('not_btgym_aac_at_all'))
    with pytest.raises(ValueError, match='cannot be read .*names classes that can no longer be imported'):
        read_run_config(str(log_dir))


def test_a_run_config_naming_an_original_btgym_path_still_loads(tmp_path):
    old = 'btgym_aac.algorithms.rollout'
    moved = importlib.import_module(MOVED_MODULES[old])
    cls = next(value for _, value in inspect.getmembers(moved, inspect.isclass) if value.__module__ == moved.__name__)
    data = pickle.dumps(run_configs(cls), 2).replace(  # (protocol 2 names a class as 'c<module>\n<name>\n')
        'c{}\n'.format(moved.__name__).encode(), 'c{}\n'.format(old).encode())
    assert old.encode() in data and earlier_layout_module(data) is None
    assert read_run_config(str(run_dir(tmp_path, data)))['policy_config']['class_ref'] is cls


def test_the_scan_leaves_damaged_and_plain_pickles_to_the_unpickler():
    assert earlier_layout_module(b'garbage\n') is None
    assert earlier_layout_module(pickle.dumps({'env_config': {}})[:10]) is None
    assert earlier_layout_module(dumps_with_sources({'env_config': {'kwargs': {'name': 'btgym_aac.env'}}})) is None
    assert earlier_layout_module(pickle.dumps('btgym_aac.algorithms.session_config')) == (
        'btgym_aac.algorithms.session_config')
