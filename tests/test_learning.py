"""Learning evidence (slow: run with `make test-slow`). Each test prints the steps and wall time it took."""
import numpy as np
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.algorithms import A3C, train_in_process
from btgym_aac.algorithms.policy import AacDensePolicy, AacStackedRL2Policy
from btgym_aac.env import gym_wrappers
from btgym_aac.env import registration as env_registration
from btgym_aac.distributed.run_config import default_configs
from btgym_aac.strategy import DevStrat_4_11

pytestmark = pytest.mark.slow

REFERENCE_ENV_KWARGS = dict(
    {key: value for key, value in env_registration.REFERENCE_ENV_KWARGS.items() if key != 'render_modes'},
    strategy=DevStrat_4_11, state_ext_scale=np.linspace(3e3, 1e3, 5), render_enabled=False,
)


def report(name, result):
    print('\n{}: target reached at {} env steps, {} train episodes, {:.0f} s wall, {:.0f} env steps/s'.format(
        name, result['target_reached_at'], result['episodes'], result['wall_time'],
        result['global_step'] / result['wall_time']))


def test_a3c_cartpole_mean_return_150_within_150k_steps():
    result = train_in_process(
        env_config={'class_ref': gym_wrappers.TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}},
        policy_config={'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (64,), 'lstm_layers': (64,)}},
        trainer_config={'class_ref': A3C, 'kwargs': dict(test_mode=True, rollout_length=20, opt_learn_rate=2e-3,
                                                         model_beta=0.01, model_gamma=0.99, model_gae_lambda=0.95)},
        max_env_steps=150_000, random_seed=1, target_mean_reward=150, target_window=20)
    report('A3C CartPole', result)
    assert result['target_reached_at'] is not None
    assert np.mean(result['episode_rewards'][-20:]) >= 150


def test_a3c_rl2_policy_on_sine_data_reaches_positive_mean_reward_within_30k_steps():
    result = train_in_process(
        env_config={'class_ref': BTgymEnv, 'kwargs': REFERENCE_ENV_KWARGS},
        policy_config={'class_ref': AacStackedRL2Policy,
                       'kwargs': {'lstm_layers': (256, 256), 'lstm_2_init_period': 60}},
        trainer_config={'class_ref': A3C, 'kwargs': dict(
            opt_learn_rate=1e-4, opt_end_learn_rate=1e-5, opt_decay_steps=50e6, model_gamma=0.99,
            model_gae_lambda=1.0, model_beta=0.05, rollout_length=20, time_flat=True)},
        max_env_steps=30_000, random_seed=0, target_mean_reward=0.01, target_window=10)
    report('A3C + AacStackedRL2Policy, sine data', result)
    assert result['target_reached_at'] is not None
    assert np.mean(result['episode_rewards'][-10:]) > 0


@pytest.mark.parametrize('algo', ['ppo', 'a3c'])
def test_the_reference_configuration_trades_the_sine_to_its_target_within_15k_steps(algo):
    """The reference configuration (logits not layer-normalised) reaches a mean total reward of 60 over 10
    episodes (68.8 is every episode reaching the +10 % target); with the original notebook's normalised logits it
    stays near 50 (docs/performance.md, "Against Stable-Baselines3")."""
    configs = default_configs(algo)
    env_config = dict(configs['env_config'], kwargs=dict(configs['env_config']['kwargs'], render_enabled=False))
    result = train_in_process(env_config, configs['policy_config'], configs['trainer_config'], max_env_steps=15_000,
                              random_seed=0, target_mean_reward=60, target_window=10)
    report('{} reference configuration, sine data'.format(algo), result)
    assert result['target_reached_at'] is not None
    assert np.mean(result['episode_rewards'][-10:]) >= 60
