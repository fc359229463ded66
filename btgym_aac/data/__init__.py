"""Data layer: reading OHLCV bars, the Domain -> Trial -> Episode sampling hierarchy, synthetic series and markets
with a known edge."""
from btgym_aac.data.base import BTgymBaseData
from btgym_aac.data.causal import BTgymCausalDataDomain, BTgymCausalTrial
from btgym_aac.data.dataset import (BTgymDataset, BTgymDataset2, BTgymDataTrial, BTgymEpisode,
                                    BTgymRandomDataDomain, BTgymSimpleTrial)
from btgym_aac.data.errors import DataError
from btgym_aac.data.markets import (MarketSpec, make_intraday_pattern_data, make_mean_reversion_data,
                                    make_regime_switching_data, oracle_for, read_market_spec, write_market_csv)
from btgym_aac.data.multi import BTgymMultiData
from btgym_aac.data.parsing import read_ohlcv
from btgym_aac.data.sampling import DataSampleConfig, EnvResetConfig
from btgym_aac.data.sequential import BTgymSequentialDataDomain
from btgym_aac.data.synthetic import (cointegration_spread, make_bent_sine_data, make_cointegrated_pair,
                                      make_correlated_walks, make_random_walk_data, make_sine_data, write_histdata_csv)
from btgym_aac.class_refs import lazy_names

__all__ = [
    'BTgymBaseData', 'BTgymCausalDataDomain', 'BTgymCausalTrial', 'BTgymDataTrial', 'BTgymDataset', 'BTgymDataset2',
    'BTgymEpisode', 'BTgymMultiData', 'BTgymRandomDataDomain', 'BTgymSequentialDataDomain', 'BTgymSimpleTrial',
    'DataError', 'DataSampleConfig', 'EnvResetConfig', 'MarketSpec', 'cointegration_spread', 'make_bent_sine_data',
    'make_cointegrated_pair', 'make_correlated_walks', 'make_intraday_pattern_data', 'make_mean_reversion_data',
    'make_random_walk_data', 'make_regime_switching_data', 'make_sine_data', 'oracle_for', 'read_market_spec',
    'read_ohlcv', 'write_histdata_csv', 'write_market_csv',
]

_ORIGINAL_SPELLING = {name: 'btgym_aac.legacy.causal_names' for name in ('BTgymCasualDataDomain', 'BTgymCasualTrial')}
"""The original's names of the causal domain and trial (it spelled them "casual"), imported on first use."""
__all__ += sorted(_ORIGINAL_SPELLING)

__getattr__, __dir__ = lazy_names(__name__, _ORIGINAL_SPELLING, globals())
