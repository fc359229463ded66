"""PPO (clipped surrogate, two epochs per batch) with the RL2 stacked-LSTM policy on the built-in sine data.

Run: python examples/ppo_sine.py
"""
import numpy as np

from btgym_aac import BTgymEnv
from btgym_aac.algorithms import PPO, AacStackedRL2Policy, Launcher
from btgym_aac.strategy import DevStrat_4_11

env_config = dict(class_ref=BTgymEnv, kwargs=dict(
    strategy=DevStrat_4_11, start_cash=2000, commission=0.0001, leverage=10.0, order_size=2000, drawdown_call=10,
    target_call=10, reward_scale=7, state_ext_scale=np.linspace(3e3, 1e3, 5),
    episode_duration={'days': 1, 'hours': 23, 'minutes': 40}, render_enabled=False))
cluster_config = dict(num_workers=2, num_ps=1, num_envs=1, log_dir='runs/ppo_sine')
policy_config = dict(class_ref=AacStackedRL2Policy, kwargs={'lstm_layers': (128, 128), 'lstm_2_init_period': 20})
trainer_config = dict(class_ref=PPO, kwargs=dict(opt_learn_rate=1e-4, model_beta=0.01, rollout_length=20,
                                                 time_flat=True, num_epochs=2, clip_epsilon=0.1,
                                                 pi_prime_update_period=1, episode_summary_freq=1))
launcher_config = dict(max_env_steps=30000, save_secs=120, root_random_seed=0)

if __name__ == '__main__':
    print(Launcher(env_config=env_config, cluster_config=cluster_config, policy_config=policy_config,
                   trainer_config=trainer_config, **launcher_config).run())
