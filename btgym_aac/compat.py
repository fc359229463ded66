"""The one module that imports TensorFlow.

TF1 graph semantics (placeholders, sessions, ``tf.train.Server``) exist in TensorFlow 2.x through ``tf.compat.v1``.
This module imports TensorFlow, disables v2 behaviour for the process (the trainers, policies and cluster tasks
build their ops in TF1's default graph with v1 semantics; with v2 behaviour on they fail), keeps TensorFlow's
start-up notices out of the output, and
exposes ``tf`` (``tf.compat.v1`` as this package shows it) and ``CallableOptions`` (the protocol buffer behind
``Session.make_callable``, which ``tf.compat.v1`` does not export).

No Keras is needed: the package's graphs use TensorFlow's core ops only, and its own LSTM cells. The cell names
that TF1 configs write resolve to those cells through ``tf``: ``tf.nn.rnn_cell.BasicLSTMCell``, ``LSTMCell``,
``MultiRNNCell``, ``LSTMStateTuple`` and the original's ``tf.contrib.rnn.LayerNormBasicLSTMCell`` (also under
``tf.nn.rnn_cell``) and ``tf.contrib.layers.layer_norm`` (see `LEGACY_NAMES`). Everything else is
``tensorflow.compat.v1``'s.

Usage::

    from btgym_aac.compat import tf
"""
import contextlib
import importlib
import os
import re
import sys
import tempfile

# Start-up notices TensorFlow writes to stderr from C++ (ignoring TF_CPP_MIN_LOG_LEVEL): once per import in
# every process of a cluster, they would bury the launcher's output.
_START_UP_NOTICES = ('All log messages before absl::InitializeLog()', 'oneDNN custom operations are on',
                     'Could not find cuda drivers', 'failed call to cuInit', 'Unable to register cuFFT factory',
                     'Unable to register cuDNN factory', 'Unable to register cuBLAS factory')


# TensorFlow 2.22 follows a failed cuInit with the C++ source locations that raised it.
_SOURCE_TRACE = re.compile(r'^(=== Source Location Trace: ===|\s*external/\S+\.(cc|h):\d+)\s*$')


def without_start_up_notices(text):
    """`text` without the lines that carry one of the start-up notices, or the source trace of one."""
    return ''.join(line for line in text.splitlines(keepends=True)
                   if not any(notice in line for notice in _START_UP_NOTICES) and not _SOURCE_TRACE.match(line))


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
    launcher's forkserver (`distributed.tasks.prepare_forkserver`): a CUDA driver initialised before a fork is
    unusable in the forked process, so each task process calls this itself."""
    global _devices_initialised
    if not _devices_initialised:
        with _start_up_notices_filtered():
            _tf2.config.list_physical_devices()
        _devices_initialised = True


os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

_tf2 = _import_tensorflow_quietly()
if not getattr(sys.modules.get('btgym_aac.distributed.tasks'), 'preloading', False):
    initialise_devices()
from tensorflow.core.protobuf.config_pb2 import CallableOptions  # noqa: E402

_tf2.get_logger().setLevel('ERROR')
_tf2.compat.v1.disable_v2_behavior()

_CELLS = 'btgym_aac.algorithms.nn.rnn'
_LAYER_NORM = 'btgym_aac.algorithms.nn.layer_norm'
_RNN_CELL_NAMES = {'BasicLSTMCell': (_CELLS, 'BasicLSTMCell'), 'LSTMCell': (_CELLS, 'LSTMCell'),
                   'MultiRNNCell': (_CELLS, 'StackedCells'),
                   'LSTMStateTuple': ('btgym_aac.algorithms.common.placeholders', 'LSTMStateTuple'),
                   'LayerNormBasicLSTMCell': (_LAYER_NORM, 'LayerNormBasicLSTMCell')}
LEGACY_NAMES = {'nn.rnn_cell': _RNN_CELL_NAMES, 'contrib.rnn': _RNN_CELL_NAMES,
                'contrib.layers': {'layer_norm': (_LAYER_NORM, 'layer_norm')}}
"""The TF1 names `tf` resolves to this package's objects: {'part.of.tf': {name: (module, attribute)}}."""


class TensorFlowNames:
    """A TensorFlow module as this package shows it: the names of `LEGACY_NAMES` under `path` (imported on first
    use), then the module's own (none where `module` is None: TensorFlow 2 has no `tf.contrib`, and its
    `tf.nn.rnn_cell` needs legacy Keras).

    Args:
        path: the dotted path under `tf` ('' for `tf` itself).
        module: the TensorFlow module it shows, or None.
    """

    def __init__(self, path, module):
        self._path = path
        self._module = module
        self._names = LEGACY_NAMES.get(path, {})
        prefix = path + '.' if path else ''
        self._parts = sorted({key[len(prefix):].split('.')[0] for key in LEGACY_NAMES if key.startswith(prefix)})

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        if name in self._names:
            module, attribute = self._names[name]
            return getattr(importlib.import_module(module), attribute)
        if name in self._parts:
            path = '{}.{}'.format(self._path, name) if self._path else name
            shown = None if path in LEGACY_NAMES or self._module is None else getattr(self._module, name, None)
            part = TensorFlowNames(path, shown)  # (TensorFlow's own `rnn_cell` needs legacy Keras: not shown)
            setattr(self, name, part)
            return part
        if self._module is None:
            raise AttributeError('tf.{} has no {!r}: btgym_aac provides only {} there (TensorFlow 2 has no '
                                 'tf.contrib; its tf.nn.rnn_cell needs legacy Keras)'.format(
                                     self._path, name, ', '.join(sorted(self._names) + self._parts)))
        return getattr(self._module, name)

    def __dir__(self):
        return sorted(set(dir(self._module) if self._module is not None else ()) | set(self._names)
                      | set(self._parts))

    def __repr__(self):
        return '<tf{} of btgym_aac.compat>'.format('.' + self._path if self._path else '')


tf = TensorFlowNames('', _tf2.compat.v1)

__all__ = ['CallableOptions', 'LEGACY_NAMES', 'TensorFlowNames', 'initialise_devices', 'tf']
