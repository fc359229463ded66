"""Candidate: PPO with SB3's batches (as ppo_sb3_batches), the dense policy's heads reading the encoder's features
beside the LSTM's output (run on a build whose BaseAacPolicy did this unconditionally; `heads_read_features=True`
builds the same graph)."""
trainer_config = {'kwargs': {'rollout_length': 256, 'normalize_advantages': True, 'num_epochs': 10,
                             'num_minibatches': 32, 'behaviour_logits': True, 'clip_epsilon': 0.2,
                             'model_gae_lambda': 0.95, 'opt_learn_rate': 3e-4, 'model_beta': 1e-6}}
policy_config = {'kwargs': {'heads_read_features': True}}
