"""Plain gymnasium environments behind the library's spaces, for the trainers' ``test_mode``.

A test-mode env has ``observation_space = DictSpace({'external': Box(float32)})`` and a one-asset discrete
``ActionDictSpace``, so the algorithms built for BTgymEnv train on it unchanged. Atari games (ale-py, the optional
``atari`` extra) are shrunk to 42x42x1 grey frames first, as BTGym's ``AtariRescale42x42`` did.
"""
import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import parse_env_id

from btgym_aac.logs import get_logger
from btgym_aac.spaces import ActionDictSpace, DictSpace

ASSET_NAME = 'default_asset'
OBSERVATION_KEY = 'external'
ATARI_FRAME_SHAPE = (210, 160, 3)
ATARI_CROP_ROWS = slice(34, 34 + 160)
ATARI_CROP_COLUMNS = slice(0, 160)
SAMPLE_CONFIG_KEYS = ('episode_config', 'trial_config')
ATARI_INSTALL_HINT = "install btgym-aac's optional extra: pip install 'btgym-aac[atari]'"


def _linear_resize_weights(in_size, out_size):
    """Weights of bilinear resampling along one axis, as OpenCV's INTER_LINEAR computes them.

    Output pixel ``j`` samples the input at ``(j + 0.5) * in_size / out_size - 0.5`` (pixel centres aligned),
    clamped to the input's edge pixels.

    Args:
        in_size: input length.
        out_size: output length.

    Returns:
        float64 array [out_size, in_size]; ``weights @ signal`` resamples a signal of length ``in_size``.
    """
    position = np.clip((np.arange(out_size) + 0.5) * in_size / out_size - 0.5, 0, in_size - 1)
    left = np.floor(position).astype(int)
    right = np.minimum(left + 1, in_size - 1)
    fraction = position - left
    weights = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    np.add.at(weights, (rows, left), 1.0 - fraction)
    np.add.at(weights, (rows, right), fraction)
    return weights


# 160 -> 80 -> 42 along each axis; both resizes are linear, so they fold into one matrix.
_FRAME42_WEIGHTS = _linear_resize_weights(80, 42) @ _linear_resize_weights(160, 80)


def rescale_frame_42x42(frame):
    """Shrinks an Atari RGB frame to the 42x42 grey image universe-starter-agent trained on.

    Crops rows 34..193 and columns 0..159, resizes to 80x80 then 42x42 (bilinear, pixel centres aligned as in
    OpenCV), averages the colour channels and scales to [0, 1]. The intermediate 80x80 image is not rounded to
    uint8, so values may differ by at most 1/255 from those of the OpenCV-based `AtariRescale42x42`.

    Args:
        frame: array [210, 160, 3] of 0..255 values.

    Returns:
        float32 array [42, 42, 1] in [0, 1].
    """
    frame = np.asarray(frame)
    if frame.shape != ATARI_FRAME_SHAPE:
        raise ValueError('rescale_frame_42x42 expects an RGB Atari frame of shape {}, got {}'.format(
            ATARI_FRAME_SHAPE, frame.shape))
    grey = frame[ATARI_CROP_ROWS, ATARI_CROP_COLUMNS].mean(axis=2) / 255.0
    small = _FRAME42_WEIGHTS @ grey @ _FRAME42_WEIGHTS.T
    return np.clip(small, 0.0, 1.0).astype(np.float32)[:, :, None]


class AtariRescale42x42(gymnasium.ObservationWrapper, gymnasium.utils.RecordConstructorArgs):
    """Observation wrapper applying `rescale_frame_42x42` to every frame of an RGB Atari env.

    Args:
        env: gymnasium env with a Box(0, 255, (210, 160, 3)) observation space (ale-py, ``obs_type='rgb'``).
    """

    def __init__(self, env):
        gymnasium.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        source = env.observation_space
        if not isinstance(source, spaces.Box) or source.shape != ATARI_FRAME_SHAPE:
            raise ValueError('AtariRescale42x42 needs an RGB Atari observation space of shape {}, got {}'.format(
                ATARI_FRAME_SHAPE, source))
        self.observation_space = spaces.Box(0.0, 1.0, shape=(42, 42, 1), dtype=np.float32)

    def observation(self, observation):
        """Returns the 42x42x1 float32 frame."""
        return rescale_frame_42x42(observation)


def import_ale_py(reason):
    """Imports ale-py and registers its environments with gymnasium.

    Args:
        reason: start of the error message, saying what needed ale-py.

    Returns:
        the ``ale_py`` module.

    Raises:
        ImportError: ale-py is not installed; the message names the ``atari`` extra.
    """
    try:
        import ale_py
    except ImportError as error:
        raise ImportError('{}; {}'.format(reason, ATARI_INSTALL_HINT)) from error
    gymnasium.register_envs(ale_py)
    return ale_py


def is_atari_id(env_id):
    """Tells whether a gymnasium id names an ale-py (Atari) environment.

    'ALE/...' ids always do. Other ids are looked up in gymnasium's registry; an id gymnasium does not know yet
    is looked up again after importing ale-py, which registers the legacy ids such as 'PongNoFrameskip-v4'.

    Args:
        env_id: gymnasium environment id.

    Returns:
        bool.

    Raises:
        ImportError: the id is an 'ALE/' id, or an id gymnasium does not know, and ale-py is missing.
    """
    namespace, _, _ = parse_env_id(env_id)
    if namespace == 'ALE':
        import_ale_py('Atari environment {!r} needs ale-py'.format(env_id))
        return True
    spec = _registered_spec(env_id)
    if spec is None:
        import_ale_py('gymnasium has no environment {!r}; if it is an Atari game it needs ale-py'.format(env_id))
        spec = _registered_spec(env_id)
    if spec is None:
        return False
    entry_point = spec.entry_point
    module = entry_point.split(':')[0] if isinstance(entry_point, str) else getattr(entry_point, '__module__', '')
    return module.split('.')[0] == 'ale_py'


def _registered_spec(env_id):
    try:
        return gymnasium.spec(env_id)
    except gymnasium.error.Error:
        return None


def make_gym_env(env_id, **make_kwargs):
    """Makes the plain gymnasium env a test-mode env wraps.

    Atari ids get ``repeat_action_probability=0.0`` (no sticky actions, so seeded runs repeat exactly) unless
    given, keep the frameskip their id registers ('ALE/*-v5': 4, like the 'Deterministic' ids
    universe-starter-agent trained on; '*NoFrameskip-v4': 1) and are wrapped in `AtariRescale42x42`.

    Args:
        env_id: gymnasium id, e.g. 'CartPole-v1', 'ALE/Pong-v5', 'PongNoFrameskip-v4'.
        **make_kwargs: passed to ``gymnasium.make`` (e.g. ``max_episode_steps``, ``frameskip``).

    Returns:
        gymnasium env.
    """
    if not isinstance(env_id, str):
        raise TypeError('env_id must be a gymnasium id string, got {!r}'.format(env_id))
    if is_atari_id(env_id):
        make_kwargs.setdefault('repeat_action_probability', 0.0)
        return AtariRescale42x42(gymnasium.make(env_id, **make_kwargs))
    return gymnasium.make(env_id, **make_kwargs)


class TestModeEnv(gymnasium.Wrapper, gymnasium.utils.RecordConstructorArgs):
    """A gymnasium env with a Box observation and a Discrete action space, seen through the library's spaces.

    * ``observation_space = DictSpace({'external': Box})``: the env's Box as float32; observations are
      ``{'external': float32 array}``.
    * ``action_space = ActionDictSpace(assets=('default_asset',), base_actions=names)``: names from the env's
      ``get_action_meanings()`` (Atari) or '0', '1', ...; ``step`` takes ``{'default_asset': i}`` or ``i``.
    * ``reset`` accepts and ignores BTGym sample configs (``episode_config=``, ``trial_config=``, also inside
      ``options``), so the runner can call it like BTgymEnv's.
    * ``step`` returns gymnasium's 5-tuple unchanged: an episode cut by a time limit reports
      ``truncated=True, terminated=False``. The episode is over when either is True; the `done` property says so,
      and stepping a finished episode raises RuntimeError until ``reset``.
    * ``render_modes`` is empty: in test mode the runner renders the observation itself.

    Build it from an env, or from an id (usable from launcher config dicts:
    ``{'class_ref': TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}}``). ``env.spec`` records the wrapped env's
    spec plus this wrapper, so ``gymnasium.make(env.spec)`` rebuilds an equal env.

    Args:
        env: a gymnasium env to wrap; or None with ``env_id``.
        env_id: gymnasium id to build with `make_gym_env` (Atari ids get `AtariRescale42x42`).
        seed: seeds the first ``reset`` that gets no seed of its own, and the action space's sampling.
        task: number used in the logger name.
        render_enabled: kept for the worker's interface (nothing here renders).
        log_level: logbook level.
        **make_kwargs: with ``env_id`` only: passed to ``gymnasium.make``.
    """

    def __init__(self, env=None, env_id=None, seed=None, task=0, render_enabled=False, log_level=None,
                 **make_kwargs):
        if (env is None) == (env_id is None):
            raise TypeError('TestModeEnv needs exactly one of `env` (a gymnasium env) or `env_id` (an id string)')
        if env is None:
            env = make_gym_env(env_id, **make_kwargs)
        elif make_kwargs:
            raise TypeError('TestModeEnv got gymnasium.make arguments {} without env_id'.format(sorted(make_kwargs)))
        gymnasium.utils.RecordConstructorArgs.__init__(self, seed=seed, task=task, render_enabled=render_enabled,
                                                       log_level=log_level)
        super().__init__(env)
        self.task = task
        self.render_enabled = render_enabled
        self.render_modes = []
        self.log = get_logger('TestModeEnv', task=task, log_level=log_level)
        self.observation_space = DictSpace({OBSERVATION_KEY: self._float32_box(env.observation_space)})
        self._action_start = self._discrete_start(env.action_space)
        self.action_space = ActionDictSpace(assets=(ASSET_NAME,), base_actions=self._action_names(env),
                                            seed=seed)
        self._pending_seed = seed
        self._episode_running = False
        self._done = False
        self.log.info('wrapped {} for test mode: observation {}, actions {}'.format(
            env, self.observation_space, self.action_space.base_actions))

    @staticmethod
    def _float32_box(space):
        if not isinstance(space, spaces.Box):
            raise ValueError('TestModeEnv needs a Box observation space, got {}'.format(space))
        return spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), dtype=np.float32)

    @staticmethod
    def _discrete_start(space):
        if not isinstance(space, spaces.Discrete):
            raise ValueError('TestModeEnv needs a Discrete action space, got {}'.format(space))
        return int(space.start)

    @staticmethod
    def _action_names(env):
        count = int(env.action_space.n)
        meanings = getattr(env.unwrapped, 'get_action_meanings', None)
        names = tuple(meanings()) if meanings is not None else tuple(str(i) for i in range(count))
        if len(names) != count:
            raise ValueError('env names {} actions but its action space has {}'.format(len(names), count))
        return names

    @property
    def done(self):
        """True once the episode terminated or was truncated; False after ``reset``."""
        return self._done

    def _observation(self, observation):
        return {OBSERVATION_KEY: np.asarray(observation, dtype=np.float32)}

    def reset(self, seed=None, options=None, **sample_config):
        """Starts a new episode.

        Args:
            seed: seeds the env; None uses the constructor's seed on the first reset.
            options: passed to the env, less the BTGym sample-config keys.
            **sample_config: 'episode_config' / 'trial_config' as BTgymEnv takes them; ignored.

        Returns:
            (observation dict, info dict).
        """
        unknown = sorted(set(sample_config) - set(SAMPLE_CONFIG_KEYS))
        if unknown:
            raise TypeError('reset() got unexpected arguments {}; only {} are accepted (and ignored)'.format(
                unknown, list(SAMPLE_CONFIG_KEYS)))
        if options is not None:
            options = {key: value for key, value in options.items() if key not in SAMPLE_CONFIG_KEYS} or None
        if seed is None:
            seed = self._pending_seed
        self._pending_seed = None
        observation, info = self.env.reset(seed=seed, options=options)
        self._episode_running = True
        self._done = False
        return self._observation(observation), dict(info)

    def _env_action(self, action):
        if isinstance(action, dict):
            if action not in self.action_space:
                raise ValueError('action {!r} is not in the action space {}'.format(action, self.action_space))
            index = int(action[ASSET_NAME])
        else:
            if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
                raise ValueError('action {!r} is neither a dict like {{{!r}: i}} nor an integer'.format(
                    action, ASSET_NAME))
            index = int(action)
            if not 0 <= index < self.action_space.cardinality:
                raise ValueError('action {} is outside 0..{}'.format(index, self.action_space.cardinality - 1))
        return self._action_start + index

    def step(self, action):
        """Applies one action.

        Args:
            action: ``{'default_asset': i}`` or an integer ``i``, an index into ``action_space.base_actions``.

        Returns:
            (observation dict, reward float, terminated bool, truncated bool, info dict).

        Raises:
            ValueError: the action is outside the action space.
            RuntimeError: no episode is running (call reset()).
        """
        env_action = self._env_action(action)
        if not self._episode_running:
            raise RuntimeError('step() needs a running episode: {}; call reset()'.format(
                'the last one has ended' if self._done else 'none was started'))
        observation, reward, terminated, truncated, info = self.env.step(env_action)
        self._done = bool(terminated or truncated)
        self._episode_running = not self._done
        return self._observation(observation), float(reward), bool(terminated), bool(truncated), dict(info)

    def get_initial_action(self):
        """Returns the action index 0 (e.g. Atari 'NOOP') as an action dict."""
        return dict(self.action_space.get_initial_action())

    def close(self):
        """Closes the wrapped env."""
        self._episode_running = False
        super().close()


def make_test_env(env_id, seed=None, **make_kwargs):
    """Makes a test-mode env from a gymnasium id.

    Args:
        env_id: e.g. 'CartPole-v1' or an Atari id such as 'ALE/Pong-v5' (needs the ``atari`` extra).
        seed: see `TestModeEnv`.
        **make_kwargs: `TestModeEnv` arguments (task, render_enabled, log_level) and ``gymnasium.make`` ones.

    Returns:
        TestModeEnv.
    """
    return TestModeEnv(env_id=env_id, seed=seed, **make_kwargs)
