"""Candidate: tuned on DevStrat_Deviation (close against each SMA, raw broker stats with the position's side).

DevStrat_Deviation was an experiment, not kept in the package; it was this subclass of gen4.DevStrat_4_12:

    class DevStrat_Deviation(DevStrat_4_12):
        internal_stats = ('value', 'unrealized_pnl', 'realized_pnl', 'cash', 'exposure', 'pos_direction')
        params = dict(state_shape={'external': _box(-100, 100, (30, 1, 6)), 'internal': _box(-2, 2, (20, 1, 6)),
                                   'datetime': datetime_space(), 'metadata': metadata_space()},
                      state_ext_scale=1000.0)

        def get_external_state(self):
            close = np.log(self._window(self.data.close, self.time_dim))[:, None]
            averages = np.log(self._windows(self.data.features, self.time_dim))
            return tanh(self.p.state_ext_scale * (close - averages))[:, None, :]

        def get_internal_state(self):
            return tanh(self.broker_window(self.internal_stats))[:, None, :]
"""
from btgym_aac.class_refs import ClassRef
env_config = {'kwargs': {'strategy': ClassRef('btgym_aac.strategy.gen4', 'DevStrat_Deviation')}}
