"""The tuned preset as a config file over `--preset dense` (how this run was made): DevStrat_4_12, the policy reading
the time of day and of the week, its heads reading the encoder's features beside the LSTM's output, advantages
normalised per update."""
import numpy as np
from btgym_aac.strategy import DevStrat_4_12
env_config = {'kwargs': {'strategy': DevStrat_4_12, 'state_ext_scale': np.linspace(3e3, 1e3, 6)}}
trainer_config = {'kwargs': {'normalize_advantages': True}}
policy_config = {'kwargs': {'datetime_features': True, 'heads_read_features': True}}
