"""Actor-critic policy estimators: `BaseAacPolicy`, `Aac1dPolicy` (conv-LSTM), `StackedLstmPolicy`,
`AacStackedRL2Policy` (two LSTMs) and `AacDensePolicy` (vector observations)."""
from btgym_aac.algorithms.policy.base import Aac1dPolicy, BaseAacPolicy
from btgym_aac.algorithms.policy.dense import AacDensePolicy
from btgym_aac.algorithms.policy.stacked_lstm import AacStackedRL2Policy, StackedLstmPolicy

__all__ = ['Aac1dPolicy', 'AacDensePolicy', 'AacStackedRL2Policy', 'BaseAacPolicy', 'StackedLstmPolicy']
