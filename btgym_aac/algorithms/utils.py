"""The original's `algorithms.utils` import path: graph helpers (`placeholders`) and batch helpers (`batches`)."""
from btgym_aac.algorithms.batches import (MASK_KEY, ONE_HOT_KEYS, as_array, batch_pad, batch_stack, is_subdict,
                                          map_nested, same_tuple_type)
from btgym_aac.algorithms.placeholders import (LSTMStateTuple, check_variable_pairing, feed_dict_from_nested,
                                               feed_dict_rnn_context, nested_placeholders, rnn_placeholders,
                                               structure_differences)

__all__ = ['MASK_KEY', 'ONE_HOT_KEYS', 'LSTMStateTuple', 'as_array', 'batch_pad', 'batch_stack',
           'check_variable_pairing', 'feed_dict_from_nested', 'feed_dict_rnn_context', 'is_subdict', 'map_nested',
           'nested_placeholders', 'rnn_placeholders', 'same_tuple_type', 'structure_differences']
