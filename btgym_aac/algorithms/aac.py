"""BaseAAC: distributed advantage actor-critic with UNREAL auxiliary tasks; A3C, Unreal and PPO on top.

Between-graph replication as the original: every worker builds the global (parameter-server) policy under
`replica_device_setter` and its own local policy; runners act with the local policy; `process()` takes their
rollouts, syncs global -> local weights, computes gradients on the local policy and applies them to the global
variables with Adam.

One change of order, for speed: without a target policy the sync that the original runs before a train step is run
at the end of the previous one, in the same session run as its update (`sync_pi_after_train`), which saves a
parameter-server round trip per train step (about 15% of its CPU). The local policy then holds the global weights
from the end of its own last update, as in universe-starter-agent's A3C (sync, then wait for the rollout), rather
than from the end of the wait. A train step that writes the model summary, whose ops read the local weights, and
trainers with a target policy (PPO: the target copies the local policy before the sync) keep the original order.

Fixes of the reference's defects in this layer (§20.2, §20.3):
    * the global step counts real frames only (padded rows are masked out of losses and step counts);
    * a batch mixing train and test rollouts trains on its train rollouts (the original skipped or crashed);
    * test-episode frames never enter replay memory (runner side);
    * render summaries come from whichever env renders (not always env 0);
    * PPO builds no unused global pi' and keeps one set of step counters;
    * `opt_epsilon` is Adam's epsilon (default 1e-5, the value the original hard-coded);
    * subclasses refuse the flags they fix with a clear TypeError;
    * RL2 policies: a new data trial is requested every `episodes_per_trial` episodes, not every episode, so
      `lstm_2_init_period` takes effect; each env keeps its own train/test cycle and trial count (locked; the
      original shared one unlocked among a worker's runner threads);
    * each of `num_epochs` passes takes its gradient at the weights the previous pass made (the original repeated
      the first pass's gradient, the local policy not being synced between passes);
    * pixel control regresses Q on n-step targets discounted by `gamma_pc` (see `pixel_control`), not on the raw
      pixel change, and its loss ignores padded rows.
"""
import contextlib
import threading

import numpy as np

from btgym_aac.algorithms.finite_guard import first_non_finite, zeroed_unless
from btgym_aac.algorithms.math_utils import log_uniform
from btgym_aac.algorithms.memory import Memory
from btgym_aac.algorithms.nn.losses import aac_loss_def, pc_loss_def, ppo_loss_def, rp_loss_def, value_fn_loss_def
from btgym_aac.algorithms.pixel_control import pixel_control_targets
from btgym_aac.algorithms.policy.options import unread_policy_kwargs
from btgym_aac.algorithms.policy.replica import ActingReplica
from btgym_aac.algorithms.runner import BaseEnvRunnerFn, RunnerThread
from btgym_aac.algorithms.sample_cycle import SampleCycle
from btgym_aac.algorithms.session_callables import CallableCache
from btgym_aac.algorithms.summaries import average_stats, make_episode_summaries, stat_feed
from btgym_aac.algorithms.trainer_settings import check_replay, log_uniform_range
from btgym_aac.algorithms.transfers import moved_to
from btgym_aac.algorithms.utils import (batch_stack, check_variable_pairing, feed_dict_from_nested,
                                       feed_dict_rnn_context)
from btgym_aac.compat import tf
from btgym_aac.logs import WARNING, get_logger
from btgym_aac.nonfinite import NonFiniteTrainingError, data_explanation
from btgym_aac.spaces import ActionDictSpace, DictSpace
from btgym_aac.validation import check_number, check_whole_number

GRADIENT_CLIP_NORM = 40.0


class _DummyPolicy:
    """Stand-in for a policy that is not built: every attribute is None."""

    def __getattr__(self, name):
        return None


class BaseAAC:
    """Advantage actor-critic trainer framework (A3C / UNREAL / PPO).

    Args:
        env: environment or list of environments (one runner each); `DictSpace` observations with an `external`
            key and an `ActionDictSpace`.
        task: worker index (0 is the chief).
        policy_config: {'class_ref': policy class, 'kwargs': dict}; kwargs that no part of the policy reads are
            logged as warnings (see `policy.options.unread_policy_kwargs`).
        log_level: logbook level.
        name: variable scope of the worker graph.
        on_policy_loss, off_policy_loss, vr_loss, rp_loss, pc_loss: loss builders (see `nn.losses`).
        runner_config: {'class_ref', 'kwargs'} of the runners; default `RunnerThread` with `runner_fn_ref`.
        runner_fn_ref: runner logic for the default runner.
        cluster_spec: cluster dict (`{'ps': [...], 'worker': [...]}`); None builds both copies on this process's
            default device (single-process use without a parameter server).
        random_seed: seeds numpy and the graph-level TF seed.
        model_gamma, model_gae_lambda: discount and GAE lambda.
        model_beta: entropy weight, or [low, high] for a log-uniform draw.
        opt_max_env_steps: default learn-rate decay horizon.
        opt_decay_steps: learn-rate decay horizon in env steps (None: `opt_max_env_steps`).
        opt_end_learn_rate: final learn rate (None: constant).
        opt_learn_rate: start learn rate, or [low, high] for a log-uniform draw.
        opt_decay, opt_momentum: accepted for compatibility, unused (RMSProp leftovers of the original).
        opt_epsilon: Adam epsilon.
        rollout_length: on-policy rollout length.
        time_flat: True: one-step BPTT with per-frame stored contexts; False: unroll over the rollout.
        episode_train_test_cycle: (n_train, n_test) episodes of train and test data, repeated.
        episode_summary_freq, env_render_freq: runner-side summary and rendering periods, in episodes.
        model_summary_freq: train steps between model summaries.
        test_mode: True for gymnasium test environments (Atari, CartPole) instead of BTgymEnv.
        replay_memory_size, replay_batch_size: replay memory settings.
        replay_rollout_length: longest replayed sequence (the memory's `max_sample_size`; runners ask for
            `rollout_length` frames, so off-policy sequences hold at most the smaller of the two); off-policy
            batches are padded to it when `time_flat` is False. Must be >= `rp_sequence_size` with reward
            prediction.
        use_off_policy_aac, use_reward_prediction, use_pixel_control, use_value_replay: auxiliary tasks.
        rp_lambda, pc_lambda, vr_lambda, off_aac_lambda: auxiliary loss weights (scalars or [low, high]).
        gamma_pc: discount of the pixel-control n-step Q targets (unused in the original, which regressed Q on
            the raw pixel change; see `pixel_control`).
        rp_reward_threshold: |reward| above this counts as non-zero for reward prediction and priority replay.
        rp_sequence_size: reward-prediction sample length in frames.
        clip_epsilon: PPO clip range (annealed with the learn rate).
        num_epochs: SGD passes per batch; the local policy is synced between them (the original computed every
            pass's gradient at the same weights, so the passes repeated one gradient).
        pi_prime_update_period: train steps between local pi -> pi' copies.
        episodes_per_trial: episodes per data trial (None: the policy's `lstm_2_init_period` if it has one,
            else 1, i.e. a new trial every episode).
        global_step_op, global_episode_op, inc_episode_op: external counters (for `_use_global_network=False`).
        _use_global_network: build the global copy.
        _use_target_policy: build the local pi' copy.
        _use_local_memory: disable runner memories.
        aux_render_modes: extra rendering modes summarised as images.
        acting_replica: runners act through an `ActingReplica` of the local policy (its own plain session, refreshed
            every rollout) instead of the worker session; None: only in a distributed worker (`cluster_spec` set).
        **kwargs: unknown arguments are logged as warnings and ignored.

    Raises:
        ValueError: a setting is out of its range (counts and periods whole numbers >= 1, discounts and lambdas in
            [0, 1], learn rates and loss weights >= 0; see `trainer_settings`); the message names it and its value.

    Class attribute `acting_replica_class`: the `ActingReplica` class used (subclasses may replace it).
    """
    acting_replica_class = ActingReplica

    def __init__(self, env, task, policy_config, log_level=WARNING, name='AAC', on_policy_loss=aac_loss_def,
                 off_policy_loss=aac_loss_def, vr_loss=value_fn_loss_def, rp_loss=rp_loss_def, pc_loss=pc_loss_def,
                 runner_config=None, runner_fn_ref=BaseEnvRunnerFn, cluster_spec=None, random_seed=None,
                 model_gamma=0.99, model_gae_lambda=1.0, model_beta=0.01, opt_max_env_steps=10 ** 7,
                 opt_decay_steps=None, opt_end_learn_rate=None, opt_learn_rate=1e-4, opt_decay=0.99,
                 opt_momentum=0.0, opt_epsilon=1e-5, rollout_length=20, time_flat=False,
                 episode_train_test_cycle=(1, 0), episode_summary_freq=2, env_render_freq=10,
                 model_summary_freq=100, test_mode=False, replay_memory_size=2000, replay_batch_size=None,
                 replay_rollout_length=None, use_off_policy_aac=False, use_reward_prediction=False,
                 use_pixel_control=False, use_value_replay=False, rp_lambda=1.0, pc_lambda=1.0, vr_lambda=1.0,
                 off_aac_lambda=1.0, gamma_pc=0.9, rp_reward_threshold=0.1, rp_sequence_size=3, clip_epsilon=0.1,
                 num_epochs=1, pi_prime_update_period=1, episodes_per_trial=None, global_step_op=None,
                 global_episode_op=None, inc_episode_op=None, _use_global_network=True, _use_target_policy=False,
                 _use_local_memory=False, aux_render_modes=None, acting_replica=None, **kwargs):
        self.task = task
        self.name = name
        self.log_level = log_level
        self.log = get_logger(name, task, log_level=log_level)
        for key in kwargs:
            self.log.warning('unexpected argument `{}` ignored'.format(key))
        self.env_list = list(env) if isinstance(env, (list, tuple)) else [env]
        self._check_spaces(self.env_list[0])
        self.policy_class = policy_config['class_ref']
        self.policy_kwargs = dict(policy_config.get('kwargs', {}))
        for key in unread_policy_kwargs(self.policy_class, self.policy_kwargs):
            self.log.warning('policy argument `{}` is read by no part of {}; ignored'.format(
                key, self.policy_class.__name__))
        self.on_policy_loss, self.off_policy_loss = on_policy_loss, off_policy_loss
        self.vr_loss, self.rp_loss, self.pc_loss = vr_loss, rp_loss, pc_loss
        self.runner_config = runner_config or {'class_ref': RunnerThread, 'kwargs': {'runner_fn_ref': runner_fn_ref}}
        self.cluster_spec = cluster_spec
        self.random_seed = random_seed
        if random_seed is not None:
            np.random.seed(random_seed)
            tf.set_random_seed(random_seed)

        self.model_gamma = check_number('model_gamma', model_gamma, high=1)
        self.model_gae_lambda = check_number('model_gae_lambda', model_gae_lambda, high=1)
        self.model_beta = log_uniform(log_uniform_range('model_beta', model_beta), 1)
        self.opt_learn_rate = log_uniform(log_uniform_range('opt_learn_rate', opt_learn_rate), 1)
        self.opt_max_env_steps = check_number('opt_max_env_steps', opt_max_env_steps, low_open=True)
        self.opt_decay_steps = self.opt_max_env_steps if opt_decay_steps is None else \
            check_number('opt_decay_steps', opt_decay_steps, low_open=True)
        self.opt_end_learn_rate = self.opt_learn_rate if opt_end_learn_rate is None else \
            check_number('opt_end_learn_rate', opt_end_learn_rate)
        self.opt_decay, self.opt_momentum, self.opt_epsilon = opt_decay, opt_momentum, opt_epsilon
        self.rollout_length = check_whole_number('rollout_length', rollout_length)
        self.time_flat = time_flat
        self.episode_train_test_cycle = self._check_cycle(episode_train_test_cycle)
        self.episode_summary_freq = check_whole_number('episode_summary_freq', episode_summary_freq)
        self.env_render_freq = check_whole_number('env_render_freq', env_render_freq)
        self.model_summary_freq = check_whole_number('model_summary_freq', model_summary_freq)
        self.test_mode = test_mode
        self.replay_memory_size = replay_memory_size
        self.replay_batch_size = replay_batch_size if replay_batch_size is not None else len(self.env_list)
        self.replay_rollout_length = self.rollout_length if replay_rollout_length is None else replay_rollout_length
        self.rp_lambda = log_uniform(log_uniform_range('rp_lambda', rp_lambda), 1)
        self.pc_lambda = log_uniform(log_uniform_range('pc_lambda', pc_lambda), 1)
        self.vr_lambda = log_uniform(log_uniform_range('vr_lambda', vr_lambda), 1)
        self.off_aac_lambda = log_uniform(log_uniform_range('off_aac_lambda', off_aac_lambda), 1)
        self.gamma_pc = check_number('gamma_pc', gamma_pc, high=1)
        self.rp_reward_threshold, self.rp_sequence_size = rp_reward_threshold, rp_sequence_size
        self.clip_epsilon = clip_epsilon
        self.num_epochs = check_whole_number('num_epochs', num_epochs)
        self.pi_prime_update_period = check_whole_number('pi_prime_update_period', pi_prime_update_period)

        self.use_off_policy_aac = use_off_policy_aac
        self.use_reward_prediction = use_reward_prediction
        self.use_pixel_control = use_pixel_control
        self.use_value_replay = False if use_off_policy_aac else use_value_replay
        self.use_any_aux_tasks = use_value_replay or use_pixel_control or use_reward_prediction
        self.use_local_memory = _use_local_memory
        self.use_memory = (self.use_any_aux_tasks or use_off_policy_aac) and not _use_local_memory
        if self.use_memory:
            check_replay(replay_memory_size, self.replay_rollout_length, rp_sequence_size, use_reward_prediction)
        self.use_target_policy = _use_target_policy
        self.use_global_network = _use_global_network
        self.aux_render_modes = list(aux_render_modes or [])
        self.log.notice('learn_rate: {:1.6f}, entropy_beta: {:1.6f}'.format(self.opt_learn_rate, self.model_beta))
        if self.use_any_aux_tasks or use_off_policy_aac:
            self.log.notice('off_aac_lambda: {:1.6f}, vr_lambda: {:1.6f}, pc_lambda: {:1.6f}, rp_lambda: {:1.6f}'
                            .format(self.off_aac_lambda, self.vr_lambda, self.pc_lambda, self.rp_lambda))

        self.policy_kwargs.update(
            ob_space=self.env_list[0].observation_space,
            ac_space=self.env_list[0].action_space,
            rp_sequence_size=rp_sequence_size,
            aux_estimate=self.use_any_aux_tasks,
            static_rnn=time_flat,
            task=task,
            cluster_spec=cluster_spec,
        )
        if use_pixel_control:
            self.policy_kwargs.setdefault('pixel_control', True)
        self.global_step, self.global_episode, self.inc_episode = global_step_op, global_episode_op, inc_episode_op
        self._sample_cycles = {}
        self._sample_cycles_lock = threading.Lock()
        self.local_steps = 0
        self.last_global_step = None
        self.sync = self.sync_pi = self.sync_pi_prime = self.sync_pi_after_train = None
        self._local_synced = False
        self.summary_writer = None
        self._train_callables = CallableCache()
        self.worker_device = '/job:worker/task:{}/cpu:0'.format(task)

        self._build_graph()
        self.episodes_per_trial = episodes_per_trial or getattr(self.local_network, 'lstm_2_init_period', 1)
        if acting_replica or (acting_replica is None and cluster_spec is not None):
            self.acting_replica = self.acting_replica_class(
                self.local_network, self.policy_class, self.policy_kwargs, refresh_period=self.rollout_length,
                random_seed=random_seed)
        else:
            self.acting_replica = None
        self.runners = self._make_runners(self.acting_replica or self.local_network)

    # ------------------------------------------------------------------------------------------- validation

    @staticmethod
    def _check_spaces(env):
        if not isinstance(env.observation_space, DictSpace):
            raise TypeError('trainer: env.observation_space must be a btgym_aac DictSpace, got {!r}'.format(
                type(env.observation_space).__name__))
        if not isinstance(env.action_space, ActionDictSpace):
            raise TypeError('trainer: env.action_space must be a btgym_aac ActionDictSpace, got {!r}'.format(
                type(env.action_space).__name__))
        if 'external' not in env.observation_space.spaces:
            raise ValueError('trainer: the observation space needs an `external` key, has {}'.format(
                list(env.observation_space.spaces)))

    @staticmethod
    def _check_cycle(cycle):
        cycle = tuple(int(n) for n in cycle)
        if len(cycle) != 2 or min(cycle) < 0 or sum(cycle) == 0:
            raise ValueError('episode_train_test_cycle must be (n_train >= 0, n_test >= 0), not both zero; '
                             'got {!r}'.format(cycle))
        return cycle

    # ------------------------------------------------------------------------------------------------ graph

    def _device(self, device):
        return tf.device(device) if self.cluster_spec is not None else contextlib.nullcontext()

    def _build_graph(self):
        if self.use_global_network:
            ps_device = tf.train.replica_device_setter(ps_tasks=len(self.cluster_spec['ps']),
                                                       worker_device=self.worker_device) \
                if self.cluster_spec is not None else None
            with self._device(ps_device):
                self.network = self._make_policy('global')
        else:
            self.network = _DummyPolicy()
        self.network_prime = _DummyPolicy()
        with self._device(self.worker_device), tf.variable_scope(self.name):
            self.local_network = pi = self._make_policy('local')
            self.local_network_prime = pi_prime = \
                self._make_policy('local_prime') if self.use_target_policy else _DummyPolicy()
            self.worker_device_callback_0()
            pi.update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS, scope='.*local.*')
            self.dummy_pi = _DummyPolicy()
            self.learn_rate_decayed = self._decayed_learn_rate()
            self.loss, self.loss_summaries = self._make_loss(pi=pi, pi_prime=pi_prime)
            if self.use_global_network:
                self.train_op = self._make_train_op(pi=pi, pi_prime=pi_prime, pi_global=self.network)
            else:
                self.train_op = []
            self.model_summary_op, self.ep_summary = self._combine_summaries(pi, self.loss_summaries)

    def _decayed_learn_rate(self):
        """`opt_learn_rate` decayed linearly to `opt_end_learn_rate` over `opt_decay_steps` global steps (float64)."""
        return tf.train.polynomial_decay(
            np.float64(self.opt_learn_rate), tf.cast(self.global_step, tf.float64) + 1.0,
            float(self.opt_decay_steps), np.float64(self.opt_end_learn_rate), power=1.0, cycle=False)

    def worker_device_callback_0(self):
        """Hook for subclasses: called inside the worker device and scope after the local policies are built."""

    def _make_step_counters(self):
        self.global_step = tf.get_variable('global_step', [], tf.int32, initializer=tf.constant_initializer(0),
                                           trainable=False)
        tf.add_to_collection(tf.GraphKeys.GLOBAL_STEP, self.global_step)
        self.reset_global_step = self.global_step.assign(0)
        self.global_episode = tf.get_variable('global_episode', [], tf.int32,
                                              initializer=tf.constant_initializer(0), trainable=False)
        self.inc_episode = self.global_episode.assign_add(1)

    def _make_policy(self, scope):
        """Builds a policy in `scope`; the global one also gets the step counters, local ones point to them."""
        with tf.variable_scope(scope):
            policy = self.policy_class(**self.policy_kwargs)
            if scope == 'global' and self.global_step is None:
                self._make_step_counters()
        if 'local' in scope:
            if self.global_step is None:
                raise RuntimeError('the global policy (and step counters) must be built before a local policy')
            policy.global_step, policy.global_episode = self.global_step, self.global_episode
            policy.inc_episode = self.inc_episode
            policy.get_sample_config = self.get_sample_config
        return policy

    def _make_loss(self, pi, pi_prime):
        return self._make_base_loss(pi=pi, pi_prime=pi_prime, name=self.name)

    def _make_base_loss(self, pi, pi_prime, name='base', verbose=True):
        """Total loss: on-policy loss plus the enabled off-policy / auxiliary terms.

        Returns:
            (loss tensor, list of summaries).
        """
        depth = self.env_list[0].action_space.one_hot_depth
        with tf.name_scope(name):
            pi.on_pi_act_target = tf.placeholder(tf.float32, [None, depth], name='on_policy_action_pl')
            pi.on_pi_adv_target = tf.placeholder(tf.float32, [None], name='on_policy_advantage_pl')
            pi.on_pi_r_target = tf.placeholder(tf.float32, [None], name='on_policy_return_pl')
            pi.on_pi_mask = tf.placeholder(tf.float32, [None], name='on_policy_mask_pl')
            clip_epsilon = tf.cast(self.clip_epsilon * self.learn_rate_decayed / self.opt_learn_rate, tf.float32)
            loss, summaries = self.on_policy_loss(
                act_target=pi.on_pi_act_target, adv_target=pi.on_pi_adv_target, r_target=pi.on_pi_r_target,
                pi_logits=pi.on_logits, pi_vf=pi.on_vf, pi_prime_logits=pi_prime.on_logits,
                entropy_beta=self.model_beta, epsilon=clip_epsilon, name='on_policy', verbose=verbose,
                mask=pi.on_pi_mask)
            pi.off_pi_act_target = tf.placeholder(tf.float32, [None, depth], name='off_policy_action_pl')
            pi.off_pi_adv_target = tf.placeholder(tf.float32, [None], name='off_policy_advantage_pl')
            pi.off_pi_r_target = tf.placeholder(tf.float32, [None], name='off_policy_return_pl')
            pi.off_pi_mask = tf.placeholder(tf.float32, [None], name='off_policy_mask_pl')
            if self.use_off_policy_aac:
                off_loss, off_summaries = self.off_policy_loss(
                    act_target=pi.off_pi_act_target, adv_target=pi.off_pi_adv_target, r_target=pi.off_pi_r_target,
                    pi_logits=pi.off_logits, pi_vf=pi.off_vf, pi_prime_logits=pi_prime.off_logits,
                    entropy_beta=self.model_beta, epsilon=clip_epsilon, name='off_policy', verbose=False,
                    mask=pi.off_pi_mask)
                loss = loss + self.off_aac_lambda * off_loss
                summaries += off_summaries
            if self.use_pixel_control:
                if pi.pc_q is None:
                    raise ValueError('use_pixel_control=True but {} built no pixel-control head'.format(
                        type(pi).__name__))
                pi.pc_action = tf.placeholder(tf.float32, [None, depth], name='pc_action')
                pi.pc_q_target = self._pixel_control_target(pi)
                pc_loss, pc_summaries = self.pc_loss(actions=pi.pc_action, targets=pi.pc_q_target,
                                                     pi_pc_q=pi.pc_q, name='pixel_control', verbose=True,
                                                     mask=pi.pc_mask)
                loss = loss + self.pc_lambda * pc_loss
                summaries += pc_summaries
            if self.use_value_replay:
                pi.vr_target = tf.placeholder(tf.float32, [None], name='vr_target')
                vr_loss, vr_summaries = self.vr_loss(r_target=pi.vr_target, pi_vf=pi.vr_value, name='value_replay',
                                                     verbose=True, mask=pi.off_pi_mask)
                loss = loss + self.vr_lambda * vr_loss
                summaries += vr_summaries
            if self.use_reward_prediction:
                pi.rp_target = tf.placeholder(tf.float32, [None, 3], name='rp_target')
                rp_loss, rp_summaries = self.rp_loss(rp_targets=pi.rp_target, pi_rp_logits=pi.rp_logits,
                                                     name='reward_prediction', verbose=True)
                loss = loss + self.rp_lambda * rp_loss
                summaries += rp_summaries
        return loss, summaries

    @staticmethod
    def _pixel_control_target(pi):
        """N-step Q target [B, H, W] of pixel control: the fed discounted pixel changes plus the bootstrap
        `gamma_pc^(L-t) max_a Q(s_L, a)` read from the Q head's own (gradient-stopped) output at the fed bootstrap
        rows (see `pixel_control`); also makes the placeholders `pc_return`, `pc_bootstrap_weight`,
        `pc_bootstrap_row` and `pc_mask` on `pi`."""
        pi.pc_return = tf.placeholder(tf.float32, [None, None, None], name='pc_return')
        pi.pc_bootstrap_weight = tf.placeholder(tf.float32, [None], name='pc_bootstrap_weight')
        pi.pc_bootstrap_row = tf.placeholder(tf.int32, [None], name='pc_bootstrap_row')
        pi.pc_mask = tf.placeholder(tf.float32, [None], name='pc_mask')
        q_max = tf.stop_gradient(tf.reduce_max(pi.pc_q, axis=-1))
        bootstrap = tf.gather(q_max, pi.pc_bootstrap_row) * pi.pc_bootstrap_weight[:, None, None]
        return tf.add(pi.pc_return, bootstrap, name='pc_q_target')

    def _make_train_op(self, pi, pi_prime, pi_global):
        """Adam on the global variables with the local gradients clipped at global norm 40; sync ops.

        `sync` copies every global variable to the local policy (at `start`); `sync_pi` (before a train step)
        skips the trainable variables the loss gives no gradient (such as the reward-prediction head of a policy
        trained by A3C): nothing ever changes them, so their local copies stay equal to the global ones.
        `sync_pi_after_train` is `sync_pi` run after the update: it ends a train step (see the module docstring)
        and, with `num_epochs` > 1, every epoch but the last, so each epoch takes its gradient at the weights the
        previous one made (the global step increment runs only with the last epoch). The syncs and the gradient
        push move the small tensors packed together (see `transfers`). The train learning rate
        (`learn_rate_decayed` times the fed train phase), Adam's constants and the global step increment are
        computed on the global step's device, the train phase and frame count travelling in the gradient pack, so
        a train step sends only the packs and the large gradients to the parameter server and gets the new global
        step back.

        Returns:
            train op.
        """
        check_variable_pairing(pi.var_list, pi_global.var_list,
                               'local and global policies do not pair variable by variable')
        pairs = list(zip(pi.var_list, pi_global.var_list))
        grads = tf.gradients(self.loss, pi.var_list)
        clipped, grads_norm = tf.clip_by_global_norm(grads, GRADIENT_CLIP_NORM)
        self.train_finite = tf.logical_and(tf.reduce_all(tf.is_finite(self.loss)), tf.is_finite(grads_norm))
        self.grads = zeroed_unless(self.train_finite, clipped)
        self._finite_checked = [('the loss', self.loss)] + [
            ('the gradient of {}'.format(variable.op.name), grad) for variable, grad in zip(pi.var_list, grads)] + [
            ('the global norm of the gradients (finite gradients whose squares overflow)', grads_norm)]
        self.grads_global_norm = tf.global_norm([grad for grad in self.grads if grad is not None])
        self.sync = self._copy_op(pairs)
        changing = [(local, glob) for grad, (local, glob) in zip(self.grads, pairs)
                    if grad is not None or not local.trainable]
        self.sync_pi = self._copy_op(changing)
        if self.use_target_policy:
            self.sync_pi_prime = self._copy_op(list(zip(pi_prime.var_list, pi.var_list)))
        pushed = [(grad, glob) for grad, (_, glob) in zip(self.grads, pairs) if grad is not None]
        step_inputs = tf.stack([tf.cast(pi.train_phase, tf.float32), tf.reduce_sum(pi.on_pi_mask)])
        moved = moved_to([grad for grad, _ in pushed] + [step_inputs],
                         [glob.device for _, glob in pushed] + [self.global_step.device])
        with tf.device(self.global_step.device):
            train_phase, frames = tf.unstack(moved[-1])
            self.train_learn_rate = self._decayed_learn_rate() * tf.cast(train_phase, tf.float64)
            self.optimizer = tf.train.AdamOptimizer(tf.cast(self.train_learn_rate, tf.float32),
                                                    epsilon=self.opt_epsilon)
            train_op = self.optimizer.apply_gradients(list(zip(moved[:-1], [glob for _, glob in pushed])))
            self.inc_step = self.global_step.assign_add(tf.cast(frames, tf.int32))
        with tf.control_dependencies([train_op]):
            self.sync_pi_after_train = self._copy_op(changing)
        return train_op

    @staticmethod
    def _copy_op(pairs):
        """Op assigning every `(target, source)` variable pair, small sources moved packed (see `transfers`).

        The sources are read by ops made here, so control dependencies around the call order the reads too.
        """
        sources = []
        for _, source in pairs:
            with tf.device(source.device):
                sources.append(source.read_value())
        values = moved_to(sources, [target.device for target, _ in pairs])
        return tf.group(*[target.assign(value) for (target, _), value in zip(pairs, values)])

    def _combine_summaries(self, policy, model_summaries):
        """Model summary op and episode summaries (see `summaries.make_episode_summaries`)."""
        model_summaries = list(model_summaries or [])
        if self.use_global_network:
            with tf.name_scope('model'):
                model_summaries += [
                    tf.summary.scalar('grad_global_norm', self.grads_global_norm),
                    tf.summary.scalar('learn_rate', self.learn_rate_decayed),
                    tf.summary.scalar('total_loss', self.loss),
                    tf.summary.scalar('var_global_norm', tf.global_norm(policy.var_list)),
                ]
        model_summary = tf.summary.merge(model_summaries, name='model_summary') if model_summaries else None
        render_modes = list(getattr(self.env_list[0], 'render_modes', [])) + self.aux_render_modes
        return model_summary, make_episode_summaries(render_modes, self.test_mode)

    # ---------------------------------------------------------------------------------------------- runners

    def _memory_config(self, index):
        """Replay memory config of the runner of env `index` (None without memory); each memory draws its samples
        from its own seed (`[random_seed, task, index]`)."""
        if not self.use_memory:
            return None
        return dict(class_ref=Memory, kwargs=dict(
            history_size=self.replay_memory_size, max_sample_size=self.replay_rollout_length,
            priority_sample_size=self.rp_sequence_size, reward_threshold=self.rp_reward_threshold,
            use_priority_sampling=self.use_reward_prediction, task=self.task, log_level=self.log_level,
            seed=None if self.random_seed is None else [self.random_seed, self.task, index]))

    def _make_runners(self, policy):
        runners = []
        for index, env in enumerate(self.env_list):
            memory_config = self._memory_config(index)
            kwargs = dict(env=env, policy=policy, task=self.task + 0.01 * index, rollout_length=self.rollout_length,
                          episode_summary_freq=self.episode_summary_freq, env_render_freq=self.env_render_freq,
                          test=self.test_mode, ep_summary=self.ep_summary, memory_config=memory_config,
                          log_level=self.log_level, global_step_op=self.global_step,
                          aux_render_modes=self.aux_render_modes)
            kwargs.update(self.runner_config.get('kwargs', {}))
            runners.append(self.runner_config['class_ref'](**kwargs))
        return runners

    def get_sample_config(self, _new_trial=None, env=None, **kwargs):
        """Next episode's data sample config from `env`'s train/test cycle (see `SampleCycle`).

        Runs `episode_train_test_cycle[0]` train episodes then `[1]` test episodes, repeatedly. A new trial is
        requested when the sample type changes and every `episodes_per_trial` episodes (or as `_new_trial` says).
        Each env keeps its own cycle (the reference shared one among a worker's runner threads, unlocked, so with
        several envs the trials came out of step with each env's episodes).

        Args:
            _new_trial: force (True) or forbid (False) a new trial; None follows the schedule.
            env: the env asking (runners pass theirs); None: one cycle shared by all callers that give none.
            **kwargs: ignored.

        Returns:
            {'episode_config': {...}, 'trial_config': {...}} for `env.reset(**config)`.
        """
        with self._sample_cycles_lock:
            cycle = self._sample_cycles.get(id(env))
            if cycle is None:
                cycle = self._sample_cycles[id(env)] = SampleCycle(*self.episode_train_test_cycle,
                                                                  episodes_per_trial=self.episodes_per_trial)
            return cycle.next_config(_new_trial)

    def start(self, sess, summary_writer, **kwargs):
        """Copies global weights to the local policy and starts the runners.

        Args:
            sess: session of this worker.
            summary_writer: tf.summary.FileWriter of this worker.
            **kwargs: passed on to every runner's `start_runner` (e.g. `stop_event`: a threading.Event whose setting
                makes `process` raise RunnerStopped rather than wait for data from a hung environment).
        """
        if self.sync is not None:
            sess.run(self.sync)
            self._local_synced = True
        for runner in self.runners:
            runner.start_runner(sess, summary_writer, **kwargs)
        self.summary_writer = summary_writer

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

    def _process_rollouts(self, rollouts, size=None, pixel_control=False):
        """Stacked processed rollouts (see `Rollout.process`), with the pixel-control target parts if asked."""
        batches = [rollout.process(gamma=self.model_gamma, gae_lambda=self.model_gae_lambda,
                                   size=size or self.rollout_length, time_flat=self.time_flat)
                   for rollout in rollouts]
        stacked = batch_stack(batches)
        if pixel_control:
            stacked.update(pixel_control_targets(batches, self.gamma_pc))
        return stacked

    @staticmethod
    def _policy_inputs(pi, prefix, batch):
        """Feed of a policy's on- or off-policy inputs (`prefix` 'on' or 'off') from a processed batch."""
        feed = feed_dict_from_nested(getattr(pi, prefix + '_state_in'), batch['state'])
        feed.update(feed_dict_rnn_context(getattr(pi, prefix + '_lstm_state_pl_flatten'), batch['context']))
        feed.update({
            getattr(pi, prefix + '_last_a_in'): batch['last_action'],
            getattr(pi, prefix + '_last_reward_in'): batch['last_reward'],
            getattr(pi, prefix + '_batch_size'): batch['batch_size'],
            getattr(pi, prefix + '_time_length'): batch['time_steps'],
        })
        return feed

    def _targets_feed(self, pi, prefix, batch):
        return {
            getattr(pi, prefix + '_pi_act_target'): batch['action'],
            getattr(pi, prefix + '_pi_adv_target'): batch['advantage'],
            getattr(pi, prefix + '_pi_r_target'): batch['r'],
            getattr(pi, prefix + '_pi_mask'): batch['mask'],
        }

    def _get_main_feeder(self, sess, on_policy_batch=None, off_policy_batch=None, rp_batch=None, is_train=True,
                         pi=None, pi_prime=None):
        """Feed dict of one train step.

        Returns:
            dict placeholder -> value.
        """
        feed = self._policy_inputs(pi, 'on', on_policy_batch)
        feed.update(self._targets_feed(pi, 'on', on_policy_batch))
        feed[pi.train_phase] = bool(is_train)
        if self.use_target_policy:
            feed.update(self._policy_inputs(pi_prime, 'on', on_policy_batch))
        if off_policy_batch is not None:
            feed.update(self._policy_inputs(pi, 'off', off_policy_batch))
            feed.update(self._targets_feed(pi, 'off', off_policy_batch))
            if self.use_target_policy and self.use_off_policy_aac:
                feed.update(self._policy_inputs(pi_prime, 'off', off_policy_batch))
            if self.use_pixel_control:
                feed.update({pi.pc_action: off_policy_batch['action'], pi.pc_return: off_policy_batch['pc_return'],
                             pi.pc_bootstrap_weight: off_policy_batch['pc_bootstrap_weight'],
                             pi.pc_bootstrap_row: off_policy_batch['pc_bootstrap_row'],
                             pi.pc_mask: off_policy_batch['pc_mask']})
            if self.use_value_replay:
                feed[pi.vr_target] = off_policy_batch['r']
        if rp_batch is not None:
            feed.update(feed_dict_from_nested(pi.rp_state_in, rp_batch['state']))
            feed.update({pi.rp_target: rp_batch['rp_target'], pi.rp_batch_size: rp_batch['batch_size']})
        return feed

    def process_data(self, sess, data, is_train, pi, pi_prime=None):
        """Processes runner data (only its train rollouts) into a train-step feed dict.

        Args:
            sess: session.
            data: merged runner data (see `get_data`).
            is_train: list of bools, one per on-policy rollout.
            pi, pi_prime: local policies.

        Returns:
            feed dict.
        """
        on_policy = [rollout for rollout, train in zip(data['on_policy'], is_train) if train]
        on_batch = self._process_rollouts(on_policy)
        off_batch = rp_batch = None
        if self.use_memory:
            off_policy = [rollout for rollout in data['off_policy'] if rollout is not None and rollout.size]
            if off_policy:
                off_batch = self._process_rollouts(off_policy, size=self.replay_rollout_length,
                                                   pixel_control=self.use_pixel_control)
            if self.use_reward_prediction:
                rp_rollouts = [rollout for rollout in data['off_policy_rp'] if rollout is not None]
                if rp_rollouts:
                    rp_batch = batch_stack([rollout.process_rp(self.rp_reward_threshold) for rollout in rp_rollouts])
        return self._get_main_feeder(sess, on_batch, off_batch, rp_batch, True, pi, pi_prime)

    @staticmethod
    def rollout_is_train(rollout):
        """True unless any frame of the rollout comes from a test episode (metadata type != 0)."""
        try:
            return not np.any(np.asarray(rollout['state']['metadata']['type']))
        except KeyError:
            return True

    # ---------------------------------------------------------------------------------------------- process

    def process(self, sess, **kwargs):
        """One train iteration (see `_process`)."""
        return self._process(sess)

    def _process(self, sess):
        """Takes one rollout from every runner; trains on the train rollouts; writes summaries.

        Returns:
            number of env frames trained on (0 for a test-only batch).
        """
        data = self.get_data()
        if self.use_target_policy and self.local_steps % self.pi_prime_update_period == 0:
            self._train_callables.run(sess, 'sync_pi_prime', None, {}, targets=[self.sync_pi_prime])
        is_train = [self.rollout_is_train(rollout) for rollout in data['on_policy']]
        model_summary, frames = None, 0
        if any(is_train):
            if self.use_target_policy or not self._local_synced:
                self._train_callables.run(sess, 'sync_pi', None, {}, targets=[self.sync_pi])
            feed_dict = self.process_data(sess, data, is_train, self.local_network, self.local_network_prime)
            write_summary = self.model_summary_op is not None and self.local_steps % self.model_summary_freq == 0
            train = [self.train_op]
            for _ in range(self.num_epochs - 1):
                finite = self._train_callables.run(sess, 'train_epoch', [self.train_finite], feed_dict,
                                                   targets=[self.sync_pi_after_train])
                self._check_finite(sess, finite[0], feed_dict)
            sync_after = not (write_summary or self.use_target_policy)
            fetches = [self.inc_step, self.train_finite] + ([self.model_summary_op] if write_summary else [])
            fetched = self._train_callables.run(sess, ('train_last', write_summary, sync_after), fetches, feed_dict,
                                                targets=train + ([self.sync_pi_after_train] if sync_after else []))
            self._local_synced = sync_after
            self.last_global_step = int(fetched[0])
            self._check_finite(sess, fetched[1], feed_dict)
            model_summary = fetched[2] if write_summary else None
            frames = int(np.sum(feed_dict[self.local_network.on_pi_mask]))
            self.local_steps += 1
        self.process_summary(sess, data, model_summary)
        return frames

    def _check_finite(self, sess, finite, feed_dict):
        """Raises NonFiniteTrainingError after a train run whose `train_finite` was False, naming the first
        non-finite input or tensor and what the data checks find in the envs' data."""
        if finite:
            return
        first = first_non_finite(sess, self._finite_checked, feed_dict) or 'a tensor of the train step'
        explanation = ''.join(dict.fromkeys(data_explanation(getattr(env, 'dataset', None)) for env in self.env_list))
        raise NonFiniteTrainingError('train step {} of task {}: the loss or its gradients are not finite, first {}; '
                                     'the step changed no weight and training stops{}'.format(
                                         self.local_steps, self.task, first, explanation))

    def process_summary(self, sess, data, model_data=None, step=None, episode=None):
        """Writes episode statistics, renderings and the model summary (only what there is: counters are read from
        the parameter server only when needed).

        Args:
            sess: session.
            data: merged runner data.
            model_data: serialized model summary or None.
            step, episode: summary steps (default: the global step of the last train step, the global episode).
        """
        if self.summary_writer is None:
            return
        summaries = []
        train_stats = average_stats(data['ep_summary'])
        if train_stats:
            op = self.ep_summary['atari_stat_op' if self.test_mode else 'btgym_stat_op']
            summaries.append(sess.run(op, stat_feed(self.ep_summary, train_stats)))
        test_stats = average_stats(data['test_ep_summary'])
        if test_stats:
            summaries.append(sess.run(self.ep_summary['test_btgym_stat_op'], stat_feed(self.ep_summary, test_stats)))
        renderings = next((images for images in data['render_summary'] if images), None)
        if self.task == 0 and renderings and self.ep_summary['render_op'] is not None:
            feed = {self.ep_summary[mode]: image for mode, image in renderings.items() if mode in self.ep_summary}
            summaries.append(sess.run(self.ep_summary['render_op'], feed))
        if summaries:
            episode = sess.run(self.global_episode) if episode is None else episode
            for summary in summaries:
                self.summary_writer.add_summary(summary, episode)
        if model_data is not None:
            if step is None:
                step = self.last_global_step if self.last_global_step is not None else sess.run(self.global_step)
            self.summary_writer.add_summary(tf.Summary.FromString(model_data), step)
        if summaries or model_data is not None:
            self.summary_writer.flush()


def _fixed_kwargs(cls_name, kwargs, fixed):
    clash = sorted(set(kwargs) & set(fixed))
    if clash:
        raise TypeError('{} fixes {}; do not pass them (use BaseAAC or Unreal to set them)'.format(cls_name, clash))
    return dict(kwargs, **fixed)


class Unreal(BaseAAC):
    """UNREAL: A3C with the auxiliary tasks of https://arxiv.org/abs/1611.05397 (all flags available)."""

    def __init__(self, **kwargs):
        super().__init__(**_fixed_kwargs('Unreal', kwargs, {'name': 'UNREAL'}))


class A3C(BaseAAC):
    """A3C (https://arxiv.org/abs/1602.01783): on-policy actor-critic loss only, no auxiliary tasks."""

    def __init__(self, **kwargs):
        super().__init__(**_fixed_kwargs('A3C', kwargs, dict(
            on_policy_loss=aac_loss_def, use_off_policy_aac=False, use_reward_prediction=False,
            use_pixel_control=False, use_value_replay=False, _use_target_policy=False, name='A3C')))


class PPO(BaseAAC):
    """PPO (https://arxiv.org/abs/1707.06347) with the clipped surrogate; pi' is the local policy copy of the
    previous update."""

    def __init__(self, **kwargs):
        super().__init__(**_fixed_kwargs('PPO', kwargs, dict(
            on_policy_loss=ppo_loss_def, off_policy_loss=ppo_loss_def, _use_target_policy=True, name='PPO')))
