"""Candidate: the dense preset on DevStrat_4_12 reading the time of day and week, its heads reading the encoder's
features beside the LSTM's output (heads_read_features)."""
import numpy as np
from btgym_aac.strategy import DevStrat_4_12
env_config = {'kwargs': {'strategy': DevStrat_4_12, 'state_ext_scale': np.linspace(3e3, 1e3, 6)}}
policy_config = {'kwargs': {'datetime_features': True, 'heads_read_features': True}}
