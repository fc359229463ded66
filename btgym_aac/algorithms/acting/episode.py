"""One episode of a runner, step by step: reset, act and step, render, and the episode statistics.

The experience frames these steps make are described in `env_runner`.
"""
import collections

import numpy as np


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

