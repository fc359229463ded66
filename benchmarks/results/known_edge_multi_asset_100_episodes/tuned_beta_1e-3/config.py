"""Candidate: the tuned preset with an entropy weight of 0.001 (AacConfig's model_beta; tuned: 0.01)."""
trainer_config = {'kwargs': {'model_beta': 0.001}}
