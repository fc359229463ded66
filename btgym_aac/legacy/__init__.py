"""What this package keeps of the original btgym's API, in one place.

- `module_paths`: the original's module paths (`btgym_aac.research.strategy_gen_4`, `btgym_aac.datafeed`,
  `btgym_aac.algorithms.runner.synchro`, ...), resolved to this package's modules (installed at `import btgym_aac`).
  This package's own earlier module paths are not kept.
- `env_api`: the original env's `params` dict of dicts, its list-like step info, its data master settings.
- `data_master`: the original's data master env, sharing its dataset with `data_master=False` envs.
- `trainer_arguments`: the original trainers' arguments these trainers ignore, and its hooks they refuse.
- `causal_names`: the original's names spelled "casual" (`BTgymCasualDataDomain`, `research.casual_conv`,
  `CasualConvStrategy_0`, ...), the same objects as this package's "causal" names, and their module paths.

The rest of the package reaches it at two seams only: `BTgymEnv` (the env's original API) and `BaseAAC` (the
original's trainer arguments); the public lazy name tables of `btgym_aac` and `btgym_aac.data` name
`causal_names` as the module of the old "casual" names. Like `btgym_aac` itself this package imports only the
standard library.
"""
from btgym_aac.legacy import module_paths

__all__ = ['install']


def install():
    """Makes the original's module paths importable."""
    module_paths.install()
