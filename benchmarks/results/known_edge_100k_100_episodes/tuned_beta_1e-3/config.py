"""Candidate: the tuned preset with an entropy weight of 0.001 (model_beta; tuned: AacConfig's 0.01), on one asset."""
trainer_config = {'kwargs': {'model_beta': 0.001}}
