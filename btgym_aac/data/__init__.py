"""Data layer: reading OHLCV bars, the Domain -> Trial -> Episode sampling hierarchy and synthetic series."""
from btgym_aac.data.base import BTgymBaseData
from btgym_aac.data.casual import BTgymCasualDataDomain, BTgymCasualTrial
from btgym_aac.data.dataset import (BTgymDataset, BTgymDataset2, BTgymDataTrial, BTgymEpisode,
                                    BTgymRandomDataDomain, BTgymSimpleTrial)
from btgym_aac.data.errors import DataError
from btgym_aac.data.multi import BTgymMultiData
from btgym_aac.data.parsing import read_ohlcv
from btgym_aac.data.sampling_params import DataSampleConfig, EnvResetConfig
from btgym_aac.data.sequential import BTgymSequentialDataDomain
from btgym_aac.data.synthetic import (cointegration_spread, make_bent_sine_data, make_cointegrated_pair,
                                      make_correlated_walks, make_random_walk_data, make_sine_data, write_histdata_csv)

__all__ = [
    'BTgymBaseData', 'BTgymCasualDataDomain', 'BTgymCasualTrial', 'BTgymDataTrial', 'BTgymDataset', 'BTgymDataset2',
    'BTgymEpisode', 'BTgymMultiData', 'BTgymRandomDataDomain', 'BTgymSequentialDataDomain', 'BTgymSimpleTrial',
    'DataError', 'DataSampleConfig', 'EnvResetConfig', 'cointegration_spread', 'make_bent_sine_data',
    'make_cointegrated_pair', 'make_correlated_walks', 'make_random_walk_data', 'make_sine_data', 'read_ohlcv',
    'write_histdata_csv',
]
