"""Research modules: strategies, experts, policies, losses and trainers built on the core library (`gps`: guided
policy search; `causal_conv`: causal-convolution strategies with wavelet features and encoders, multi-asset
`CausalConvStrategyMulti` included; `verbose_env_runner`: a thread-runner function that adds policy renderings
to episode summaries).
The DevStrat_4_x strategies are importable from here too, as from the original's `btgym.research`.

Names are imported lazily: importing the package imports neither TensorFlow nor matplotlib.
"""
from btgym_aac.class_refs import lazy_names

_PUBLIC = {'VerboseEnvRunnerFn': '{}.verbose_env_runner'.format(__name__)}
_PUBLIC.update((name, 'btgym_aac.strategy') for name in (
    'DevStrat_4_6', 'DevStrat_4_7', 'DevStrat_4_8', 'DevStrat_4_9', 'DevStrat_4_10', 'DevStrat_4_11',
    'DevStrat_4_11_1', 'DevStrat_4_12'))

__all__ = sorted(_PUBLIC)

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, globals())
