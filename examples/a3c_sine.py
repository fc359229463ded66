"""A3C with a one-LSTM conv policy on DevStrat_4_11 and the built-in sine data, two workers.

Run: python examples/a3c_sine.py   (or: btgym-aac train examples/a3c_sine.py --max-steps 50000)
"""
import numpy as np

from btgym_aac import BTgymEnv
from btgym_aac.algorithms import A3C, Aac1dPolicy, Launcher
from btgym_aac.strategy import DevStrat_4_11

env_config = dict(class_ref=BTgymEnv, kwargs=dict(
    strategy=DevStrat_4_11, start_cash=2000, commission=0.0001, leverage=10.0, order_size=2000, drawdown_call=10,
    target_call=10, reward_scale=7, state_ext_scale=np.linspace(3e3, 1e3, 5),
    episode_duration={'days': 1, 'hours': 23, 'minutes': 40}, render_modes=['episode', 'human', 'external']))
cluster_config = dict(num_workers=2, num_ps=1, num_envs=1, log_dir='runs/a3c_sine')
policy_config = dict(class_ref=Aac1dPolicy, kwargs={'lstm_layers': (256,), 'aux_estimate': False})
trainer_config = dict(class_ref=A3C, kwargs=dict(opt_learn_rate=1e-4, model_beta=0.05, rollout_length=20,
                                                 time_flat=True, episode_summary_freq=1))
launcher_config = dict(max_env_steps=30000, save_secs=120, root_random_seed=0)

if __name__ == '__main__':
    print(Launcher(env_config=env_config, cluster_config=cluster_config, policy_config=policy_config,
                   trainer_config=trainer_config, **launcher_config).run())
