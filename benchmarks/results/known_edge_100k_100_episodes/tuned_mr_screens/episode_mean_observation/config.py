"""Candidate: tuned on DevStrat_Anchored (DevStrat_4_12's SMA gradients plus the close's log deviation from the
mean close of the episode's bars so far, warm-up included).

DevStrat_Anchored was an experiment, not kept in the package; it was this subclass of gen4.DevStrat_4_12, run
with its module (anchored.py) on PYTHONPATH:

    class RunningMean(bt.Indicator):
        lines = ('mean',)

        def __init__(self):
            self.total, self.count = 0.0, 0

        def next(self):
            self.total += self.data[0]
            self.count += 1
            self.lines.mean[0] = self.total / self.count

    class DevStrat_Anchored(DevStrat_4_12):
        params = dict(state_shape={'external': _box(-100, 100, (30, 1, 7)), 'internal': _box(-2, 2, (20, 1, 5)),
                                   'datetime': datetime_space(), 'metadata': metadata_space()},
                      state_ext_scale=np.append(np.linspace(3e3, 1e3, 6), 5e2))

        def set_datalines(self):
            super().set_datalines()
            self.data.anchored = RunningMean(self.datas[0].close)

        def get_external_state(self):
            x = self._windows(self.data.features, self.time_dim)
            close = np.log(self._window(self.data.close, self.time_dim))
            mean = np.log(self._window(self.data.anchored, self.time_dim))
            x = np.concatenate([gradient(x, axis=-1), (close - mean)[:, None]], axis=-1)
            return tanh(x * self.p.state_ext_scale)[:, None, :]
"""
from btgym_aac.class_refs import ClassRef
env_config = {'kwargs': {'strategy': ClassRef('anchored', 'DevStrat_Anchored')}}
