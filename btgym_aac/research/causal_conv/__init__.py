"""Causal convolution research: 128-bar strategies with moving-average, sliding-candle and wavelet features
(`strategy`, `wavelets`), tree-shaped causal convolution encoders with temporal attention (`networks`),
WaveNet-style dilated convolution helpers (`layers`) and `CausalConvPolicy_0_0` (`policy`).

Names are imported lazily: the strategies and the wavelet transform do not import TensorFlow.
"""
from btgym_aac.class_refs import lazy_names

_NAMES_BY_MODULE = {
    'wavelets': ('ricker', 'cwt'),
    'strategy': ('MaxPool', 'MinPool', 'CausalConvStrategy', 'CausalConvStrategy_0', 'CausalConvStrategy_1',
                 'CausalConvStrategyMulti', 'midpoint_cwt'),
    'networks': ('conv_1d_causal_encoder', 'attention_layer', 'conv_1d_causal_attention_encoder'),
    'layers': ('time_to_batch', 'batch_to_time', 'dilated_conv1d'),
    'policy': ('CausalConvPolicy_0_0',),
}
_PUBLIC = {name: '{}.{}'.format(__name__, module) for module, names in _NAMES_BY_MODULE.items() for name in names}

__all__ = sorted(_PUBLIC)

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, globals())
