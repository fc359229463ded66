"""ClassRef: a class named by module and name that is imported only when used, and pickles as the class."""
import copy
import pickle
import subprocess
import sys
import textwrap

import pytest

from btgym_aac.class_refs import ClassRef, class_name, same_class
from btgym_aac.distributed.run_config import launcher_configs
from btgym_aac.distributed.run_config import default_configs


def run_python(code):
    return subprocess.run([sys.executable, '-c', textwrap.dedent(code)], capture_output=True, text=True, timeout=300)


def test_a_ref_imports_nothing_until_used_and_pickles_as_the_class():
    finished = run_python('''
        import copy, pickle, sys
        from btgym_aac.class_refs import ClassRef
        ref = ClassRef('btgym_aac.algorithms.aac', 'A3C')
        assert (ref.__name__, ref.__qualname__) == ('A3C', 'A3C')
        copied = copy.deepcopy({'class_ref': ref})['class_ref']
        assert copied is ref
        data = pickle.dumps(ref)
        print('imported before:', 'btgym_aac.algorithms.aac' in sys.modules, 'tensorflow' in sys.modules)
        from btgym_aac.algorithms.aac import A3C
        print('unpickled is the class:', pickle.loads(data) is A3C, ref.resolve() is A3C)
    ''')
    assert finished.returncode == 0, finished.stderr
    assert 'imported before: False False' in finished.stdout
    assert 'unpickled is the class: True True' in finished.stdout


def test_a_ref_equals_its_class_calls_it_and_reads_its_attributes():
    ref = ClassRef('collections', 'OrderedDict')
    import collections

    assert ref == collections.OrderedDict and same_class(collections.OrderedDict, ref)
    assert hash(ref) == hash(ClassRef('collections', 'OrderedDict'))
    assert ref != ClassRef('collections', 'Counter') and not same_class(ref, dict)
    assert ref(a=1) == collections.OrderedDict(a=1)
    assert ref.fromkeys('ab') == collections.OrderedDict.fromkeys('ab')
    assert class_name(ref) == class_name(collections.OrderedDict) == ('collections', 'OrderedDict')
    assert class_name(3) is None and same_class(3, 3) and not same_class(3, 4)
    assert copy.copy(ref) is ref and pickle.loads(pickle.dumps(ref)) is collections.OrderedDict
    assert repr(ref) == "ClassRef('collections', 'OrderedDict')"


@pytest.mark.parametrize('preset, policy_class_name, strategy_class_name', [
    ('reference', 'AacStackedRL2Policy', 'DevStrat_4_11'), ('fast', 'AacStackedRL2Policy', 'DevStrat_4_11'),
    ('dense', 'AacDensePolicy', 'DevStrat_4_11'), ('tuned', 'AacDensePolicy', 'DevStrat_4_12')])
def test_default_class_refs_name_the_classes_they_stand_for(preset, policy_class_name, strategy_class_name):
    from btgym_aac.algorithms import policy
    from btgym_aac.algorithms.aac import A3C, PPO, Unreal
    from btgym_aac.algorithms.policy import BaseAacPolicy
    from btgym_aac import strategy
    from btgym_aac.env import BTgymEnv

    for algo, trainer in (('a3c', A3C), ('unreal', Unreal), ('ppo', PPO)):
        lazy = default_configs(algo, import_classes=False, preset=preset)
        imported = default_configs(algo, preset=preset)
        assert isinstance(lazy['trainer_config']['class_ref'], ClassRef)
        assert lazy['trainer_config']['class_ref'].resolve() is trainer is imported['trainer_config']['class_ref']
        assert lazy['policy_config']['class_ref'].resolve() is getattr(policy, policy_class_name)
        assert imported['policy_config']['class_ref'] is getattr(policy, policy_class_name)
        assert lazy['env_config']['class_ref'].resolve() is BTgymEnv is imported['env_config']['class_ref']
        assert lazy['env_config']['kwargs']['strategy'].resolve() is getattr(strategy, strategy_class_name)
        assert imported['env_config']['kwargs']['strategy'] is getattr(strategy, strategy_class_name)
    defaults = launcher_configs()
    assert defaults['env_config']['class_ref'].resolve() is BTgymEnv
    assert defaults['trainer_config']['class_ref'].resolve() is A3C
    assert defaults['policy_config']['class_ref'].resolve() is BaseAacPolicy


def test_a_class_config_naming_its_class_replaces_the_default_whole():
    from btgym_aac.algorithms.policy import AacDensePolicy, BaseAacPolicy

    same = launcher_configs(policy_config={'class_ref': BaseAacPolicy})
    assert same['policy_config'] == {'class_ref': BaseAacPolicy, 'kwargs': {}}
    other = launcher_configs(policy_config={'class_ref': AacDensePolicy})
    assert other['policy_config'] == {'class_ref': AacDensePolicy, 'kwargs': {}}
