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
from btgym_aac.algorithms.math_utils import discount, log_uniform, cat_entropy, kl_divergence
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


def test_tensorflow_imported_first_without_legacy_keras_gives_a_clear_error():
    result = run_python('import os\nos.environ.pop("TF_USE_LEGACY_KERAS", None)\nimport tensorflow\n'
                        'import btgym_aac.compat')
    assert result.returncode != 0
    assert 'TF_USE_LEGACY_KERAS=1' in result.stderr
