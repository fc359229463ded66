"""The backtrader trading environment."""
from btgym_aac.env.base import BTgymEnv

__all__ = ['BTgymEnv']
