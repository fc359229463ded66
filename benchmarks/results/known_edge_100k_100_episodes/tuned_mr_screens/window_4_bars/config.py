"""Candidate: tuned observing the last 4 bars of DevStrat_4_12's SMA gradients (30 in tuned).

DevStrat_4_12_T4 was an experiment, not kept in the package; it was this subclass of gen4.DevStrat_4_12:

    class DevStrat_4_12_T4(DevStrat_4_12):
        time_dim = 4
        params = dict(state_shape={'external': _box(-100, 100, (4, 1, 6)), 'internal': _box(-2, 2, (20, 1, 5)),
                                   'datetime': datetime_space(), 'metadata': metadata_space()})
"""
from btgym_aac.class_refs import ClassRef
env_config = {'kwargs': {'strategy': ClassRef('btgym_aac.strategy.gen4', 'DevStrat_4_12_T4')}}
