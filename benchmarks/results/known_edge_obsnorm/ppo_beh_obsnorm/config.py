"""Candidate: fast preset, PPO against the behaviour logits, 4 epochs of 4 minibatches, normalised advantages,
lr 3e-4, clip 0.2, observations normalised by running statistics."""
trainer_config = {'kwargs': {'opt_learn_rate': 3e-4, 'num_epochs': 4, 'num_minibatches': 4,
                             'normalize_advantages': True, 'clip_epsilon': 0.2, 'behaviour_logits': True}}
policy_config = {'kwargs': {'normalize_observations': True}}
