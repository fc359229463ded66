"""Candidate: tuned on DevStrat_Level (DevStrat_4_12's SMA gradients plus the log close, unscaled, as a seventh
channel) with observations standardised by running statistics, so that the seventh channel reads as the close's
distance from the mean level of the bars trained on, in their standard deviations.

DevStrat_Level was an experiment, not kept in the package; it was this subclass of gen4.DevStrat_4_12, run with
its module (level.py) on PYTHONPATH:

    class DevStrat_Level(DevStrat_4_12):
        params = dict(state_shape={'external': _box(-100, 100, (30, 1, 7)), 'internal': _box(-2, 2, (20, 1, 5)),
                                   'datetime': datetime_space(), 'metadata': metadata_space()},
                      state_ext_scale=np.append(np.linspace(3e3, 1e3, 6), 1.0))

        def get_external_state(self):
            x = self._windows(self.data.features, self.time_dim)
            level = np.log(self._window(self.data.close, self.time_dim))
            x = np.concatenate([tanh(gradient(x, axis=-1) * self.p.state_ext_scale[:6]), level[:, None]], axis=-1)
            return x[:, None, :]
"""
from btgym_aac.class_refs import ClassRef
env_config = {'kwargs': {'strategy': ClassRef('level', 'DevStrat_Level')}}
policy_config = {'kwargs': {'normalize_observations': True}}
