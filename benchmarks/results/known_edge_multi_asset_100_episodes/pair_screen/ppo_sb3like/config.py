"""Candidate: PPO on the dense preset with SB3's PPO settings where this package has them: 10 epochs of 8 minibatches,
clip 0.2, GAE lambda 0.95, learn rate 3e-4, no entropy bonus (1e-6), normalised advantages, behaviour logits."""
trainer_config = {'kwargs': {'normalize_advantages': True, 'num_epochs': 10, 'num_minibatches': 8,
                             'behaviour_logits': True, 'clip_epsilon': 0.2, 'model_gae_lambda': 0.95,
                             'opt_learn_rate': 3e-4, 'model_beta': 1e-6}}
