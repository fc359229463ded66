"""Backtrader strategies that produce BTgymEnv observations, rewards and episode ends."""
from btgym_aac.strategy.base import BTgymBaseStrategy, metadata_space
from btgym_aac.strategy.gen4 import (DevStrat_4_6, DevStrat_4_7, DevStrat_4_8, DevStrat_4_9, DevStrat_4_10,
                                     DevStrat_4_11, DevStrat_4_11_1, DevStrat_4_12)
from btgym_aac.strategy.multi_asset import MultiAssetSpreadStrategy, MultiAssetStrategy

__all__ = ['BTgymBaseStrategy', 'metadata_space', 'DevStrat_4_6', 'DevStrat_4_7', 'DevStrat_4_8', 'DevStrat_4_9',
           'DevStrat_4_10', 'DevStrat_4_11', 'DevStrat_4_11_1', 'DevStrat_4_12', 'MultiAssetSpreadStrategy',
           'MultiAssetStrategy']
