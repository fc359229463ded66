"""Candidate: the tuned preset with every train step's batch split into 8 shuffled minibatches, an update each
(num_minibatches; tuned: 1), one pass: eight times the updates per env step, no frame used twice."""
trainer_config = {'kwargs': {'num_minibatches': 8}}
