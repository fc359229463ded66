"""The one module that imports TensorFlow.

TF1 graph semantics (placeholders, sessions, ``tf.train.Server``, legacy RNN cells and ``tf.compat.v1.layers``)
exist in TensorFlow 2.x only through ``tf.compat.v1`` with legacy Keras (``tf-keras``) selected by
``TF_USE_LEGACY_KERAS=1`` *before* tensorflow is first imported. This module sets it, imports TensorFlow,
disables v2 behaviour and exposes ``tf`` (= ``tf.compat.v1``) and ``CallableOptions`` (the protocol buffer behind
``Session.make_callable``, which ``tf.compat.v1`` does not export).

Usage::

    from btgym_aac.compat import tf
"""
import os
import sys

_LEGACY_KERAS_ON = ('1', 'true', 'True', 'TRUE')


def _check_legacy_keras_possible():
    """Raises ImportError when tensorflow was imported before legacy Keras could be selected."""
    if 'tensorflow' in sys.modules and os.environ.get('TF_USE_LEGACY_KERAS') not in _LEGACY_KERAS_ON:
        raise ImportError(
            'tensorflow was imported before btgym_aac could select legacy Keras. '
            'Import btgym_aac.compat (or any btgym_aac trainer module) before tensorflow, '
            'or set the environment variable TF_USE_LEGACY_KERAS=1 before starting Python.'
        )


_check_legacy_keras_possible()
os.environ['TF_USE_LEGACY_KERAS'] = '1'
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import tensorflow as _tf2  # noqa: E402
from tensorflow.core.protobuf.config_pb2 import CallableOptions  # noqa: E402

_tf2.get_logger().setLevel('ERROR')
tf = _tf2.compat.v1
tf.disable_v2_behavior()

__all__ = ['CallableOptions', 'tf']
