"""GuidedAAC: the imitation term against numpy on a fed batch (its decayed weight, zero without train phase), the
total loss it adds to, training steps through the synchro runner, and the errors of a policy without experts."""
import numpy as np
import pytest

from btgym_aac import BTgymDataset, BTgymEnv
from btgym_aac.algorithms.policy import AacStackedRL2Policy
from btgym_aac.algorithms.acting import BaseSynchroRunner, VerboseSynchroRunner
from btgym_aac.data import make_sine_data
from btgym_aac.research.gps import GuidedAAC, GuidedPolicy_0_0, GuidedStrategy_0_0, VerboseGuidedAAC
from btgym_aac.research.gps.aac import VERBOSE_RENDER_MODES
from trainer_helpers import started_trainer

POLICY = dict(lstm_layers=(16, 16), conv_2d_layer_config=((8, (3, 1), (2, 1)),) * 4)


def guided_env(seed=0):
    dataset = BTgymDataset(dataframe=make_sine_data(num_bars=3000),
                           episode_duration={'days': 0, 'hours': 12, 'minutes': 0})
    return BTgymEnv(dataset=dataset, strategy=GuidedStrategy_0_0, render_enabled=False, random_seed=seed)


def numpy_guided_loss(logits, expert, weight):
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    return weight * np.mean((expert[:, 1:3] - probs[:, 1:3]) ** 2)


def test_imitation_term_equals_numpy_with_its_decayed_weight_and_vanishes_without_train_phase():
    with started_trainer(GuidedAAC, guided_env(), GuidedPolicy_0_0, POLICY, rollout_length=8, time_flat=True,
                         guided_lambda=2.0, guided_decay_steps=100, aac_lambda=0.5) as (trainer, sess, _):
        assert isinstance(trainer.runners[0], BaseSynchroRunner)
        pi = trainer.local_network
        data = trainer.get_data()
        feed = trainer.process_data(sess, data, [True], pi)
        expert = feed[pi.expert_actions]
        assert expert.shape == (8, 4) and np.allclose(expert.sum(axis=1), 1.0)
        for step in (0, 49, 99, 150):
            trainer.global_step.load(step, sess)
            weight = 2.0 * (1 - min(step + 1, 100) / 100)
            guided, logits = sess.run([trainer.guided_loss, pi.on_logits], feed)
            np.testing.assert_allclose(guided, numpy_guided_loss(logits, expert, weight), rtol=1e-5, atol=1e-9)
        trainer.global_step.load(0, sess)
        assert sess.run(trainer.guided_loss, {**feed, pi.train_phase: False}) == 0.0
        assert sess.run(trainer.guided_loss, feed) > 0


@pytest.mark.slow
def test_aac_lambda_scales_the_base_loss_only():
    losses = {}
    for aac_lambda in (1.0, 0.25):
        with started_trainer(GuidedAAC, guided_env(), GuidedPolicy_0_0, POLICY, rollout_length=8, time_flat=True,
                             aac_lambda=aac_lambda) as (trainer, sess, _):
            feed = trainer.process_data(sess, trainer.get_data(), [True], trainer.local_network)
            losses[aac_lambda] = sess.run([trainer.loss, trainer.guided_loss], feed)
    (total_1, guided_1), (total_q, guided_q) = losses[1.0], losses[0.25]
    np.testing.assert_allclose(guided_1, guided_q, rtol=1e-6)
    np.testing.assert_allclose(total_q - guided_q, 0.25 * (total_1 - guided_1), rtol=1e-4, atol=1e-7)


def test_guided_training_steps_move_the_global_weights_and_count_frames():
    with started_trainer(GuidedAAC, guided_env(), GuidedPolicy_0_0, POLICY, rollout_length=8,
                         time_flat=True) as (trainer, sess, _):
        before = sess.run(trainer.network.var_list)
        frames = sum(trainer.process(sess) for _ in range(3))
        assert frames == 24 == int(sess.run(trainer.global_step))
        assert any(not np.allclose(old, new) for old, new in zip(before, sess.run(trainer.network.var_list)))


def test_verbose_guided_trainer_renders_the_policy_and_fixes_its_runner():
    with started_trainer(VerboseGuidedAAC, guided_env(), GuidedPolicy_0_0, POLICY,
                         rollout_length=4) as (trainer, _, _):
        assert isinstance(trainer.runners[0], VerboseSynchroRunner)
        assert set(VERBOSE_RENDER_MODES) <= set(trainer.ep_summary)
    env = guided_env()
    try:
        with pytest.raises(TypeError, match='fixes runner_config'):
            VerboseGuidedAAC(env=env, task=0, runner_config={'class_ref': BaseSynchroRunner},
                             policy_config={'class_ref': GuidedPolicy_0_0, 'kwargs': POLICY})
    finally:
        env.close()


def test_a_policy_without_expert_actions_is_refused_by_name():
    env = guided_env()
    try:
        with pytest.raises(TypeError, match='needs a policy with `expert_actions`.*AacStackedRL2Policy'):
            with started_trainer(GuidedAAC, env, AacStackedRL2Policy, dict(lstm_layers=(8, 8))):
                pass
    finally:
        env.close()
