"""Candidate: the tuned preset with two passes (num_epochs) of 4 shuffled minibatches (num_minibatches) over every
train step's batch: eight updates per train step, every frame used twice."""
trainer_config = {'kwargs': {'num_epochs': 2, 'num_minibatches': 4}}
