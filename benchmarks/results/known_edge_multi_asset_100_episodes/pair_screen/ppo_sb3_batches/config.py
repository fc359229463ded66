"""Candidate: PPO on the dense preset with SB3's PPO batches: 8 envs x 256 steps = 2,048 frames per train step, 10 epochs
of 32 minibatches (64 frames), clip 0.2, GAE lambda 0.95, learn rate 3e-4, no entropy bonus (1e-6), normalised
advantages, behaviour logits."""
trainer_config = {'kwargs': {'rollout_length': 256, 'normalize_advantages': True, 'num_epochs': 10,
                             'num_minibatches': 32, 'behaviour_logits': True, 'clip_epsilon': 0.2,
                             'model_gae_lambda': 0.95, 'opt_learn_rate': 3e-4, 'model_beta': 1e-6}}
