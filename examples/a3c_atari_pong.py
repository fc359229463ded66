"""A3C on Atari Pong in test mode (needs the `atari` extra: pip install 'btgym-aac[atari]'); frames are rescaled
to 42x42 grey images as in the original.

Run: python examples/a3c_atari_pong.py
"""
from btgym_aac.algorithms import A3C, BaseAacPolicy, Launcher
from btgym_aac.env import TestModeEnv

env_config = dict(class_ref=TestModeEnv, kwargs={'env_id': 'ALE/Pong-v5'})
cluster_config = dict(num_workers=2, num_ps=1, num_envs=1, log_dir='runs/a3c_pong')
policy_config = dict(class_ref=BaseAacPolicy, kwargs={'lstm_layers': (256,)})
trainer_config = dict(class_ref=A3C, kwargs=dict(opt_learn_rate=1e-4, model_beta=0.01, rollout_length=20,
                                                 episode_summary_freq=1, env_render_freq=5))
launcher_config = dict(max_env_steps=2_000_000, save_secs=300, root_random_seed=0, test_mode=True)

if __name__ == '__main__':
    print(Launcher(env_config=env_config, cluster_config=cluster_config, policy_config=policy_config,
                   trainer_config=trainer_config, **launcher_config).run())
