"""Actor-critic algorithms: trainers, policies, runners, rollouts and replay memory.

Names are imported lazily: `import btgym_aac.algorithms` does not import TensorFlow until a name is used.
"""
from btgym_aac.class_refs import lazy_names

_PUBLIC = {
    'BaseAAC': 'btgym_aac.algorithms.aac',
    'A3C': 'btgym_aac.algorithms.aac',
    'Unreal': 'btgym_aac.algorithms.aac',
    'PPO': 'btgym_aac.algorithms.aac',
    'AacConfig': 'btgym_aac.algorithms.config',
    'train_in_process': 'btgym_aac.algorithms.in_process',
    'Launcher': 'btgym_aac.distributed.launcher',
    'RunnerThread': 'btgym_aac.algorithms.acting',
    'BaseEnvRunnerFn': 'btgym_aac.algorithms.acting',
    'BaseSynchroRunner': 'btgym_aac.algorithms.acting',
    'VerboseSynchroRunner': 'btgym_aac.algorithms.acting',
    'AtariRescale42x42': 'btgym_aac.env.gym_wrappers',
    'TestModeEnv': 'btgym_aac.env.gym_wrappers',
    'BaseAacPolicy': 'btgym_aac.algorithms.policy',
    'Aac1dPolicy': 'btgym_aac.algorithms.policy',
    'StackedLstmPolicy': 'btgym_aac.algorithms.policy',
    'AacStackedRL2Policy': 'btgym_aac.algorithms.policy',
    'AacDensePolicy': 'btgym_aac.algorithms.policy',
    'Memory': 'btgym_aac.algorithms.common.memory',
    'Rollout': 'btgym_aac.algorithms.common.rollout',
}

__all__ = sorted(_PUBLIC)

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, globals())
