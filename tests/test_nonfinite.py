"""Non-finite values: a train step whose loss or gradients are not finite changes no weight and stops training,
naming the first non-finite tensor; an env observation holding NaN is named with what the data checks find."""
import glob
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.algorithms import A3C, PPO, train_in_process
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac.cli import default_configs
from btgym_aac.compat import tf
from btgym_aac.data import make_random_walk_data, write_histdata_csv
from btgym_aac.env import gym_wrappers
from btgym_aac.nonfinite import NonFiniteObservationError, NonFiniteTrainingError, data_explanation
from btgym_aac.strategy import BTgymBaseStrategy
from trainer_helpers import started_trainer

NAN_FROM_STEP = 3


class NanLossA3C(A3C):
    """A3C whose loss turns NaN from its NAN_FROM_STEP-th train step: a NaN injected through `_make_loss`."""

    def _make_loss(self, pi, pi_prime):
        loss, summaries = super()._make_loss(pi, pi_prime)
        self.nan_switch = tf.Variable(0.0, trainable=False, name='nan_switch')
        return loss + tf.where(self.nan_switch > 0, np.float32(np.nan), np.float32(0.0)), summaries


class NanGradientPPO(PPO):
    """PPO (two epochs per batch) whose loss stays finite while its gradients turn NaN once switched on."""

    def _make_loss(self, pi, pi_prime):
        loss, summaries = super()._make_loss(pi, pi_prime)
        self.nan_switch = tf.Variable(0.0, trainable=False, name='nan_switch')
        factor = tf.where(self.nan_switch > 0, np.float32(np.nan), np.float32(1.0))

        @tf.custom_gradient
        def poisoned(x):
            return tf.identity(x), lambda upstream: upstream * factor

        return loss + 0.0 * tf.reduce_sum(poisoned(pi.var_list[0])), summaries


def global_values(trainer, sess):
    return [sess.run(variable) for variable in trainer.network.var_list]


@pytest.mark.parametrize('trainer_class, first', [
    (NanLossA3C, 'first the loss;'), (NanGradientPPO, 'first the gradient of PPO/local/dense_encoder/'),
], ids=['nan-loss', 'nan-gradient'])
def test_a_non_finite_train_step_changes_no_weight_and_stops_training(trainer_class, first):
    envs = [gym_wrappers.TestModeEnv(env_id='CartPole-v1', seed=seed) for seed in range(2)]
    with started_trainer(trainer_class, envs, AacDensePolicy, dict(dense_layers=(16,), lstm_layers=(16,)),
                         test_mode=True, rollout_length=10) as (trainer, sess, _):
        for _ in range(NAN_FROM_STEP):
            trainer.process(sess)
        sess.run(trainer.nan_switch.assign(1.0))
        before = global_values(trainer, sess)
        with pytest.raises(NonFiniteTrainingError, match=r'train step {} of task 0: the loss or its gradients are '
                                                         r'not finite, {}'.format(NAN_FROM_STEP, first)):
            trainer.process(sess)
        after = global_values(trainer, sess)
    assert all(np.all(np.isfinite(value)) for value in after)
    moved = max(float(np.max(np.abs(a - b))) for a, b in zip(after, before))
    assert moved < 1e-3  # at most Adam's momentum step; no NaN reached a weight


class NanAfterWarmupStrategy(BTgymBaseStrategy):
    """The base strategy, whose `raw` state turns NaN from the fifth step of an episode."""

    def get_raw_state(self):
        state = super().get_raw_state()
        return state * np.nan if self.env_iteration > 5 else state


def test_a_nan_observation_is_named_with_what_the_data_checks_find():
    bars = make_random_walk_data(num_bars=6000, seed=0)
    bars.iloc[100:110, bars.columns.get_loc('low')] = -1.0
    env = BTgymEnv(dataframe=bars, strategy=NanAfterWarmupStrategy, episode_duration={'days': 1},
                   parsing_params={'checks': {'nonpositive_prices': 'warn'}}, render_enabled=False)
    try:
        env.reset(seed=0)
        with pytest.raises(NonFiniteObservationError, match=r"observation\['raw'\] holds NaN or inf at step \d+ of "
                                                            r"episode 0 \(the strategy NanAfterWarmupStrategy .*"
                                                            r"the data explains it: the data: low -1.0 is not "
                                                            r"positive at {};".format(bars.index[100])):
            for _ in range(20):
                env.step(0)
    finally:
        env.close()
    assert data_explanation(None) == ''


NAN_CONFIG = '''
import numpy as np
from btgym_aac.algorithms import A3C
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac.compat import tf
from btgym_aac.env.gym_wrappers import TestModeEnv


class NanLaterA3C(A3C):
    """A3C whose loss turns NaN once the global step passes 600 (after the first checkpoints)."""

    def _make_loss(self, pi, pi_prime):
        loss, summaries = super()._make_loss(pi, pi_prime)
        return loss + tf.where(self.global_step > 600, np.float32(np.nan), np.float32(0.0)), summaries


env_config = {'class_ref': TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}}
policy_config = {'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (16,), 'lstm_layers': (16,)}}
trainer_config = {'class_ref': NanLaterA3C, 'kwargs': {'rollout_length': 20}}
launcher_config = {'test_mode': True, 'max_env_steps': 5000, 'save_secs': 0.2}
'''


def checkpoint_tensors(log_dir):
    """{checkpoint prefix: {name: array}} of every checkpoint under `log_dir`."""
    found = {}
    for index in glob.glob(os.path.join(str(log_dir), '**', '*.index'), recursive=True):
        reader = tf.train.load_checkpoint(index[:-len('.index')])
        found[index] = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
    return found


def test_a_run_that_meets_nan_stops_without_restarts_and_keeps_only_finite_checkpoints(tmp_path):
    config = tmp_path / 'config.py'
    config.write_text(NAN_CONFIG)
    finished = subprocess.run([sys.executable, '-m', 'btgym_aac.cli', 'train', str(config), '--workers', '1',
                               '--log-dir', str(tmp_path / 'run')], capture_output=True, text=True, timeout=240)
    assert finished.returncode == 1, finished.stderr
    assert 'worker 0: train step' in finished.stderr
    assert 'the loss or its gradients are not finite, first the loss' in finished.stderr
    assert finished.stderr.strip().splitlines()[-1].startswith('training failed: worker 0 stopped training: it met '
                                                                'NaN or inf values')
    assert 'restarting worker' not in finished.stderr
    checkpoints = checkpoint_tensors(tmp_path / 'run')
    assert checkpoints  # saved every 0.2 s before the NaN
    for tensors in checkpoints.values():
        assert all(np.all(np.isfinite(value)) for value in tensors.values() if np.issubdtype(value.dtype, np.floating))


def constant_prices_file(tmp_path):
    """A HistData CSV of 20,000 bars whose prices are all 1.1."""
    bars = make_random_walk_data(num_bars=20000, seed=0)
    bars[['open', 'high', 'low', 'close']] = 1.1
    return write_histdata_csv(bars, str(tmp_path / 'constant.csv'))


def test_the_reference_configuration_on_constant_prices_stops_at_its_first_step_naming_the_data_file(tmp_path):
    """With the constant-prices check turned off, the features divide by zero: the first train step is not finite
    and the error says what the data checks find in the env's data file."""
    data = constant_prices_file(tmp_path)
    configs = default_configs(preset='reference')
    configs['env_config']['kwargs'].update(filename=data, parsing_params={'checks': {'constant_prices': 'off'}})
    with pytest.raises(NonFiniteTrainingError, match=r'train step 0 of task 0: the loss or its gradients are not '
                                                     r'finite, .*the data explains it: data file <{}>: column close '
                                                     r'is 1.1 in all 20000 bars'.format(re.escape(data))):
        train_in_process(configs['env_config'], configs['policy_config'], configs['trainer_config'],
                         max_env_steps=2000, log_dir=str(tmp_path / 'run'))


@pytest.mark.slow  # by default: the test above (in one process) and the NaN run above (checkpoints, exit status)
def test_constant_prices_with_their_check_off_stop_training_naming_the_data_file(tmp_path):
    """The reference configuration on constant prices (the data check turned off): the first train step is not
    finite; the run stops naming the data file and leaves only finite checkpoints."""
    data = constant_prices_file(tmp_path)
    config = tmp_path / 'config.py'
    config.write_text('from btgym_aac.cli import default_configs\n'
                      'env_config = default_configs(preset="reference")["env_config"]\n'
                      'env_config["kwargs"].update(filename={!r}, parsing_params={{"checks": {{"constant_prices": '
                      '"off"}}}})\n'.format(data))
    finished = subprocess.run([sys.executable, '-m', 'btgym_aac.cli', 'train', str(config), '--preset', 'reference',
                               '--workers', '1', '--max-steps', '2000', '--log-dir', str(tmp_path / 'run')],
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 1, finished.stderr
    assert 'the loss or its gradients are not finite' in finished.stderr
    assert 'the data explains it: data file <{}>: column close is 1.1 in all 20000 bars'.format(data) in \
        finished.stderr
    for tensors in checkpoint_tensors(tmp_path / 'run').values():
        assert all(np.all(np.isfinite(value)) for value in tensors.values() if np.issubdtype(value.dtype, np.floating))
