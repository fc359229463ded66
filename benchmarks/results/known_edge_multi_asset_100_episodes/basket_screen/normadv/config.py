"""Candidate: the dense preset with advantages normalised per update."""
trainer_config = {'kwargs': {'normalize_advantages': True}}
