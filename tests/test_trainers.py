"""Trainers: one process() of A3C, Unreal (all auxiliary tasks) and PPO changes the global weights, advances the
global step by the real frames trained on and writes summaries; test rollouts train nothing."""
import types

import numpy as np
import pytest

from btgym_aac import BTgymDataset, BTgymEnv
from btgym_aac.algorithms import A3C, PPO, BaseAAC, Unreal, train_in_process
from btgym_aac.algorithms.nn.layers import linear
from btgym_aac.algorithms.acting.construction import SampleCycle, SampleCycles
from btgym_aac.algorithms.config import AacConfig
from btgym_aac.algorithms.acting.construction import RunnerSetup, memory_config
from btgym_aac.algorithms.policy import Aac1dPolicy, AacDensePolicy, AacStackedRL2Policy, BaseAacPolicy
from btgym_aac.compat import tf
from btgym_aac.data import make_sine_data
from btgym_aac.env import gym_wrappers
from btgym_aac.strategy import DevStrat_4_11
from trainer_helpers import scalar_events, tagged

SHORT_EPISODE = {'days': 0, 'hours': 8, 'minutes': 0}
SMALL_CONV = dict(conv_2d_num_filters=(8, 8, 8, 8))


def trading_env(**kwargs):
    kwargs.setdefault('episode_duration', SHORT_EPISODE)
    return BTgymEnv(strategy=DevStrat_4_11, render_enabled=False, random_seed=0, **kwargs)


class Session:
    """A trainer, its session and summary writer, with helpers to run and inspect one train step."""

    def __init__(self, trainer_class, env, policy_class, policy_kwargs, log_dir, **trainer_kwargs):
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.trainer = trainer_class(env=env, task=0, policy_config={'class_ref': policy_class,
                                                                         'kwargs': policy_kwargs},
                                         random_seed=0, **dict(dict(model_summary_freq=1), **trainer_kwargs))
            init_op = tf.global_variables_initializer()
        self.graph.finalize()
        self.sess = tf.Session(graph=self.graph)
        self.sess.run(init_op)
        self.log_dir = str(log_dir)
        self.writer = tf.summary.FileWriter(self.log_dir)
        self.trainer.start(self.sess, self.writer)
        self.data = None
        get_data = self.trainer.get_data

        def recording_get_data(**kwargs):
            self.data = get_data(**kwargs)
            return self.data

        self.trainer.get_data = recording_get_data

    def global_weights(self):
        return self.sess.run(self.trainer.network.var_list)

    def global_step(self):
        return int(self.sess.run(self.trainer.global_step))

    def train_step(self):
        """Runs process(); returns (frames reported, real train frames in the data, step advance, weights moved)."""
        before, step = self.global_weights(), self.global_step()
        frames = self.trainer.process(self.sess)
        after = self.global_weights()
        real = sum(rollout.size for rollout in self.data['on_policy'] if BaseAAC.rollout_is_train(rollout))
        moved = any(not np.array_equal(a, b) for a, b in zip(before, after))
        return frames, real, self.global_step() - step, moved

    def summary_tags(self):
        self.writer.flush()
        return set(scalar_events(self.log_dir))

    def close(self):
        self.trainer.stop()
        self.writer.close()
        self.sess.close()
        for env in self.trainer.env_list:
            env.close()


def assert_trained(session, expect_tags):
    frames, real, advance, moved = session.train_step()
    assert moved, 'global weights did not change'
    assert frames == real == advance > 0
    tags = session.summary_tags()
    for tag in expect_tags:
        assert any(t.endswith(tag) for t in tags), (tag, sorted(tags))


@pytest.mark.parametrize('time_flat', [True, False])
def test_a3c_process_trains_on_real_frames(tmp_path, time_flat):
    session = Session(A3C, trading_env(), Aac1dPolicy, dict(lstm_layers=(16,), **SMALL_CONV), tmp_path,
                      rollout_length=8, time_flat=time_flat)
    try:
        for _ in range(4):  # several rollouts, the terminal (short, padded when not time_flat) one included
            assert_trained(session, ['grad_global_norm', 'learn_rate', 'total_loss', 'policy_loss', 'value_loss'])
    finally:
        session.close()


def test_a3c_rl2_policy_two_envs(tmp_path):
    session = Session(A3C, [trading_env(), trading_env()], AacStackedRL2Policy,
                      dict(lstm_layers=(16, 16), lstm_2_init_period=3, **SMALL_CONV), tmp_path,
                      rollout_length=6, time_flat=True, episodes_per_trial=3)
    try:
        assert session.trainer.episodes_per_trial == 3
        for _ in range(3):
            assert_trained(session, ['var_global_norm'])
    finally:
        session.close()


def assigned_variables(op):
    """Names of the variables an op assigns, through the groups (NoOps) it is made of."""
    if op.type == 'NoOp':
        return set().union(*(assigned_variables(inner) for inner in op.control_inputs))
    return {op.inputs[0].op.name}


def test_train_step_equals_session_run_and_sync_skips_only_untrained_variables(tmp_path):
    """process() (sync of the variables with gradients, train step through a session callable) moves the global
    weights exactly as syncing everything and running the train op with Session.run; the skipped variables (the
    reward-prediction head, which A3C does not train) keep equal local and global copies."""
    session = Session(A3C, trading_env(), BaseAacPolicy, dict(lstm_layers=(16,), linear_layer_ref=linear,
                                                              **SMALL_CONV), tmp_path, rollout_length=8)
    trainer, sess = session.trainer, session.sess
    try:
        local_vars, global_vars = trainer.local_network.var_list, trainer.network.var_list
        synced = {op.inputs[0].op.name for op in trainer.sync_pi.control_inputs}
        skipped = sorted(var.op.name for var in local_vars if var.op.name not in synced)
        assert skipped and all('/rp_' in name for name in skipped), skipped
        assert assigned_variables(trainer.sync) == {var.op.name for var in local_vars}
        session.train_step()
        every_var = session.graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
        state = list(zip(every_var, sess.run(every_var)))
        session.train_step()
        via_process = session.global_weights()
        for var, value in state:
            var.load(value, sess)
        feed = trainer.process_data(sess, session.data, [True], trainer.local_network)
        sess.run(trainer.sync)
        sess.run(trainer.train_op, feed)
        for expected, actual in zip(session.global_weights(), via_process):
            np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-7)
        sess.run(trainer.sync_pi)
        for local, glob in zip(sess.run(local_vars), sess.run(global_vars)):
            np.testing.assert_array_equal(local, glob)
    finally:
        session.close()


def _record_runs(trainer):
    """List that collects the names of the train-step session runs of `trainer` (see `learner.SessionCalls`)."""
    names, run = [], trainer.learner._callables.run

    def recording_run(sess, name, *args, **kwargs):
        names.append(name)
        return run(sess, name, *args, **kwargs)

    trainer.learner._callables.run = recording_run
    return names


def _local_and_global(session):
    """(local, global) values of the variables sync_pi copies."""
    trainer = session.trainer
    synced = {op.inputs[0].op.name for op in trainer.sync_pi.control_inputs}
    pairs = [(local, glob) for local, glob in zip(trainer.local_network.var_list, trainer.network.var_list)
             if local.op.name in synced]
    return session.sess.run(pairs)


def test_a3c_syncs_at_the_end_of_the_train_step_unless_it_writes_the_model_summary(tmp_path):
    """A3C runs the sync of a train step at the end of the previous step, in its train run: after process() the
    local weights equal the updated global ones and the next step runs no sync of its own. A step writing the model
    summary (whose ops read the local weights) leaves the local weights as they were trained on, so the next step
    syncs first."""
    session = Session(A3C, trading_env(), BaseAacPolicy, dict(lstm_layers=(16,), linear_layer_ref=linear,
                                                              **SMALL_CONV), tmp_path, rollout_length=8,
                      model_summary_freq=3)
    try:
        runs = _record_runs(session.trainer)
        trained_on = [local for local, _ in _local_and_global(session)]
        expected = [(['update_with_summary'], False), (['sync', 'update_then_sync'], True),
                    (['update_then_sync'], True), (['update_with_summary'], False)]
        for step, (step_runs, synced) in enumerate(expected):
            del runs[:]
            assert session.train_step()[3]
            assert runs == step_runs, step
            values = _local_and_global(session)
            if synced:
                for local, glob in values:
                    np.testing.assert_array_equal(local, glob)
                trained_on = [local for local, _ in values]
            else:
                assert any(not np.array_equal(local, glob) for local, glob in values), step
                for (local, _), expected_local in zip(values, trained_on):
                    np.testing.assert_array_equal(local, expected_local)
    finally:
        session.close()


def test_ppo_syncs_before_each_train_step_after_copying_the_target_policy(tmp_path):
    """With a target policy every train step runs in this order: pi' copies the local policy, then the local policy
    is synced and trained; after process() the local weights are the ones trained on, not the updated global ones."""
    session = Session(PPO, trading_env(), Aac1dPolicy, dict(lstm_layers=(16,), **SMALL_CONV), tmp_path,
                      rollout_length=8, model_summary_freq=2)
    try:
        runs = _record_runs(session.trainer)
        for _ in range(2):
            assert session.train_step()[3]
            assert any(not np.array_equal(local, glob) for local, glob in _local_and_global(session))
        assert runs == ['copy_to_target', 'sync', 'update_with_summary', 'copy_to_target', 'sync', 'update']
    finally:
        session.close()


def test_unreal_all_aux_tasks_on_trading_env_with_replayed_sequences_shorter_than_rollouts(tmp_path):
    long_episodes = trading_env(episode_duration={'days': 1, 'hours': 0, 'minutes': 0})
    session = Session(Unreal, long_episodes, Aac1dPolicy,
                      dict(lstm_layers=(16,), **SMALL_CONV), tmp_path, rollout_length=10, time_flat=False,
                      use_value_replay=True, use_reward_prediction=True, use_pixel_control=True,
                      replay_memory_size=40, replay_rollout_length=6, rp_reward_threshold=0.001)
    try:
        assert_trained(session, ['v_loss', 'class_loss', 'q_loss', 'policy_loss'])
        assert [rollout.size for rollout in session.data['off_policy']] == [6]
    finally:
        session.close()


def test_replayed_sequences_shorter_than_reward_prediction_samples_are_refused():
    env = trading_env()
    try:
        with tf.Graph().as_default(), pytest.raises(ValueError, match='replay_rollout_length 2 is shorter than '
                                                                      'rp_sequence_size 3'):
            Unreal(env=env, task=0, policy_config={'class_ref': Aac1dPolicy, 'kwargs': {}},
                   use_reward_prediction=True, replay_rollout_length=2, rp_sequence_size=3)
    finally:
        env.close()


def test_unreal_all_aux_tasks_on_image_env(tmp_path):
    env = gym_wrappers.TestModeEnv(env_id='ALE/Pong-v5', seed=0)
    session = Session(Unreal, env, BaseAacPolicy, dict(lstm_layers=(16,), **SMALL_CONV), tmp_path,
                      rollout_length=10, test_mode=True, use_value_replay=True, use_reward_prediction=True,
                      use_pixel_control=True, replay_memory_size=30)
    try:
        assert_trained(session, ['v_loss', 'class_loss', 'q_loss'])
    finally:
        session.close()


def test_ppo_two_epochs_apply_two_adam_updates_per_step_against_one_old_policy(tmp_path):
    """PPO with two epochs: every process() makes two Adam updates of the global weights (Adam's beta1 power falls
    by a factor 0.9 twice) and advances the global step by its frames once; pi' holds the weights of the step's
    first epoch throughout (the global weights before the step, on the first step), and no global pi' is built."""
    session = Session(PPO, trading_env(), Aac1dPolicy, dict(lstm_layers=(16,), **SMALL_CONV), tmp_path,
                      rollout_length=8, num_epochs=2)
    trainer = session.trainer
    try:
        assert trainer.local_network_prime is not None
        names = [variable.op.name for variable in session.graph.get_collection('variables')]
        assert [name for name in names if 'global_' in name] == ['global/global_step', 'global/global_episode']
        assert [name for name in names if 'prime' in name and 'local' not in name] == []
        with session.graph.as_default():
            beta1_power = trainer.optimizer._get_beta_accumulators()[0]
        assert session.sess.run(beta1_power) == pytest.approx(0.9)
        before = session.global_weights()
        assert_trained(session, ['l_clip_loss', 'value_loss'])
        for prime, old in zip(session.sess.run(trainer.local_network_prime.var_list), before):
            np.testing.assert_array_equal(prime, old)
        assert session.sess.run(beta1_power) == pytest.approx(0.9 ** 3, rel=1e-6)
        assert_trained(session, ['l_clip_loss'])
        assert session.sess.run(beta1_power) == pytest.approx(0.9 ** 5, rel=1e-6)
    finally:
        session.close()


def test_each_epoch_takes_its_gradient_at_the_weights_the_previous_one_made(tmp_path):
    """PPO leaves the local weights as the last epoch trained on: with two epochs, the global weights after the
    first one (and neither those before the step nor those after it)."""
    session = Session(PPO, trading_env(), Aac1dPolicy, dict(lstm_layers=(16,), **SMALL_CONV), tmp_path,
                      rollout_length=8, num_epochs=2, model_summary_freq=100)
    try:
        runs = _record_runs(session.trainer)
        before = [glob for _, glob in _local_and_global(session)]
        assert session.train_step()[3]
        assert runs == ['copy_to_target', 'sync', 'update_epoch', 'update_with_summary']
        values = _local_and_global(session)
        assert any(not np.array_equal(local, old) for (local, _), old in zip(values, before))
        assert any(not np.array_equal(local, glob) for local, glob in values)
    finally:
        session.close()


@pytest.mark.parametrize('behaviour_logits', [False, True])
def test_ppo_minibatches_make_an_update_each_and_advance_the_step_by_the_whole_batch(tmp_path, behaviour_logits):
    """PPO with two epochs of three minibatches (time_flat, 8 frames): six Adam updates per train step, each but
    the last followed by the sync, their feeds together twice the step's frames (each frame once per epoch, its
    advantage normalised within its minibatch); the global step advances by all 8 frames, not the last
    minibatch's. Against the stored behaviour logits there is no pi' to copy to, nor a sync before the first
    update (the local policy holds the global weights from the start)."""
    session = Session(PPO, trading_env(), Aac1dPolicy, dict(lstm_layers=(16,), **SMALL_CONV), tmp_path,
                      rollout_length=8, time_flat=True, num_epochs=2, num_minibatches=3, normalize_advantages=True,
                      behaviour_logits=behaviour_logits, model_summary_freq=100)
    trainer = session.trainer
    try:
        runs, feeds = [], []
        run = trainer.learner._callables.run

        def recording_run(sess, name, fetches, feed, **kwargs):
            runs.append(name)
            if feed:
                feeds.append(feed)
            return run(sess, name, fetches, feed, **kwargs)

        trainer.learner._callables.run = recording_run
        with session.graph.as_default():
            beta1_power = trainer.optimizer._get_beta_accumulators()[0]
        frames, real, advance, moved = session.train_step()
        assert moved and frames == real == advance == 8
        first = [] if behaviour_logits else ['copy_to_target', 'sync']
        assert runs == first + ['update_epoch'] * 5 + ['update_with_summary']
        assert session.sess.run(beta1_power) == pytest.approx(0.9 ** 7, rel=1e-6)
        targets = trainer.targets.on_policy
        sizes = [len(feed[targets.mask]) for feed in feeds]
        assert sizes == [3, 3, 2, 3, 3, 2]
        assert all(feed[trainer.train_ops.frames] == 8 for feed in feeds)
        for feed in feeds:
            assert feed[targets.advantage].mean() == pytest.approx(0.0, abs=1e-9)
        returns = [np.sort(np.concatenate([feed[targets.r] for feed in feeds[epoch * 3:epoch * 3 + 3]]))
                   for epoch in range(2)]
        np.testing.assert_array_equal(returns[0], returns[1])
        assert len(returns[0]) == 8
        if behaviour_logits:
            stored = np.asarray(session.data['on_policy'][0]['logits'])
            for feed in feeds:
                rows = [int(np.flatnonzero(np.all(stored == row, axis=1))[0])
                        for row in feed[targets.behaviour_logits]]
                np.testing.assert_array_equal(feed[targets.action], np.asarray(
                    session.data['on_policy'][0]['action'])[rows])  # each frame's logits with its own action
    finally:
        session.close()


def mean_divergence(old_logits, logits, mask):
    """numpy: the mean over the rows with mask 1 of KL(softmax(old_logits) || softmax(logits))."""
    def log_softmax(x):
        shifted = x - x.max(axis=1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    old, new = log_softmax(np.asarray(old_logits, np.float64)), log_softmax(np.asarray(logits, np.float64))
    rows = (np.exp(old) * (old - new)).sum(axis=1)
    return float((rows * mask).sum() / max(mask.sum(), 1.0))


@pytest.mark.parametrize('target_kl', [1e-9, 1e9])
def test_ppo_updates_end_after_the_first_minibatch_that_drifted_past_the_target_kl(tmp_path, target_kl):
    """PPO with `target_kl`, two epochs of three minibatches (time_flat, 8 frames): every update but the last fetches
    its minibatch's mean KL(pi_old || pi) before it (numpy on the fed acting logits and the local policy's); the
    updates stop after the first past 1.5 x target_kl and the step ends with no more update, the global step still
    advanced by all 8 frames, the model summary counting the updates; with a target no drift reaches, all six
    run. (Noise-free heads: a noisy layer's logits differ from run to run.)"""
    session = Session(PPO, trading_env(), Aac1dPolicy, dict(lstm_layers=(16,), linear_layer_ref=linear, **SMALL_CONV),
                      tmp_path,
                      rollout_length=8, time_flat=True, num_epochs=2, num_minibatches=3, behaviour_logits=True,
                      target_kl=target_kl)
    trainer = session.trainer
    try:
        runs, drifts, expected_drifts = [], [], []
        run = trainer.learner._callables.run
        targets = trainer.targets.on_policy

        def recording_run(sess, name, fetches, feed, **kwargs):
            if name == 'update_epoch':
                logits = sess.run(trainer.local_network.on_logits, feed)
                expected_drifts.append(mean_divergence(feed[targets.behaviour_logits], logits, feed[targets.mask]))
            fetched = run(sess, name, fetches, feed, **kwargs)
            runs.append(name)
            if name == 'update_epoch':
                drifts.append(float(fetched[1]))
            return fetched

        trainer.learner._callables.run = recording_run
        with session.graph.as_default():
            beta1_power = trainer.optimizer._get_beta_accumulators()[0]
        frames, real, advance, moved = session.train_step()
        assert moved and frames == real == advance == 8
        np.testing.assert_allclose(drifts, expected_drifts, rtol=1e-4, atol=1e-7)
        if target_kl < 1:
            assert drifts[-1] > 1.5 * target_kl and all(drift <= 1.5 * target_kl for drift in drifts[:-1])
            updates = len(drifts)
            assert updates < 6 and runs == ['update_epoch'] * updates + ['end_early_with_summary']
        else:
            updates = 6
            assert runs == ['update_epoch'] * 5 + ['update_with_summary']
        assert trainer.learner.updates_in_step == updates
        assert session.sess.run(beta1_power) == pytest.approx(0.9 ** (1 + updates), rel=1e-6)
        assert tagged(scalar_events(str(tmp_path)), 'model/updates_in_step') == [(8, updates)]
    finally:
        session.close()


def test_test_rollouts_train_nothing(tmp_path):
    dataset = BTgymDataset(dataframe=make_sine_data(num_bars=8000), episode_duration=SHORT_EPISODE,
                           target_period={'days': 2, 'hours': 0, 'minutes': 0})
    env = BTgymEnv(dataset=dataset, strategy=DevStrat_4_11, render_enabled=False, random_seed=0)
    session = Session(A3C, env, Aac1dPolicy, dict(lstm_layers=(16,), **SMALL_CONV), tmp_path,
                      rollout_length=8, episode_train_test_cycle=(0, 1))
    try:
        for _ in range(3):
            frames, real, advance, moved = session.train_step()
            assert (frames, real, advance, moved) == (0, 0, 0, False)
            assert all(not BaseAAC.rollout_is_train(rollout) for rollout in session.data['on_policy'])
    finally:
        session.close()


def test_batch_mixing_train_and_test_rollouts_trains_on_the_train_ones(tmp_path):
    def env():
        dataset = BTgymDataset(dataframe=make_sine_data(num_bars=8000), episode_duration=SHORT_EPISODE,
                               target_period={'days': 2, 'hours': 0, 'minutes': 0})
        return BTgymEnv(dataset=dataset, strategy=DevStrat_4_11, render_enabled=False, random_seed=0)

    class SecondEnvTests(A3C):
        """The second env's cycle starts with its test episode."""

        skipped = False

        def get_sample_config(self, _new_trial=None, env=None, **kwargs):
            if env is self.env_list[1] and not self.skipped:
                self.skipped = True
                super().get_sample_config(env=env)
            return super().get_sample_config(_new_trial, env=env, **kwargs)

    session = Session(SecondEnvTests, [env(), env()], Aac1dPolicy, dict(lstm_layers=(16,), **SMALL_CONV), tmp_path,
                      rollout_length=8, episode_train_test_cycle=(1, 1))
    try:
        frames, real, advance, moved = session.train_step()
        kinds = sorted(BaseAAC.rollout_is_train(rollout) for rollout in session.data['on_policy'])
        assert kinds == [False, True]
        assert moved and frames == real == advance > 0
        assert real < sum(rollout.size for rollout in session.data['on_policy'])
    finally:
        session.close()


def cycle_only_trainer(cycle, episodes_per_trial):
    """Just the state `BaseAAC.get_sample_config` reads, with the method bound to it."""
    trainer = types.SimpleNamespace(episode_train_test_cycle=cycle, episodes_per_trial=episodes_per_trial,
                                    _sample_cycles=SampleCycles(cycle, episodes_per_trial))
    trainer.get_sample_config = types.MethodType(BaseAAC.get_sample_config, trainer)
    return trainer


def test_sample_config_cycles_train_and_test_episodes():
    trainer = cycle_only_trainer((2, 1), episodes_per_trial=1)
    types_seen = [trainer.get_sample_config()['episode_config']['sample_type'] for _ in range(7)]
    assert types_seen == [0, 0, 1, 0, 0, 1, 0]
    assert [SampleCycle(0, 2, 1).next_config()['episode_config']['sample_type'] for _ in range(2)] == [1, 1]


def test_sample_config_new_trial_every_episodes_per_trial_and_at_each_sample_type_change():
    trainer = cycle_only_trainer((5, 0), episodes_per_trial=3)
    new_trial = [trainer.get_sample_config()['trial_config']['get_new'] for _ in range(7)]
    assert new_trial == [True, False, False, True, False, False, True]
    cycle = SampleCycle(3, 1, episodes_per_trial=2)
    assert [cycle.next_config()['trial_config']['get_new'] for _ in range(8)] == [
        True, False, True, True, True, False, True, True]
    assert cycle.next_config(new_trial=False)['trial_config']['get_new'] is False


def test_each_env_keeps_its_own_sample_cycle():
    trainer = cycle_only_trainer((3, 1), episodes_per_trial=2)
    envs = [object(), object()]
    configs = {id(env): [] for env in envs}
    for _ in range(8):
        for env in envs:  # episodes of the two envs alternate
            configs[id(env)].append(trainer.get_sample_config(env=env))
    for env in envs:
        assert [config['episode_config']['sample_type'] for config in configs[id(env)]] == [0, 0, 0, 1] * 2
        assert [config['trial_config']['get_new'] for config in configs[id(env)]] == [
            True, False, True, True, True, False, True, True]


def test_each_env_replay_memory_draws_from_its_own_seed():
    config = AacConfig(use_value_replay=True, replay_memory_size=10, replay_rollout_length=5).resolve()
    setup = RunnerSetup(task=2, runner_config=None, ep_summary=None, global_step=None, log_level=None, random_seed=7)

    def draws(index):
        memory = memory_config(config, setup, index)
        return memory['class_ref'](**memory['kwargs'])._rng.integers(1 << 30, size=4).tolist()

    assert draws(0) == draws(0) and draws(0) != draws(1)


def test_subclass_refuses_the_flags_it_fixes():
    with pytest.raises(TypeError, match='A3C fixes'):
        A3C(env=None, task=0, policy_config=None, use_value_replay=True)
    with pytest.raises(TypeError, match='PPO fixes'):
        PPO(env=None, task=0, policy_config=None, on_policy_loss=None)


def test_bad_spaces_are_refused():
    env = types.SimpleNamespace(observation_space=None, action_space=None)
    with pytest.raises(TypeError, match='DictSpace'):
        A3C(env=env, task=0, policy_config={'class_ref': AacDensePolicy})


def test_train_in_process_cartpole_smoke(tmp_path):
    """CartPole in process: each recorded episode's length and total reward equal the env's own count (CartPole pays
    1 per step, so reward = length), `env_steps` accumulates the lengths, and the episode summaries written to
    TensorBoard (one per episode with `episode_summary_freq=1`) hold the same figures, in order."""
    counted = []

    class CountingCartPole(gym_wrappers.TestModeEnv):
        """Counts the steps and rewards of every episode it runs."""

        def reset(self, *args, **kwargs):
            self.count = [0, 0.0]
            return super().reset(*args, **kwargs)

        def step(self, action):
            observation, reward, terminated, truncated, info = super().step(action)
            self.count = [self.count[0] + 1, self.count[1] + reward]
            if terminated or truncated:
                counted.append(tuple(self.count))
            return observation, reward, terminated, truncated, info

    result = train_in_process(
        env_config={'class_ref': CountingCartPole, 'kwargs': {'env_id': 'CartPole-v1'}},
        policy_config={'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (16,), 'lstm_layers': (16,)}},
        trainer_config={'class_ref': A3C, 'kwargs': {'test_mode': True, 'rollout_length': 10,
                                                     'episode_summary_freq': 1}},
        max_env_steps=300, random_seed=1, log_dir=str(tmp_path))
    assert result['global_step'] >= 300
    episodes = result['train_episodes']
    assert result['episodes'] == len(episodes) == len(counted) >= 3 and result['test_episodes'] == 0
    lengths = [length for length, _ in counted]
    assert [episode['steps'] for episode in episodes] == lengths
    assert result['episode_rewards'] == [episode['total_reward'] for episode in episodes] == \
        [reward for _, reward in counted] == [float(length) for length in lengths]
    assert [episode['env_steps'] for episode in episodes] == np.cumsum(lengths).tolist()
    assert result['mean_reward_last_10'] == pytest.approx(np.mean(lengths[-10:]))
    events = scalar_events(tmp_path / 'worker_0')
    written_rewards, written_lengths = tagged(events, 'episode/total_reward'), tagged(events, 'episode/steps')
    written = len(written_rewards)
    assert 3 <= written <= len(lengths) and written == len(written_lengths)
    assert [value for _, value in written_rewards] == [value for _, value in written_lengths] == lengths[:written]
    assert all(step >= index + 1 for index, (step, _) in enumerate(written_rewards))  # at the global episode


def test_episode_summaries_hold_the_runners_statistics(tmp_path):
    """Summaries every episode, train and test episodes alternating: TensorBoard's `episode_train/*` and
    `episode_test/*` scalars are the runner's statistics of each episode, in order; each episode's total reward is
    the sum of the rewards of its rollouts and its agent steps their lengths. The same scalars are written again
    under `*_by_step/` at the global step of the write."""
    dataset = BTgymDataset(dataframe=make_sine_data(num_bars=8000), episode_duration=SHORT_EPISODE,
                           target_period={'days': 2, 'hours': 0, 'minutes': 0})
    env = BTgymEnv(dataset=dataset, strategy=DevStrat_4_11, render_enabled=False, random_seed=0)
    session = Session(A3C, env, Aac1dPolicy, dict(lstm_layers=(16,), **SMALL_CONV), tmp_path, rollout_length=20,
                      episode_train_test_cycle=(1, 1), episode_summary_freq=1, model_summary_freq=100)
    stats = {'ep_summary': [], 'test_ep_summary': []}
    written_at = {'ep_summary': [], 'test_ep_summary': []}
    reward_sum, agent_steps = 0.0, 0
    try:
        for _ in range(100):
            if min(len(episodes) for episodes in stats.values()) >= 2:
                break
            step_before = session.sess.run(session.trainer.global_step)
            session.trainer.process(session.sess)
            rollout, data = session.data['on_policy'][0], session.data
            reward_sum += float(np.sum(np.asarray(rollout['reward'], dtype=np.float64)))
            agent_steps += len(rollout['reward'])
            ended = [data[key][0] for key in stats if data[key][0] is not None]
            assert len(ended) == int(bool(rollout['terminal'][-1]))
            for key in stats:
                if data[key][0] is not None:
                    assert data[key][0]['total_r'] == pytest.approx(reward_sum, abs=1e-9)
                    assert data[key][0]['agent_steps'] == agent_steps
                    stats[key].append(data[key][0])
                    written_at[key].append((step_before, session.sess.run(session.trainer.global_step)))
                    reward_sum, agent_steps = 0.0, 0
        assert [len(episodes) for episodes in stats.values()] == [2, 2]
        session.writer.flush()
        events = scalar_events(session.log_dir)
    finally:
        session.close()
    names = {'ep_summary': ('episode_train', {'total_reward': 'total_r', 'cpu_time_sec': 'cpu_time',
                                              'final_value': 'final_value', 'env_steps': 'steps',
                                              'agent_steps': 'agent_steps'}),
             'test_ep_summary': ('episode_test', {'total_reward': 'total_r', 'final_value': 'final_value',
                                                  'env_steps': 'steps', 'agent_steps': 'agent_steps'})}
    for key, (family, tags) in names.items():
        assert set(stats[key][0]) == set(tags.values())
        for tag, stat in tags.items():
            expected = [episode[stat] for episode in stats[key]]
            by_episode = tagged(events, '{}/{}'.format(family, tag))
            by_step = tagged(events, '{}_by_step/{}'.format(family, tag))
            assert [value for _, value in by_episode] == pytest.approx(expected, rel=1e-6), (family, tag)
            assert [value for _, value in by_step] == pytest.approx(expected, rel=1e-6), (family, tag)
            # Written in the train step that ended the episode: at its global step, not the episode count.
            assert all(before <= step <= after for (step, _), (before, after) in zip(by_step, written_at[key]))
            assert [step for step, _ in by_step] != [step for step, _ in by_episode]
    assert not [tag for tag in events if tag.startswith('A3C/A3C/')], sorted(events)
    assert 'A3C/on_policy/aac/policy_loss' in events and 'A3C/model/total_loss' in events, sorted(events)
