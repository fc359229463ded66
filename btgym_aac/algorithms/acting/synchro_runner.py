"""In-process (synchronous) runners: every rollout is collected by an explicit `get_data()` call in the caller's
thread, so the caller controls the policy, its sync op and the episode sample config."""
import copy
import time
from collections.abc import Mapping, Sequence

import numpy as np

from btgym_aac.algorithms.acting.aux_renderings import (
    AUX_RENDER_MODES, check_aux_render_modes, draw_aux_renderings, new_episode_accumulator,
)
from btgym_aac.algorithms.acting.env_runner import (
    EpisodeStatistics, act_and_step, collect_rollout, count_episode, initial_action_code, make_memory, positive_int,
    render_env, reset_env, should_render,
)
from btgym_aac.algorithms.common.batches import is_subdict
from btgym_aac.env.rendering import BTgymRendering
from btgym_aac.logs import WARNING, get_logger

DEFAULT_TEST_CONDITIONS = {'state': {'metadata': {'type': 1, 'trial_type': 1}}}
"""An episode is a test episode when its initial experience matches this (test data of a target-domain trial)."""


def flat_info(info):
    """The step's info without nested entries (BTGym: 'bars' and 'action', whose keys vary from bar to bar), so
    that every frame of a `Rollout` has the same structure."""
    return {key: value for key, value in info.items()
            if isinstance(value, str) or not isinstance(value, (Mapping, Sequence))}


class BaseSynchroRunner:
    """Collects rollouts on demand, one `get_data()` call at a time.

    * A rollout's last non-terminal frame is bootstrapped with the value of the state that follows it, and the next
      rollout continues from that state, so no frame is in two rollouts; ``rollout_length == 1`` works.
    * Replay memory is sampled while it fills: uniform samples from the frames stored so far (None while it is
      empty), priority samples once it is full (None before).
    * Test-episode frames never enter memory, and test episodes never enter the train statistics.
    * Policy callbacks get ``state`` = the new observation and ``last_state`` = the observation acted in, as in the
      thread runner (see `act_and_step`).
    * ``terminal_context`` of `get_batch` holds the final contexts of the episodes that ended; `init_context`, when
      given, is passed to ``policy.get_initial_features`` as the previous context.
    * Renderings follow `should_render`; test-mode envs are supported (`test`).
    * `start_episode` only resets the env; the first step is an ordinary `get_experience`.
    """

    def __init__(self, env, task, rollout_length, episode_summary_freq, env_render_freq, ep_summary, test=False,
                 policy=None, data_sample_config=None, memory_config=None, test_conditions=None,
                 test_deterministic=True, slowdown_steps=0, global_step_op=None, aux_render_modes=None,
                 _implemented_aux_render_modes=None, name='synchro', log_level=WARNING, **kwargs):
        """
        Args:
            env: environment, stepped in the caller's thread.
            task: runner task number (``worker_task + 0.01 * env_index``); renderings only when ``task < 1``.
            rollout_length: default maximum frames per rollout.
            episode_summary_freq: train statistics every this many local episodes.
            env_render_freq: renderings every this many local episodes.
            ep_summary: not read (the trainers pass it to every runner class; summaries are built by the trainer).
            test: test-mode (Atari / classic-control) environment.
            policy: default policy.
            data_sample_config: default episode sample config (None: ``policy.get_sample_config(env=...)``).
            memory_config: replay memory config or None.
            test_conditions: nested dict an episode's initial experience must contain to be a test episode
                (default `DEFAULT_TEST_CONDITIONS`).
            test_deterministic: act greedily in test episodes.
            slowdown_steps: chief only: `sleep()` waits for the global step to advance this much.
            global_step_op: global step tensor (for `sleep()`).
            aux_render_modes: extra renderings; each must be in `_implemented_aux_render_modes`.
            _implemented_aux_render_modes: extra renderings a subclass implements.
            name: runner name (logger ``<name>_Runner_<task>``).
            log_level: logbook level.
            **kwargs: ignored.
        """
        self.env = env
        self.task = task
        self.name = name
        self.rollout_length = positive_int(rollout_length, 'rollout_length')
        self.episode_summary_freq = positive_int(episode_summary_freq, 'episode_summary_freq')
        self.env_render_freq = positive_int(env_render_freq, 'env_render_freq')
        self.test_mode = bool(test)
        self.policy = policy
        self.data_sample_config = data_sample_config
        self.memory_config = memory_config
        self.test_conditions = DEFAULT_TEST_CONDITIONS if test_conditions is None else test_conditions
        self.test_deterministic = test_deterministic
        self.log = get_logger('{}_Runner'.format(name), task, log_level=log_level)

        self.aux_render_modes = check_aux_render_modes(aux_render_modes, type(self).__name__,
                                                       implemented=tuple(_implemented_aux_render_modes or ()))

        self.global_step_op = global_step_op
        self.slowdown_steps = int(slowdown_steps) if task < 1 and global_step_op is not None else 0

        self.memory = make_memory(memory_config)
        self.stats = EpisodeStatistics(self.test_mode, self.episode_summary_freq)
        self.sess = None
        self.local_episode = 0
        self.length = 0
        self.reward_sum = 0.0
        self.terminal_end = True
        self.is_test = False
        self.state = self.context = self.last_action = self.last_reward = self.info = None
        self.ep_accum = None

    # ------------------------------------------------------------------------------------------- lifecycle

    def start_runner(self, sess, summary_writer, stop_event=None, **kwargs):
        """Trainer entry point: same as `start`; `stop_event` is ignored (data is collected in the caller's thread,
        so nothing waits on another thread)."""
        self.start(sess, summary_writer, **kwargs)

    def start(self, sess, summary_writer, init_context=None, data_sample_config=None):
        """Starts the first episode; with a replay memory, collects rollouts until it is full.

        Args:
            sess: TF session for the policy (None: its default session).
            summary_writer: not read (the trainer writes the summaries); part of the runners' `start_runner`
                interface.
            init_context: context passed to ``policy.get_initial_features`` for the first episode.
            data_sample_config: sample config of the first episode.
        """
        if self.policy is None:
            raise ValueError('{}: no policy; pass policy=... to the constructor'.format(type(self).__name__))
        self.sess = sess
        self.start_episode(self.policy, init_context, data_sample_config)
        if self.memory_config is not None:
            while not self.memory.is_full():
                self.get_data()
            self.log.notice('replay memory filled')
        self.log.notice('started collecting data')

    def stop(self):
        """Nothing runs in the background; present for the trainer's runner interface."""

    def sleep(self, poll_interval=0.05, timeout=600):
        """Chief runner with `slowdown_steps`: waits until the global step has advanced by `slowdown_steps`.

        Raises:
            TimeoutError: the global step did not advance enough within `timeout` seconds.
        """
        if self.slowdown_steps <= 0:
            return
        target = self.sess.run(self.global_step_op) + self.slowdown_steps
        deadline = time.monotonic() + timeout
        while self.sess.run(self.global_step_op) < target:
            if time.monotonic() > deadline:
                raise TimeoutError('{}: global step did not reach {} within {} s'.format(self.name, target, timeout))
            time.sleep(poll_interval)

    # ------------------------------------------------------------------------------------------- experience

    def start_episode(self, policy=None, init_context=None, data_sample_config=None):
        """Starts a new episode (no step is taken).

        Counts the episode (``inc_episode`` of the runner's policy, ``local_episode += 1``), resets the env with
        `data_sample_config` (default: the runner's, else ``policy.get_sample_config(env=...)``), decides whether it is
        a test episode (`test_conditions` matched against ``{'state': first observation}``) and gets the initial
        context ``policy.get_initial_features(state=..., context=init_context)``.

        Args:
            policy: policy of the episode (default: the runner's).
            init_context: previous context handed to ``get_initial_features`` (None: a fresh one).
            data_sample_config: episode sample config.
        """
        policy = policy or self.policy
        self.length = 0
        self.reward_sum = 0.0
        count_episode(self.sess, self.policy)
        self.local_episode += 1
        config = data_sample_config if data_sample_config is not None else self.data_sample_config
        self.state = reset_env(self.env, policy, self.test_mode, config, record_episode=should_render(
            self.env, self.task, self.local_episode, self.env_render_freq))
        self.is_test = bool(is_subdict(self.test_conditions, {'state': self.state}))
        self.context = policy.get_initial_features(state=self.state, context=init_context, sess=self.sess,
                                                   env=self.env)
        self.last_action = initial_action_code(self.env)
        self.last_reward = np.asarray(0.0)
        self.ep_accum = new_episode_accumulator()
        self.terminal_end = False

    def get_experience(self, policy, state, context, action, reward, policy_sync_op=None):
        """Takes one step (possibly the terminal one); acts greedily in test episodes if `test_deterministic`.

        Args:
            policy: policy to act with.
            state, context, action, reward: current observation, context, previous action code and reward.
            policy_sync_op: op run before acting (e.g. global -> local weights), or None.

        Returns:
            (experience without 'r' but with 'info' (see `flat_info`), next state, next context, action code [E],
            reward).
        """
        if policy_sync_op is not None:
            self.sess.run(policy_sync_op)
        transition = act_and_step(self.sess, self.env, policy, state, context, action, reward,
                                  {'episode': self.local_episode, 'step': self.length},
                                  deterministic=self.is_test and self.test_deterministic)
        self.ep_accum['logits'].append(transition.logits)
        self.ep_accum['value'].append(transition.experience['value'])
        self.ep_accum['context'].append(transition.context)
        self.info = transition.info
        experience = transition.experience
        experience['info'] = flat_info(transition.info)
        self.length += 1
        self.reward_sum += float(transition.reward)
        return experience, transition.state, transition.context, transition.action_code, transition.reward

    def _advance(self, policy, policy_sync_op):
        """Takes a step from the current state, keeps the next one; returns the experience."""
        experience, self.state, self.context, self.last_action, self.last_reward = self.get_experience(
            policy, self.state, self.context, self.last_action, self.last_reward, policy_sync_op)
        return experience

    def _remember(self, frame):
        if not self.is_test:
            self.memory.add(frame)

    # ---------------------------------------------------------------------------------------------- summaries

    def get_ep_render(self, is_test=False):
        """Renderings of the episode that just ended, or None (see `should_render`).

        Returns:
            dict mode -> uint8 image [1, H, W, 3], or None.
        """
        if not should_render(self.env, self.task, self.local_episode, self.env_render_freq):
            return None
        return render_env(self.env, self.test_mode, self.state)

    def _episode_summaries(self):
        ep_summary, test_ep_summary = self.stats.add_episode(
            self.env, self.local_episode, self.reward_sum, self.length, self.info, self.is_test)
        return {'ep_summary': ep_summary, 'test_ep_summary': test_ep_summary,
                'render_summary': self.get_ep_render(self.is_test)}

    def _sample_memory(self, rollout_length):
        """(uniform sample or None while empty, priority sample or None until full)."""
        off_policy = self.memory.sample_uniform(sequence_size=rollout_length) if len(self.memory) else None
        off_policy_rp = self.memory.sample_priority(exact_size=True) if self.memory.is_full() else None
        return off_policy, off_policy_rp

    # ------------------------------------------------------------------------------------------------- data

    def get_data(self, policy=None, policy_sync_op=None, init_context=None, data_sample_config=None,
                 rollout_length=None, force_new_episode=False):
        """Collects one rollout of at most `rollout_length` frames (shorter when the episode ends).

        Args:
            policy: policy to act with (default: the runner's).
            policy_sync_op: op run before every action, or None.
            init_context: previous context for ``get_initial_features`` if a new episode starts here.
            data_sample_config: sample config if a new episode starts here.
            rollout_length: overrides the runner's rollout length.
            force_new_episode: start a new episode even if the current one is running.

        Returns:
            {'on_policy': Rollout, 'terminal': bool, 'off_policy': Rollout or None, 'off_policy_rp': Rollout or
            None, 'ep_summary': dict or None, 'test_ep_summary': dict or None, 'render_summary': dict or None,
            'is_test': bool}.
        """
        policy = policy or self.policy
        rollout_length = positive_int(rollout_length or self.rollout_length, 'rollout_length')
        if self.terminal_end or force_new_episode:
            self.start_episode(policy, init_context, data_sample_config)
        rollout, self.terminal_end = collect_rollout(
            lambda: self._advance(policy, policy_sync_op),
            lambda: policy.get_value(self.state, self.context, self.last_action[None], self.last_reward[None],
                                     sess=self.sess),
            self._remember, rollout_length)
        summaries = dict.fromkeys(('ep_summary', 'test_ep_summary', 'render_summary'))
        if self.terminal_end:
            summaries = self._episode_summaries()
        off_policy, off_policy_rp = self._sample_memory(rollout_length)
        return dict(on_policy=rollout, terminal=self.terminal_end, off_policy=off_policy,
                    off_policy_rp=off_policy_rp, is_test=self.is_test, **summaries)

    def get_batch(self, size, policy=None, policy_sync_op=None, require_terminal=True, same_trial=True,
                  init_context=None, data_sample_config=None):
        """Collects at least `size` rollouts, the first from a new episode.

        Args:
            size: minimum number of rollouts.
            policy, policy_sync_op, init_context: as in `get_data`.
            require_terminal: keep collecting until at least one rollout ends its episode.
            same_trial: every new episode of the batch comes from the first episode's trial (its
                ``trial_config['get_new']`` is set False after the first; the caller's dict is not changed).
            data_sample_config: sample config of every new episode (default: the runner's, else one
                ``policy.get_sample_config(env=...)`` call when `same_trial`, a call per episode otherwise).

        Returns:
            {'data': [data dicts], 'terminal_context': [final context of every episode that ended]}.
        """
        size = positive_int(size, 'size')
        config = data_sample_config if data_sample_config is not None else self.data_sample_config
        if same_trial and not self.test_mode:
            config = copy.deepcopy(config if config is not None else (policy or self.policy).get_sample_config(
                env=self.env))
            if 'trial_config' not in config:
                raise ValueError('get_batch(same_trial=True): data_sample_config needs a trial_config, got '
                                 '{!r}'.format(config))
        batch, terminal_context = [], []
        while len(batch) < size or (require_terminal and not terminal_context):
            data = self.get_data(policy=policy, policy_sync_op=policy_sync_op, init_context=init_context,
                                 data_sample_config=config, force_new_episode=not batch)
            batch.append(data)
            if same_trial and not self.test_mode:
                config['trial_config']['get_new'] = False
            if data['terminal']:
                terminal_context.append(self.context)
        return {'data': batch, 'terminal_context': terminal_context}


class VerboseSynchroRunner(BaseSynchroRunner):
    """`BaseSynchroRunner` that adds policy renderings of each rendered episode, at some cost in speed:

    * ``action_prob``: softmax of the action logits over the episode (one line per action);
    * ``value_fn``: the value estimates over the episode;
    * ``lstm_1_h``, ``lstm_2_h``: heat-maps of the first layer's h state of LSTM-1 / LSTM-2, min-max scaled to
      0..255 (needs a two-LSTM context such as `StackedLstmPolicy`'s).

    Images are drawn on matplotlib Agg canvases (no pyplot, so nothing needs initialising first) and returned as
    uint8 [1, H, W, 3] arrays next to the env's own renderings.
    """

    implemented_aux_render_modes = AUX_RENDER_MODES

    def __init__(self, name='verbose_synchro', aux_render_modes=implemented_aux_render_modes, **kwargs):
        """
        Args:
            name: runner name.
            aux_render_modes: subset of `implemented_aux_render_modes`.
            **kwargs: `BaseSynchroRunner` arguments.
        """
        super().__init__(name=name, aux_render_modes=aux_render_modes,
                         _implemented_aux_render_modes=self.implemented_aux_render_modes, **kwargs)
        self.plotter = BTgymRendering(render_modes=())

    def get_ep_render(self, is_test=False):
        """The env's renderings plus the aux renderings, or None (see `should_render`)."""
        render_stat = super().get_ep_render(is_test)
        if render_stat is not None:
            render_stat.update(draw_aux_renderings(self.plotter, self.aux_render_modes, self.ep_accum,
                                                   self.env.action_space))
        return render_stat
