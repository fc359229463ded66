"""The backtrader trading environment and the test-mode gymnasium wrappers."""
from btgym_aac.env.base import BTgymEnv
from btgym_aac.env.gym_wrappers import AtariRescale42x42, TestModeEnv, make_test_env

__all__ = ['BTgymEnv', 'AtariRescale42x42', 'TestModeEnv', 'make_test_env']
