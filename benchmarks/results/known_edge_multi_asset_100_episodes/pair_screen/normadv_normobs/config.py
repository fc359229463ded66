"""Candidate: the dense preset with advantages normalised per update and observations standardised by running
statistics."""
trainer_config = {'kwargs': {'normalize_advantages': True}}
policy_config = {'kwargs': {'normalize_observations': True}}
