"""Trainer features against hand or numpy references: the off-policy actor-critic loss on replayed batches, PPO's
clip range annealed with the learning rate, pi' synced every `pi_prime_update_period` steps, `train_in_process`'s
early stop and TensorBoard output, the train/test cycle validation and the unknown-kwarg warning, and log-uniform
hyperparameter draws."""

import logbook
import numpy as np
import pytest

from btgym_aac.algorithms import A3C, PPO, Unreal, train_in_process
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac.compat import tf
from btgym_aac.env import gym_wrappers
from trainer_helpers import (graph_written, log_softmax, loop_returns_and_advantages, scalar_events,
                             started_trainer, tagged)

GAMMA, GAE_LAMBDA, BETA, ROLLOUT = 0.9, 0.8, 0.05, 12
DENSE = dict(dense_layers=(16,), lstm_layers=(16,))


def cartpoles(count=2):
    return [gym_wrappers.TestModeEnv(env_id='CartPole-v1', seed=seed) for seed in range(count)]


def cartpole_trainer(trainer_class, count=2, **kwargs):
    """`started_trainer` on `count` CartPole envs with a small dense policy."""
    return started_trainer(trainer_class, cartpoles(count), AacDensePolicy, DENSE, test_mode=True, **kwargs)


def scoped_summaries(trainer, scope):
    """{last name component: tensor} of the trainer's loss summaries under the name scope `scope`."""
    return {summary.op.name.split('/')[-1]: summary.op.inputs[1] for summary in trainer.loss_summaries
            if '/{}/'.format(scope) in summary.op.name}


# ------------------------------------------------------------------------------------------- off-policy AAC loss

def test_off_policy_aac_adds_off_aac_lambda_times_the_aac_loss_of_the_replayed_batch():
    """Unreal with `use_off_policy_aac`: in one session run on a fed batch, total loss = on-policy loss +
    off_aac_lambda * numpy's A3C loss of the replayed (padded) sequences, the latter from their rewards, stored
    values and bootstrap values (loop returns/GAE) and the off-policy logits and values; value replay is off."""
    off_lambda = 2.5
    with cartpole_trainer(Unreal, rollout_length=ROLLOUT, replay_memory_size=30, use_off_policy_aac=True,
                          use_value_replay=True, off_aac_lambda=off_lambda, model_gamma=GAMMA,
                          model_gae_lambda=GAE_LAMBDA, model_beta=BETA) as (trainer, sess, _):
        assert trainer.use_memory and not trainer.use_value_replay
        assert trainer.off_aac_lambda == pytest.approx(off_lambda, rel=1e-9)
        pi = trainer.local_network
        for _ in range(50):  # a batch with a replayed sequence cut short by a terminal frame (padded rows)
            data = trainer.get_data()
            if any(rollout.size < ROLLOUT for rollout in data['off_policy']):
                break
        replayed = data['off_policy']
        assert len(replayed) == 2 and any(rollout.size < ROLLOUT for rollout in replayed)
        feed = trainer.process_data(sess, data, [True, True], pi)
        on = scoped_summaries(trainer, 'on_policy')
        total, logits, vf, on_parts = sess.run(
            [trainer.loss, pi.off_logits, pi.off_vf, [on['policy_loss'], on['value_loss'], on['entropy']]], feed)
    assert len(vf) == 2 * ROLLOUT  # padded to replay_rollout_length
    rows, actions, returns, advantages = [], [], [], []
    for index, rollout in enumerate(replayed):
        bootstrap = float(np.asarray(rollout['r'][-1]).reshape(-1)[0])
        ret, adv = loop_returns_and_advantages(np.array(rollout['reward'], dtype=np.float64),
                                               np.array(rollout['value'], dtype=np.float64).reshape(-1),
                                               bootstrap, GAMMA, GAE_LAMBDA)
        rows += range(index * ROLLOUT, index * ROLLOUT + rollout.size)
        actions.append(np.array(rollout['action']))
        returns.append(ret)
        advantages.append(adv)
    actions, returns, advantages = np.concatenate(actions), np.concatenate(returns), np.concatenate(advantages)
    log_p = log_softmax(logits[rows].astype(np.float64))
    off_loss = (np.mean(-(actions * log_p).sum(axis=1) * advantages) + 0.5 * np.mean((returns - vf[rows]) ** 2)
                - BETA * np.mean(-(np.exp(log_p) * log_p).sum(axis=1)))
    on_loss = on_parts[0] + on_parts[1] - BETA * on_parts[2]
    assert abs(off_lambda * off_loss) > 0.05 * abs(total), (off_loss, total)
    np.testing.assert_allclose(total, on_loss + off_lambda * off_loss, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------------------ PPO

def test_ppo_clip_range_is_annealed_with_the_learning_rate():
    """PPO with a learning rate decaying linearly from 1e-3 to 1e-4 over 1000 steps and pi' a perturbed copy of pi:
    at global steps 0, 299, 998 and 5000 the clipped-surrogate loss of a fed batch equals numpy's with
    eps_t = clip_epsilon * lr_t / lr_0, lr_t = (lr_0 - lr_end)(1 - min(step + 1, D) / D) + lr_end (eps 0.2 ->
    0.146 -> 0.0202 -> 0.02), and the batch has clipped rows enough that eps_t * 1.1 or / 1.1
    would give another loss."""
    lr0, lr_end, decay, clip = 1e-3, 1e-4, 1000, 0.2
    with cartpole_trainer(PPO, rollout_length=ROLLOUT, time_flat=True, opt_learn_rate=lr0,
                          opt_end_learn_rate=lr_end, opt_decay_steps=decay, clip_epsilon=clip) as (trainer, sess, _):
        pi, pi_prime = trainer.local_network, trainer.local_network_prime
        rng = np.random.default_rng(0)
        for prime, value in zip(pi_prime.var_list, sess.run(pi.var_list)):
            prime.load(value + 0.3 * rng.normal(size=value.shape).astype(value.dtype), sess)
        feed = trainer.process_data(sess, trainer.get_data(), [True, True], pi, pi_prime)
        l_clip = scoped_summaries(trainer, 'on_policy')['l_clip_loss']
        results = {}
        for step in (0, 299, 998, 5000):
            trainer.global_step.load(step, sess)
            results[step] = sess.run([l_clip, pi.on_logits, pi_prime.on_logits], feed)
    targets = trainer.targets.on_policy
    actions, advantages = feed[targets.action], feed[targets.advantage].astype(np.float64)

    def clipped_surrogate_loss(logits, prime_logits, eps):
        ratio = np.exp((actions * (log_softmax(logits) - log_softmax(prime_logits))).sum(axis=1))
        return -np.mean(np.minimum(ratio * advantages, np.clip(ratio, 1 - eps, 1 + eps) * advantages))

    for step, (loss, logits, prime_logits) in results.items():
        eps = clip * ((lr0 - lr_end) * (1 - min(step + 1, decay) / decay) + lr_end) / lr0
        logits, prime_logits = logits.astype(np.float64), prime_logits.astype(np.float64)
        expected = clipped_surrogate_loss(logits, prime_logits, eps)
        np.testing.assert_allclose(loss, expected, rtol=1e-5, atol=1e-6)
        for other in (eps * 1.1, eps / 1.1):  # the loss pins eps down to better than 10% (10 times its tolerance)
            assert abs(clipped_surrogate_loss(logits, prime_logits, other) - expected) > 1e-4 * abs(expected), step


def test_ppo_pi_prime_is_synced_only_every_pi_prime_update_period_train_steps():
    """PPO with `pi_prime_update_period=3`: the pi' copy runs at train steps 0, 3 and 6 only; after step k pi' holds
    the local weights as they were before step 3 * (k // 3) (the weights the step before it trained on), while the
    local policy moves on (at steps 2, 4 and 5 it differs from pi')."""
    period, steps = 3, 7
    with cartpole_trainer(PPO, count=1, rollout_length=ROLLOUT, opt_learn_rate=1e-2,
                          pi_prime_update_period=period) as (trainer, sess, _):
        pi, pi_prime = trainer.local_network, trainer.local_network_prime
        names, run = [], trainer.learner._callables.run

        def recording_run(sess, name, *args, **kwargs):
            names.append((trainer.local_steps, name))
            return run(sess, name, *args, **kwargs)

        trainer.learner._callables.run = recording_run
        local_before, prime_after = [], []
        for _ in range(steps):
            local_before.append(sess.run(pi.var_list))
            assert trainer.process(sess) > 0
            prime_after.append(sess.run(pi_prime.var_list))
        assert trainer.local_steps == steps
    assert [step for step, name in names if name == 'copy_to_target'] == [0, 3, 6]
    for step in range(steps):
        for prime, local in zip(prime_after[step], local_before[step - step % period]):
            np.testing.assert_array_equal(prime, local)
    for step in (2, 4, 5):
        assert any(not np.array_equal(prime, local) for prime, local in zip(prime_after[step], local_before[step]))


# ------------------------------------------------------------------------------------------ train_in_process

def cartpole_in_process(max_env_steps, target, log_dir=None, window=8):
    return train_in_process(
        env_config={'class_ref': gym_wrappers.TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}},
        policy_config={'class_ref': AacDensePolicy, 'kwargs': DENSE},
        trainer_config={'class_ref': A3C, 'kwargs': {'test_mode': True, 'rollout_length': 10,
                                                     'episode_summary_freq': 1, 'model_summary_freq': 1}},
        max_env_steps=max_env_steps, random_seed=1, log_dir=log_dir, target_mean_reward=target, target_window=window)


def test_train_in_process_stops_once_the_target_mean_reward_is_reached_and_writes_its_log_dir(tmp_path):
    """A target every CartPole episode reaches (mean of the last 8 rewards >= 1): training stops at the first train
    step after the eighth episode (global step < that episode's end + one rollout), far below `max_env_steps`, and
    reports that step; `<log_dir>/worker_0` holds the graph, one `total_loss` per train step at the global step
    after it (the last one at the stop) and each episode's reward. An unreachable target (500, over 400 steps: 8
    episodes and more) runs to `max_env_steps` and reports None."""
    result = cartpole_in_process(3000, target=1.0, log_dir=str(tmp_path))
    episodes = result['train_episodes']
    assert len(episodes) >= 8 and np.mean(result['episode_rewards'][-8:]) >= 1.0
    assert result['target_reached_at'] == result['global_step'] < episodes[7]['env_steps'] + 10
    assert tmp_path.joinpath('worker_0').is_dir()
    events, has_graph = scalar_events(tmp_path / 'worker_0'), graph_written(tmp_path / 'worker_0')
    assert has_graph
    losses = tagged(events, 'model/total_loss')
    assert len(losses) == result['train_steps'] and losses[-1][0] == result['global_step']
    assert [step for step, _ in losses] == sorted({step for step, _ in losses})
    written = [value for _, value in tagged(events, 'episode/total_reward')]
    assert 1 <= len(written) <= len(episodes)
    assert written == result['episode_rewards'][:len(written)]

    unreached = cartpole_in_process(400, target=500.0)  # the window fills, its mean stays below
    assert unreached['episodes'] >= 8
    assert unreached['target_reached_at'] is None and unreached['global_step'] >= 400


# ------------------------------------------------------------------------------------- constructor arguments

class DrawOnly(Unreal):
    """Unreal whose constructor stops short of the graph and the runners: its argument handling only."""

    def _build_graph(self):
        self.local_network = None

    def _make_runners(self, policy):
        return []


def graphless_trainer(env, **kwargs):
    with tf.Graph().as_default():
        return DrawOnly(env=env, task=0, policy_config={'class_ref': AacDensePolicy, 'kwargs': {}}, test_mode=True,
                        **kwargs)


@pytest.fixture
def cartpole():
    env = gym_wrappers.TestModeEnv(env_id='CartPole-v1', seed=0)
    yield env
    env.close()


@pytest.mark.parametrize('cycle', [(0, 0), (-1, 2), (2, -1), (1,), (1, 1, 1)])
def test_bad_train_test_cycles_are_refused(cartpole, cycle):
    """A cycle that is not two non-negative counts, not both zero, is refused naming what it got."""
    with pytest.raises(ValueError) as raised:
        graphless_trainer(cartpole, episode_train_test_cycle=cycle)
    assert str(raised.value) == ('episode_train_test_cycle must be (n_train >= 0, n_test >= 0), not both zero; '
                                 'got {!r}'.format(tuple(cycle)))


def test_good_train_test_cycles_are_kept_as_int_pairs(cartpole):
    for good in ((0, 1), (3, 0), [np.int64(2), 1]):
        stored = graphless_trainer(cartpole, episode_train_test_cycle=good).episode_train_test_cycle
        assert stored == tuple(int(n) for n in good) and all(type(n) is int for n in stored), stored


def test_unknown_trainer_kwargs_are_each_warned_of_and_ignored():
    """Two misspelt arguments: the trainer builds, logs exactly one warning naming each, in order, and keeps the
    defaults they were meant to set."""
    envs = cartpoles(1)
    try:
        with logbook.TestHandler() as handler, tf.Graph().as_default():
            trainer = A3C(env=envs, task=0, test_mode=True, policy_config={'class_ref': AacDensePolicy,
                                                                           'kwargs': DENSE},
                          opt_learning_rate=0.5, rollout_lenght=3)
    finally:
        for env in envs:
            env.close()
    warnings = [record.message for record in handler.records if record.level == logbook.WARNING]
    assert warnings == ['unexpected argument `opt_learning_rate` ignored',
                        'unexpected argument `rollout_lenght` ignored']
    assert trainer.opt_learn_rate == pytest.approx(1e-4) and trainer.rollout_length == 20


def test_log_uniform_hyperparameter_draws_are_in_range_seeded_and_log_uniform(cartpole):
    """`opt_learn_rate=[1e-4, 1e-2]` and `off_aac_lambda=[0.1, 10]`: every draw lies in its range; the same seed
    draws the same values, other seeds others; over 2000 seeds the draws' positions on the log scale fall evenly in
    10 bins (chi-square below the 0.1% critical value, where a linear-uniform draw puts ~90% in the top decade);
    a built trainer of seed 0 draws the same learning rate and its decayed learning rate at step 0 is that value."""
    lr_range, lambda_range = (1e-4, 1e-2), (0.1, 10.0)
    draws = []
    for seed in range(2000):
        trainer = graphless_trainer(cartpole, random_seed=seed, opt_learn_rate=list(lr_range),
                                    off_aac_lambda=list(lambda_range))
        draws.append((trainer.opt_learn_rate, trainer.off_aac_lambda))
    again = graphless_trainer(cartpole, random_seed=7, opt_learn_rate=list(lr_range), off_aac_lambda=list(lambda_range))
    assert (again.opt_learn_rate, again.off_aac_lambda) == draws[7]
    draws = np.array(draws)
    assert len(np.unique(draws[:, 0])) == len(draws) and len(np.unique(draws[:, 1])) == len(draws)
    for column, (low, high) in enumerate((lr_range, lambda_range)):
        values = draws[:, column]
        assert np.all((values >= low * (1 - 1e-9)) & (values <= high * (1 + 1e-9)))
        position = np.log(values / low) / np.log(high / low)
        counts = np.histogram(position, bins=10, range=(0.0, 1.0))[0]
        chi_square = np.sum((counts - len(values) / 10) ** 2 / (len(values) / 10))
        assert chi_square < 27.88, (column, counts)  # 9 degrees of freedom, p = 0.001
    with cartpole_trainer(A3C, count=1, opt_learn_rate=list(lr_range)) as (trainer, sess, _):  # seed 0
        assert trainer.opt_learn_rate == draws[0, 0]
        assert sess.run(trainer.learn_rate_decayed) == pytest.approx(trainer.opt_learn_rate, rel=1e-12)
