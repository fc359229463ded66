"""Candidate: the dense preset on DevStrat_4_12 (SMA 8..256 and a datetime observation), the time not read."""
import numpy as np
from btgym_aac.strategy import DevStrat_4_12
env_config = {'kwargs': {'strategy': DevStrat_4_12, 'state_ext_scale': np.linspace(3e3, 1e3, 6)}}
