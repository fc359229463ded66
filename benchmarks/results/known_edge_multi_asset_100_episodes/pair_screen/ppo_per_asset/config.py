"""Candidate: PPO on the dense preset, SB3-like updates: 4 epochs of 4 minibatches, behaviour logits, normalised advantages."""
trainer_config = {'kwargs': {'normalize_advantages': True, 'num_epochs': 4, 'num_minibatches': 4, 'behaviour_logits': True}}
