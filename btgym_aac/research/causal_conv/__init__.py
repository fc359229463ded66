"""Causal convolution research: 128-bar strategies with moving-average, sliding-candle and wavelet features
(`strategy`, `wavelets`), tree-shaped causal convolution encoders with temporal attention (`networks`),
WaveNet-style dilated convolution helpers (`layers`) and `CasualConvPolicy_0_0` (`policy`).

Names are imported lazily: the strategies and the wavelet transform do not import TensorFlow.
"""
from btgym_aac.lazy import lazy_names

_NAMES_BY_MODULE = {
    'wavelets': ('ricker', 'cwt'),
    'strategy': ('MaxPool', 'MinPool', 'CasualConvStrategy', 'CasualConvStrategy_0', 'CasualConvStrategy_1',
                 'CasualConvStrategyMulti', 'midpoint_cwt'),
    'networks': ('conv_1d_casual_encoder', 'attention_layer', 'conv_1d_casual_attention_encoder'),
    'layers': ('time_to_batch', 'batch_to_time', 'dilated_conv1d'),
    'policy': ('CasualConvPolicy_0_0',),
}
_PUBLIC = {name: '{}.{}'.format(__name__, module) for module, names in _NAMES_BY_MODULE.items() for name in names}

__all__ = sorted(_PUBLIC)

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, globals())
