"""Candidate: PPO with SB3's batches (as ppo_sb3_batches) on the dense policy with observations standardised by
running statistics."""
trainer_config = {'kwargs': {'rollout_length': 256, 'normalize_advantages': True, 'num_epochs': 10,
                             'num_minibatches': 32, 'behaviour_logits': True, 'clip_epsilon': 0.2,
                             'model_gae_lambda': 0.95, 'opt_learn_rate': 3e-4, 'model_beta': 1e-6}}
policy_config = {'kwargs': {'normalize_observations': True}}
