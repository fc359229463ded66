"""Candidate: the dense preset with advantages normalised per update, its heads reading the encoder's features beside
the LSTM's output (`heads_read_features`, as landed)."""
trainer_config = {'kwargs': {'normalize_advantages': True}}
policy_config = {'kwargs': {'heads_read_features': True}}
