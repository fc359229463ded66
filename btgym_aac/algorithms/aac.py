"""BaseAAC: the advantage actor-critic trainer framework; A3C, Unreal and PPO on top.

A trainer builds a global (parameter-server) and a local policy (placed by `devices`), its target placeholders and
total loss (`objective`), its learner (`learner`: the train and sync ops, and the train step that runs them) and
runners that collect rollouts; `process()` is one train step: one rollout from every runner, trained on by
`learner.Learner.train_step` (feed, session run, summaries). Settings are read from `self.config` (`AacConfig`),
the train step's ops from `self.train_ops`.

Extension points for a subclass (walked through in docs/custom-algorithms.md):
    * `_make_loss(pi, pi_prime)`: returns (loss, summaries); call `_make_base_loss` for the standard terms and add
      your own (weights, decays: any tensor of the graph). Extra placeholders made here (or in
      `worker_device_callback_0`) get their values from `extra_feed`.
    * `extra_feed(batches)`: dict of extra placeholder -> value for a train step, from its `TrainBatches`.
    * `worker_device_callback_0()`: build graph parts on the worker device after the local policies.
    * summaries: those returned by `_make_loss` join the model summary (every `model_summary_freq` steps).
    * your own policy (`policy_config`; the contract is `policy.interface.AacPolicy`) and runner (`runner_config`).
Everything else (devices, parameter-server transfers, sync and step ordering) stays inside the framework.
"""
import contextlib

import numpy as np

from btgym_aac.algorithms.config import SETTING_NAMES, configured, fixed_kwargs
from btgym_aac.algorithms.common.placeholders import copied_in_getter
from btgym_aac.algorithms.nn.losses import aac_loss_def, pc_loss_def, ppo_loss_def, rp_loss_def, value_fn_loss_def
from btgym_aac.algorithms.policy.interface import check_spaces
from btgym_aac.algorithms.policy.interface import AUXILIARY_MEMBERS, check_policy
from btgym_aac.algorithms.policy.interface import OFF_POLICY_PASS_FLAGS, set_off_policy_pass, unread_policy_kwargs
from btgym_aac.algorithms.acting.replica import ActingReplica
from btgym_aac.algorithms.acting import BaseEnvRunnerFn, RunnerThread
from btgym_aac.algorithms.acting.construction import SampleCycles
from btgym_aac.algorithms.summaries import RunnerSummaryWriter, make_episode_summaries
from btgym_aac.algorithms.devices import global_device, make_step_counters, on_device, worker_device
from btgym_aac.algorithms.learner import (Learner, TrainOps, decayed_learn_rate, make_train_ops, rollout_is_train,
                                          step_feed)
from btgym_aac.algorithms.objective import (LossBuilders, base_loss, make_train_targets, on_policy_divergence,
                                            pixel_control_q_target)
from btgym_aac.algorithms.acting.construction import RunnerSetup, make_runners
from btgym_aac.legacy.trainer_arguments import IGNORED_ORIGINAL_ARGUMENTS, check_removed_hooks, original_attributes
from btgym_aac.class_refs import resolved
from btgym_aac.compat import tf
from btgym_aac.logs import WARNING, get_logger

SYNCED_SCOPES = ('local', 'local_prime')
"""Scopes of the policies whose variables the learner overwrites before their first use: the local policy (synced
from the global one when the trainer starts) and the target policy (synced from the local one at the first step)."""
ORIGINAL_SETTING_ATTRIBUTES = (SETTING_NAMES - {'acting_replica'}) | {
    'use_any_aux_tasks', 'use_memory', 'use_target_policy', 'use_global_network'}
"""The original's attribute names of a trainer's settings: read-only views of `config` for ported code
(`acting_replica` is the trainer's replica object, not the setting)."""
ORIGINAL_OP_ATTRIBUTES = set(TrainOps._fields) - {'train_op'}
"""The original's attribute names of the train ops: read-only views of `train_ops` (`train_op` is set itself)."""


class BaseAAC(original_attributes(ORIGINAL_SETTING_ATTRIBUTES, ORIGINAL_OP_ATTRIBUTES)):
    """Advantage actor-critic trainer framework (A3C / UNREAL / PPO).

    Args:
        env: environment or list of environments (one runner each); `DictSpace` observations with an `external`
            key and an `ActionDictSpace`.
        task: worker index (0 is the chief).
        policy_config: {'class_ref': policy class, 'kwargs': dict}; kwargs that no part of the policy reads are
            logged as warnings (see `policy.interface.unread_policy_kwargs`).
        log_level: logbook level.
        name: variable scope of the worker graph.
        on_policy_loss, off_policy_loss, vr_loss, rp_loss, pc_loss: loss builders (see `nn.losses`).
        runner_config: {'class_ref', 'kwargs'} of the runners; default `RunnerThread` with `runner_fn_ref`.
        runner_fn_ref: runner logic for the default runner.
        cluster_spec: cluster dict (`{'ps': [...], 'worker': [...]}`); None builds both copies on this process's
            default device (single-process use without a parameter server).
        random_seed: seeds numpy (before the log-uniform settings are drawn) and the graph-level TF seed.
        config: an `AacConfig`; the settings given as keyword arguments replace its fields. None: `AacConfig()`.
        global_step_op, global_episode_op, inc_episode_op: external counters (for `_use_global_network=False`).
        **settings: the fields of `AacConfig` (`model_gamma`, `opt_learn_rate`, `rollout_length`, ...: see its
            docstrings). Arguments of the original that these trainers do not use (`IGNORED_ORIGINAL_ARGUMENTS`:
            `opt_decay`, `opt_momentum`, `replay_batch_size`) and unknown ones are logged as warnings and ignored.

    Attributes:
        config: the resolved `AacConfig` (ranges drawn, defaults filled in) that the trainer, its learner and its
            runners read.
        train_ops: the train step's `learner.TrainOps` (None without a global network).
        learner: the `learner.Learner` that runs the train steps (None without a global network).
        The original's attribute names of the settings (`trainer.model_gamma`, `trainer.use_memory`, ...) and of
        the train ops (`trainer.sync`, `trainer.grads`, ...) are read-only views of `config` and `train_ops`, for
        code ported from the original (`legacy.trainer_arguments.original_attributes`).

    Raises:
        ValueError: a setting is out of its range (counts and periods whole numbers >= 1, discounts and lambdas in
            [0, 1], learn rates and loss weights >= 0; see `config.AacConfig`); the message names it and its value,
            or settings are given with a config that is resolved already.
        TypeError: the env's spaces are not DictSpace / ActionDictSpace, the policy lacks a member the enabled
            tasks need (see `policy.interface.check_policy`), or a subclass overrides a hook of the original that
            this trainer no longer calls (`legacy.trainer_arguments.REMOVED_HOOKS`).
        ValueError: the observation space has no `external` key.

    Class attribute `acting_replica_class`: the `ActingReplica` class used (subclasses may replace it).
    """
    acting_replica_class = ActingReplica

    def __init__(self, env, task, policy_config, log_level=WARNING, name='AAC', on_policy_loss=aac_loss_def,
                 off_policy_loss=aac_loss_def, vr_loss=value_fn_loss_def, rp_loss=rp_loss_def, pc_loss=pc_loss_def,
                 runner_config=None, runner_fn_ref=BaseEnvRunnerFn, cluster_spec=None, random_seed=None, *,
                 config=None, global_step_op=None, global_episode_op=None, inc_episode_op=None, **settings):
        self.task, self.log_level, self.name = task, log_level, name
        self.log = get_logger(name, task, log_level=log_level)
        check_removed_hooks(type(self), BaseAAC)
        self._warn_ignored({key: value for key, value in settings.items() if key not in SETTING_NAMES})
        self.env_list = list(env) if isinstance(env, (list, tuple)) else [env]
        check_spaces(self.env_list[0].observation_space, self.env_list[0].action_space, owner='trainer')
        if random_seed is not None:
            np.random.seed(random_seed)
            tf.set_random_seed(random_seed)
        self.random_seed, self.cluster_spec = random_seed, cluster_spec
        self.on_policy_loss, self.off_policy_loss = on_policy_loss, off_policy_loss
        self.vr_loss, self.rp_loss, self.pc_loss = vr_loss, rp_loss, pc_loss
        self.config = configured(config, {key: value for key, value in settings.items() if key in SETTING_NAMES})
        self._log_drawn_settings()
        self.policy_class = resolved(policy_config['class_ref'])
        self.policy_kwargs = self._policy_kwargs(policy_config)
        self.runner_config = runner_config or {'class_ref': RunnerThread, 'kwargs': {'runner_fn_ref': runner_fn_ref}}
        self.global_step, self.global_episode, self.inc_episode = global_step_op, global_episode_op, inc_episode_op
        self.reset_global_step = None
        self.summary_writer = None
        self.worker_device = worker_device(task)
        self.train_ops = self.learner = None
        self._build_graph()
        self._sample_cycles = SampleCycles(self.config.episode_train_test_cycle, self.config.episodes_per_trial)
        self.acting_replica = None
        acting_replica = self.config.acting_replica
        if acting_replica or (acting_replica is None and cluster_spec is not None):
            self.acting_replica = self.acting_replica_class(
                self.local_network, self.policy_class, self.policy_kwargs, refresh_period=self.config.rollout_length,
                random_seed=random_seed)
        self.runners = self._make_runners(self.acting_replica or self.local_network)

    # -------------------------------------------------------------------------------------------- settings

    def _warn_ignored(self, kwargs):
        for key in kwargs:
            if key in IGNORED_ORIGINAL_ARGUMENTS:
                self.log.warning('argument `{}` of the original btgym is not used here ({}); ignored'.format(
                    key, IGNORED_ORIGINAL_ARGUMENTS[key]))
            else:
                self.log.warning('unexpected argument `{}` ignored'.format(key))

    def _log_drawn_settings(self):
        config = self.config
        self.log.notice('learn_rate: {:1.6f}, entropy_beta: {:1.6f}'.format(config.opt_learn_rate, config.model_beta))
        if config.use_any_aux_tasks or config.use_off_policy_aac:
            self.log.notice('off_aac_lambda: {:1.6f}, vr_lambda: {:1.6f}, pc_lambda: {:1.6f}, rp_lambda: {:1.6f}'
                            .format(config.off_aac_lambda, config.vr_lambda, config.pc_lambda, config.rp_lambda))

    def _policy_kwargs(self, policy_config):
        """The user's policy kwargs (those no part of the policy reads are warned about) plus what the trainer
        tells every policy."""
        kwargs = dict(policy_config.get('kwargs', {}))
        for key in unread_policy_kwargs(self.policy_class, kwargs):
            self.log.warning('policy argument `{}` is read by no part of {}; ignored'.format(
                key, self.policy_class.__name__))
        config = self.config
        kwargs.update(ob_space=self.env_list[0].observation_space, ac_space=self.env_list[0].action_space,
                      rp_sequence_size=config.rp_sequence_size, aux_estimate=config.use_any_aux_tasks,
                      static_rnn=config.time_flat, task=self.task, cluster_spec=self.cluster_spec)
        if config.use_pixel_control:
            kwargs.setdefault('pixel_control', True)
        set_off_policy_pass(self.policy_class, kwargs,
                            {flag: getattr(config, flag) for flag in OFF_POLICY_PASS_FLAGS})
        return kwargs

    # ------------------------------------------------------------------------------------------------ graph

    def _build_graph(self):
        """Global policy (on the parameter servers), local policies, target placeholders, loss, train and sync
        ops, summaries."""
        config = self.config
        with on_device(self.cluster_spec, global_device(self.cluster_spec, self.task)):
            self.network = self._make_policy('global') if config.use_global_network else None
        with on_device(self.cluster_spec, self.worker_device), tf.variable_scope(self.name):
            self.local_network = pi = self._make_policy('local')
            self.local_network_prime = pi_prime = \
                self._make_policy('local_prime') if config.use_target_policy else None
            check_policy(pi, {flag: getattr(config, flag) for flag in AUXILIARY_MEMBERS})
            self.worker_device_callback_0()
            pi.update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS, scope='.*local.*')
            self.learn_rate_decayed = self._decayed_learn_rate()
            self.targets = make_train_targets(self.env_list[0].action_space.one_hot_depth, config.use_pixel_control,
                                              config.use_value_replay, config.use_reward_prediction)
            self.pc_q_target = pixel_control_q_target(pi.pc_q, self.targets.pixel_control) \
                if config.use_pixel_control else None
            self.loss, self.loss_summaries = self._make_loss(pi=pi, pi_prime=pi_prime)
            self.train_op = self._make_train_op(pi, pi_prime, self.network) if config.use_global_network else []
            self.model_summary_op, self.ep_summary = self._combine_summaries(pi, self.loss_summaries)
            if self.train_ops is not None:
                self.learner = Learner(self.train_ops, config, self.targets, pi,
                                       pi_prime if config.use_target_policy else None, self.model_summary_op,
                                       self.extra_feed, self.task,
                                       [getattr(env, 'dataset', None) for env in self.env_list], self.global_step,
                                       self._minibatch_rng())

    def _minibatch_rng(self):
        """The learner's generator of minibatch shuffles: seeded by `random_seed` and the task when seeded."""
        return np.random.default_rng(None if self.random_seed is None else [self.random_seed, self.task])

    def _decayed_learn_rate(self):
        """`opt_learn_rate` decayed linearly to `opt_end_learn_rate` over `opt_decay_steps` global steps."""
        config = self.config
        return decayed_learn_rate(self.global_step, config.opt_learn_rate, config.opt_end_learn_rate,
                                  config.opt_decay_steps)

    def worker_device_callback_0(self):
        """Extension point: called on the worker device, in the trainer's variable scope, after the local policies
        are built and before the loss (`self.local_network` is ready)."""

    def _make_policy(self, scope):
        """Builds a policy in `scope`; the global one also gets the step counters, local ones point to them. With a
        global policy the local ones start at zeros: the learner copies their values in before any use."""
        synced = self.config.use_global_network and scope in SYNCED_SCOPES
        with tf.variable_scope(scope, custom_getter=copied_in_getter if synced else None):
            policy = self.policy_class(**self.policy_kwargs)
            if scope == 'global' and self.global_step is None:
                self.global_step, self.reset_global_step, self.global_episode, self.inc_episode = \
                    make_step_counters()
        if 'local' in scope:
            if self.global_step is None:
                raise RuntimeError('the global policy (and step counters) must be built before a local policy')
            policy.global_step, policy.global_episode = self.global_step, self.global_episode
            policy.inc_episode = self.inc_episode
            policy.get_sample_config = self.get_sample_config
        return policy

    def _make_loss(self, pi, pi_prime):
        """Extension point: the trainer's total loss on local policy `pi` (and target policy `pi_prime` or None).

        Returns:
            (scalar loss tensor, list of summaries for the model summary).
        """
        return self._make_base_loss(pi=pi, pi_prime=pi_prime, name=None)

    def _make_base_loss(self, pi, pi_prime, name='base', verbose=True):
        """The on-policy loss plus the enabled off-policy and auxiliary terms (see `objective.base_loss`),
        under name scope `name` inside the trainer's (None: directly in the trainer's, so the summary tags are
        `<trainer name>/on_policy/...`); PPO's clip range anneals with the learn rate.

        Returns:
            (loss tensor, list of summaries).
        """
        with tf.name_scope(name) if name is not None else contextlib.nullcontext():
            clip_epsilon = tf.cast(self.config.clip_epsilon * self.learn_rate_decayed / self.config.opt_learn_rate,
                                   tf.float32)
            losses = LossBuilders(self.on_policy_loss, self.off_policy_loss, self.pc_loss, self.vr_loss, self.rp_loss)
            return base_loss(self.config, losses, self.targets, self.pc_q_target, pi, pi_prime, clip_epsilon,
                             verbose)

    def _make_train_op(self, pi, pi_prime, pi_global):
        """Adam on the global variables and the sync ops (see `learner.make_train_ops`), kept as `self.train_ops`;
        the trainer's learner runs them. A global policy keeping observation statistics gets their update from the
        on-policy frames of every train step (`policy.normalization`); with `target_kl` the learner reads the drift
        from the old policy (`objective.on_policy_divergence`).

        Returns:
            train op.
        """
        mask = self.targets.on_policy.mask
        frames = tf.placeholder_with_default(tf.reduce_sum(mask), [], name='train_frames')
        normalizer = getattr(pi_global, 'observation_normalizer', None)
        statistics_update = normalizer.update(pi.on_state_in, mask) if normalizer is not None else None
        policy_kl = on_policy_divergence(self.config, self.targets, pi, pi_prime) \
            if self.config.target_kl is not None else None
        self.train_ops = make_train_ops(self.loss, pi, pi_prime, pi_global, self.global_step, frames, self.config,
                                        statistics_update, policy_kl)
        return self.train_ops.train_op

    def _combine_summaries(self, policy, model_summaries):
        """Model summary op and episode summaries (see `summaries.make_episode_summaries`)."""
        model_summaries = list(model_summaries or [])
        if self.train_ops is not None:
            with tf.name_scope('model'):
                model_summaries += [
                    tf.summary.scalar('grad_global_norm', self.train_ops.grads_global_norm),
                    tf.summary.scalar('learn_rate', self.learn_rate_decayed),
                    tf.summary.scalar('total_loss', self.loss),
                    tf.summary.scalar('var_global_norm', tf.global_norm(policy.var_list)),
                    tf.summary.scalar('updates_in_step', self.train_ops.updates_in_step),
                ]
        model_summary = tf.summary.merge(model_summaries, name='model_summary') if model_summaries else None
        render_modes = list(getattr(self.env_list[0], 'render_modes', [])) + list(self.config.aux_render_modes)
        return model_summary, make_episode_summaries(render_modes, self.config.test_mode)

    # ---------------------------------------------------------------------------------------------- runners

    def _make_runners(self, policy):
        """The trainer's runners, acting with `policy` (see `trainer_runners.make_runners`)."""
        setup = RunnerSetup(self.task, self.runner_config, self.ep_summary, self.global_step, self.log_level,
                            self.random_seed)
        return make_runners(self.config, self.env_list, setup, policy)

    def get_sample_config(self, _new_trial=None, env=None, **kwargs):
        """Next episode's data sample config from `env`'s train/test cycle (see `SampleCycle`).

        Runs `episode_train_test_cycle[0]` train episodes then `[1]` test episodes, repeatedly. A new trial is
        requested when the sample type changes and every `episodes_per_trial` episodes (or as `_new_trial` says).
        Each env keeps its own cycle.

        Args:
            _new_trial: force (True) or forbid (False) a new trial; None follows the schedule.
            env: the env asking (runners pass theirs); None: one cycle shared by all callers that give none.
            **kwargs: ignored.

        Returns:
            {'episode_config': {...}, 'trial_config': {...}} for `env.reset(**config)`.
        """
        return self._sample_cycles.next_config(env, _new_trial)

    def start(self, sess, summary_writer, **kwargs):
        """Copies global weights to the local policy and starts the runners.

        Args:
            sess: session of this worker.
            summary_writer: tf.summary.FileWriter of this worker.
            **kwargs: passed on to every runner's `start_runner` (e.g. `stop_event`: a threading.Event whose setting
                makes `process` raise RunnerStopped rather than wait for data from a hung environment).
        """
        self.summary_writer = summary_writer
        if self.learner is not None:
            summaries = None if summary_writer is None else RunnerSummaryWriter(
                summary_writer, self.ep_summary, self.config.test_mode, self.task == 0, self.global_step,
                self.global_episode)
            self.learner.start(sess, summaries)
        for runner in self.runners:
            runner.start_runner(sess, summary_writer, **kwargs)

    def stop(self):
        """Stops the runners (they close nothing: envs belong to the caller), then the acting replica's session."""
        stopped = [runner.stop() for runner in self.runners]
        if self.acting_replica is not None and all(stopped):
            self.acting_replica.close()

    def get_data(self, **kwargs):
        """One data dict from every runner, merged as {key: [runner_0 value, runner_1 value, ...]}."""
        collected = [runner.get_data(**kwargs) for runner in self.runners]
        return {key: [data[key] for data in collected] for key in collected[0]}

    # -------------------------------------------------------------------------------------------- feeding

    def process_data(self, sess, data, is_train, pi, pi_prime=None):
        """The feed dict of an update of policies `pi` (and `pi_prime`) on the whole of merged runner `data` (its
        train rollouts only; `learner.step_feed`, the feed of a train step of one update, as `Learner.update_feeds`
        builds it for the trainer's own policies): to feed placeholders of your own, override `extra_feed`.

        Args:
            sess: session (unused; the original's signature).
            data: merged runner data (see `get_data`).
            is_train: list of bools, one per on-policy rollout.
            pi, pi_prime: local policies (`pi_prime` is fed only with a target policy).

        Returns:
            feed dict.
        """
        return step_feed(self.config, self.targets, data, is_train, pi,
                         pi_prime if self.config.use_target_policy else None, self.extra_feed)

    def extra_feed(self, batches):
        """Extension point: values of a subclass's own placeholders for a train step.

        Args:
            batches: the step's `learner.TrainBatches` (processed on-policy batch, replayed ones or None).

        Returns:
            dict placeholder -> value (default: empty).
        """
        return {}

    rollout_is_train = staticmethod(rollout_is_train)

    # ---------------------------------------------------------------------------------------------- process

    def process(self, sess, **kwargs):
        """One train step: one rollout from every runner (`get_data`), trained on by the learner
        (`learner.Learner.train_step`, which also writes the summaries).

        Returns:
            number of env frames trained on (0 for a test-only batch).
        """
        if self.learner is None:
            raise RuntimeError('{} has no learner: it was built without a global network (_use_global_network='
                               'False), or its _make_train_op did not call BaseAAC._make_train_op; a subclass that '
                               'trains otherwise overrides process'.format(type(self).__name__))
        return self.learner.train_step(sess, self.get_data())

    @property
    def local_steps(self):
        """Train steps run (0 without a learner)."""
        return self.learner.steps if self.learner is not None else 0

    @property
    def last_global_step(self):
        """The global step after the latest train step (None before the first, or without a learner)."""
        return self.learner.last_global_step if self.learner is not None else None


class Unreal(BaseAAC):
    """UNREAL: A3C with the auxiliary tasks of https://arxiv.org/abs/1611.05397 (all flags available; fixed:
    `FIXED_SETTINGS`)."""
    FIXED_SETTINGS = {'name': 'UNREAL'}

    def __init__(self, **kwargs):
        super().__init__(**fixed_kwargs('Unreal', kwargs, Unreal.FIXED_SETTINGS))


class A3C(BaseAAC):
    """A3C (https://arxiv.org/abs/1602.01783): the on-policy actor-critic loss only, no auxiliary tasks (fixed:
    `FIXED_SETTINGS`)."""
    FIXED_SETTINGS = dict(on_policy_loss=aac_loss_def, use_off_policy_aac=False, use_reward_prediction=False,
                          use_pixel_control=False, use_value_replay=False, _use_target_policy=False, name='A3C')

    def __init__(self, **kwargs):
        super().__init__(**fixed_kwargs('A3C', kwargs, A3C.FIXED_SETTINGS))


class PPO(BaseAAC):
    """PPO (https://arxiv.org/abs/1707.06347) with the clipped surrogate; pi' is the local policy copy of the
    previous update (fixed: `FIXED_SETTINGS`)."""
    FIXED_SETTINGS = dict(on_policy_loss=ppo_loss_def, off_policy_loss=ppo_loss_def, _use_target_policy=True,
                          name='PPO')

    def __init__(self, **kwargs):
        super().__init__(**fixed_kwargs('PPO', kwargs, PPO.FIXED_SETTINGS))
