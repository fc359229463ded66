"""A runner's episodes: reset, act and step, render, statistics, the rollouts cut from their frames, and the default
runtime logic of the thread runner (`BaseEnvRunnerFn`); the synchro and batched runners share the episode helpers.

A runner alone talks to its environment: it acts with the policy, steps the env, records experience frames,
bootstraps n-step returns, keeps episode statistics, renders, and feeds replay memory.

Experience frame (one env step): ``{'position': {'episode', 'step'}, 'state': observation the action was taken in,
'action': one-hot [A], 'logits': the acting policy's logits [A], 'reward': float, 'value': V(state) [1], 'terminal':
bool (the episode is over),
'truncated': bool (over by a time limit, not terminated), 'context': policy context before the step, 'last_action':
previous action code [E], 'last_reward': previous reward (0-d array), 'r': bootstrap [1]}`` plus one key per policy
callback (e.g. ``pixel_change``). ``'r'`` is V(next state) for a frame followed by another one, 0 after a
terminated step, V(final observation) after a truncated one (a time limit ends the episode but is not a terminal
state, so its return is bootstrapped), and for a rollout's last non-terminal frame the value of the state the next
rollout starts in (`RolloutAssembler`, `collect_rollout`).

Two environment flavours (the ``test`` / ``atari_test`` flag): BTGym (``reset(**sample_config)``, ``get_stat()``,
metadata in observations) and test mode (gymnasium Atari / classic-control wrappers: plain ``reset()``, no
``get_stat``, renderings taken from the observation).
"""
import collections

import numpy as np

from btgym_aac.algorithms.common.memory import DummyMemory
from btgym_aac.algorithms.common.rollout import Rollout

TRAIN_STAT_KEYS = ('total_r', 'cpu_time', 'final_value', 'steps', 'agent_steps')
TEST_MODE_STAT_KEYS = ('total_r', 'steps')
TEST_EPISODE_STAT_KEYS = ('total_r', 'final_value', 'steps', 'agent_steps')

Transition = collections.namedtuple(
    'Transition', ['experience', 'state', 'context', 'action_code', 'reward', 'terminal', 'info', 'logits'])
"""Result of `act_and_step`: the new experience frame (no ``'r'`` yet), the next observation and context, the
action code [E] and reward (0-d array) that become the next step's ``last_action`` / ``last_reward``, the terminal
flag, the env's info dict and the policy's logits."""


def positive_int(value, name):
    """Returns `value` as an int; raises ValueError naming `name` unless it is an integer >= 1."""
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError('runner: {} must be an integer >= 1, got {!r}'.format(name, value))
    return int(value)


def reset_env(env, policy, test_mode, sample_config=None, record_episode=True):
    """Starts an episode and returns its first observation.

    Args:
        env: environment (gymnasium API).
        policy: policy whose `get_sample_config(env=env)` is used when `sample_config` is None.
        test_mode: plain ``env.reset()`` (test-mode envs take no sample configs).
        sample_config: ``{'episode_config', 'trial_config'}`` for BTGym envs.
        record_episode: whether the episode will be rendered; sets ``env.record_episode`` where the env has one,
            so that an episode nobody draws runs without the rendering observers.
    """
    if hasattr(env, 'record_episode'):
        env.record_episode = bool(record_episode)
    if test_mode:
        observation, _ = env.reset()
    else:
        config = policy.get_sample_config(env=env) if sample_config is None else sample_config
        observation, _ = env.reset(**config)
    return observation


def initial_action_code(env):
    """Binary code [E] of the env's 'do nothing' action (the first step's ``last_action``)."""
    get_initial_action = getattr(env, 'get_initial_action', env.action_space.get_initial_action)
    return np.asarray(env.action_space.encode(get_initial_action()))


def has_test_metadata(state):
    """Whether the observation's ``metadata['type']`` is truthy (a test-data episode); False without metadata."""
    try:
        return bool(np.any(state['metadata']['type']))
    except (KeyError, TypeError, IndexError):
        return False


def count_episode(sess, policy):
    """Runs the trainer's global episode increment ``policy.inc_episode`` when the policy has one."""
    inc_episode = getattr(policy, 'inc_episode', None)
    if inc_episode is not None:
        sess.run(inc_episode)


def should_render(env, task, local_episode, env_render_freq):
    """Whether to render the episode that just ended.

    True when the env has rendering enabled (``env.render_enabled``), the runner is on the chief worker
    (``task < 1``: runner tasks are ``worker_task + 0.01 * env_index``, so every env of worker 0 qualifies) and
    ``local_episode`` is a multiple of `env_render_freq`.
    """
    return bool(getattr(env, 'render_enabled', False)) and task < 1 and local_episode % env_render_freq == 0


def render_env(env, test_mode, state):
    """Render summary ``{mode: uint8 image [1, H, W, 3]}``, or None when there is nothing to picture.

    BTGym: one image per ``env.render_modes``. Test mode: ``{'render_atari': state['external'][None] * 255}``
    for image observations [H, W, 1]; vector observations (e.g. CartPole) give None.
    """
    if test_mode:
        frame = np.asarray(state['external'])
        if frame.ndim != 3 or frame.shape[-1] != 1:
            return None
        return {'render_atari': (frame[None] * 255).astype(np.uint8)}
    return {mode: np.asarray(env.render(mode))[None] for mode in env.render_modes}


def act_and_step(sess, env, policy, state, context, last_action, last_reward, position, deterministic=False):
    """Acts in `state` and steps the env once (`policy.act`, then `step_with`; arguments as there, plus
    `deterministic`: act greedily).

    Returns:
        `Transition`.
    """
    acted = policy.act(state, context, np.asarray(last_action)[None], np.asarray(last_reward)[None],
                       deterministic=deterministic, sess=sess)
    return step_with(acted, sess, env, policy, state, context, last_action, last_reward, position)


def step_with(acted, sess, env, policy, state, context, last_action, last_reward, position):
    """Steps the env once with the policy's output for `state`.

    Policy callbacks are called with keyword arguments ``sess, env, policy, state`` (the new observation),
    ``last_state`` (the observation acted in), ``action`` (action pack), ``reward``, ``terminal``, ``info``,
    ``context``, ``last_context``, ``value``; their results are stored under their keys.

    Args:
        acted: what `policy.act` returned for `state`: (action pack, logits, value, next context).
        sess: session passed to the policy callbacks.
        env, policy: environment and policy.
        state, context, last_action, last_reward: current observation, policy context, previous action code [E]
            and previous reward.
        position: ``{'episode': e, 'step': s}`` of the new frame.

    Returns:
        `Transition`.
    """
    action, logits, value, next_context = acted
    next_state, reward, terminated, truncated, info = env.step(action['environment'])
    terminal = bool(terminated or truncated)
    experience = {
        'position': dict(position),
        'state': state,
        'action': action['one_hot'],
        'logits': logits,
        'reward': float(reward),
        'value': value,
        'terminal': terminal,
        'truncated': bool(truncated and not terminated),
        'context': context,
        'last_action': last_action,
        'last_reward': last_reward,
    }
    for key, callback in policy.callback.items():
        experience[key] = callback(sess=sess, env=env, policy=policy, state=next_state, last_state=state,
                                   action=action, reward=reward, terminal=terminal, info=info, context=next_context,
                                   last_context=context, value=value)
    return Transition(experience, next_state, next_context, np.asarray(action['encoded']),
                      np.asarray(reward, dtype=np.float64), terminal, info, logits)


class EpisodeStatistics:
    """Episode statistics of one runner.

    Train episodes are accumulated and averaged every `summary_freq` local episodes: BTGym ``total_r, cpu_time,
    final_value, steps, agent_steps`` (``steps`` = bars, from ``env.get_stat()``; ``agent_steps`` = env steps),
    test mode ``total_r, steps`` (env steps). A test episode gives its own ``total_r, final_value, steps,
    agent_steps`` and is not counted in the train averages.
    """

    def __init__(self, test_mode, summary_freq):
        self.test_mode = bool(test_mode)
        self.summary_freq = positive_int(summary_freq, 'episode_summary_freq')
        self.keys = TEST_MODE_STAT_KEYS if self.test_mode else TRAIN_STAT_KEYS
        self._train = {key: [] for key in self.keys}

    def episode_result(self, env, reward_sum, length, last_info):
        """Statistics of the episode that just ended (BTGym: finishes it via ``env.get_stat()``)."""
        if self.test_mode:
            return {'total_r': float(reward_sum), 'steps': int(length)}
        stat = env.get_stat()
        return {
            'total_r': float(reward_sum),
            'cpu_time': stat['runtime'].total_seconds(),
            'final_value': float(last_info['broker_value']),
            'steps': stat['length'],
            'agent_steps': int(length),
        }

    def add_episode(self, env, local_episode, reward_sum, length, last_info, is_test):
        """Records a finished episode.

        Args:
            env: the environment (BTGym: ``get_stat()`` is called).
            local_episode: the runner's episode number.
            reward_sum: sum of the episode's rewards.
            length: number of env steps.
            last_info: info dict of the terminal step.
            is_test: test-data episode.

        Returns:
            (ep_summary or None, test_ep_summary or None).
        """
        result = self.episode_result(env, reward_sum, length, last_info)
        if is_test:
            return None, {key: result[key] for key in TEST_EPISODE_STAT_KEYS if key in result}
        for key in self.keys:
            self._train[key].append(result[key])
        if local_episode % self.summary_freq != 0:
            return None, None
        summary = {key: float(np.mean(values)) for key, values in self._train.items()}
        self._train = {key: [] for key in self.keys}
        return summary, None


class RolloutAssembler:
    """Builds rollouts of at most `rollout_length` frames of one episode from frames pushed one at a time.

    A frame's ``'r'`` is the next frame's value; the last frame of a rollout gets 0 after a terminated step, else
    the bootstrap value of the state the episode goes on from. Every completed frame goes through `remember`.

    Args:
        rollout_length: maximum number of frames.
        remember: callable(frame) called with every completed frame (replay memory).
    """

    def __init__(self, rollout_length, remember):
        self.rollout_length = rollout_length
        self.remember = remember
        self._start()

    def _start(self):
        self.rollout = Rollout()
        self.pending = None

    def _complete(self, frame, r):
        frame['r'] = np.asarray(r, dtype=np.float64).reshape(1)
        self.rollout.add(frame)
        self.remember(frame)

    def add(self, experience):
        """Adds the frame of the step just taken (without ``'r'``).

        Returns:
            True when the rollout is due (full, or its episode is over): call `finish` before adding more.
        """
        if self.pending is not None:
            self._complete(self.pending, experience['value'])
        self.pending = experience
        return experience['terminal'] or self.rollout.size + 1 >= self.rollout_length

    @property
    def needs_bootstrap(self):
        """Whether `finish` will call its `bootstrap_value` (the episode goes on after the last frame)."""
        return not (self.pending['terminal'] and not self.pending.get('truncated', False))

    def finish(self, bootstrap_value):
        """Completes the due rollout and starts the next one.

        Args:
            bootstrap_value: callable() -> V(current state), called only when `needs_bootstrap`.

        Returns:
            (Rollout, terminal).
        """
        last = self.pending
        self._complete(last, bootstrap_value() if self.needs_bootstrap else 0.0)
        rollout = self.rollout
        self._start()
        return rollout, last['terminal']


def collect_rollout(step, bootstrap_value, remember, rollout_length, stop_requested=None):
    """Collects up to `rollout_length` frames of one episode.

    The terminal check runs after every step, including the first, so ``rollout_length == 1`` works and a finished
    episode is never stepped; every frame goes through `remember` (the caller keeps test-episode frames out of
    replay memory).

    Args:
        step: callable() -> experience frame without ``'r'``; acts and advances the runner by one env step.
        bootstrap_value: callable() -> V(current state), used for the last frame of a non-terminal rollout.
        remember: callable(frame) called with every completed frame (replay memory).
        rollout_length: maximum number of frames.
        stop_requested: callable() -> bool, checked before every env step; True abandons the rollout.

    Returns:
        (Rollout, terminal), or None when stopped.
    """
    assembler = RolloutAssembler(rollout_length, remember)
    while stop_requested is None or not stop_requested():
        if assembler.add(step()):
            return assembler.finish(bootstrap_value)
    return None


def is_session_failure(error):
    """True for the errors a TensorFlow session run raises when the cluster fails under it (a task gone or
    unreachable, the session aborted or cancelled): the runner's task reports that cause, so its runners add no
    error of their own."""
    from btgym_aac.compat import tf

    return isinstance(error, (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.CancelledError,
                              tf.errors.DeadlineExceededError))


def env_task(worker_task, env_index):
    """Task number of a worker's env `env_index`: ``worker_task + 0.01 * env_index`` (renderings, loggers)."""
    return worker_task + 0.01 * env_index


def make_memory(memory_config):
    """Builds the replay memory.

    Args:
        memory_config: None (no replay: `DummyMemory`) or ``{'class_ref': callable, 'kwargs': dict}``.

    Returns:
        memory instance.
    """
    if memory_config is None:
        return DummyMemory()
    if not isinstance(memory_config, dict) or not callable(memory_config.get('class_ref')) \
            or not isinstance(memory_config.get('kwargs', {}), dict):
        raise ValueError("runner: memory_config must be None or {{'class_ref': callable, 'kwargs': dict}}, got "
                         "{!r}".format(memory_config))
    return memory_config['class_ref'](**memory_config.get('kwargs', {}))


class _EnvRunner:
    """State of one `BaseEnvRunnerFn` generator (see there).

    Subclass hooks: `record` sees every step's `Transition`, `render` makes the render summary of an episode that
    is due for one, `start_episode` starts every episode.
    """

    def __init__(self, sess, env, policy, task, rollout_length, episode_summary_freq, env_render_freq, test_mode,
                 memory, stop_event):
        self.sess, self.env, self.policy, self.task = sess, env, policy, task
        self.rollout_length = positive_int(rollout_length, 'rollout_length')
        self.env_render_freq = positive_int(env_render_freq, 'env_render_freq')
        self.test_mode = bool(test_mode)
        self.memory = memory
        self.stop_event = stop_event
        self.stats = EpisodeStatistics(test_mode, episode_summary_freq)
        self.local_episode = 0
        self.summaries = self._no_summaries()

    @staticmethod
    def _no_summaries():
        return {'ep_summary': None, 'test_ep_summary': None, 'render_summary': None}

    def stop_requested(self):
        return self.stop_event is not None and self.stop_event.is_set()

    def start_episode(self, previous_context=None):
        self.state = reset_env(self.env, self.policy, self.test_mode, record_episode=should_render(
            self.env, self.task, self.local_episode, self.env_render_freq))
        self.is_test = not self.test_mode and has_test_metadata(self.state)
        self.context = self.policy.get_initial_features(state=self.state, context=previous_context, sess=self.sess,
                                                        env=self.env)
        self.last_action = initial_action_code(self.env)
        self.last_reward = np.asarray(0.0)
        self.length = 0
        self.reward_sum = 0.0
        self.last_info = None

    def policy_inputs(self):
        """(observation, context, last action [1, E], last reward [1]) of the current state, as `act` takes them."""
        return self.state, self.context, self.last_action[None], self.last_reward[None]

    def step(self, acted=None):
        """Steps the env with `acted`, the policy's output for the current state (None: `policy.act` now).

        Returns:
            the step's experience frame (without ``'r'``).
        """
        if acted is None:
            acted = self.policy.act(*self.policy_inputs(), sess=self.sess)
        transition = step_with(acted, self.sess, self.env, self.policy, self.state, self.context, self.last_action,
                               self.last_reward, {'episode': self.local_episode, 'step': self.length})
        self.record(transition)
        self.length += 1
        self.reward_sum += float(transition.reward)
        self.state, self.context = transition.state, transition.context
        self.last_action, self.last_reward = transition.action_code, transition.reward
        self.last_info = transition.info
        return transition.experience

    def record(self, transition):
        """Called with the `Transition` of every step; does nothing here."""

    def render(self):
        """Render summary of the episode that just ended (see `render_env`)."""
        return render_env(self.env, self.test_mode, self.state)

    def bootstrap_value(self):
        return self.policy.get_value(*self.policy_inputs(), sess=self.sess)

    def remember(self, frame):
        if not self.is_test:
            self.memory.add(frame)

    def end_episode(self):
        ep_summary, test_ep_summary = self.stats.add_episode(
            self.env, self.local_episode, self.reward_sum, self.length, self.last_info, self.is_test)
        if ep_summary is not None:
            self.summaries['ep_summary'] = ep_summary
        if test_ep_summary is not None:
            self.summaries['test_ep_summary'] = test_ep_summary
        if should_render(self.env, self.task, self.local_episode, self.env_render_freq):
            self.summaries['render_summary'] = self.render()
        count_episode(self.sess, self.policy)
        self.local_episode += 1
        self.start_episode(previous_context=self.context)

    def data(self):
        """Yields one data dict per rollout once the memory is full (see `BaseEnvRunnerFn`)."""
        self.start_episode()
        while True:
            collected = collect_rollout(self.step, self.bootstrap_value, self.remember, self.rollout_length,
                                        stop_requested=self.stop_requested)
            if collected is None:
                return
            item = self.rollout_done(*collected)
            if item is not None:
                yield item

    def rollout_done(self, rollout, terminal):
        """Ends the episode after a terminal rollout; returns the rollout's data dict once the memory is full (with
        the summaries gathered since the last one), else None."""
        if terminal:
            self.end_episode()
        if not self.memory.is_full():
            return None
        item = dict(
            on_policy=rollout,
            off_policy=self.memory.sample_uniform(sequence_size=self.rollout_length),
            off_policy_rp=self.memory.sample_priority(exact_size=True),
            **self.summaries,
        )
        self.summaries = self._no_summaries()
        return item


def BaseEnvRunnerFn(sess, env, policy, task, rollout_length, summary_writer, episode_summary_freq, env_render_freq,
                    atari_test, ep_summary, memory_config, log, stop_event=None, **kwargs):
    """Generator of runner data: the default runtime logic of `RunnerThread`.

    Starts an episode (``env.reset(**policy.get_sample_config(env=env))``; test mode: ``env.reset()``) and loops:
    collects a rollout of at most `rollout_length` frames (shorter when the episode ends); at an episode end records its
    statistics, renders if due (see `should_render`), runs ``policy.inc_episode`` (when the trainer attached it)
    and starts the next episode with ``policy.get_initial_features(state=..., context=<final context>)``. Frames of
    train episodes go to replay memory; frames of test episodes (observation ``metadata['type']`` non-zero) never
    do. Once the memory is full (always for no memory), every rollout is yielded as
    ``{'on_policy': Rollout, 'off_policy': Rollout or None, 'off_policy_rp': Rollout or None,
    'ep_summary': dict or None, 'test_ep_summary': dict or None, 'render_summary': dict or None}``;
    summaries gathered while the memory was filling are delivered with the first yield, and each summary is sent
    once.

    Args:
        sess: TF session for the policy (None: the policy's default session).
        env: environment (see the module docstring for the two flavours).
        policy: policy (`act`, `get_value`, `get_initial_features`, `get_sample_config`, `callback`; optional
            `inc_episode`).
        task: runner task number; renderings only when ``task < 1``.
        rollout_length: maximum frames per rollout, >= 1.
        summary_writer: not read (the trainer writes the summaries); a runner function takes it because
            `RunnerThread` calls every `runner_fn_ref` with this positional signature.
        episode_summary_freq: average train-episode statistics every this many local episodes.
        env_render_freq: render every this many local episodes.
        atari_test: test-mode environment.
        ep_summary: not read, for the same reason as `summary_writer`.
        memory_config: replay memory config (see `make_memory`) or None.
        log: logbook logger; exceptions are logged there and re-raised (session failures and errors after a stop
            request are only re-raised: the task reports the cause).
        stop_event: threading.Event; once set, the generator returns before its next env step.
        **kwargs: ignored.

    Yields:
        data dicts as above.
    """
    yield from logged_runner_data(
        lambda: _EnvRunner(sess, env, policy, task, rollout_length, episode_summary_freq, env_render_freq,
                           atari_test, make_memory(memory_config), stop_event),
        task, log, stop_event)


def logged_runner_data(make_runner, task, log, stop_event=None):
    """Yields from ``make_runner().data()``; an exception (in `make_runner` too) is logged to `log` and re-raised,
    only re-raised for a session failure or after `stop_event` is set (the task reports the cause)."""
    try:
        yield from make_runner().data()
    except Exception as error:
        if not is_session_failure(error) and (stop_event is None or not stop_event.is_set()):
            log.exception('runner of task {} failed: {!r}'.format(task, error))
        raise
