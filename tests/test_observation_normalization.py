"""Observation normalisation by running statistics (`policy.normalization`): the merged moments against numpy,
the standardised observations, and in a trainer the update from the frames trained on, the sync to the local
policy and the statistics frozen into a policy artifact's graph."""
import numpy as np
import pytest

from btgym_aac.algorithms.aac import A3C, BaseAAC
from btgym_aac.algorithms.nn.layers import linear
from btgym_aac.algorithms.policy.normalization import VARIANCE_EPSILON, ObservationNormalizer
from btgym_aac.algorithms.policy.stacked_lstm import AacStackedRL2Policy
from btgym_aac.compat import tf
from btgym_aac.deploy.export import freeze_acting_graph
from test_trainers import SMALL_CONV, Session, trading_env


def standardized(x, mean, variance, clip):
    return np.clip((x - mean) / np.sqrt(variance + VARIANCE_EPSILON), -clip, clip)


def test_merged_moments_equal_numpy_over_every_counted_frame():
    """Two batches with padding rows (weight 0) merged one after the other give the mean and variance of all the
    real frames at once; an all-padding batch changes nothing; streams of a dict observation keep their own."""
    rng = np.random.default_rng(0)
    shape = {'external': {'a': (3, 1, 2), 'b': (4,)}, 'internal': (2,), 'metadata': {'type': ()}}
    graph = tf.Graph()
    with graph.as_default():
        normalizer = ObservationNormalizer(shape, clip=2.5)
        state_in = {'external': {'a': tf.placeholder(tf.float32, [None, 3, 1, 2]),
                                 'b': tf.placeholder(tf.float32, [None, 4])},
                    'internal': tf.placeholder(tf.float32, [None, 2]), 'metadata': {'type': tf.placeholder(tf.int32)}}
        weights = tf.placeholder(tf.float32, [None])
        update = normalizer.update(state_in, weights)
        normalized = normalizer.normalize(state_in)
        init = tf.global_variables_initializer()
    assert normalizer.modes == ('external', 'internal')
    assert normalized['metadata'] is state_in['metadata']

    def batch(rows, scale, shift):
        return {'a': rng.normal(shift, scale, (rows, 3, 1, 2)), 'b': rng.normal(-shift, 2 * scale, (rows, 4)),
                'internal': rng.normal(shift, scale, (rows, 2))}

    def feed(values, mask):
        return {state_in['external']['a']: values['a'], state_in['external']['b']: values['b'],
                state_in['internal']: values['internal'], weights: mask}

    batches = [(batch(7, 1.0, 3.0), np.array([1, 1, 1, 1, 1, 0, 0])), (batch(5, 3.0, -1.0), np.ones(5))]
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        for values, mask in batches:
            sess.run(update, feed(values, mask))
        sess.run(update, feed(batch(3, 1.0, 50.0), np.zeros(3)))
        count, stats = sess.run([normalizer.count, normalizer.statistics])
        probe = batch(4, 5.0, 0.0)
        out = sess.run({key: normalized[key] for key in normalizer.modes}, feed(probe, np.ones(4)))
    assert count == 10
    for key, got in (('a', stats['external']['a']), ('b', stats['external']['b']), ('internal', stats['internal'])):
        real = np.concatenate([values[key][mask == 1] for values, mask in batches])
        np.testing.assert_allclose(got[0], real.mean(axis=0), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1], real.var(axis=0), rtol=1e-5)
    np.testing.assert_allclose(out['external']['a'], standardized(probe['a'], *stats['external']['a'], 2.5),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out['internal'], standardized(probe['internal'], *stats['internal'], 2.5),
                               rtol=1e-5, atol=1e-6)
    assert np.abs(out['external']['b']).max() <= 2.5


def test_clip_must_be_positive():
    with tf.Graph().as_default(), pytest.raises(ValueError, match='clip must be > 0'):
        ObservationNormalizer({'external': (2,)}, clip=0)


def test_trainer_updates_the_global_statistics_syncs_them_and_freezes_them_into_the_artifact(tmp_path):
    """Two A3C train steps: the statistics get no gradient; the global ones hold the moments of every frame trained
    on (numpy), the local policy has them after the step's sync, its encoders read the observations standardised by
    them, and the frozen acting graph of a policy artifact carries them."""
    session = Session(A3C, trading_env(), AacStackedRL2Policy,
                      dict(lstm_layers=(16, 16), linear_layer_ref=linear, normalize_observations=True, **SMALL_CONV),
                      tmp_path, rollout_length=8, model_summary_freq=100)
    trainer, sess = session.trainer, session.sess
    try:
        statistics_grads = [grad for variable, grad in zip(trainer.local_network.var_list, trainer.train_ops.grads)
                            if 'observation_normalizer' in variable.op.name]
        assert len(statistics_grads) == 5 and all(grad is None for grad in statistics_grads)  # only updates move them
        frames = {'external': [], 'internal': []}
        for _ in range(2):
            session.train_step()
            for rollout in session.data['on_policy']:
                if BaseAAC.rollout_is_train(rollout):
                    for key in frames:
                        frames[key] += list(rollout['state'][key])
        global_stats, local_stats, count = sess.run([trainer.network.observation_normalizer.statistics,
                                                     trainer.local_network.observation_normalizer.statistics,
                                                     trainer.network.observation_normalizer.count])
        assert count == len(frames['external']) == 16
        for key in frames:
            real = np.asarray(frames[key], dtype=np.float64)
            np.testing.assert_allclose(global_stats[key][0], real.mean(axis=0), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(global_stats[key][1], real.var(axis=0), rtol=1e-4, atol=1e-6)
            for got, want in zip(local_stats[key], global_stats[key]):
                np.testing.assert_array_equal(got, want)

        pi = trainer.local_network
        observation = {key: np.asarray(frames[key][-1:], dtype=np.float32) for key in frames}
        context = sess.run(pi.on_lstm_init_state)

        def logits(state, statistics):
            feed = {pi.on_state_in[key]: state[key] for key in state}
            feed.update({pi.on_last_a_in: np.zeros((1, pi.ac_space.encoded_depth)), pi.on_last_reward_in: [0.0],
                         pi.on_batch_size: 1, pi.on_time_length: [1]})
            feed.update(zip(pi.on_lstm_state_pl_flatten, tf.nest.flatten(context)))
            for key, (mean, variance) in pi.observation_normalizer.statistics.items():
                feed.update({mean: statistics[key][0], variance: statistics[key][1]})
            return sess.run(pi.on_logits, feed)

        # an observation standardised by its own value as the mean reads as all zeros to the encoders
        itself = {key: (observation[key][0], np.ones_like(observation[key][0])) for key in frames}
        zeros = {key: np.zeros_like(observation[key]) for key in frames}
        unit = {key: (np.zeros_like(observation[key][0]), np.ones_like(observation[key][0])) for key in frames}
        np.testing.assert_allclose(logits(observation, itself), logits(zeros, unit), rtol=1e-6, atol=1e-6)
        assert not np.allclose(logits(observation, unit), logits(zeros, unit))

        frozen = freeze_acting_graph(pi, sess)
        constants = {node.name: tf.make_ndarray(node.attr['value'].tensor) for node in frozen.graph_def.node
                     if node.op == 'Const' and 'observation_normalizer' in node.name}
        means = [value for name, value in constants.items() if name.endswith('external/moving_mean')]
        assert len(means) == 1
        np.testing.assert_array_equal(means[0], global_stats['external'][0])
    finally:
        session.close()
