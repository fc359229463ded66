"""Bad settings of the env, its strategy and the trainers are refused at construction with a ValueError naming the
setting and its value (not inside a backtrader episode or mid-training); valid edge values still construct."""
import re

import backtrader as bt
import numpy as np
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.algorithms import A3C, PPO, Unreal
from btgym_aac.algorithms.policy import Aac1dPolicy
from btgym_aac.compat import tf
from btgym_aac.strategy import BTgymBaseStrategy, DevStrat_4_6, DevStrat_4_7, DevStrat_4_11

pytestmark = pytest.mark.xdist_group('settings_validation')  # one xdist worker builds the module's fixtures

QUIET = dict(render_enabled=False)
SHORT_EPISODE = {'days': 0, 'hours': 8, 'minutes': 0}
POLICY = {'class_ref': Aac1dPolicy, 'kwargs': dict(lstm_layers=(8,), conv_2d_num_filters=(4, 4, 4, 4))}


# ---------------------------------------------------------------------------------------------- env / strategy


@pytest.mark.parametrize('kwargs, message', [
    (dict(commission=-0.1), 'commission must be a finite number >= 0, got -0.1'),
    (dict(broker_commission=-0.001), 'broker_commission must be a finite number >= 0, got -0.001'),
    (dict(leverage=0), 'leverage must be a finite number > 0, got 0'),
    (dict(leverage=-2.0), 'leverage must be a finite number > 0, got -2.0'),
    (dict(order_size=0), 'order_size must be a finite number > 0, got 0'),
    (dict(order_size={'default_asset': -5}), "order_size['default_asset'] must be a finite number > 0, got -5"),
    (dict(fixed_stake=0), "the engine's sizer stake (fixed_stake), which order_size=None takes, must be a finite "
                          "number > 0, got 0"),
    (dict(gamma=1.01), 'gamma must be a finite number in [0, 1], got 1.01'),
    (dict(gamma=-0.5), 'gamma must be a finite number in [0, 1], got -0.5'),
    (dict(drawdown_call=-5), 'drawdown_call must be a finite number > 0, got -5'),
    (dict(target_call=0), 'target_call must be a finite number > 0, got 0'),
    (dict(reward_scale=float('nan')), 'reward_scale must be a finite number > 0, got nan'),
    (dict(reward_scale=0), 'reward_scale must be a finite number > 0, got 0'),
    (dict(reward_scale='7'), "reward_scale must be a finite number > 0, got '7'"),
], ids=['commission', 'broker-commission', 'leverage-zero', 'leverage-negative', 'order-size', 'order-size-dict',
        'fixed-stake', 'gamma-high', 'gamma-low', 'drawdown-call', 'target-call', 'reward-scale-nan',
        'reward-scale-zero', 'reward-scale-str'])
def test_bad_strategy_setting_is_named_at_env_construction(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        BTgymEnv(**QUIET, **kwargs)


@pytest.mark.parametrize('strategy, kwargs, message', [
    (DevStrat_4_11, dict(state_ext_scale=np.linspace(3e3, 1e3, 3)),
     'state_ext_scale of shape (3,) does not broadcast to the external state of shape (30, 5) (time, channels): '
     'give a scalar, 5 per-channel values or a (30, 5) array; got [3000., 2000., 1000.]'),
    (DevStrat_4_11, dict(state_int_scale=[1.0, 2.0]),
     'state_int_scale of shape (2,) does not broadcast to the internal state of shape (20, 6) (time, channels): '
     'give a scalar, 6 per-channel values or a (20, 6) array; got [1., 2.]'),
    (DevStrat_4_6, dict(state_ext_scale=np.ones(5)),
     'state_ext_scale of shape (5,) does not broadcast to the external state of shape (30, 3)'),
    (DevStrat_4_7, dict(state_int_scale=np.ones((20, 5))),
     'state_int_scale of shape (20, 5) does not broadcast to the internal state of shape (1, 5)'),
    (DevStrat_4_11, dict(state_ext_scale=float('inf')), 'state_ext_scale must be a finite number or array, got inf'),
], ids=['4_11-external', '4_11-internal', '4_6-external', '4_7-internal', 'not-finite'])
def test_state_scale_that_does_not_fit_the_state_is_named_at_env_construction(strategy, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        BTgymEnv(strategy=strategy, **QUIET, **kwargs)


def test_custom_engine_sizer_stake_is_checked_at_env_construction():
    engine = bt.Cerebro()
    engine.addstrategy(BTgymBaseStrategy, drawdown_call=5)
    engine.addsizer(bt.sizers.SizerFix, stake=-1)
    with pytest.raises(ValueError, match=re.escape("the engine's sizer stake (fixed_stake), which order_size=None "
                                                   "takes, must be a finite number > 0, got -1")):
        BTgymEnv(engine=engine, **QUIET)


def test_valid_edge_settings_construct_and_run_an_episode():
    env = BTgymEnv(commission=0, broker_commission=0, gamma=1.0, leverage=0.5, order_size={'default_asset': 0.5},
                   drawdown_call=100, target_call=1e-3, reward_scale=1e-3, **QUIET)
    try:
        env.reset(seed=0)
        assert env.step(1)[2] in (True, False)
    finally:
        env.close()
    env = BTgymEnv(gamma=0, fixed_stake=1, **QUIET)
    env.close()
    for scales in (dict(state_ext_scale=1.0, state_int_scale=2), dict(state_ext_scale=np.ones((30, 5)),
                                                                       state_int_scale=np.ones(6))):
        env = BTgymEnv(strategy=DevStrat_4_11, episode_duration=SHORT_EPISODE, **QUIET, **scales)
        try:
            observation, _ = env.reset(seed=0)
            assert observation['external'].shape == (30, 1, 5) and observation['internal'].shape == (20, 1, 6)
        finally:
            env.close()


# ------------------------------------------------------------------------------------------------- trainers


@pytest.fixture(scope='module')
def env():
    env = BTgymEnv(strategy=DevStrat_4_11, episode_duration=SHORT_EPISODE, random_seed=0, **QUIET)
    yield env
    env.close()


@pytest.mark.parametrize('trainer, kwargs, message', [
    (A3C, dict(model_summary_freq=0), 'model_summary_freq must be a whole number >= 1, got 0'),
    (A3C, dict(episode_summary_freq=0), 'episode_summary_freq must be a whole number >= 1, got 0'),
    (A3C, dict(env_render_freq=-1), 'env_render_freq must be a whole number >= 1, got -1'),
    (A3C, dict(rollout_length=0), 'rollout_length must be a whole number >= 1, got 0'),
    (A3C, dict(rollout_length=2.5), 'rollout_length must be a whole number >= 1, got 2.5'),
    (A3C, dict(opt_learn_rate=-1), 'opt_learn_rate must be a finite number >= 0 or a [low, high] pair of them for '
                                   'a log-uniform draw, got -1'),
    (A3C, dict(opt_learn_rate=[1e-4, -1e-3]), 'opt_learn_rate must be a finite number >= 0 or a [low, high] pair '
                                              'of them for a log-uniform draw, got [0.0001, -0.001]'),
    (A3C, dict(model_beta='0.01'), "model_beta must be a finite number >= 0 or a [low, high] pair of them for a "
                                   "log-uniform draw, got '0.01'"),
    (A3C, dict(opt_end_learn_rate=-1e-5), 'opt_end_learn_rate must be a finite number >= 0, got -1e-05'),
    (A3C, dict(opt_decay_steps=0), 'opt_decay_steps must be a finite number > 0, got 0'),
    (A3C, dict(model_gamma=1.01), 'model_gamma must be a finite number in [0, 1], got 1.01'),
    (A3C, dict(model_gae_lambda=-0.1), 'model_gae_lambda must be a finite number in [0, 1], got -0.1'),
    (PPO, dict(num_epochs=0), 'num_epochs must be a whole number >= 1, got 0'),
    (PPO, dict(pi_prime_update_period=0), 'pi_prime_update_period must be a whole number >= 1, got 0'),
    (PPO, dict(num_minibatches=0), 'num_minibatches must be a whole number >= 1, got 0'),
    (PPO, dict(num_minibatches=4), 'num_minibatches 4 needs time_flat=True'),
    (Unreal, dict(num_minibatches=2, time_flat=True, use_value_replay=True),
     'num_minibatches 2 splits the on-policy batch only; it cannot be combined with replay'),
    (PPO, dict(target_kl=0), 'target_kl must be a finite number > 0, got 0'),
    (A3C, dict(target_kl=0.01), 'target_kl 0.01 needs an old policy to measure the drift from: a trainer with a '
                                'target policy (PPO) or behaviour_logits=True'),
    (Unreal, dict(use_value_replay=True, gamma_pc=1.5), 'gamma_pc must be a finite number in [0, 1], got 1.5'),
    (Unreal, dict(use_value_replay=True, vr_lambda=-1.0),
     'vr_lambda must be a finite number >= 0 or a [low, high] pair of them for a log-uniform draw, got -1.0'),
    (Unreal, dict(use_value_replay=True, replay_memory_size=0),
     'replay_memory_size must be a whole number >= 1, got 0'),
    (Unreal, dict(use_value_replay=True, rollout_length=20, replay_memory_size=10),
     'replay_rollout_length 20 (rollout_length when not given) is longer than replay_memory_size 10'),
    (Unreal, dict(use_reward_prediction=True, rp_sequence_size=0),
     'rp_sequence_size must be a whole number >= 1, got 0'),
], ids=['model-summary-freq', 'episode-summary-freq', 'env-render-freq', 'rollout-length', 'rollout-length-float',
        'learn-rate', 'learn-rate-pair', 'beta-str', 'end-learn-rate', 'decay-steps', 'gamma', 'gae-lambda',
        'ppo-epochs', 'ppo-pi-prime-period', 'minibatches', 'minibatches-not-time-flat', 'minibatches-replay',
        'target-kl', 'target-kl-without-old-policy',
        'gamma-pc', 'vr-lambda', 'memory-size', 'memory-shorter-than-replay',
        'rp-sequence-size'])
def test_bad_trainer_setting_is_named_at_construction(env, trainer, kwargs, message):
    with tf.Graph().as_default(), pytest.raises(ValueError, match=re.escape(message)):
        trainer(env=env, task=0, policy_config=POLICY, **kwargs)


def test_valid_edge_trainer_settings_construct(env):
    with tf.Graph().as_default():
        trainer = PPO(env=env, task=0, policy_config=POLICY, model_gamma=1.0, model_gae_lambda=0.0,
                      opt_learn_rate=[1e-5, 1e-3], opt_end_learn_rate=0, opt_decay_steps=50e6, rollout_length=1,
                      model_summary_freq=1, episode_summary_freq=1.0, env_render_freq=1e2, num_epochs=1,
                      pi_prime_update_period=1, model_beta=0, use_value_replay=True, replay_memory_size=1)
    assert 1e-5 <= trainer.opt_learn_rate <= 1e-3
    assert (trainer.rollout_length, trainer.episode_summary_freq, trainer.env_render_freq) == (1, 1, 100)
