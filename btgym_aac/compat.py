"""The one module that imports TensorFlow.

TF1 graph semantics (placeholders, sessions, ``tf.train.Server``, legacy RNN cells and ``tf.compat.v1.layers``)
exist in TensorFlow 2.x only through ``tf.compat.v1`` with legacy Keras (``tf-keras``) selected by
``TF_USE_LEGACY_KERAS=1`` *before* tensorflow is first imported. This module sets it, imports TensorFlow,
disables v2 behaviour, keeps TensorFlow's start-up notices and the legacy RNN cells' deprecation warnings out of
the output, and exposes ``tf`` (= ``tf.compat.v1``) and ``CallableOptions`` (the protocol buffer behind
``Session.make_callable``, which ``tf.compat.v1`` does not export).

Usage::

    from btgym_aac.compat import tf
"""
import contextlib
import os
import sys
import tempfile
import warnings

_LEGACY_KERAS_ON = ('1', 'true', 'True', 'TRUE')


def _check_legacy_keras_possible():
    """Raises ImportError when tensorflow was imported before legacy Keras could be selected."""
    if 'tensorflow' in sys.modules and os.environ.get('TF_USE_LEGACY_KERAS') not in _LEGACY_KERAS_ON:
        raise ImportError(
            'tensorflow was imported before btgym_aac could select legacy Keras (tf-keras), which its TF1-style '
            'graphs need. Fix, either: put `import btgym_aac.compat` above the first `import tensorflow` (or '
            'above any import that imports tensorflow) in your script; or start Python with the environment '
            'variable set: `TF_USE_LEGACY_KERAS=1 python your_script.py`. Either makes tf.keras Keras 2 and turns '
            'TF2 behaviour off for the whole process (README, "In one process with other libraries").'
        )


# Start-up notices TensorFlow writes to stderr from C++ (ignoring TF_CPP_MIN_LOG_LEVEL): once per import in
# every process of a cluster, they would bury the launcher's output.
_START_UP_NOTICES = ('All log messages before absl::InitializeLog()', 'oneDNN custom operations are on',
                     'Could not find cuda drivers', 'failed call to cuInit')


def without_start_up_notices(text):
    """`text` without the lines that carry one of the start-up notices."""
    return ''.join(line for line in text.splitlines(keepends=True)
                   if not any(notice in line for notice in _START_UP_NOTICES))


@contextlib.contextmanager
def _start_up_notices_filtered():
    """Captures stderr (file descriptor 2) for the block, then passes on every captured line but the start-up
    notices (nothing is captured where stderr cannot be duplicated)."""
    sys.stderr.flush()
    try:
        saved_stderr = os.dup(2)
    except OSError:
        yield
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved_stderr, 2)
            os.close(saved_stderr)
            captured.seek(0)
            sys.stderr.write(without_start_up_notices(captured.read().decode(errors='replace')))
            sys.stderr.flush()


def _import_tensorflow_quietly():
    """Imports tensorflow with its start-up notices filtered out of stderr.

    Returns:
        the tensorflow module.
    """
    with _start_up_notices_filtered():
        import tensorflow
    return tensorflow


_devices_initialised = False


def initialise_devices():
    """Has TensorFlow find this process's devices (where a CUDA driver exists, this initialises it), with its
    start-up notices filtered out of stderr; once per process. Importing this module does it, except in a
    launcher's forkserver (`distributed.task_preload`): a CUDA driver initialised before a fork is unusable in the
    forked process, so each task process calls this itself."""
    global _devices_initialised
    if not _devices_initialised:
        with _start_up_notices_filtered():
            _tf2.config.list_physical_devices()
        _devices_initialised = True


_check_legacy_keras_possible()
os.environ['TF_USE_LEGACY_KERAS'] = '1'
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
warnings.filterwarnings('ignore', message=r'`tf\.nn\.rnn_cell\.\w+` is deprecated', category=UserWarning)

_tf2 = _import_tensorflow_quietly()
if not getattr(sys.modules.get('btgym_aac.distributed.task_preload'), 'preloading', False):
    initialise_devices()
from tensorflow.core.protobuf.config_pb2 import CallableOptions  # noqa: E402

_tf2.get_logger().setLevel('ERROR')
tf = _tf2.compat.v1
tf.disable_v2_behavior()

__all__ = ['CallableOptions', 'initialise_devices', 'tf']
