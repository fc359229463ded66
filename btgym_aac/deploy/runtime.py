"""`load_artifact`: a policy artifact acting one observation at a time, carrying its recurrent state itself.

With the ONNX backend (the default) nothing here imports TensorFlow. Decisions go through
`btgym_aac.action_choice`, the code the training policies and `load_policy` use.
"""
import numpy as np

from btgym_aac.action_choice import action_packs, decision, probability_names
from btgym_aac.deploy.backends import BACKENDS
from btgym_aac.deploy.describe import observation_leaves
from btgym_aac.deploy.json_values import from_json
from btgym_aac.deploy.manifest import verify_artifact
from btgym_aac.spaces import ActionDictSpace

DEFAULT_DP_ALPHA = 200.0


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
