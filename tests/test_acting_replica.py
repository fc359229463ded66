"""ActingReplica: runners act through a copy of the local policy that gives the local policy's outputs, follows
its variables within one rollout, and is used by default only in distributed workers."""
import contextlib

import numpy as np
import pytest

from btgym_aac.algorithms import A3C
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac.algorithms.acting.replica import ActingReplica
from btgym_aac.compat import tf
from btgym_aac.env import gym_wrappers

POLICY_KWARGS = {'dense_layers': (16,), 'lstm_layers': (8,)}
ROLLOUT = 5


@contextlib.contextmanager
def built_trainer(**trainer_kwargs):
    """A3C on CartPole with a noise-free dense policy; yields (trainer, session, env), then stops and closes them."""
    env = gym_wrappers.TestModeEnv(env_id='CartPole-v1', seed=0)
    graph = tf.Graph()
    with graph.as_default():
        trainer = A3C(env=env, task=0, policy_config={'class_ref': AacDensePolicy, 'kwargs': POLICY_KWARGS},
                      test_mode=True, rollout_length=ROLLOUT, random_seed=0, **trainer_kwargs)
        init_op = tf.global_variables_initializer()
    graph.finalize()
    sess = tf.Session(graph=graph)
    sess.run(init_op)
    try:
        yield trainer, sess, env
    finally:
        trainer.stop()
        sess.close()
        env.close()


def act_inputs(policy, env, sess):
    observation, _ = env.reset(seed=0)
    context = policy.get_initial_features(sess=sess)
    last_action = np.zeros((1, policy.ac_space.encoded_depth), np.float32)
    return observation, context, last_action, np.zeros(1, np.float32)


def replica_weights(replica):
    return replica.session.run(replica.policy.var_list)


def test_replica_acts_like_the_local_policy_and_closes_with_the_trainer():
    with built_trainer(acting_replica=True) as (trainer, sess, env):
        replica, local = trainer.acting_replica, trainer.local_network
        assert isinstance(replica, ActingReplica)
        assert all(runner.policy is replica for runner in trainer.runners)
        assert all(not np.any(weights) for weights in sess.run(local.var_list))  # zeros: copied in before any use
        trainer.learner.start(sess)  # the local policy takes the global one's weights, as when a trainer starts
        local_weights = sess.run(local.var_list)
        for got, want in zip(local_weights, sess.run(trainer.network.var_list)):
            np.testing.assert_array_equal(got, want)
        assert all(not np.any(weights) for weights in replica_weights(replica))  # zeros, until the first act
        assert not all(np.allclose(a, b) for a, b in zip(replica_weights(replica), local_weights))

        inputs = act_inputs(local, env, sess)
        _, replica_logits, replica_value, replica_context = replica.act(*inputs, deterministic=True, sess=sess)
        _, local_logits, local_value, local_context = local.act(*inputs, deterministic=True, sess=sess)
        for got, want in zip(replica_weights(replica), local_weights):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(replica_logits, local_logits, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(replica_value, local_value, rtol=1e-6, atol=1e-6)
        for got, want in zip(tf.nest.flatten(replica_context), tf.nest.flatten(local_context)):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        assert replica.get_value(*inputs, sess=sess) == pytest.approx(local.get_value(*inputs, sess=sess), abs=1e-6)
        assert replica.inc_episode is local.inc_episode
        assert replica.get_sample_config == trainer.get_sample_config

        trainer.stop()
        with pytest.raises(RuntimeError):
            replica.session.run(replica.policy.var_list)


def test_replica_copies_local_updates_every_refresh_period():
    with built_trainer(acting_replica=True) as (trainer, sess, env):
        replica, local = trainer.acting_replica, trainer.local_network
        inputs = act_inputs(local, env, sess)
        replica.act(*inputs, sess=sess)
        old = sess.run(local.var_list)
        rng = np.random.default_rng(0)
        new = [rng.normal(size=value.shape).astype(value.dtype) for value in old]
        for var, value in zip(local.var_list, new):
            var.load(value, sess)
        for _ in range(ROLLOUT - 1):
            replica.act(*inputs, sess=sess)
        for got, want in zip(replica_weights(replica), old):
            np.testing.assert_array_equal(got, want)
        replica.act(*inputs, sess=sess)
        for got, want in zip(replica_weights(replica), new):
            np.testing.assert_array_equal(got, want)


def test_replica_refuses_other_variables_and_a_bad_refresh_period():
    with built_trainer(acting_replica=False) as (trainer, _, _):
        kwargs = dict(trainer.policy_kwargs, lstm_layers=(4,))
        with pytest.raises(RuntimeError, match='acting replica: the policy built'):
            ActingReplica(trainer.local_network, AacDensePolicy, kwargs, refresh_period=ROLLOUT)
        with pytest.raises(ValueError, match='refresh_period must be >= 1'):
            ActingReplica(trainer.local_network, AacDensePolicy, trainer.policy_kwargs, refresh_period=0)


def test_replica_is_used_by_default_only_with_a_cluster_spec():
    with built_trainer() as (trainer, _, _):
        assert trainer.acting_replica is None
        assert all(runner.policy is trainer.local_network for runner in trainer.runners)
    env = gym_wrappers.TestModeEnv(env_id='CartPole-v1', seed=0)
    with tf.Graph().as_default():
        trainer = A3C(env=env, task=0, policy_config={'class_ref': AacDensePolicy, 'kwargs': POLICY_KWARGS},
                      test_mode=True, cluster_spec={'ps': ['127.0.0.1:1'], 'worker': ['127.0.0.1:2']})
    assert isinstance(trainer.acting_replica, ActingReplica)
    assert all(runner.policy is trainer.acting_replica for runner in trainer.runners)
    trainer.stop()
    env.close()
