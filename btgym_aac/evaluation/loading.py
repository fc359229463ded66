"""Loading a trained policy from a run's log dir: its saved configs, its checkpoint, and an acting wrapper.

A run's log dir holds `run_config.pkl` (written by its chief once set up) and the chief's checkpoints in
`<log_dir>/<log_ckpt_subdir>` (default `current_train_checkpoint`). The global policy is rebuilt in its own graph
under the `global` variable scope with the kwargs the trainer gave it, so variable names and shapes match the
checkpoint; only the policy's variables are restored (optimizer slots and step counters are left in the file).
"""
import io
import os
import pickle
import pickletools

import numpy as np

from btgym_aac.spaces import decision, probability_names
from btgym_aac.algorithms.config import SETTING_NAMES, AacConfig
from btgym_aac.algorithms.policy.interface import OFF_POLICY_PASS_FLAGS, set_off_policy_pass
from btgym_aac.algorithms.common.sessions import session_config
from btgym_aac.class_refs import resolved
from btgym_aac.compat import tf
from btgym_aac.config_modules import ConfigModuleError, load_with_sources
from btgym_aac.distributed.checkpoints import (check_checkpoint_fits, latest_checkpoint, resumable_checkpoint,
                                               unreadable_checkpoint_error)
from btgym_aac.distributed.run_config import RUN_CONFIG_DICTS, RUN_CONFIG_FILE
from btgym_aac.paths import check_trusted
from btgym_aac.env import BTgymEnv
from btgym_aac.logs import error_summary
from btgym_aac.spaces import ActionDictSpace, DictSpace

GLOBAL_SCOPE = 'global'
NOISE_SCALE_NAMES = ('w_sigma', 'b_sigma')

_ALGORITHMS = 'btgym_aac.algorithms.'
EARLIER_LAYOUT_MODULES = (
    'btgym_aac.original_paths', 'btgym_aac.env.original_api', 'btgym_aac.data.data_master',
    *(_ALGORITHMS + name for name in (
        'trainer_settings', 'batches', 'placeholders', 'session_callables', 'session_config', 'transfers',
        'finite_guard', 'pixel_control', 'runner.batched', 'runner.aux_renderings', 'policy.replica',
        'policy.acting', 'sample_cycle', 'trainer_runners')))
"""Module paths of btgym_aac's own earlier layouts that btgym_aac 0.1.0 up to commit 7413806 still resolved (the
original btgym's paths stay, see `legacy.module_paths`). A `run_config.pkl` written before the module layout of
2026-12-04 may name one: `read_run_config` refuses it before unpickling anything, naming the version that reads
it (and so it refuses a file naming any other `btgym_aac.*` module that does not exist, when unpickling meets it).
Not aliases: nothing imports these paths."""
EARLIER_LAYOUT_READER = 'btgym_aac 0.1.0 (git tag/commit 7413806)'


def earlier_layout_module(data):
    """The first module path of `EARLIER_LAYOUT_MODULES` (or below one) that the pickles of `data` (bytes, as
    `config_modules.dumps_with_sources` writes them) take a class or function from, or hold as a string; None if
    none, or if `data` is not a readable pickle stream (the unpickler then says what is wrong). Nothing is
    unpickled."""
    stream = io.BytesIO(data)
    try:
        while stream.tell() < len(data):
            for opcode, arg, _ in pickletools.genops(stream):
                if not isinstance(arg, str):
                    continue
                name = arg.split(' ')[0] if opcode.name in ('GLOBAL', 'INST') else arg  # (their arg: 'module name')
                for earlier in EARLIER_LAYOUT_MODULES:
                    if name == earlier or name.startswith(earlier + '.'):
                        return earlier
    except Exception:  # (pickletools raises ValueError and others on a damaged stream)
        return None
    return None


def earlier_layout_error(path, module):
    """The ValueError that refuses run config file `path`, which names `module`, a module path btgym_aac no
    longer has."""
    return ValueError('{} names module {}, a path of an earlier btgym_aac layout; read this run with {} or train it '
                      'again'.format(path, module, EARLIER_LAYOUT_READER))


def read_run_config(log_dir, allow_untrusted=False):
    """Reads the configs a run saved in `<log_dir>/run_config.pkl`. Unpickling runs code, so the file and the log
    dir must belong to this user (or root) and be writable by no other (see `paths`).

    Args:
        log_dir: the run's log dir.
        allow_untrusted: read it even when another user owns it or could have written it.

    Returns:
        dict with env_config, policy_config, trainer_config, cluster_config, test_mode.

    Raises:
        FileNotFoundError: `log_dir` is not a directory or holds no run_config.pkl.
        ValueError: run_config.pkl cannot be unpickled, lacks one of the config dicts, or names a module path of
            an earlier btgym_aac layout (one of `EARLIER_LAYOUT_MODULES`, found before anything is unpickled, or
            any `btgym_aac.*` module that does not exist).
        UntrustedFileError (a PermissionError): another user owns the file or its log dir, or could write them.
    """
    if not os.path.isdir(log_dir):
        what = 'is a file' if os.path.exists(log_dir) else 'does not exist'
        raise FileNotFoundError('log dir {!r} {} (expected the log dir of a btgym-aac train run)'.format(log_dir, what))
    path = os.path.join(log_dir, RUN_CONFIG_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError('{!r} holds no {} (the chief of a run writes it once it is set up; is this the '
                                'log dir of a btgym-aac train run?)'.format(log_dir, RUN_CONFIG_FILE))
    check_trusted(path, log_dir, 'unpickling it', allow_untrusted)
    with open(path, 'rb') as f:
        data = f.read()
    earlier = earlier_layout_module(data)
    if earlier is not None:
        raise earlier_layout_error(path, earlier)
    try:
        run_config = load_with_sources(data)
    except ConfigModuleError as error:
        raise ValueError('{}: {}'.format(path, error)) from error
    except (pickle.UnpicklingError, EOFError, ImportError, AttributeError, ValueError, TypeError, IndexError,
            KeyError) as error:
        if isinstance(error, ModuleNotFoundError) and (error.name or '').startswith('btgym_aac.'):
            raise earlier_layout_error(path, error.name) from error
        raise ValueError('{} cannot be read ({}); it is damaged, or names classes that can no longer be '
                         'imported'.format(path, error_summary(error))) from error
    if not isinstance(run_config, dict):
        raise ValueError('{} holds a {}, not the dict of configs a run writes'.format(
            path, type(run_config).__name__))
    for name in RUN_CONFIG_DICTS:
        if not isinstance(run_config.get(name), dict):
            raise ValueError('{} has no {} dict (got {!r}); it was not written by a btgym-aac run'.format(
                path, name, type(run_config.get(name)).__name__))
    return run_config


def resolve_checkpoint(log_dir, run_config, checkpoint=None):
    """Path prefix of the checkpoint to restore.

    Args:
        log_dir: the run's log dir.
        run_config: its saved configs (for `cluster_config['log_ckpt_subdir']`).
        checkpoint: None (latest of the run), a checkpoint directory, or a checkpoint path prefix.

    Raises:
        FileNotFoundError: no such checkpoint.
        CheckpointStateError (a ValueError): the run's checkpoint state file is unreadable or lists a checkpoint
            whose files are gone.
    """
    if checkpoint is None:
        subdir = run_config['cluster_config'].get('log_ckpt_subdir', 'current_train_checkpoint').strip('/')
        directory = os.path.join(log_dir, subdir)
        path = resumable_checkpoint(directory)
        if path is None:
            raise FileNotFoundError('no checkpoint in {!r}: the run has not saved yet'.format(directory))
        return path
    if os.path.isdir(checkpoint):
        path = latest_checkpoint(checkpoint)
        if path is None:
            raise FileNotFoundError('checkpoint directory {!r} holds no checkpoint'.format(checkpoint))
        return path
    if not os.path.isfile(checkpoint + '.index'):
        raise FileNotFoundError('checkpoint {!r} does not exist (no {}.index)'.format(checkpoint, checkpoint))
    return checkpoint


def make_env(run_config, **overrides):
    """Builds the run's environment without rendering.

    Args:
        run_config: saved configs.
        **overrides: env kwargs replacing the saved ones.

    Returns:
        environment instance (the caller closes it).
    """
    env_config = run_config['env_config']
    kwargs = dict(env_config.get('kwargs', {}), **overrides)
    if issubclass(resolved(env_config['class_ref']), BTgymEnv):
        kwargs['render_enabled'] = False
    return env_config['class_ref'](**kwargs)


def global_policy_kwargs(run_config, ob_space, ac_space):
    """Kwargs the trainer gave the global policy (see `BaseAAC.__init__`), rebuilt from the saved trainer kwargs.

    Args:
        run_config: saved configs.
        ob_space, ac_space: the env's spaces.

    Returns:
        dict of policy kwargs.
    """
    saved = run_config['trainer_config'].get('kwargs', {})
    settings = AacConfig(**{name: value for name, value in saved.items() if name in SETTING_NAMES})
    kwargs = dict(run_config['policy_config'].get('kwargs', {}))
    kwargs.update(ob_space=ob_space, ac_space=ac_space, rp_sequence_size=settings.rp_sequence_size,
                  aux_estimate=settings.use_any_aux_tasks, static_rnn=settings.time_flat, task=0, cluster_spec=None)
    if settings.use_pixel_control:
        kwargs.setdefault('pixel_control', True)
    set_off_policy_pass(resolved(run_config['policy_config']['class_ref']), kwargs,
                        {flag: getattr(settings, flag) for flag in OFF_POLICY_PASS_FLAGS})
    return kwargs


def noise_scale_variables(variables):
    """The NoisyNet noise scales (`<layer>/w_sigma`, `<layer>/b_sigma`, see `layers.noisy_linear`) among `variables`."""
    return [variable for variable in variables if variable.op.name.rsplit('/', 1)[-1] in NOISE_SCALE_NAMES]


class LoadedPolicy:
    """A restored policy acting in one environment, one episode at a time.

    Usage::

        agent = load_policy(log_dir)
        observation, info = env.reset()
        agent.reset(observation)
        while not done:
            action = agent.act(observation)
            observation, reward, done, _, info = env.step(action)
            agent.observe(reward)
        agent.close()

    The wrapper keeps the policy's recurrent context, the last action's code and the last reward between calls,
    as the trainers' runners do.

    Actions (see `act`): an index for a single-asset discrete action space, a dict asset -> index for several
    assets (MultiDiscreteEnv), a dict key -> [weight] for a continuous one (PortfolioEnv).

    Args:
        policy: the rebuilt policy (graph objects).
        session: its tf.Session.
        checkpoint: path prefix of the restored checkpoint.
        initial_action: the env's 'do nothing' action, the first step's last action (None: the action space's,
            index 0 or weight 0 everywhere).

    Attributes:
        policy, session, checkpoint: as given.
        action_names: names of the entries of `last_probabilities`: the env's `portfolio_actions` (one asset),
            the joint or per-asset actions (several assets, see `spaces.probability_names`), or the weight
            keys (continuous).
        last_probabilities: of the latest `act` (None before the first): the action probabilities (discrete; the
            joint actions of several assets, indexed as the action space's `lookup_table`), or the weights sent
            (continuous, in `ac_space.assets` order).
        last_value: the value estimate of the latest `act` (None before the first).
    """

    def __init__(self, policy, session, checkpoint, initial_action=None):
        self.policy = policy
        self.session = session
        self.checkpoint = checkpoint
        self.ac_space = policy.ac_space
        self.action_names = probability_names(self.ac_space)
        self.initial_action = self.ac_space.get_initial_action() if initial_action is None else initial_action
        self.last_probabilities = None
        self.last_value = None
        self.context = None
        self.last_action = None
        self.last_reward = None

    def reset(self, observation=None):
        """Starts an episode with a fresh context, the initial action as last action and a zero last reward.

        Args:
            observation: the episode's first observation; RL² policies get it as `state` (with `context=None`
                their LSTM 2 starts from zeros too, as for a test episode).
        """
        if observation is None:
            self.context = self.session.run(self.policy.on_lstm_init_state)
        else:
            self.context = self.policy.get_initial_features(state=observation, context=None, sess=self.session)
        self.last_action = np.asarray(self.ac_space.encode(self.initial_action))
        self.last_reward = np.asarray(0.0)
        self.last_probabilities = None

    def _forward(self, observation, deterministic):
        if self.context is None:
            self.reset(observation)
        return self.policy.act(observation, self.context, self.last_action[None], self.last_reward[None],
                               deterministic=deterministic, sess=self.session)

    def action_probabilities(self, observation):
        """Probabilities of every action (continuous: the deterministic weights) in `observation` given the current
        context; the context does not advance.

        Returns:
            float64 array [number of actions or weights].
        """
        _, logits, _, _ = self._forward(observation, deterministic=True)
        return self.ac_space.probabilities(logits)

    def act(self, observation, deterministic=True):
        """Chooses an action and advances the context.

        Args:
            observation: the env's observation (starts an episode with `reset(observation)` if none is running).
            deterministic: the most probable action (continuous: the weights `softmax(logits)`) if True, else a
                draw from the policy (continuous: `sample_dp`).

        Returns:
            int action index for a single asset; dict asset -> int index for several; dict key -> float32 [1]
            weight for a continuous action space.
        """
        pack, logits, value, context = self._forward(observation, deterministic)
        self.context = context
        self.last_value = float(np.asarray(value).reshape(-1)[0])
        self.last_action = np.asarray(pack['encoded'])
        action, self.last_probabilities = decision(self.ac_space, pack, logits)
        return action

    def observe(self, reward):
        """Records the reward the env returned for the latest action (the next `act`'s last reward)."""
        self.last_reward = np.asarray(float(reward))

    def close(self):
        """Closes the session."""
        self.session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def _check_spaces(ob_space, ac_space):
    """Raises ValueError unless the spaces are btgym_aac's dict spaces (a plain gymnasium env must be wrapped, see
    `btgym_aac.env.gym_wrappers`)."""
    if not isinstance(ob_space, DictSpace) or not isinstance(ac_space, ActionDictSpace):
        raise ValueError('the env must have btgym_aac spaces (a DictSpace observation space and an ActionDictSpace '
                         'action space, as BTgymEnv and the gym_wrappers envs have), got {} and {}'.format(
                             type(ob_space).__name__, type(ac_space).__name__))


def env_spaces(env):
    """(observation space, action space, 'do nothing' action) of `env`, the initial action as the runners take it;
    the spaces are checked by `_check_spaces`."""
    _check_spaces(env.observation_space, env.action_space)
    get_initial_action = getattr(env, 'get_initial_action', env.action_space.get_initial_action)
    return env.observation_space, env.action_space, get_initial_action()


def load_policy(log_dir, checkpoint=None, env=None, noisy=False, allow_untrusted=False):
    """Rebuilds a run's global policy in its own graph and session and restores it from a checkpoint.

    The run's configs are unpickled from `<log_dir>/run_config.pkl`, which can run code: it is refused when another
    user owns it or its log dir, or could write them, unless `allow_untrusted` (see `read_run_config`).

    Args:
        log_dir: log dir of a Launcher run (holds run_config.pkl and the checkpoint folder).
        checkpoint: None (the run's latest), a checkpoint directory or a checkpoint path prefix.
        env: an environment whose spaces the policy was trained on (None: one is built from the saved env
            config for its spaces, then closed).
        noisy: keep NoisyNet layers' noise (redrawn at every session run); False (default) zeroes their noise
            scales after restoring, so they act with their mean weights and the policy is a deterministic
            function of its inputs.
        allow_untrusted: load run_config.pkl even when another user owns it or could have written it.

    Returns:
        LoadedPolicy.

    Raises:
        FileNotFoundError: missing log dir, run_config.pkl or checkpoint.
        ValueError: the checkpoint does not fit the rebuilt policy, or the env's spaces are not btgym_aac dict
            spaces.
        UntrustedFileError (a PermissionError): run_config.pkl or the log dir is another user's or writable by
            others.
    """
    run_config = read_run_config(log_dir, allow_untrusted)
    path = resolve_checkpoint(log_dir, run_config, checkpoint)
    if env is None:
        spaces_env = make_env(run_config)
        try:
            ob_space, ac_space, initial_action = env_spaces(spaces_env)
        finally:
            spaces_env.close()
    else:
        ob_space, ac_space, initial_action = env_spaces(env)
    graph = tf.Graph()
    with graph.as_default():
        with tf.variable_scope(GLOBAL_SCOPE):
            policy = run_config['policy_config']['class_ref'](**global_policy_kwargs(run_config, ob_space, ac_space))
        variables = tf.global_variables()
        check_checkpoint_fits(path, variables, 'the policy rebuilt from run_config.pkl')
        saver = tf.train.Saver(var_list=variables)
        silence_noise = tf.group(*[scale.assign(tf.zeros_like(scale)) for scale in noise_scale_variables(variables)])
    graph.finalize()
    session = tf.Session(graph=graph, config=session_config(intra_op_parallelism_threads=1,
                                                            inter_op_parallelism_threads=2))
    try:
        saver.restore(session, path)
        if not noisy:
            session.run(silence_noise)
    except tf.errors.OpError as error:
        session.close()
        raise unreadable_checkpoint_error(path, error) from error
    except Exception:
        session.close()
        raise
    return LoadedPolicy(policy, session, path, initial_action)
