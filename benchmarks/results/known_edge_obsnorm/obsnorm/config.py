"""Candidate: the fast preset (A3C) with observations normalised by running statistics."""
policy_config = {'kwargs': {'normalize_observations': True}}
