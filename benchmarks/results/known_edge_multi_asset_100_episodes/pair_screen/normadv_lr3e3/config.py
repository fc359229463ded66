"""Candidate: the dense preset with advantages normalised per update and a held learn rate of 3e-3."""
trainer_config = {'kwargs': {'normalize_advantages': True, 'opt_learn_rate': 3e-3}}
