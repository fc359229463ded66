"""Candidate: fast preset, PPO with Stable-Baselines3's PPO defaults where ours has them: 10 epochs, minibatches of
about 64 frames (each worker's 160-frame batch in 3), learn rate 3e-4, clip 0.2, GAE lambda 0.95, no entropy
bonus, normalised advantages, ratio against the behaviour logits."""
trainer_config = {'kwargs': {'opt_learn_rate': 3e-4, 'num_epochs': 10, 'num_minibatches': 3,
                             'normalize_advantages': True, 'clip_epsilon': 0.2, 'behaviour_logits': True,
                             'model_gae_lambda': 0.95, 'model_beta': 0.0}}
