"""`load_artifact`: a policy artifact acting one observation at a time, carrying its recurrent state itself, on one
of the two backends its acting graph runs on: ONNX Runtime (the default: nothing here imports TensorFlow) or
TensorFlow's SavedModel.

Both backends take and return {logical name: array} (names as in the manifest's `inputs` and `outputs`). Decisions
go through `btgym_aac.spaces.action_packs`, the code the training policies and `load_policy` use.
"""
import os

import numpy as np

from btgym_aac.deploy.json_values import from_json
from btgym_aac.deploy.manifest import SAVED_MODEL_DIR, ArtifactError, observation_leaves, verify_artifact
from btgym_aac.spaces import ActionDictSpace, action_packs, decision, probability_names

DEFAULT_DP_ALPHA = 200.0


class OnnxBackend:
    """The artifact's `policy.onnx` in an ONNX Runtime session on one CPU thread."""

    name = 'onnx'

    def __init__(self, folder, manifest):
        try:
            import onnxruntime
        except ImportError:
            raise ArtifactError('the onnx backend needs onnxruntime: pip install onnxruntime') from None
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(os.path.join(folder, manifest['onnx']['file']), options,
                                                    providers=['CPUExecutionProvider'])
        self.inputs = manifest['inputs']
        self.outputs = manifest['outputs']
        self.fetches = [spec['tensor'] for spec in self.outputs]

    def run(self, feeds):
        """Runs one step: {input name: array} -> {output name: array}."""
        values = self.session.run(self.fetches, {spec['tensor']: feeds[spec['name']] for spec in self.inputs})
        return {spec['name']: value for spec, value in zip(self.outputs, values)}

    def close(self):
        """Releases the session."""
        self.session = None


class SavedModelBackend:
    """The artifact's `saved_model/` loaded into a TensorFlow session (imports TensorFlow), configured as the
    package's sessions are (`session_config`: grappler's rewrites off, so the ops compute what the training graph
    computes)."""

    name = 'tf'

    def __init__(self, folder, manifest):
        from btgym_aac.algorithms.common.sessions import session_config
        from btgym_aac.compat import tf

        saved = manifest['saved_model']
        self.graph = tf.Graph()
        self.session = tf.Session(graph=self.graph, config=session_config(intra_op_parallelism_threads=1,
                                                                          inter_op_parallelism_threads=1))
        try:
            meta_graph = tf.saved_model.loader.load(self.session, [saved['tag']],
                                                    os.path.join(folder, saved.get('dir', SAVED_MODEL_DIR)))
        except (OSError, RuntimeError, tf.errors.OpError) as error:
            self.session.close()
            raise ArtifactError('the SavedModel of {!r} cannot be loaded: {}'.format(folder, error)) from None
        signature = meta_graph.signature_def[saved['signature']]
        self.inputs = {name: info.name for name, info in signature.inputs.items()}
        self.outputs = {name: info.name for name, info in signature.outputs.items()}
        self.output_names = list(self.outputs)
        self.runner = self.session.make_callable([self.outputs[name] for name in self.output_names],
                                                 [self.inputs[name] for name in self.inputs])

    def run(self, feeds):
        """Runs one step: {input name: array} -> {output name: array}."""
        values = self.runner(*[feeds[name] for name in self.inputs])
        return dict(zip(self.output_names, values))

    def close(self):
        """Closes the session."""
        self.session.close()


BACKENDS = {'onnx': OnnxBackend, 'tf': SavedModelBackend}


def action_space(manifest):
    """(`ActionDictSpace`, its 'do nothing' action) rebuilt from the manifest."""
    described = manifest['action_space']
    space = ActionDictSpace(described['assets'], described['base_actions'], encoding=described['encoding'])
    initial = from_json(described['initial_action'])
    if space.is_discrete:
        action = {asset: int(initial[asset]) for asset in space.assets}
    else:
        action = {asset: np.asarray(initial[asset], dtype=np.float32).reshape(1) for asset in space.assets}
    return space, action


class ArtifactPolicy:
    """A policy artifact's acting loop: `reset()` at an episode's (or a live run's) start, then per decision
    `act(observation)` and, once the env answered, `observe(reward)`.

    Args:
        manifest: the artifact's manifest (`verify_artifact`).
        backend: an `OnnxBackend` or `SavedModelBackend` of the artifact.

    Attributes:
        manifest, backend: as given.
        ac_space: the action space.
        action_names: names of the entries of the probabilities `act` returns.
    """

    def __init__(self, manifest, backend):
        self.manifest = manifest
        self.backend = backend
        self.ac_space, self.initial_action = action_space(manifest)
        self.action_names = probability_names(self.ac_space)
        self.dp_alpha = manifest['policy'].get('action_dp_alpha') or DEFAULT_DP_ALPHA
        self.observation_inputs = [spec for spec in manifest['inputs'] if spec['name'].startswith('observation/')]
        self.state_inputs = [spec for spec in manifest['inputs'] if spec['name'].startswith('state_in/')]
        self._packs = {}
        self.reset()

    def reset(self):
        """Starts afresh: zero recurrent state, the 'do nothing' action as last action, last reward 0."""
        self.state = [np.zeros(spec['shape'], dtype=spec['dtype']) for spec in self.state_inputs]
        self.last_action = np.asarray(self.ac_space.encode(self.initial_action), dtype=np.float32)
        self.last_reward = 0.0

    def _feeds(self, observation):
        leaves = observation_leaves(observation)
        feeds = {}
        for spec in self.observation_inputs:
            if spec['name'] not in leaves:
                raise KeyError('the observation has no {} (it has {})'.format(spec['name'], ', '.join(sorted(leaves))))
            value = np.asarray(leaves[spec['name']], dtype=spec['dtype'])
            if value.size != np.prod(spec['shape']):
                raise ValueError('observation {} has shape {}; the policy takes {}'.format(
                    spec['name'], value.shape, spec['shape'][1:]))
            feeds[spec['name']] = value.reshape(spec['shape'])
        feeds.update(('state_in/{}'.format(index), value) for index, value in enumerate(self.state))
        feeds['last_action'] = self.last_action.reshape(1, -1)
        feeds['last_reward'] = np.asarray([self.last_reward], dtype=np.float32)
        return feeds

    def act(self, observation, deterministic=True):
        """Chooses an action for `observation` and advances the recurrent state.

        Args:
            observation: the env's observation dict (nested like its observation space).
            deterministic: the most probable action (continuous: the weights `softmax(logits)`) if True, else a
                draw from the policy.

        Returns:
            (action, probabilities, value): the action as the env takes it (an int for one asset, a dict for
            several or for continuous weights), the float64 probabilities (named by `action_names`; continuous:
            the weights sent) and the value estimate (float).
        """
        outputs = self.backend.run(self._feeds(observation))
        logits = outputs['logits'][0]
        pack = action_packs(self.ac_space, logits[None], deterministic, self.dp_alpha, self._packs)[0]
        self.state = [outputs['state_out/{}'.format(index)] for index in range(len(self.state))]
        self.last_action = np.asarray(pack['encoded'], dtype=np.float32)
        action, probabilities = decision(self.ac_space, pack, logits)
        return action, probabilities, float(outputs['value'][0])

    def observe(self, reward):
        """Records the reward the env gave for the latest action (the next `act`'s last reward)."""
        self.last_reward = float(reward)

    def get_state(self):
        """What a live run saves after a decision to continue from it: JSON values."""
        return {'state': [value.tolist() for value in self.state], 'last_action': self.last_action.tolist(),
                'last_reward': self.last_reward}

    def set_state(self, saved):
        """Continues from what `get_state` returned."""
        self.state = [np.asarray(value, dtype=spec['dtype']).reshape(spec['shape'])
                      for value, spec in zip(saved['state'], self.state_inputs)]
        self.last_action = np.asarray(saved['last_action'], dtype=np.float32)
        self.last_reward = float(saved['last_reward'])

    def close(self):
        """Releases the backend."""
        self.backend.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def load_artifact(path, backend='onnx'):
    """Loads a policy artifact written by `btgym-aac export`, after checking it (`verify_artifact`: every file
    present with its checksum, the same package major version, its env and strategy classes importable).

    Args:
        path: the artifact folder.
        backend: 'onnx' (ONNX Runtime; TensorFlow is not imported) or 'tf' (the SavedModel in TensorFlow).

    Returns:
        ArtifactPolicy.

    Raises:
        ArtifactError (a ValueError): the artifact cannot be used, naming the problem.
        ValueError: an unknown backend.
    """
    from btgym_aac import __version__

    if backend not in BACKENDS:
        raise ValueError('backend must be one of {}, got {!r}'.format(', '.join(BACKENDS), backend))
    manifest = verify_artifact(path, __version__)
    return ArtifactPolicy(manifest, BACKENDS[backend](path, manifest))
