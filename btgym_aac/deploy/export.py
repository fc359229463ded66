"""`btgym-aac export`: a run's latest checkpoint as a policy artifact (checkpoint, SavedModel, ONNX, manifest).

The artifact's acting graph is the one-step acting graph of the restored policy, frozen (its variables made
constants), and written as a TensorFlow SavedModel and as ONNX. It takes one observation (batch 1, one step): an
input per observation leaf the policy reads (`observation/<key>[/<subkey>]`), the recurrent state (`state_in/<i>`,
in the policy's context flattening order), the last action's code (`last_action`) and the last reward
(`last_reward`); it returns `logits`, `value` and the next state (`state_out/<i>`). The policy's batch size,
sequence length and training flag are constants (1, [1], False). Inputs the outputs do not depend on (e.g. RL²
metadata, read only between episodes) are left out.

The checkpoint files lie at the top of the artifact folder as before, so the folder still serves as an
`initial_ckpt_dir`. The folder is assembled next to the target and then replaces it (see
`checkpoints.export_checkpoint`), so a failed export leaves nothing half written.
"""
import collections
import datetime
import os

import numpy as np

from btgym_aac.algorithms.common.sessions import session_config
from btgym_aac.compat import tf
from btgym_aac.deploy.json_values import to_json, type_name
from btgym_aac.deploy.manifest import (ARTIFACT_FORMAT, FORMAT_VERSION, MANIFEST_FILE, ONNX_FILE, SAVED_MODEL_DIR,
                                       ArtifactError, action_space_description, broker_description, data_description,
                                       data_lines, episode_description, observation_leaves, observation_space_description,
                                       settings_description, write_manifest)
from btgym_aac.distributed.checkpoints import (check_export_target, checkpoint_step, checkpoint_to_export,
                                               export_checkpoint)
from btgym_aac.distributed.run_config import RUN_CONFIG_FILE
from btgym_aac.evaluation.loading import env_spaces, load_policy, make_env, read_run_config

SIGNATURE_KEY = 'serving_default'
SERVING_TAG = 'serve'
ONNX_OPSET = 17
ARTIFACT_ENTRIES = (MANIFEST_FILE, ONNX_FILE, SAVED_MODEL_DIR)
"""What an artifact holds besides its checkpoint files."""
ONNX_TOLERANCE = 1e-4
"""Largest difference allowed between the ONNX model's outputs and the frozen graph's in the export's own check."""

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


def _check_initial_state(agent):
    """Raises ValueError unless the policy's initial context is all zeros (what the artifact's runtime starts from)."""
    values = agent.session.run(agent.policy.on_lstm_init_state)
    if any(np.any(np.asarray(value) != 0) for value in tf.nest.flatten(values)):
        raise ValueError('{}: the initial recurrent state is not all zeros; the policy artifact starts every '
                         'episode from zeros and cannot export it'.format(type(agent.policy).__name__))


def check_onnx_model(frozen, path, seed=0):
    """Runs the ONNX model and the frozen TensorFlow graph on the same random inputs and compares their outputs.

    Raises:
        ArtifactError: an output differs by more than `ONNX_TOLERANCE`, naming it and the difference.
    """
    import onnxruntime

    rng = np.random.default_rng(seed)
    feeds = {spec['name']: rng.standard_normal(spec['shape']).astype(spec['dtype']) for spec in frozen.inputs}
    expected = run_frozen(frozen, feeds)
    session = onnxruntime.InferenceSession(path, providers=['CPUExecutionProvider'])
    got = session.run([spec['tensor'] for spec in frozen.outputs],
                      {spec['tensor']: feeds[spec['name']] for spec in frozen.inputs})
    for spec, value in zip(frozen.outputs, got):
        difference = float(np.max(np.abs(value - expected[spec['name']])))
        if not difference <= ONNX_TOLERANCE:
            raise ArtifactError('the ONNX conversion changed the policy output {} by {:.3g} (more than {}); the '
                               'artifact was not written'.format(spec['name'], difference, ONNX_TOLERANCE))


def _strategy_description(env):
    """The strategy class, the kwargs the env's engine gave it, and its full params; None for envs without one."""
    strategy = getattr(env, 'strategy_class', None)
    if strategy is None:
        return None
    return {'class': type_name(strategy), 'kwargs': to_json(dict(env.engine.strats[0][0][2])),
            'params': to_json(dict(env.strategy_params))}


def manifest_content(run_config, env, agent, frozen, checkpoint):
    """The manifest's entries but the file checksums."""
    from btgym_aac import __version__
    from btgym_aac.env.components import ENGINE_DEFAULTS

    ob_space, ac_space, initial_action = env_spaces(env)
    env_kwargs = run_config['env_config'].get('kwargs', {})
    dataset = getattr(env, 'dataset', None)
    return {
        'format': ARTIFACT_FORMAT, 'format_version': FORMAT_VERSION,
        'package': {'name': 'btgym-aac', 'version': __version__},
        'created': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
        'checkpoint': os.path.basename(checkpoint), 'global_step': checkpoint_step(checkpoint),
        'preset': run_config.get('preset'),
        'policy': {'class': type_name(type(agent.policy)),
                   'kwargs': settings_description(run_config['policy_config'].get('kwargs', {})),
                   'action_dp_alpha': to_json(getattr(agent.policy, 'action_dp_alpha', None))},
        'observation_space': observation_space_description(ob_space),
        'action_space': action_space_description(ac_space, initial_action),
        'inputs': frozen.inputs, 'outputs': frozen.outputs,
        'saved_model': {'dir': SAVED_MODEL_DIR, 'tag': SERVING_TAG, 'signature': SIGNATURE_KEY},
        'onnx': {'file': ONNX_FILE},
        'env': {'class': type_name(type(env)), 'kwargs': settings_description(env_kwargs)},
        'strategy': _strategy_description(env),
        'broker': broker_description(env_kwargs, ENGINE_DEFAULTS) if hasattr(env, 'engine') else None,
        'skip_frame': getattr(env, 'skip_frame', None),
        'data_lines': data_lines(dataset) if dataset is not None else None,
        'data': data_description(dataset) if dataset is not None else None,
        'episode': episode_description(dataset) if dataset is not None else None,
    }


def export_artifact(log_dir, target_dir, ckpt_subdir=None, allow_untrusted=False):
    """Writes the policy artifact of the latest checkpoint of a run to `target_dir`.

    Args:
        log_dir: the run's log dir (holds run_config.pkl and the checkpoint folder).
        target_dir: the artifact folder: missing, empty, or holding an earlier export (replaced).
        ckpt_subdir: the checkpoint folder under `log_dir` (None: the run's `log_ckpt_subdir`).
        allow_untrusted: read run_config.pkl even when another user owns it (see `read_run_config`).

    Returns:
        path prefix of the exported checkpoint.

    Raises:
        FileNotFoundError, ValueError, NotADirectoryError, FileExistsError: as `load_policy` and
            `export_checkpoint`, naming the problem (ArtifactError: the ONNX model does not reproduce the graph).
    """
    if os.path.isdir(log_dir) and not os.path.isfile(os.path.join(log_dir, RUN_CONFIG_FILE)):
        raise FileNotFoundError('{!r} holds no {}: a policy artifact is built from the configs of a run '
                                '(`btgym-aac export --checkpoint-only` copies the checkpoint alone)'.format(
                                    log_dir, RUN_CONFIG_FILE))
    run_config = read_run_config(log_dir, allow_untrusted)
    subdir = ckpt_subdir or run_config['cluster_config'].get('log_ckpt_subdir', 'current_train_checkpoint')
    source_dir = os.path.join(log_dir, subdir.strip('/'))
    checkpoint = checkpoint_to_export(source_dir)
    check_export_target(source_dir, os.path.abspath(target_dir), ARTIFACT_ENTRIES)  # before the slow part
    env = make_env(run_config)
    try:
        with load_policy(log_dir, checkpoint=checkpoint, env=env, allow_untrusted=allow_untrusted) as agent:
            _check_initial_state(agent)
            frozen = freeze_acting_graph(agent.policy, agent.session)
            content = manifest_content(run_config, env, agent, frozen, checkpoint)
    finally:
        env.close()

    def add_artifact_files(staging):
        write_saved_model(frozen, os.path.join(staging, SAVED_MODEL_DIR))
        write_onnx(frozen, os.path.join(staging, ONNX_FILE))
        check_onnx_model(frozen, os.path.join(staging, ONNX_FILE))
        write_manifest(staging, content)

    return export_checkpoint(source_dir, target_dir, add_files=add_artifact_files, extra_entries=ARTIFACT_ENTRIES)
