"""The public imports DESIGN.md promises, and that importing the package alone does not import TensorFlow."""
import subprocess
import sys

import pytest

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


NO_LEGACY_KERAS = '''
import importlib.abc, os, sys

class NoLegacyKeras(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'tf_keras':
            raise ImportError('tf_keras is not installed here')

sys.meta_path.insert(0, NoLegacyKeras())
import tensorflow  # before the package, as a script mixing it with TF2 code may
from btgym_aac.algorithms import A3C, PPO, train_in_process
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac.compat import tf
from btgym_aac.env import gym_wrappers

for trainer, cell in ((A3C, tf.nn.rnn_cell.BasicLSTMCell), (PPO, tf.contrib.rnn.LayerNormBasicLSTMCell),
                      (A3C, tf.nn.rnn_cell.LSTMCell)):
    result = train_in_process(
        env_config={'class_ref': gym_wrappers.TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}},
        policy_config={'class_ref': AacDensePolicy,
                       'kwargs': {'dense_layers': (8,), 'lstm_layers': (8,), 'lstm_class': cell}},
        trainer_config={'class_ref': trainer, 'kwargs': {'test_mode': True, 'rollout_length': 10}},
        max_env_steps=40, random_seed=1)
    print(trainer.__name__, cell.__module__, cell.__name__, result['train_steps'])
print('TF_USE_LEGACY_KERAS' in os.environ, sorted(name for name in sys.modules if name.startswith('tf_keras')))
'''


def test_no_legacy_keras_is_needed_and_tensorflow_may_be_imported_first():
    """With tf-keras impossible to import and TensorFlow imported first, the trainers build and train, the TF1 cell
    names of configs resolve to the package's cells, and the package sets no TF_USE_LEGACY_KERAS."""
    result = run_python(NO_LEGACY_KERAS)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    trained = [line.rsplit(' ', 1) for line in lines[:3]]
    assert [name for name, _ in trained] == ['A3C btgym_aac.algorithms.nn.rnn BasicLSTMCell',
                                             'PPO btgym_aac.algorithms.nn.layer_norm LayerNormBasicLSTMCell',
                                             'A3C btgym_aac.algorithms.nn.rnn LSTMCell']
    assert all(int(steps) >= 4 for _, steps in trained)  # 40 env steps, rollouts of at most 10
    assert lines[3] == 'False []'


def test_tf1_names_resolve_to_the_package_and_the_rest_to_tensorflow():
    from btgym_aac.algorithms.common.placeholders import LSTMStateTuple
    from btgym_aac.algorithms.nn import layer_norm, rnn
    from btgym_aac.compat import tf

    assert tf.nn.rnn_cell.BasicLSTMCell is rnn.BasicLSTMCell and tf.nn.rnn_cell.LSTMCell is rnn.LSTMCell
    assert tf.nn.rnn_cell.MultiRNNCell is rnn.StackedCells and tf.nn.rnn_cell.LSTMStateTuple is LSTMStateTuple
    assert tf.contrib.rnn.LayerNormBasicLSTMCell is layer_norm.LayerNormBasicLSTMCell
    assert tf.contrib.layers.layer_norm is layer_norm.layer_norm
    import tensorflow

    assert tf.placeholder is tensorflow.compat.v1.placeholder and tf.nn.relu is tensorflow.compat.v1.nn.relu
    with pytest.raises(AttributeError, match="tf.contrib.rnn has no 'GRUCell': btgym_aac provides only "
                                             "BasicLSTMCell, LSTMCell, LSTMStateTuple, LayerNormBasicLSTMCell"):
        tf.contrib.rnn.GRUCell
    with pytest.raises(ValueError, match='use_peepholes=True not supported'):
        tf.nn.rnn_cell.LSTMCell(4, use_peepholes=True)


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
            '=== Source Location Trace: === \n'
            'external/xla/xla/stream_executor/cuda/cuda_status.cc:50\n'
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
