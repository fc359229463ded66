"""The one-step acting graph of a restored policy, frozen (its variables made constants), and written as a TensorFlow
SavedModel and as ONNX.

The frozen graph takes one observation (batch 1, one step): an input per observation leaf the policy reads
(`observation/<key>[/<subkey>]`), the recurrent state (`state_in/<i>`, in the policy's context flattening order),
the last action's code (`last_action`) and the last reward (`last_reward`); it returns `logits`, `value` and the
next state (`state_out/<i>`). The policy's batch size, sequence length and training flag are constants (1, [1],
False). Inputs the outputs do not depend on (e.g. RL² metadata, read only between episodes) are left out.
"""
import collections

import numpy as np

from btgym_aac.algorithms.common.session_config import session_config
from btgym_aac.compat import tf
from btgym_aac.deploy.describe import observation_leaves

SIGNATURE_KEY = 'serving_default'
SERVING_TAG = 'serve'
ONNX_OPSET = 17

FrozenPolicy = collections.namedtuple('FrozenPolicy', ['graph_def', 'inputs', 'outputs'])
"""The frozen graph and its `inputs` / `outputs`: lists of dicts {'name', 'tensor', 'shape', 'dtype'} (logical name,
tensor name in the graph, shape with batch 1, numpy dtype name)."""


def _logical_inputs(policy):
    """{logical name: placeholder of the policy's on-policy graph}."""
    inputs = observation_leaves(policy.on_state_in)
    inputs.update(('state_in/{}'.format(index), placeholder)
                  for index, placeholder in enumerate(policy.on_lstm_state_pl_flatten))
    inputs.update(last_action=policy.on_last_a_in, last_reward=policy.on_last_reward_in)
    return inputs


def _logical_outputs(policy):
    """{logical name: tensor} of the acting outputs."""
    outputs = {'logits': policy.on_logits, 'value': policy.on_vf}
    outputs.update(('state_out/{}'.format(index), tensor)
                   for index, tensor in enumerate(tf.nest.flatten(policy.on_lstm_state_out)))
    return outputs


def _spec(name, tensor, shape=None):
    return {'name': name, 'tensor': tensor.name, 'shape': tensor.get_shape().as_list() if shape is None else shape,
            'dtype': tensor.dtype.as_numpy_dtype().dtype.name}


def freeze_acting_graph(policy, session):
    """Freezes the acting step of a built and restored `policy` (see the module docstring).

    Args:
        policy: a `BaseAacPolicy` (or any policy with its `on_*` tensors) in `session`'s graph.
        session: the session holding its restored variables.

    Returns:
        FrozenPolicy.
    """
    outputs = _logical_outputs(policy)
    frozen = tf.graph_util.convert_variables_to_constants(
        session, session.graph.as_graph_def(), [tensor.op.name for tensor in outputs.values()])
    frozen_nodes = {node.name for node in frozen.node}
    graph = tf.Graph()
    with graph.as_default():
        input_map, placeholders = {}, {}
        for name, tensor in _logical_inputs(policy).items():
            if tensor.op.name in frozen_nodes:
                shape = [1] + tensor.get_shape().as_list()[1:]
                placeholders[name] = input_map[tensor.name] = tf.placeholder(tensor.dtype, shape, name=name)
        fixed = {policy.on_batch_size: 1, policy.on_time_length: [1], policy.train_phase: False}
        input_map.update((tensor.name, tf.constant(value, dtype=tensor.dtype))
                         for tensor, value in fixed.items() if tensor.op.name in frozen_nodes)
        returned = tf.import_graph_def(frozen, input_map=input_map, name='policy',
                                       return_elements=[tensor.name for tensor in outputs.values()])
        named = {name: tf.identity(tensor, name=name) for name, tensor in zip(outputs, returned)}
    graph_def = tf.graph_util.extract_sub_graph(graph.as_graph_def(), [tensor.op.name for tensor in named.values()])
    used = {node.name for node in graph_def.node}
    inputs = [_spec(name, tensor) for name, tensor in placeholders.items() if tensor.op.name in used]
    outputs = [_spec(name, tensor, shape=[]) for name, tensor in named.items()]
    on_zeros = run_frozen(FrozenPolicy(graph_def, inputs, outputs),
                          {spec['name']: np.zeros(spec['shape'], spec['dtype']) for spec in inputs})
    for spec in outputs:  # the shapes of one step, batch 1 (some are unknown to the graph)
        spec['shape'] = list(on_zeros[spec['name']].shape)
    return FrozenPolicy(graph_def, inputs, outputs)


def write_saved_model(frozen, path):
    """Writes the frozen graph as a SavedModel (tag 'serve', signature 'serving_default' keyed by logical names)."""
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(frozen.graph_def, name='')
        signature = tf.saved_model.signature_def_utils.predict_signature_def(
            inputs={spec['name']: graph.get_tensor_by_name(spec['tensor']) for spec in frozen.inputs},
            outputs={spec['name']: graph.get_tensor_by_name(spec['tensor']) for spec in frozen.outputs})
        with tf.Session(graph=graph, config=session_config()) as session:
            builder = tf.saved_model.builder.SavedModelBuilder(path)
            builder.add_meta_graph_and_variables(session, [SERVING_TAG], signature_def_map={SIGNATURE_KEY: signature})
            builder.save()


def write_onnx(frozen, path):
    """Converts the frozen graph to ONNX with tf2onnx and writes it to `path`.

    Raises:
        ImportError: onnx cannot be imported beside this TensorFlow (naming the fix).
    """
    try:
        import tf2onnx
    except AttributeError as error:  # onnx >= 1.18 reads ml_dtypes' float4 types, which ml_dtypes < 0.5 lacks
        raise ImportError('the ONNX export cannot import onnx ({}): onnx 1.18 and later need ml_dtypes 0.5 or later, '
                          'which TensorFlow {} does not allow; install onnx<1.18 (pip install "onnx<1.18") or '
                          'TensorFlow 2.18 or later'.format(error, tf.VERSION)) from error

    model, _ = tf2onnx.convert.from_graph_def(
        frozen.graph_def, input_names=[spec['tensor'] for spec in frozen.inputs],
        output_names=[spec['tensor'] for spec in frozen.outputs], opset=ONNX_OPSET)
    with open(path, 'wb') as f:
        f.write(model.SerializeToString())


def run_frozen(frozen, feeds):
    """Runs the frozen graph once in TensorFlow: {logical input name: array} -> {logical output name: array}."""
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(frozen.graph_def, name='')
    with tf.Session(graph=graph, config=session_config()) as session:
        values = session.run([spec['tensor'] for spec in frozen.outputs],
                             {spec['tensor']: np.asarray(feeds[spec['name']], dtype=spec['dtype'])
                              for spec in frozen.inputs})
    return {spec['name']: value for spec, value in zip(frozen.outputs, values)}
