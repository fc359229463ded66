"""The original's names spelled "casual" (`btgym_aac.legacy.causal_names`): every old name and module path is the
very object of this package's "causal" name, in imports, pickles and `ClassRef`s."""
import importlib
import pickle
import subprocess
import sys

import pytest

import btgym_aac
from btgym_aac import config_modules
from btgym_aac.class_refs import ClassRef, import_class
from btgym_aac.legacy import causal_names
from btgym_aac.legacy.causal_names import RENAMED_MODULES, RENAMED_NAMES


def new_object(target):
    module, _, name = target.partition(':')
    return getattr(importlib.import_module(module), name)


def run_python(code):
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)


def test_every_old_name_is_spelled_casual_and_its_new_name_causal():
    for old, target in RENAMED_NAMES.items():
        assert 'asual' in old and 'ausal' not in old
        assert target.partition(':')[2] == old.replace('Casual', 'Causal').replace('casual', 'causal')
    for old, new in RENAMED_MODULES.items():
        assert new == old.replace('casual', 'causal')


@pytest.mark.parametrize('old', sorted(RENAMED_NAMES))
def test_old_name_is_the_new_names_object(old):
    new = new_object(RENAMED_NAMES[old])
    assert getattr(causal_names, old) is new
    assert new.__name__ != old and 'Casual' not in new.__qualname__ and 'casual' not in new.__module__


def test_old_names_of_the_public_tables_are_the_new_classes():
    from btgym_aac.data import BTgymCasualDataDomain, BTgymCasualTrial, BTgymCausalDataDomain, BTgymCausalTrial

    assert btgym_aac.BTgymCasualDataDomain is btgym_aac.BTgymCausalDataDomain is BTgymCausalDataDomain
    assert BTgymCasualDataDomain is BTgymCausalDataDomain and BTgymCasualTrial is BTgymCausalTrial
    assert BTgymCausalDataDomain.trial_class_ref is BTgymCasualTrial
    assert {'BTgymCasualDataDomain', 'BTgymCausalDataDomain'} <= set(btgym_aac.__all__) & set(dir(btgym_aac))
    import btgym_aac.data as data

    assert {'BTgymCasualDataDomain', 'BTgymCasualTrial'} <= set(data.__all__) & set(dir(data))
    with pytest.raises(AttributeError, match='no attribute'):
        data.BTgymCasualNothing


@pytest.mark.parametrize('old_path', sorted(RENAMED_MODULES))
def test_old_module_path_shows_the_new_modules_names_and_their_old_names(old_path):
    old, new = importlib.import_module(old_path), importlib.import_module(RENAMED_MODULES[old_path])
    assert old is not new and old.__name__ == old_path
    renamed = {name: target.partition(':')[2] for name, target in RENAMED_NAMES.items()
               if target.partition(':')[2] in dir(new)}
    public = getattr(new, '__all__', [name for name in vars(new) if not name.startswith('_')])
    for name in public:
        assert getattr(old, name) is getattr(new, name), name
    for name, new_name in renamed.items():
        assert getattr(old, name) is getattr(new, new_name), name
    assert set(old.__all__) >= set(public) | {name for name, new_name in renamed.items() if new_name in public}
    assert set(dir(old)) >= set(public) | set(renamed)
    with pytest.raises(AttributeError, match="'{}' has no attribute 'NotAName'".format(old_path)):
        old.NotAName


def test_old_module_paths_hold_the_old_names_of_their_modules():
    from btgym_aac.data.casual import BTgymCasualDataDomain, BTgymCasualTrial, bar_seconds
    from btgym_aac.data.causal import BTgymCausalDataDomain, BTgymCausalTrial
    from btgym_aac.data.causal import bar_seconds as new_bar_seconds
    from btgym_aac.research.casual_conv import CasualConvStrategy, MaxPool, cwt
    from btgym_aac.research.casual_conv.strategy import CasualConvStrategy_0, CasualConvStrategy_1
    from btgym_aac.research.causal_conv import strategy, wavelets

    assert BTgymCasualDataDomain is BTgymCausalDataDomain and BTgymCasualTrial is BTgymCausalTrial
    assert bar_seconds is new_bar_seconds
    assert CasualConvStrategy is strategy.CausalConvStrategy and MaxPool is strategy.MaxPool and cwt is wavelets.cwt
    assert CasualConvStrategy_0 is strategy.CausalConvStrategy_0
    assert CasualConvStrategy_1 is strategy.CausalConvStrategy_1
    assert issubclass(CasualConvStrategy_1, strategy.CausalConvStrategy)
    with pytest.raises(ImportError):
        from btgym_aac.research.casual_conv.strategy import CasualConvPolicy_0_0  # noqa: F401  (in `policy`)


def test_old_module_paths_in_a_fresh_interpreter():
    """The brief's and the notebooks' statements, in an interpreter that has imported nothing of the package."""
    result = run_python('''
import sys
import btgym_aac.research.casual_conv as package
assert 'tensorflow' not in sys.modules and 'backtrader' not in sys.modules  # the old package is lazy, as the new
import btgym_aac.research.casual_conv.strategy as m
import btgym_aac.research.causal_conv.strategy as n
assert m.CasualConvStrategyMulti is n.CausalConvStrategyMulti and m.CasualConvStrategy_0 is n.CausalConvStrategy_0
assert m.CasualConvStrategy is n.CausalConvStrategy and m.MinPool is n.MinPool
assert package.strategy is m and package.CasualConvStrategyMulti is n.CausalConvStrategyMulti
assert 'tensorflow' not in sys.modules
import btgym_aac.research.casual_conv.networks
import btgym_aac.research.causal_conv.networks as networks
assert btgym_aac.research.casual_conv.networks.conv_1d_casual_encoder is networks.conv_1d_causal_encoder
assert package.networks.conv_1d_casual_attention_encoder is networks.conv_1d_causal_attention_encoder
from btgym_aac.research.casual_conv.policy import CasualConvPolicy_0_0, conv_1d_casual_encoder
from btgym_aac.research.causal_conv import CausalConvPolicy_0_0
assert CasualConvPolicy_0_0 is CausalConvPolicy_0_0 and conv_1d_casual_encoder is networks.conv_1d_causal_encoder
from btgym_aac.research.casual_conv.layers import dilated_conv1d
from btgym_aac.research.casual_conv.wavelets import ricker
from btgym_aac.research.causal_conv import layers, wavelets
assert dilated_conv1d is layers.dilated_conv1d and ricker is wavelets.ricker
from btgym_aac import BTgymCasualDataDomain
from btgym_aac.data import BTgymCasualTrial, BTgymCausalDataDomain, BTgymCausalTrial
from btgym_aac.data.casual import BTgymCasualDataDomain as from_module
from btgym_aac.datafeed.casual import BTgymCasualDataDomain as from_original, BTgymCasualTrial as trial
assert BTgymCasualDataDomain is from_module is from_original is BTgymCausalDataDomain
assert BTgymCasualTrial is trial is BTgymCausalTrial
domain = BTgymCasualDataDomain(trial_params={'sample_duration': {'hours': 10}, 'time_gap': {'hours': 0}},
                               episode_params={'sample_duration': {'hours': 1}, 'time_gap': {'hours': 0}})
assert isinstance(domain, BTgymCausalDataDomain) and type(domain).__name__ == 'BTgymCausalDataDomain'
print('ok')
''')
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == 'ok'


def test_import_btgym_aac_imports_no_causal_module():
    result = run_python('import sys, btgym_aac\n'
                        'print(sorted(m for m in sys.modules if "ausal" in m or "asual" in m or m == "numpy"))')
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "['btgym_aac.legacy.causal_names']"


# ------------------------------------------------------------------------------------------------ pickles

@pytest.mark.parametrize('module, name, new', [
    ('btgym_aac.research.casual_conv.strategy', 'CasualConvStrategy_0',
     'btgym_aac.research.causal_conv.strategy:CausalConvStrategy_0'),
    ('btgym_aac.research.casual_conv.strategy', 'CasualConvStrategyMulti',
     'btgym_aac.research.causal_conv.strategy:CausalConvStrategyMulti'),
    ('btgym_aac.research.casual_conv.strategy', 'MaxPool', 'btgym_aac.research.causal_conv.strategy:MaxPool'),
    ('btgym_aac.research.casual_conv', 'CasualConvStrategy',
     'btgym_aac.research.causal_conv.strategy:CausalConvStrategy'),
    ('btgym_aac.data.casual', 'BTgymCasualDataDomain', 'btgym_aac.data.causal:BTgymCausalDataDomain'),
    ('btgym_aac.data.casual', 'BTgymCasualTrial', 'btgym_aac.data.causal:BTgymCausalTrial'),
    ('btgym_aac.datafeed.casual', 'BTgymCasualDataDomain', 'btgym_aac.data.causal:BTgymCausalDataDomain'),
])
def test_protocol_0_pickle_naming_an_old_path_loads_the_new_class(module, name, new):
    data = 'c{}\n{}\n.'.format(module, name).encode('ascii')
    assert pickle.loads(data) is new_object(new)
    assert import_class(module, name) is new_object(new)
    assert ClassRef(module, name).resolve() is new_object(new)


def test_pickled_function_of_an_old_path_loads():
    from btgym_aac.research.causal_conv.networks import conv_1d_causal_attention_encoder

    data = b'cbtgym_aac.research.casual_conv.networks\nconv_1d_casual_attention_encoder\n.'
    assert pickle.loads(data) is conv_1d_causal_attention_encoder


def pickled_under_old_name(obj, cls, module, qualname, dumps=pickle.dumps):
    """`obj` pickled while `cls` carries its old `__module__` and `__qualname__` (as an old run folder holds it)."""
    saved = cls.__module__, cls.__qualname__
    cls.__module__, cls.__qualname__ = module, qualname
    try:
        return dumps(obj)
    finally:
        cls.__module__, cls.__qualname__ = saved


def test_pickled_run_config_of_an_old_run_folder_loads_the_new_classes():
    from btgym_aac.data.causal import BTgymCausalDataDomain
    from btgym_aac.research.causal_conv.strategy import CausalConvStrategy_0

    config = {'env_config': {'kwargs': {'strategy': CausalConvStrategy_0, 'dataset': BTgymCausalDataDomain}}}

    def dumps(obj):
        return pickled_under_old_name(obj, BTgymCausalDataDomain, 'btgym_aac.data.casual', 'BTgymCasualDataDomain',
                                      dumps=config_modules.dumps_with_sources)

    data = pickled_under_old_name(config, CausalConvStrategy_0, 'btgym_aac.research.casual_conv.strategy',
                                  'CasualConvStrategy_0', dumps=dumps)
    assert b'btgym_aac.research.casual_conv.strategy' in data and b'CasualConvStrategy_0' in data
    assert b'btgym_aac.data.casual' in data and b'BTgymCasualDataDomain' in data
    assert b'Causal' not in data
    loaded = config_modules.load_with_sources(data)['env_config']['kwargs']
    assert loaded['strategy'] is CausalConvStrategy_0 and loaded['dataset'] is BTgymCausalDataDomain
    assert pickle.loads(pickle.dumps(CausalConvStrategy_0)) is CausalConvStrategy_0  # the class itself is unchanged
    assert CausalConvStrategy_0.__module__ == 'btgym_aac.research.causal_conv.strategy'


def test_pickled_instance_of_an_old_class_name_loads_as_the_new_class():
    from btgym_aac.data.causal import BTgymCausalDataDomain

    hours = dict(time_gap={'hours': 0})
    domain = BTgymCausalDataDomain(trial_params=dict(hours, sample_duration={'hours': 10}),
                                   episode_params=dict(hours, sample_duration={'hours': 1}), name='old_run')
    data = pickled_under_old_name(domain, BTgymCausalDataDomain, 'btgym_aac.data.casual', 'BTgymCasualDataDomain',
                                  dumps=lambda obj: pickle.dumps(obj, protocol=2))
    assert b'BTgymCasualDataDomain' in data
    loaded = pickle.loads(data)
    assert type(loaded) is BTgymCausalDataDomain and loaded.name == 'old_run'
