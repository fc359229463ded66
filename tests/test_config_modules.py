"""Config files run as modules whose classes pickle by reference, and pickles that carry the sources of the config
modules they refer to, so that a fresh process can unpickle them."""
import pickle
import subprocess
import sys
import textwrap

import pytest

from btgym_aac.config_modules import (HEADER_KEY, ConfigModuleError, dumps_with_sources, load_config_module,
                                      load_with_sources, module_name)

CONFIG = '''
class Scaled:
    def __init__(self, factor):
        self.factor = factor

    def apply(self, value):
        return self.factor * value

env_config = {'class_ref': Scaled, 'kwargs': {'factor': 3}}
'''


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_config_file_runs_as_a_module_named_after_the_file(tmp_path):
    namespace = load_config_module(write(tmp_path, 'my-config.py', CONFIG))
    scaled = namespace['env_config']['class_ref']
    assert scaled.__module__ == module_name('my-config.py') == 'btgym_aac_config_my_config'
    assert sys.modules[scaled.__module__].Scaled is scaled
    assert pickle.loads(pickle.dumps(scaled(2))).apply(5) == 10


def test_a_fresh_process_unpickles_the_config_classes_from_the_kept_source(tmp_path):
    path = write(tmp_path, 'config.py', CONFIG)
    namespace = load_config_module(path)
    data = dumps_with_sources({'env_config': namespace['env_config'], 'obj': namespace['Scaled'](4)})
    (tmp_path / 'run.pkl').write_bytes(data)
    (tmp_path / 'config.py').unlink()  # the source travels in the pickle
    script = textwrap.dedent('''
        import sys
        from btgym_aac.config_modules import load_with_sources
        with open(sys.argv[1], 'rb') as f:
            loaded = load_with_sources(f)
        cls = loaded['env_config']['class_ref']
        print(cls.__name__, cls.__module__, sys.modules[cls.__module__].__file__, loaded['obj'].apply(5))
    ''')
    out = subprocess.run([sys.executable, '-c', script, str(tmp_path / 'run.pkl')], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ['Scaled', 'btgym_aac_config_config', path, '20']


def test_the_header_holds_only_the_config_modules_the_object_refers_to(tmp_path):
    first = load_config_module(write(tmp_path, 'first.py', CONFIG))
    load_config_module(write(tmp_path, 'second.py', CONFIG))
    data = dumps_with_sources([first['Scaled'](1)])
    header = pickle.loads(data)
    assert list(header) == [HEADER_KEY]
    assert list(header[HEADER_KEY]) == ['btgym_aac_config_first']
    assert header[HEADER_KEY]['btgym_aac_config_first'] == (str(tmp_path / 'first.py'), CONFIG)
    assert pickle.loads(dumps_with_sources({'a': 1})) == {HEADER_KEY: {}}


def test_a_plain_pickle_is_read_too():
    assert load_with_sources(pickle.dumps({'env_config': {'kwargs': {}}})) == {'env_config': {'kwargs': {}}}


def test_a_kept_source_that_fails_is_named():
    data = pickle.dumps({HEADER_KEY: {'btgym_aac_config_broken': ('/gone/broken.py', 'import no_such_module_xyz\n')}})
    with pytest.raises(ConfigModuleError, match=r"config file /gone/broken.py \(the copy kept with the run\) fails "
                                                r"to run: ModuleNotFoundError: No module named 'no_such_module_xyz'"):
        load_with_sources(data + pickle.dumps(1))
    assert 'btgym_aac_config_broken' not in sys.modules


def test_a_failing_config_file_leaves_no_module(tmp_path):
    with pytest.raises(ZeroDivisionError):
        load_config_module(write(tmp_path, 'bad.py', 'x = 1 / 0\n'))
    assert 'btgym_aac_config_bad' not in sys.modules
