"""Default runtime logic of the thread runner (`BaseEnvRunnerFn`) and the episode helpers the synchro runners share.

A runner alone talks to its environment: it acts with the policy, steps the env, records experience frames,
bootstraps n-step returns, keeps episode statistics, renders, and feeds replay memory.

Experience frame (one env step): ``{'position': {'episode', 'step'}, 'state': observation the action was taken in,
'action': one-hot [A], 'reward': float, 'value': V(state) [1], 'terminal': bool (the episode is over),
'truncated': bool (over by a time limit, not terminated), 'context': policy context before the step, 'last_action':
previous action code [E], 'last_reward': previous reward (0-d array), 'r': bootstrap [1]}`` plus one key per policy
callback (e.g. ``pixel_change``). ``'r'`` is V(next state) for a frame followed by another one, 0 after a
terminated step, V(final observation) after a truncated one (a time limit ends the episode but is not a terminal
state, so its return is bootstrapped), and for a rollout's last non-terminal frame the value of the state the next
rollout starts in.

Two environment flavours (the ``test`` / ``atari_test`` flag): BTGym (``reset(**sample_config)``, ``get_stat()``,
metadata in observations) and test mode (gymnasium Atari / classic-control wrappers: plain ``reset()``, no
``get_stat``, renderings taken from the observation).
"""
import numpy as np

from btgym_aac.algorithms.acting.episode import (
    EpisodeStatistics, count_episode, has_test_metadata, initial_action_code, positive_int, render_env, reset_env,
    should_render, step_with,
)
from btgym_aac.algorithms.acting.rollout_assembly import collect_rollout
from btgym_aac.algorithms.common.memory import DummyMemory


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
