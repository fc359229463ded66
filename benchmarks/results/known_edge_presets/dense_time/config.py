"""Candidate: the dense preset on DevStrat_4_12, its policy reading the time of day and week (datetime_features)."""
import numpy as np
from btgym_aac.strategy import DevStrat_4_12
env_config = {'kwargs': {'strategy': DevStrat_4_12, 'state_ext_scale': np.linspace(3e3, 1e3, 6)}}
policy_config = {'kwargs': {'datetime_features': True}}
