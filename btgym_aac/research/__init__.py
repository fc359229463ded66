"""Research modules: strategies, experts, policies, losses and trainers built on the core library (`gps`: guided
policy search; `verbose_env_runner`: a thread-runner function that adds policy renderings to episode summaries).

Names are imported lazily: importing the package imports neither TensorFlow nor matplotlib.
"""
from btgym_aac.lazy import lazy_names

_PUBLIC = {'VerboseEnvRunnerFn': '{}.verbose_env_runner'.format(__name__)}

__all__ = sorted(_PUBLIC)

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, globals())
