"""The trainer's loss on batches from its own data path against numpy: the A3C loss from the rollouts' rewards and
values (returns and GAE advantages by a plain loop), the padding mask, the weighted UNREAL auxiliary losses and the
gradient clipping at global norm 40."""

import numpy as np
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.algorithms import A3C, Unreal
from btgym_aac.algorithms.policy import Aac1dPolicy, AacDensePolicy
from btgym_aac.env import gym_wrappers
from btgym_aac.strategy import DevStrat_4_11
from trainer_helpers import log_softmax, loop_returns_and_advantages, started_trainer

GAMMA, GAE_LAMBDA, BETA, ROLLOUT = 0.9, 0.8, 0.05, 12


def cartpole_a3c(time_flat=False):
    envs = [gym_wrappers.TestModeEnv(env_id='CartPole-v1', seed=seed) for seed in (0, 1)]
    return started_trainer(A3C, envs, AacDensePolicy, dict(dense_layers=(16,), lstm_layers=(16,)), test_mode=True,
                           rollout_length=ROLLOUT, time_flat=time_flat, model_gamma=GAMMA,
                           model_gae_lambda=GAE_LAMBDA, model_beta=BETA)


def data_with_a_bootstrapped_and_a_short_terminal_rollout(trainer):
    """Runner data (two envs) holding a full rollout that bootstraps and a terminal one shorter than ROLLOUT."""
    for _ in range(100):
        data = trainer.get_data()
        rollouts = data['on_policy']
        if any(not r['terminal'][-1] for r in rollouts) and any(r.size < ROLLOUT for r in rollouts):
            return data
    raise AssertionError('no such batch in 100 rollouts')


def summary_tensors(trainer):
    """{last name component: tensor} of the trainer's loss summaries."""
    return {summary.op.name.split('/')[-1]: summary.op.inputs[1] for summary in trainer.loss_summaries}


@pytest.mark.parametrize('time_flat', [False, True])
def test_a3c_loss_of_a_fed_batch_matches_numpy_from_the_rollouts(time_flat):
    """For a batch of a bootstrapped rollout and a short terminal one (padded when not time_flat), the trainer's
    total loss and its policy, value and entropy parts equal numpy's `mean(CE(a, logits)·Adv)`,
    `0.5·mean((R - V)^2)`, `mean(H)` and `L_pi + L_v - beta·H` over the real rows, R and Adv computed by a loop from
    the rollouts' rewards, stored values and bootstrap values, logits and V evaluated in the same session run."""
    with cartpole_a3c(time_flat) as (trainer, sess, _):
        data = data_with_a_bootstrapped_and_a_short_terminal_rollout(trainer)
        pi = trainer.local_network
        feed = trainer.process_data(sess, data, [True, True], pi)
        parts = summary_tensors(trainer)
        loss, logits, vf, pi_loss, v_loss, entropy = sess.run(
            [trainer.loss, pi.on_logits, pi.on_vf, parts['policy_loss'], parts['value_loss'], parts['entropy']], feed)
    rollouts = data['on_policy']
    starts = np.cumsum([0] + [r.size if time_flat else ROLLOUT for r in rollouts])[:-1]
    rows, actions, returns, advantages = [], [], [], []
    for rollout, start in zip(rollouts, starts):
        rewards = np.array(rollout['reward'], dtype=np.float64)
        values = np.array(rollout['value'], dtype=np.float64).reshape(-1)
        bootstrap = float(np.asarray(rollout['r'][-1]).reshape(-1)[0])
        assert (bootstrap == 0.0) == bool(rollout['terminal'][-1])
        ret, adv = loop_returns_and_advantages(rewards, values, bootstrap, GAMMA, GAE_LAMBDA)
        rows += list(range(start, start + rollout.size))
        actions.append(np.array(rollout['action']))
        returns.append(ret)
        advantages.append(adv)
        np.testing.assert_allclose(vf[start:start + rollout.size], values, rtol=1e-4, atol=1e-5)  # same weights
    assert len(vf) == len(rows) if time_flat else len(vf) == 2 * ROLLOUT > len(rows)  # padded rows left out
    actions, returns, advantages = np.concatenate(actions), np.concatenate(returns), np.concatenate(advantages)
    log_p = log_softmax(logits[rows].astype(np.float64))
    expected_pi = np.mean(-(actions * log_p).sum(axis=1) * advantages)
    expected_v = 0.5 * np.mean((returns - vf[rows]) ** 2)
    expected_entropy = np.mean(-(np.exp(log_p) * log_p).sum(axis=1))
    np.testing.assert_allclose([pi_loss, v_loss, entropy], [expected_pi, expected_v, expected_entropy],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss, expected_pi + expected_v - BETA * expected_entropy, rtol=1e-5, atol=1e-6)


def test_ppo_against_behaviour_logits_feeds_what_the_runners_acted_with():
    """PPO with `behaviour_logits` builds no pi' and feeds the logits stored with every frame: before any update
    they are the local policy's own logits on the same frames (noise-free heads, time_flat contexts), so the ratio
    is 1, the KL 0 and the clipped surrogate numpy's `-mean(Adv)`."""
    from btgym_aac.algorithms import PPO
    from btgym_aac.algorithms.nn.layers import linear

    envs = [gym_wrappers.TestModeEnv(env_id='CartPole-v1', seed=seed) for seed in (0, 1)]
    with started_trainer(PPO, envs, AacDensePolicy, dict(dense_layers=(16,), lstm_layers=(16,),
                                                         linear_layer_ref=linear),
                         test_mode=True, rollout_length=ROLLOUT, time_flat=True, model_gamma=GAMMA,
                         model_gae_lambda=GAE_LAMBDA, model_beta=BETA, behaviour_logits=True) as (trainer, sess, _):
        assert trainer.local_network_prime is None and trainer.learner.calls.copy_to_target is None
        data = trainer.get_data()
        pi = trainer.local_network
        feed = trainer.process_data(sess, data, [True, True], pi)
        parts = summary_tensors(trainer)
        logits, clip_loss, ratio, kl = sess.run([pi.on_logits, parts['l_clip_loss'], parts['pi_ratio'],
                                                 parts['Dkl_old_new']], feed)
    stored = np.concatenate([np.asarray(rollout['logits']) for rollout in data['on_policy']])
    np.testing.assert_array_equal(feed[trainer.targets.on_policy.behaviour_logits], stored)
    np.testing.assert_allclose(logits, stored, rtol=1e-5, atol=1e-5)
    advantages = np.concatenate([loop_returns_and_advantages(
        np.array(rollout['reward'], dtype=np.float64), np.array(rollout['value'], dtype=np.float64).reshape(-1),
        float(np.asarray(rollout['r'][-1]).reshape(-1)[0]), GAMMA, GAE_LAMBDA)[1] for rollout in data['on_policy']])
    assert ratio == pytest.approx(1.0, abs=1e-4) and kl == pytest.approx(0.0, abs=1e-5)
    np.testing.assert_allclose(clip_loss, -advantages.mean(), rtol=1e-4, atol=1e-5)


def test_unreal_total_loss_is_the_on_policy_loss_plus_each_weighted_auxiliary_loss():
    """Unreal with value replay, reward prediction and pixel control: in one session run on a fed batch, total =
    on-policy loss + vr_lambda·v_loss + rp_lambda·class_loss + pc_lambda·q_loss, each weighted term counting; the
    reward-prediction and pixel-control heads, trained by their losses only, get non-zero gradients."""
    env = BTgymEnv(strategy=DevStrat_4_11, render_enabled=False, random_seed=0,
                   episode_duration={'days': 0, 'hours': 8, 'minutes': 0})
    lambdas = {'v_loss': 5.0, 'class_loss': 2.0, 'q_loss': 0.25}
    with started_trainer(Unreal, env, Aac1dPolicy, dict(lstm_layers=(8,), conv_2d_num_filters=(4, 4, 4, 4)),
                         rollout_length=6, replay_memory_size=20, use_value_replay=True, use_reward_prediction=True,
                         use_pixel_control=True, rp_reward_threshold=0.001, model_beta=BETA,
                         vr_lambda=lambdas['v_loss'], rp_lambda=lambdas['class_loss'],
                         pc_lambda=lambdas['q_loss']) as (trainer, sess, _):
        pi = trainer.local_network
        data = trainer.get_data()
        feed = trainer.process_data(sess, data, [True], pi)
        assert {trainer.targets.value_replay, trainer.targets.reward_prediction,
                trainer.targets.pixel_control.returns} <= set(feed)
        parts = summary_tensors(trainer)
        heads = [(var.op.name, grad) for var, grad in zip(pi.var_list, trainer.grads)
                 if '/rp_' in var.op.name or '/pc_' in var.op.name]
        assert [name for name, grad in heads if grad is None] == []
        names = ['policy_loss', 'value_loss', 'entropy'] + list(lambdas)
        total, values, head_grads = sess.run([trainer.loss, {name: parts[name] for name in names},
                                              [grad for _, grad in heads]], feed)
        tags = sess.run([summary.op.inputs[0] for summary in trainer.loss_summaries])
        used = {'v_loss': trainer.vr_lambda, 'class_loss': trainer.rp_lambda, 'q_loss': trainer.pc_lambda}
    # One level of the trainer's name in the tags (TensorBoard groups them by their first component).
    assert sorted(tag.decode() for tag in tags) == ['{}/{}'.format(trainer.name, tag) for tag in (
        'aux/pixel_control/q_loss', 'aux/reward_prediction/class_loss', 'aux/value_replay/v_loss',
        'on_policy/aac/entropy', 'on_policy/aac/policy_loss', 'on_policy/aac/value_fn', 'on_policy/aac/value_loss')]
    for name, weight in lambdas.items():
        assert used[name] == pytest.approx(weight, rel=1e-9)
    on_policy = values['policy_loss'] + values['value_loss'] - BETA * values['entropy']
    weighted = {name: used[name] * values[name] for name in lambdas}
    for name, term in weighted.items():
        assert abs(term) > 1e-3 * abs(total), (name, weighted, total)
    np.testing.assert_allclose(total, on_policy + sum(weighted.values()), rtol=1e-5, atol=1e-6)
    assert {name.split('/')[2].split('_')[0] for name, _ in heads} == {'rp', 'pc'}
    for (name, _), grad in zip(heads, head_grads):
        assert np.any(grad != 0), name


def test_gradients_are_clipped_at_global_norm_40():
    """The gradients Adam applies to the global variables are the raw local gradients of the loss when their
    global norm is below 40 (returns and advantages fed 10 times smaller), and raw * 40 / norm when above (fed 1000
    times larger)."""
    with cartpole_a3c() as (trainer, sess, raw_grads):
        pi = trainer.local_network
        feed = trainer.process_data(sess, trainer.get_data(), [True, True], pi)
        graph = sess.graph
        applied = {op.inputs[0].op.name: op.inputs[9] for op in graph.get_operations() if op.type == 'ApplyAdam'}
        pairs = [(raw, applied[glob.op.name]) for raw, glob in zip(raw_grads, trainer.network.var_list)
                 if raw is not None]
        assert len(pairs) == len(applied) > 4
        for scale, clipped in ((0.1, False), (1000.0, True)):
            scaled = dict(feed)
            for target in (trainer.targets.on_policy.r, trainer.targets.on_policy.advantage):
                scaled[target] = feed[target] * scale
            raw, received, norm_summary = sess.run([[raw for raw, _ in pairs], [grad for _, grad in pairs],
                                                    trainer.grads_global_norm], scaled)
            norm = np.sqrt(sum(np.sum(np.square(grad, dtype=np.float64)) for grad in raw))
            assert (norm > 40.0) == clipped, norm
            factor = 40.0 / norm if clipped else 1.0
            for raw_grad, received_grad in zip(raw, received):
                np.testing.assert_allclose(received_grad, raw_grad * factor, rtol=1e-5, atol=1e-9)
            assert norm_summary == pytest.approx(min(norm, 40.0), rel=1e-5)
