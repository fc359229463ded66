"""Candidate: the dense preset with advantages normalised per update, its heads reading the encoder's features beside
the LSTM's output (run on a build whose BaseAacPolicy did this unconditionally; `heads_read_features=True` builds the
same graph)."""
trainer_config = {'kwargs': {'normalize_advantages': True}}
policy_config = {'kwargs': {'heads_read_features': True}}
