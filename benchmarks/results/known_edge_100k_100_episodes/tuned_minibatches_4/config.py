"""Candidate: the tuned preset with every train step's batch split into 4 shuffled minibatches, an update each
(num_minibatches; tuned: 1), one pass: four times the updates per env step, no frame used twice."""
trainer_config = {'kwargs': {'num_minibatches': 4}}
