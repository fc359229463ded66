"""Candidate: the dense preset, its heads reading the encoder's features beside the LSTM's output."""
policy_config = {'kwargs': {'heads_read_features': True}}
