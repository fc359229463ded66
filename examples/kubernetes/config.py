"""Config of the TFJob example (tfjob.yaml): the reference configuration of `btgym-aac train` (DevStrat_4_11 on
the built-in data, the RL2 stacked-LSTM policy, A3C); only where the run writes and how long it trains are set
here. Every node gets the cluster and its role from the TF_CONFIG variable TFJob sets."""
cluster_config = {'log_dir': '/runs/btgym_aac', 'num_envs': 1}
launcher_config = {'max_env_steps': 2000000, 'save_secs': 300}
