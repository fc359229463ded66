"""The backtrader trading environment and the test-mode gymnasium wrappers; importing it registers the trading
envs' gymnasium ids (`btgym_aac.registration`)."""
from btgym_aac.env.base import BTgymEnv
from btgym_aac.env.gym_wrappers import AtariRescale42x42, TestModeEnv, make_test_env
from btgym_aac.env.multi_asset import MultiDiscreteEnv, PortfolioEnv
from btgym_aac.registration import register_envs

__all__ = ['BTgymEnv', 'MultiDiscreteEnv', 'PortfolioEnv', 'AtariRescale42x42', 'TestModeEnv', 'make_test_env']

register_envs()
