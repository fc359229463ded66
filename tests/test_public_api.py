"""The public imports DESIGN.md promises, and that importing the package alone does not import TensorFlow."""
import subprocess
import sys

PUBLIC_IMPORTS = '''
from btgym_aac import BTgymEnv, BTgymDataset, DictSpace, ActionDictSpace
from btgym_aac.strategy import BTgymBaseStrategy, DevStrat_4_6, DevStrat_4_7, DevStrat_4_10, DevStrat_4_11
from btgym_aac.strategy.observers import Reward, Position, NormPnL
from btgym_aac.data import make_sine_data
from btgym_aac.algorithms import (BaseAAC, A3C, Unreal, PPO, Launcher, BaseAacPolicy, Aac1dPolicy,
                                  StackedLstmPolicy, AacStackedRL2Policy, RunnerThread, Memory, Rollout)
from btgym_aac.algorithms.nn.losses import aac_loss_def, ppo_loss_def, value_fn_loss_def, rp_loss_def, pc_loss_def
from btgym_aac.algorithms.common.math_utils import discount, log_uniform, cat_entropy, kl_divergence
from btgym_aac.compat import tf
assert tf.executing_eagerly() is False
'''


def run_python(code):
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)


def test_design_public_imports():
    result = run_python(PUBLIC_IMPORTS)
    assert result.returncode == 0, result.stderr[-2000:]


def test_environment_imports_do_not_load_tensorflow():
    result = run_python('import sys\nfrom btgym_aac import BTgymEnv, BTgymDataset\nimport btgym_aac.algorithms\n'
                        'BTgymEnv, BTgymDataset\nprint("tensorflow" in sys.modules)')
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == 'False'


def test_the_package_and_the_namespace_joining_module_import_only_the_standard_library():
    # A launcher's task imports these while still single-threaded, to join a user namespace; numpy (gymnasium,
    # pandas, ...) would start threads first.
    result = run_python('import os, sys\nimport btgym_aac, btgym_aac.distributed.network_namespace\n'
                        'print(sorted({"numpy", "gymnasium", "pandas"} & set(sys.modules)), '
                        'len(os.listdir("/proc/self/task")))')
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == '[] 1'


def test_importing_the_env_registers_its_gymnasium_ids():
    result = run_python('import gymnasium\nenv = gymnasium.make("btgym_aac.env:BTgym-v0", render_enabled=False)\n'
                        'print(env.spec.id, type(env.unwrapped).__name__)')
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == 'BTgym-v0 BTgymEnv'


def test_tensorflow_imported_first_without_legacy_keras_gives_a_clear_error():
    result = run_python('import os\nos.environ.pop("TF_USE_LEGACY_KERAS", None)\nimport tensorflow\n'
                        'import btgym_aac.compat')
    assert result.returncode != 0
    assert 'put `import btgym_aac.compat` above the first `import tensorflow`' in result.stderr
    assert '`TF_USE_LEGACY_KERAS=1 python your_script.py`' in result.stderr
    # Both fixes the message names work.
    compat_first = run_python('import btgym_aac.compat\nimport tensorflow\nprint(tensorflow.executing_eagerly())')
    assert compat_first.returncode == 0 and compat_first.stdout.strip() == 'False', compat_first.stderr[-2000:]
    variable_set = run_python('import os\nos.environ["TF_USE_LEGACY_KERAS"] = "1"\nimport tensorflow\n'
                              'import btgym_aac.compat\nprint(tensorflow.executing_eagerly())')
    assert variable_set.returncode == 0 and variable_set.stdout.strip() == 'False', variable_set.stderr[-2000:]


def test_tensorflow_start_up_notices_and_rnn_cell_deprecations_stay_out_of_stderr():
    result = run_python(PUBLIC_IMPORTS + '''
from btgym_aac.algorithms.nn.networks import lstm_network
outputs = lstm_network(tf.placeholder(tf.float32, [1, 3, 4]), tf.constant([3]))[0]
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(outputs.get_shape().as_list())
''')
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == '[1, 3, 256]'
    for text in ('absl::InitializeLog', 'oneDNN', 'cuda', 'cuInit', 'is deprecated'):
        assert text not in result.stderr, result.stderr[-2000:]


def test_only_the_start_up_notice_lines_are_dropped():
    from btgym_aac.compat import without_start_up_notices

    text = ('WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n'
            'E0000 cuda_platform.cc:52] failed call to cuInit: INTERNAL\n'
            'Traceback (most recent call last):\n'
            'I0000 port.cc:153] oneDNN custom operations are on.\n'
            'ImportError: something real\n')
    assert without_start_up_notices(text) == 'Traceback (most recent call last):\nImportError: something real\n'


def test_the_original_utils_path_re_exports_the_batch_and_placeholder_helpers():
    from btgym_aac.algorithms import utils
    from btgym_aac.algorithms.common import batches, placeholders

    for name in utils.__all__:
        assert getattr(utils, name) is getattr(batches, name, None) or getattr(utils, name) is getattr(
            placeholders, name)
