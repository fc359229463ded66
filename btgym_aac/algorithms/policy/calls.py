"""The session calls of a policy (acting, values, pixel-control targets), apart from the graph it builds.

`PolicyCalls` is a mixin of `BaseAacPolicy`: it reads the tensors the policy's constructor made (`on_*`, `pc_*`,
`ac_space`) and never adds ops, so every call works on a finalized graph. Each call runs in the `sess` keyword
argument when given, else in the default session (`resolve_session`). A batched call (`act_batch`,
`get_value_batch`) stacks the inputs of K envs into one acting batch and splits the contexts it returns.
"""
import numpy as np

from btgym_aac.algorithms.common.batches import map_nested
from btgym_aac.algorithms.common.placeholders import feed_dict_from_nested, feed_dict_rnn_context
from btgym_aac.algorithms.common.sessions import CallableCache
from btgym_aac.compat import tf
from btgym_aac.spaces import action_packs


def resolve_session(sess=None):
    """Returns `sess`, or the default session when `sess` is None.

    Raises:
        RuntimeError: no session given and no default session set.
    """
    session = sess if sess is not None else tf.get_default_session()
    if session is None:
        raise RuntimeError('policy: no TensorFlow session; pass sess=... or call inside `with sess.as_default():`')
    return session


def stack_observations(observations):
    """Stacks K observations (identically nested dicts) leaf by leaf into arrays with a new batch axis [K, ...]."""
    return map_nested(lambda *leaves: np.stack([np.asarray(leaf) for leaf in leaves]), *observations)


def stack_contexts(contexts):
    """Concatenates K RNN contexts (nested tuples of [1, units] arrays) along their batch axis: leaves [K, units]."""
    return map_nested(lambda *leaves: np.concatenate([np.asarray(leaf) for leaf in leaves], axis=0), *contexts)


def split_context(context, count):
    """The K single-env contexts (leaves [1, units]) of a batched context (leaves [K, units])."""
    return [map_nested(lambda leaf, index=index: leaf[index:index + 1], context) for index in range(count)]


class PolicyCalls:
    """Acting and evaluation calls on a built policy graph (see `BaseAacPolicy`)."""

    def get_initial_features(self, sess=None, **kwargs):
        """Returns the zero context (batch 1), structured as `on_lstm_init_state`.

        Args:
            sess: session (None: the default session).
            **kwargs: runner arguments such as `state`, `context`, ignored.
        """
        return resolve_session(sess).run(self.on_lstm_init_state)

    def _run_step(self, sess, name, fetches, feed):
        """Runs `fetches` with `feed` through a `feed_callable` made once per session, fetch name and feed keys.

        The callables live in `self._step_callables`, made on first use, since subclasses may not call this
        class's `__init__`.
        """
        cache = self.__dict__.setdefault('_step_callables', CallableCache())
        return cache.run(resolve_session(sess), name, fetches, feed)

    def _step_feed(self, observation, lstm_state, last_action, last_reward):
        """Feed dict of one acting step: one frame, one sequence of length 1, `train_phase=False`."""
        return self._batch_feed([observation], [lstm_state], last_action, last_reward)

    def _batch_feed(self, observations, lstm_states, last_actions, last_rewards):
        """Feed dict of one acting step of K envs: K frames, K sequences of length 1, `train_phase=False`."""
        count, depth = len(observations), self.ac_space.encoded_depth
        last_actions = np.asarray(last_actions, dtype=np.float32)
        last_rewards = np.asarray(last_rewards, dtype=np.float32)
        if last_actions.size != count * depth or last_rewards.size != count:
            raise ValueError('policy: expected last_action of {} values ([{}, {}]) and {} last_reward value(s), got '
                             'shapes {} and {}'.format(count * depth, count, depth, count, last_actions.shape,
                                                       last_rewards.shape))
        context = lstm_states[0] if count == 1 else stack_contexts(lstm_states)
        feed = feed_dict_rnn_context(self.on_lstm_state_pl_flatten, context)
        if count == 1:
            feed.update(feed_dict_from_nested(self.on_state_in, observations[0], expand_batch=True))
        else:
            feed.update(feed_dict_from_nested(self.on_state_in, stack_observations(observations)))
        feed.update({
            self.on_last_a_in: last_actions.reshape(count, depth),
            self.on_last_reward_in: last_rewards.reshape(count),
            self.on_batch_size: count,
            self.on_time_length: [1] * count,
            self.train_phase: False,
        })
        return feed

    def _action_packs(self, logits, deterministic):
        """Chooses one action per row of logits [K, A] (`spaces.action_packs`); returns K action packs."""
        cache = self.__dict__.setdefault('_category_packs', {})  # made here: subclasses need not call an __init__
        return action_packs(self.ac_space, logits, deterministic, getattr(self, 'action_dp_alpha', None), cache)

    def act(self, observation, lstm_state, last_action, last_reward, deterministic=False, sess=None):
        """Chooses an action for one observation (one `session.run`).

        Discrete spaces: a draw from `softmax(logits)` (float64, never raises for peaked logits), or the argmax when
        `deterministic`; with the per-asset encoding one such choice per asset from its own logits. Continuous
        spaces: `sample_dp(logits, action_dp_alpha)`, or `softmax(logits)` when `deterministic`.

        Args:
            observation: one observation, nested like `ob_space` (no batch dim).
            lstm_state: context, structured as `on_lstm_init_state` (leaves [1, units]).
            last_action: previous action code, [1, E] (or [E]).
            last_reward: previous reward, [1] (or scalar).
            deterministic: act greedily.
            sess: session (None: the default session).

        Returns:
            action_pack {'environment': OrderedDict asset -> action, 'encoded': [E], 'one_hot': [A]};
            logits [A]; value [1]; context structured as `on_lstm_init_state`.
        """
        feed = self._step_feed(observation, lstm_state, last_action, last_reward)
        logits, value, context = self._run_step(sess, 'act', [self.on_logits, self.on_vf, self.on_lstm_state_out], feed)
        return self._action_packs(logits, deterministic)[0], logits[0], value, context

    def get_value(self, observation, lstm_state, last_action, last_reward, sess=None):
        """Value estimate of one observation (arguments as in `act`); returns a float."""
        feed = self._step_feed(observation, lstm_state, last_action, last_reward)
        return float(self._run_step(sess, 'value', self.on_vf, feed)[0])

    def act_batch(self, observations, lstm_states, last_actions, last_rewards, deterministic=False, sess=None):
        """`act` for the observations of K envs in one `session.run` (the policy's graph takes any batch).

        Each env's rows are computed as in its own `act` call; the one difference is that noisy layers
        (`noisy_linear`) draw one noise sample per session run, shared by the K envs.

        Args:
            observations: list of K observations.
            lstm_states: list of K contexts, each structured as `on_lstm_init_state`.
            last_actions: previous action codes [K, E].
            last_rewards: previous rewards [K].
            deterministic: act greedily.
            sess: session (None: the default session).

        Returns:
            list of K tuples (action pack, logits [A], value [1], context), as `act` returns.
        """
        count = len(observations)
        feed = self._batch_feed(observations, lstm_states, last_actions, last_rewards)
        logits, values, context = self._run_step(
            sess, 'act', [self.on_logits, self.on_vf, self.on_lstm_state_out], feed)
        contexts = split_context(context, count)
        packs = self._action_packs(logits, deterministic)
        return [(packs[index], logits[index], values[index:index + 1], contexts[index]) for index in range(count)]

    def get_value_batch(self, observations, lstm_states, last_actions, last_rewards, sess=None):
        """Value estimates of the observations of K envs in one `session.run` (arguments as in `act_batch`).

        Returns:
            float64 array [K].
        """
        feed = self._batch_feed(observations, lstm_states, last_actions, last_rewards)
        return np.asarray(self._run_step(sess, 'value', self.on_vf, feed), dtype=np.float64).reshape(-1)

    def get_pc_target(self, state, last_state, sess=None, **kwargs):
        """Pixel-change target between two observations (the runner's pixel-change callback).

        Args:
            state: observation dict with `external` [H, W, C].
            last_state: previous observation dict.
            sess: session (None: the default session).
            **kwargs: other runner locals, ignored.

        Returns:
            array [H', W']: channel mean of `|s - s_prev|`, cropped, max-pooled by `pc_estimator_stride`.
        """
        if self.pc_target is None:
            raise RuntimeError('{}: pixel control was not built (pixel_control=False)'.format(type(self).__name__))
        feed = {self.pc_change_state_in: state['external'], self.pc_change_last_state_in: last_state['external']}
        return resolve_session(sess).run(self.pc_target, feed)[0, ..., 0]
