"""The backtrader trading environment and the test-mode gymnasium wrappers.

Importing it registers the trading envs' gymnasium ids (`btgym_aac.env.registration`) and nothing more: the public
names are imported on first use, so registering imports neither backtrader nor TensorFlow.
"""
from btgym_aac.env.registration import register_envs
from btgym_aac.class_refs import lazy_names

_PUBLIC = {
    'BTgymEnv': 'btgym_aac.env.base',
    'MultiDiscreteEnv': 'btgym_aac.env.multi_asset',
    'PortfolioEnv': 'btgym_aac.env.multi_asset',
    'AtariRescale42x42': 'btgym_aac.env.gym_wrappers',
    'TestModeEnv': 'btgym_aac.env.gym_wrappers',
    'make_test_env': 'btgym_aac.env.gym_wrappers',
}

__all__ = ['BTgymEnv', 'MultiDiscreteEnv', 'PortfolioEnv', 'AtariRescale42x42', 'TestModeEnv', 'make_test_env']

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, globals())

register_envs()
