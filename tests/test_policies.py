"""Policies: graph shapes, acting, sequence feeding, global/local variable pairing, RL² context rules and the
pixel-change target, checked against numpy / hand-computed references."""
import contextlib

import numpy as np
import pytest
from gymnasium import spaces

from btgym_aac.algorithms.nn.layers import linear
from btgym_aac.algorithms.policy import (
    Aac1dPolicy, AacDensePolicy, AacStackedRL2Policy, BaseAacPolicy, StackedLstmPolicy,
)
from btgym_aac.algorithms.policy.dense import dense_encoder
from btgym_aac.spaces import sample_categories
from btgym_aac.algorithms.utils import LSTMStateTuple
from btgym_aac.compat import tf
from btgym_aac.spaces import ActionDictSpace, DictSpace
from btgym_aac.strategy.base import metadata_space

TRADE_ACTIONS = ActionDictSpace(assets=('default_asset',), base_actions=('hold', 'buy', 'sell', 'close'))
CART_ACTIONS = ActionDictSpace(assets=('default_asset',), base_actions=('left', 'right'))
TRADING_SPACE = DictSpace({
    'external': spaces.Box(-100, 100, (30, 1, 5), np.float32),
    'internal': spaces.Box(-2, 2, (20, 1, 6), np.float32),
    'metadata': metadata_space(),
})
DATED_SPACE = DictSpace(dict(TRADING_SPACE.spaces, datetime=spaces.Box(0, 1, (1, 5), np.float32)))
IMAGE_SPACE = DictSpace({'external': spaces.Box(0, 1, (42, 42, 1), np.float32)})
VECTOR_SPACE = DictSpace({'external': spaces.Box(-5, 5, (4,), np.float32)})

TRAINER_KWARGS = dict(task=1, cluster_spec={'ps': ['localhost:12230'], 'worker': ['localhost:12231']})
IMAGE_2D = dict(conv_2d_filter_size=(3, 3), conv_2d_stride=(2, 2), conv_2d_num_filters=(4, 4, 4, 4),
                pc_estimator_stride=(2, 2), duell_pc_x_inner_shape=(9, 9, 4), duell_pc_filter_size=(4, 4),
                duell_pc_stride=(2, 2))
TRADING_1D = dict(conv_2d_filter_size=(3, 1), conv_2d_stride=(2, 1), conv_2d_num_filters=(4, 4, 4, 4),
                  pc_estimator_stride=(2, 1), duell_pc_x_inner_shape=(6, 1, 4), duell_pc_filter_size=(4, 1),
                  duell_pc_stride=(2, 1))
STACKED_SMALL = dict(lstm_layers=(16, 16), conv_2d_num_filters=(4, 4, 4, 4))

# id -> (class, ob_space, ac_space, kwargs, pixel-control map (H', W') or None)
CASES = {
    'base-trading': (BaseAacPolicy, TRADING_SPACE, TRADE_ACTIONS,
                     dict(TRADING_1D, lstm_layers=(16,), aux_estimate=True), (14, 1)),
    'base-image': (BaseAacPolicy, IMAGE_SPACE, TRADE_ACTIONS, dict(IMAGE_2D, lstm_layers=(16,), aux_estimate=True),
                   (20, 20)),
    'aac1d-trading': (Aac1dPolicy, TRADING_SPACE, TRADE_ACTIONS,
                      dict(lstm_layers=(16,), conv_2d_num_filters=(4, 4, 4, 4)), (14, 1)),
    'aac1d-image': (Aac1dPolicy, IMAGE_SPACE, TRADE_ACTIONS,
                    dict(lstm_layers=(16,), conv_2d_num_filters=(4, 4, 4, 4), aux_estimate=False), None),
    'stacked-trading': (StackedLstmPolicy, TRADING_SPACE, TRADE_ACTIONS, dict(STACKED_SMALL, aux_estimate=True),
                        (14, 1)),
    'stacked-image': (StackedLstmPolicy, IMAGE_SPACE, TRADE_ACTIONS, dict(IMAGE_2D, lstm_layers=(16, 16)), None),
    'rl2-trading': (AacStackedRL2Policy, TRADING_SPACE, TRADE_ACTIONS, dict(STACKED_SMALL, dropout_keep_prob=0.5),
                    None),
    'rl2-dated': (AacStackedRL2Policy, DATED_SPACE, TRADE_ACTIONS, dict(STACKED_SMALL, datetime_features=True), None),
    'rl2-image': (AacStackedRL2Policy, IMAGE_SPACE, TRADE_ACTIONS,
                  dict(IMAGE_2D, lstm_layers=(16, 16), aux_estimate=True, static_rnn=False), (20, 20)),
    'dense-vector': (AacDensePolicy, VECTOR_SPACE, CART_ACTIONS,
                     dict(dense_layers=(8,), lstm_layers=(8,), aux_estimate=True), None),
    'dense-trading': (AacDensePolicy, TRADING_SPACE, TRADE_ACTIONS, dict(dense_layers=(8,), lstm_layers=(8,)), None),
    'dense-dated': (AacDensePolicy, DATED_SPACE, TRADE_ACTIONS,
                    dict(dense_layers=(8,), lstm_layers=(8,), datetime_features=True), None),
}


def build(case_id, scope='local', **overrides):
    policy_class, ob_space, ac_space, kwargs, _ = CASES[case_id]
    kwargs = dict(kwargs, **TRAINER_KWARGS)
    kwargs.update(overrides)
    with tf.variable_scope(scope):
        return policy_class(ob_space=ob_space, ac_space=ac_space, rp_sequence_size=3, **kwargs)


@contextlib.contextmanager
def initialized_policy(case_id, **overrides):
    """Yields (session, policy, zero context) for a freshly built and initialised policy in its own graph."""
    with tf.Graph().as_default(), tf.Session() as sess:
        policy = build(case_id, **overrides)
        sess.run(tf.global_variables_initializer())
        yield sess, policy, sess.run(policy.on_lstm_init_state)


def random_observation(space, rng):
    if isinstance(space, DictSpace):
        return {key: random_observation(sub_space, rng) for key, sub_space in space.spaces.items()}
    if np.issubdtype(space.dtype, np.integer):
        return np.asarray(rng.integers(0, 2), dtype=space.dtype)
    return rng.uniform(-1, 1, size=space.shape).astype(space.dtype)


def numpy_softmax(logits):
    shifted = np.exp(np.asarray(logits, np.float64) - np.max(logits))
    return shifted / shifted.sum()


def numpy_pixel_change(state, last_state, stride):
    change = np.abs(state - last_state)
    change = change[1:-1] if state.shape[1] <= 3 else change[1:-1, 1:-1]
    change = change.mean(axis=-1)
    height, width = change.shape
    assert height % stride[0] == 0 and width % stride[1] == 0
    return change.reshape(height // stride[0], stride[0], width // stride[1], stride[1]).max(axis=(1, 3))


def context_units(context):
    return [leaf.shape for leaf in tf.nest.flatten(context)]


def assert_valid_action_pack(pack, ac_space):
    one_hot = pack['one_hot']
    assert one_hot.shape == (ac_space.one_hot_depth,)
    assert set(np.unique(one_hot)) <= {0.0, 1.0} and one_hot.sum() == 1.0
    assert pack['environment'] in ac_space
    assert dict(ac_space.decode(pack['encoded'])) == dict(pack['environment'])
    np.testing.assert_array_equal(ac_space.one_hot_encode(pack['environment']), one_hot)
    np.testing.assert_array_equal(ac_space.encode(pack['environment']), pack['encoded'])


@pytest.mark.parametrize('case_id', list(CASES))
def test_policy_builds_and_acts_on_a_finalized_graph(case_id):
    _, ob_space, ac_space, kwargs, pc_map = CASES[case_id]
    depth, code_width = ac_space.one_hot_depth, ac_space.encoded_depth
    rng = np.random.default_rng(3)
    np.random.seed(3)
    with tf.Graph().as_default() as graph:
        policy = build(case_id)
        assert policy.on_logits.get_shape().as_list() == [None, depth]
        assert policy.off_logits.get_shape().as_list() == [None, depth]
        assert policy.on_vf.get_shape().as_list() == [None]
        assert policy.vr_value is policy.off_vf
        assert policy.pc_state_in is policy.off_state_in and policy.vr_batch_size is policy.off_batch_size
        assert policy.on_last_a_in.get_shape().as_list() == [None, code_width]
        assert policy.rp_logits.get_shape().as_list() == [None, 3]
        assert set(policy.on_state_in) == set(ob_space.spaces)
        if pc_map is None:
            assert policy.pc_q is None and 'pixel_change' not in policy.callback
        else:
            assert policy.pc_q.get_shape().as_list() == [None, pc_map[0], pc_map[1], depth]
            assert policy.pc_target.get_shape().as_list() == [1, pc_map[0], pc_map[1], 1]
            assert policy.callback['pixel_change'] == policy.get_pc_target

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            graph.finalize()
            zero_context = sess.run(policy.on_lstm_init_state)
            assert [pl.get_shape().as_list()[1] for pl in policy.on_lstm_state_pl_flatten] == \
                [shape[1] for shape in context_units(zero_context)]
            context, last_action, last_reward = zero_context, ac_space.encode(ac_space.get_initial_action()), 0.0
            for step in range(6):
                deterministic = step % 2 == 1
                with sess.as_default():
                    pack, logits, value, context = policy.act(
                        random_observation(ob_space, rng), context, last_action[None], np.array([last_reward]),
                        deterministic=deterministic)
                assert_valid_action_pack(pack, ac_space)
                assert logits.shape == (depth,) and value.shape == (1,)
                if deterministic:
                    assert np.argmax(pack['one_hot']) == np.argmax(logits)
                tf.nest.assert_same_structure(context, zero_context)
                assert context_units(context) == [(1, shape[1]) for shape in context_units(zero_context)]
                last_action, last_reward = pack['encoded'], float(rng.normal())
            assert any(np.abs(leaf).sum() > 0 for leaf in tf.nest.flatten(context))
            value = policy.get_value(random_observation(ob_space, rng), context, last_action[None],
                                     np.array([last_reward]), sess=sess)
            assert isinstance(value, float) and np.isfinite(value)

            if pc_map is not None:
                state, last_state = random_observation(ob_space, rng), random_observation(ob_space, rng)
                target = policy.callback['pixel_change'](state=state, last_state=last_state, sess=sess, reward=1.0)
                stride = kwargs.get('pc_estimator_stride', (2, 1))
                expected = numpy_pixel_change(state['external'], last_state['external'], stride)
                assert target.shape == pc_map
                np.testing.assert_allclose(target, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('case_id', ['base-trading', 'stacked-trading', 'dense-vector', 'dense-trading'])
def test_global_and_local_variables_pair_up_by_creation_order(case_id):
    with tf.Graph().as_default():
        build(case_id, scope='global_prime')
        pi_global = build(case_id, scope='global')
        with tf.variable_scope('AAC'):
            pi_local = build(case_id, scope='local')
        global_names = [v.op.name for v in pi_global.var_list]
        local_names = [v.op.name for v in pi_local.var_list]
        assert all(name.startswith('global/') for name in global_names)
        assert all(name.startswith('AAC/local/') for name in local_names)
        assert [name[len('global/'):] for name in global_names] == [name[len('AAC/local/'):] for name in local_names]
        assert [v.get_shape().as_list() for v in pi_global.var_list] == \
            [v.get_shape().as_list() for v in pi_local.var_list]
        scope_trainables = {v.op.name for v in tf.trainable_variables() if v.op.name.startswith('global/')}
        assert set(global_names) == scope_trainables and len(global_names) == len(scope_trainables)


def _sequence_feed(policy, prefix, observations, last_actions, last_rewards, batch_size, time_length, context):
    feed = {pl: np.stack(leaves)
            for pl, leaves in zip(tf.nest.flatten(getattr(policy, prefix + '_state_in')),
                                  zip(*[tf.nest.flatten(obs) for obs in observations]))}
    feed.update(zip(getattr(policy, prefix + '_lstm_state_pl_flatten'), tf.nest.flatten(context)))
    feed.update({
        getattr(policy, prefix + '_last_a_in'): np.stack(last_actions),
        getattr(policy, prefix + '_last_reward_in'): np.asarray(last_rewards, np.float32),
        getattr(policy, prefix + '_batch_size'): batch_size,
        getattr(policy, prefix + '_time_length'): time_length,
    })
    return feed


@pytest.mark.parametrize('case_id', ['base-trading', 'stacked-trading', 'dense-trading'])
def test_sequence_major_batches_match_stepwise_acting(case_id):
    """Two sequences of 3 frames fed at once (on- and off-policy graphs) equal 6 single acting steps."""
    rng = np.random.default_rng(11)
    sequences, steps = 2, 3
    stacked_options = dict(static_rnn=False, dropout_keep_prob=0.5) if case_id.startswith('stacked') else {}
    with initialized_policy(case_id, linear_layer_ref=linear, **stacked_options) as (sess, policy, zero_context):
        observations, last_actions, last_rewards, step_logits, step_values = [], [], [], [], []
        for _ in range(sequences):
            context = zero_context
            for _ in range(steps):
                observation = random_observation(TRADING_SPACE, rng)
                last_action = TRADE_ACTIONS.encode({'default_asset': int(rng.integers(0, 4))})
                last_reward = float(rng.normal())
                _, logits, value, context = policy.act(observation, context, last_action[None], [last_reward],
                                                       sess=sess)
                observations.append(observation)
                last_actions.append(last_action)
                last_rewards.append(last_reward)
                step_logits.append(logits)
                step_values.append(value[0])
        batch_context = tf.nest.map_structure(lambda leaf: np.repeat(leaf, sequences, axis=0), zero_context)
        for prefix in ('on', 'off'):
            feed = _sequence_feed(policy, prefix, observations, last_actions, last_rewards, sequences,
                                  [steps] * sequences, batch_context)
            logits, values = sess.run([getattr(policy, prefix + '_logits'), getattr(policy, prefix + '_vf')], feed)
            np.testing.assert_allclose(logits, np.stack(step_logits), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(values, np.asarray(step_values), rtol=1e-4, atol=1e-5)


def test_get_value_equals_the_value_returned_by_act():
    rng = np.random.default_rng(5)
    with initialized_policy('stacked-trading', linear_layer_ref=linear) as (sess, policy, context):
        observation = random_observation(TRADING_SPACE, rng)
        _, _, value, _ = policy.act(observation, context, np.array([[0.0, 1.0]]), np.array([0.3]), sess=sess)
        assert policy.get_value(observation, context, np.array([[0.0, 1.0]]), np.array([0.3]), sess=sess) == \
            pytest.approx(float(value[0]), rel=1e-6)


@pytest.mark.parametrize('case_id', ['stacked-trading', 'rl2-trading'])
def test_stacked_policies_standardise_their_logits_unless_logits_layer_norm_is_off(case_id):
    rng = np.random.default_rng(6)
    observation = random_observation(TRADING_SPACE, rng)
    spreads = {}
    for layer_norm in (True, False):
        with initialized_policy(case_id, linear_layer_ref=linear, logits_layer_norm=layer_norm) as (
                sess, policy, context):
            _, logits, _, _ = policy.act(observation, context, np.array([[0.0, 1.0]]), np.array([0.3]), sess=sess)
            head_norms = [v.name for v in tf.global_variables() if 'aac_dense_pi' in v.name and 'LayerNorm' in v.name]
        assert bool(head_norms) == layer_norm
        spreads[layer_norm] = np.std(logits)
    assert spreads[True] == pytest.approx(1.0, abs=1e-3)  # standardised across the 4 actions (offsets start at 0)
    assert spreads[False] < 0.1  # the action layer's own output (initialised at 0.01 column norm)


def datetime_observation(when):
    """`DevStrat_4_12.get_datetime_state` of a datetime."""
    return np.array([[when.month / 12, when.day / 31, when.weekday() / 6, when.hour / 24, when.minute / 60]],
                    np.float32)


def test_datetime_cycles_are_the_time_of_day_and_of_the_week_on_circles():
    from datetime import datetime

    from btgym_aac.algorithms.policy.base import datetime_cycles

    times = [datetime(2018, 1, 1, 0, 0), datetime(2018, 1, 3, 18, 30), datetime(2018, 1, 7, 23, 59)]
    with tf.Graph().as_default(), tf.Session() as sess:
        cycles = sess.run(datetime_cycles(tf.constant(np.stack([datetime_observation(t) for t in times]))))
    for when, row in zip(times, cycles):
        day = (when.hour * 60 + when.minute) / 1440
        week = (when.weekday() + day) / 7
        angles = 2 * np.pi * np.array([day, 2 * day, week])
        np.testing.assert_allclose(row, np.concatenate([np.sin(angles), np.cos(angles)]), atol=1e-5)


@pytest.mark.parametrize('case_id', ['rl2-dated', 'dense-dated'])
@pytest.mark.parametrize('datetime_features', [True, False])
def test_a_policy_acts_on_the_time_only_with_datetime_features(case_id, datetime_features):
    from datetime import datetime

    observation = random_observation(DATED_SPACE, np.random.default_rng(7))
    outputs = []
    with initialized_policy(case_id, linear_layer_ref=linear, datetime_features=datetime_features) as (
            sess, policy, context):
        for when in (datetime(2018, 1, 1, 3, 0), datetime(2018, 1, 1, 15, 0)):
            observation['datetime'] = datetime_observation(when)
            _, logits, value, _ = policy.act(observation, context, np.array([[0.0, 1.0]]), np.array([0.3]),
                                             sess=sess)
            outputs.append(np.concatenate([np.ravel(logits), np.ravel(value)]))
    assert np.abs(outputs[0] - outputs[1]).max() > 1e-6 if datetime_features else \
        np.array_equal(outputs[0], outputs[1])


@pytest.mark.parametrize('case_id', ['rl2-trading', 'dense-trading'])
def test_datetime_features_need_a_datetime_observation(case_id):
    with tf.Graph().as_default(), pytest.raises(ValueError, match='datetime_features needs a `datetime` observation'):
        build(case_id, datetime_features=True)


@pytest.mark.parametrize('heads_read_features', [True, False])
def test_the_heads_read_the_features_beside_the_lstm_only_when_asked(heads_read_features):
    with initialized_policy('dense-trading', linear_layer_ref=linear, heads_read_features=heads_read_features) as (
            sess, policy, context):
        weights = {variable.name: variable.get_shape().as_list() for variable in policy.var_list}
        _, logits, value, _ = policy.act(random_observation(TRADING_SPACE, np.random.default_rng(3)), context,
                                         np.array([[0.0, 1.0]]), np.array([0.3]), sess=sess)
    lstm_units, feature_width = 8, 8
    head_width = lstm_units + feature_width if heads_read_features else lstm_units
    assert weights['local/dense_aac/action/w:0'] == [head_width, TRADE_ACTIONS.one_hot_depth]
    assert weights['local/dense_aac/value/w:0'] == [head_width, 1]
    assert np.all(np.isfinite(logits)) and np.all(np.isfinite(value))


def test_stacked_policies_refuse_heads_read_features():
    with tf.Graph().as_default(), pytest.raises(ValueError, match='heads_read_features'):
        build('stacked-trading', heads_read_features=True)


class RunOnlySession:
    """A session-like object with nothing but `run` (as a `MonitoredSession` offers)."""

    def __init__(self, session):
        self.run = session.run


def test_acting_runs_one_callable_per_session_and_matches_session_run():
    rng = np.random.default_rng(8)
    with initialized_policy('base-trading', linear_layer_ref=linear) as (sess, policy, context):
        step_args = (random_observation(TRADING_SPACE, rng), context, np.array([[0.0, 1.0]]), np.array([0.3]))
        for _ in range(3):
            _, logits, value, next_context = policy.act(*step_args, sess=sess)
            policy.get_value(*step_args, sess=sess)
        assert sorted(name for name, _ in policy._step_callables._by_session[sess]) == ['act', 'value']
        expected_logits, expected_value, expected_context = sess.run(
            [policy.on_logits, policy.on_vf, policy.on_lstm_state_out], policy._step_feed(*step_args))
        np.testing.assert_allclose(logits, expected_logits[0], rtol=1e-6)
        np.testing.assert_allclose(value, expected_value, rtol=1e-6)
        for leaf, expected_leaf in zip(tf.nest.flatten(next_context), tf.nest.flatten(expected_context)):
            np.testing.assert_allclose(leaf, expected_leaf, rtol=1e-6)
        with tf.Session(graph=sess.graph) as other:
            other.run(tf.global_variables_initializer())
            policy.act(*step_args, sess=other)
        assert len(policy._step_callables._by_session) == 2
        np.testing.assert_allclose(policy.act(*step_args, sess=RunOnlySession(sess))[1], logits, rtol=1e-6)


def test_time_flat_batches_use_per_frame_contexts():
    """With a static single-step RNN, N frames fed as N sequences of length 1 reproduce N acting steps."""
    rng = np.random.default_rng(2)
    with initialized_policy('rl2-trading', linear_layer_ref=linear) as (sess, policy, context):
        observations, last_actions, last_rewards, contexts, step_logits = [], [], [], [], []
        for _ in range(4):
            observation = random_observation(TRADING_SPACE, rng)
            last_action = TRADE_ACTIONS.encode({'default_asset': int(rng.integers(0, 4))})
            observations.append(observation)
            last_actions.append(last_action)
            last_rewards.append(float(rng.normal()))
            contexts.append(context)
            _, logits, _, context = policy.act(observation, context, last_action, last_rewards[-1], sess=sess)
            step_logits.append(logits)
        per_frame_context = tf.nest.map_structure(lambda *leaves: np.concatenate(leaves, axis=0), *contexts)
        feed = _sequence_feed(policy, 'on', observations, last_actions, last_rewards, 4, np.ones(4, np.int32),
                              per_frame_context)
        np.testing.assert_allclose(sess.run(policy.on_logits, feed), np.stack(step_logits), rtol=1e-4, atol=1e-5)


def test_rl2_lstm_2_context_reset_rules():
    with tf.Graph().as_default(), tf.Session() as sess:
        policy = AacStackedRL2Policy(lstm_2_init_period=3, ob_space=TRADING_SPACE, ac_space=TRADE_ACTIONS,
                                     rp_sequence_size=3, lstm_layers=(4, 5), conv_2d_num_filters=(2, 2, 2, 2),
                                     **TRAINER_KWARGS)
        sess.run(tf.global_variables_initializer())
        previous = ((LSTMStateTuple(np.full((1, 4), 1.0), np.full((1, 4), 2.0)),),
                    (LSTMStateTuple(np.full((1, 5), 3.0), np.full((1, 5), 4.0)),))
        # (trial_num, type, context given) -> LSTM-2 kept? Hand-derived from the rules with period 3:
        calls = [
            (5, 0, True, False),   # episode 0: 0 % 3 == 0
            (5, 0, True, True),    # same trial, train episode 1
            (6, 0, True, False),   # trial changed
            (6, 0, True, False),   # episode 3: 3 % 3 == 0
            (6, 1, True, False),   # test episode
            (6, 0, False, False),  # no context
            (6, 0, True, False),   # episode 6: 6 % 3 == 0
            (6, 0, True, True),    # same trial, train episode 7
        ]
        with sess.as_default():
            for trial_num, episode_type, with_context, kept in calls:
                state = {'metadata': {'trial_num': np.int64(trial_num), 'type': np.int64(episode_type)}}
                lstm_1, lstm_2 = policy.get_initial_features(state=state, context=previous if with_context else None)
                for leaf in tf.nest.flatten(lstm_1):
                    np.testing.assert_array_equal(leaf, np.zeros((1, 4)))
                expected_2 = previous[-1] if kept else ((np.zeros((1, 5)), np.zeros((1, 5))),)
                for leaf, expected in zip(tf.nest.flatten(lstm_2), tf.nest.flatten(expected_2)):
                    np.testing.assert_array_equal(leaf, expected)
                tf.nest.assert_same_structure((lstm_1, lstm_2), sess.run(policy.on_lstm_init_state))
        assert policy.current_ep_num == len(calls) and policy.current_trial_num == 6
        with pytest.raises(KeyError, match='trial_num'):
            policy.get_initial_features(state={'external': np.zeros((30, 1, 5))}, context=previous, sess=sess)

        # Two envs on different trials, episodes interleaved: each keeps its own trial and count.
        envs = [object(), object()]
        kept = {id(env): [] for env in envs}
        with sess.as_default():
            for _ in range(3):
                for env, trial_num in zip(envs, (7, 8)):
                    state = {'metadata': {'trial_num': np.int64(trial_num), 'type': np.int64(0)}}
                    _, lstm_2 = policy.get_initial_features(state=state, context=previous, env=env)
                    kept[id(env)].append(bool(np.all(tf.nest.flatten(lstm_2)[0] == 3.0)))
        assert kept == {id(envs[0]): [False, True, True], id(envs[1]): [False, True, True]}
        assert (policy.current_trial_num, policy.current_ep_num) == (8, 3)


def test_sample_categories_is_robust_and_matches_softmax():
    np.random.seed(0)
    logits = np.array([0.5, -1.0, 2.0, 0.0], dtype=np.float32)
    draws = np.bincount(sample_categories(np.tile(logits, (20000, 1))), minlength=4) / 20000
    np.testing.assert_allclose(draws, numpy_softmax(logits), atol=0.015)

    peaked = np.array([1e4, -1e4, 0.0, 1e4 - 1.0], dtype=np.float32)
    draws = np.bincount(sample_categories(np.tile(peaked, (4000, 1))), minlength=4) / 4000
    assert draws[1] == 0.0 and draws[2] == 0.0
    assert draws[0] == pytest.approx(1 / (1 + np.exp(-1.0)), abs=0.03)
    assert sample_categories([peaked, logits], deterministic=True).tolist() == [0, 2]
    with pytest.raises(ValueError, match='finite'):
        sample_categories([[0.0, np.nan]])


def test_sample_categories_draw_rows_in_order_like_single_draws():
    rng = np.random.default_rng(3)
    logits = rng.normal(scale=2.0, size=(300, 5))
    np.random.seed(11)
    rows = sample_categories(logits)
    np.random.seed(11)
    assert rows.tolist() == [int(sample_categories(row[None, :])[0]) for row in logits]
    assert sample_categories(logits, deterministic=True).tolist() == np.argmax(logits, axis=1).tolist()
    with pytest.raises(ValueError, match='finite'):
        sample_categories(np.zeros(4))
    with pytest.raises(ValueError, match='finite'):
        sample_categories([[0.0, 1.0], [np.inf, 0.0]])


def test_discrete_action_packs_are_fresh_copies():
    with tf.Graph().as_default():
        policy = build('stacked-trading', scope='packs')
    first = policy._action_packs(np.array([[0.0, 9.0, 0.0, 0.0]]), deterministic=True)[0]
    assert_valid_action_pack(first, policy.ac_space)
    first['one_hot'][:] = 0
    first['encoded'][:] = -1
    first['environment'].clear()
    again = policy._action_packs(np.array([[0.0, 9.0, 0.0, 0.0]]), deterministic=True)[0]
    assert_valid_action_pack(again, policy.ac_space)
    assert again['one_hot'].tolist() == [0, 1, 0, 0]


@pytest.mark.parametrize('policy_class, kwargs', [(StackedLstmPolicy, dict(IMAGE_2D, lstm_layers=(8, 8))),
                                                   (AacDensePolicy, dict(dense_layers=(8,), lstm_layers=(8,)))])
def test_continuous_actions_are_probability_vectors(policy_class, kwargs):
    rng = np.random.default_rng(1)
    ac_space = ActionDictSpace(assets=('a', 'b', 'c'))
    with tf.Graph().as_default(), tf.Session() as sess:
        policy = policy_class(ob_space=IMAGE_SPACE, ac_space=ac_space, rp_sequence_size=3, **kwargs)
        sess.run(tf.global_variables_initializer())
        context = sess.run(policy.on_lstm_init_state)
        observation = random_observation(IMAGE_SPACE, rng)
        pack, logits, _, _ = policy.act(observation, context, np.zeros((1, 3)), [0.0], sess=sess)
        greedy, greedy_logits, _, _ = policy.act(observation, context, np.zeros((1, 3)), [0.0], deterministic=True,
                                                 sess=sess)
    assert pack['one_hot'].shape == (3,) and pack['one_hot'].sum() == pytest.approx(1.0)
    assert pack['environment'] in ac_space
    np.testing.assert_allclose(pack['encoded'], pack['one_hot'], rtol=1e-6)
    np.testing.assert_allclose(greedy['one_hot'], numpy_softmax(greedy_logits), rtol=1e-6)


@pytest.mark.parametrize('keep_prob, with_dropout', [(1.0, False), (0.5, True)])
def test_stacked_policy_builds_dropout_only_below_keep_probability_one(keep_prob, with_dropout):
    """Dropout that keeps everything is left out of the graph (it would only add random ops to every run)."""
    with tf.Graph().as_default() as graph:
        build('stacked-trading', scope='keep', dropout_keep_prob=keep_prob)
        dropout_ops = [op.name for op in graph.get_operations() if 'dropout' in op.name.lower()]
    assert bool(dropout_ops) == with_dropout
    assert any('encoded_external' in name for name in dropout_ops) == with_dropout
    assert any('lstm_1' in name for name in dropout_ops) == with_dropout


def test_sample_config_is_a_fresh_env_reset_config():
    expected = {'get_new': True, 'sample_type': 0, 'timestamp': None, 'b_alpha': 1.0, 'b_beta': 1.0}
    config = BaseAacPolicy.get_sample_config()
    assert config == {'episode_config': expected, 'trial_config': expected}
    config['episode_config']['sample_type'] = 1
    assert StackedLstmPolicy.get_sample_config()['episode_config']['sample_type'] == 0


def test_bad_arguments_raise_clear_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='Q map'):
            build('aac1d-image', aux_estimate=True)
        with pytest.raises(ValueError, match='pixel_control=False'):
            build('dense-vector', scope='dense', pixel_control=True)
        with pytest.raises(TypeError, match='DictSpace'):
            BaseAacPolicy({'external': (4,)}, TRADE_ACTIONS, 3)
        with pytest.raises(ValueError, match='external'):
            BaseAacPolicy(DictSpace({'internal': spaces.Box(0, 1, (4,))}), TRADE_ACTIONS, 3)
        with pytest.raises(ValueError, match='rp_sequence_size'):
            BaseAacPolicy(IMAGE_SPACE, TRADE_ACTIONS, 1)
        with pytest.raises(ValueError, match='discrete'):
            BaseAacPolicy(IMAGE_SPACE, ActionDictSpace(assets=('a',)), 3)
        with pytest.raises(ValueError, match='dropout_keep_prob'):
            build('stacked-image', scope='dropout', dropout_keep_prob=0.0)


def test_act_rejects_bad_inputs_and_missing_session():
    rng = np.random.default_rng(0)
    with tf.Graph().as_default() as graph:
        policy = build('dense-vector')
        initializer = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    try:
        sess.run(initializer)
        context = sess.run(policy.on_lstm_init_state)
        observation = random_observation(VECTOR_SPACE, rng)
        with pytest.raises(ValueError, match='last_action'):
            policy.act(observation, context, np.zeros((1, 2)), [0.0], sess=sess)
        with pytest.raises(ValueError, match='external'):
            policy.act({'external': observation['external'][:-1]}, context, np.zeros((1, 1)), [0.0], sess=sess)
        with pytest.raises(RuntimeError, match='session'):
            policy.act(observation, context, np.zeros((1, 1)), [0.0])
        with pytest.raises(RuntimeError, match='pixel control'):
            policy.get_pc_target(observation, observation, sess=sess)
    finally:
        sess.close()


def test_per_asset_heads_act_greedily_per_asset():
    rng = np.random.default_rng(2)
    ac_space = ActionDictSpace(assets=('a', 'b', 'c'), base_actions=('hold', 'buy', 'sell', 'close'),
                               encoding='per_asset')
    with tf.Graph().as_default(), tf.Session() as sess:
        policy = StackedLstmPolicy(ob_space=IMAGE_SPACE, ac_space=ac_space, rp_sequence_size=3,
                                   **dict(IMAGE_2D, lstm_layers=(8, 8)))
        sess.run(tf.global_variables_initializer())
        context = sess.run(policy.on_lstm_init_state)
        last_action = ac_space.encode(ac_space.get_initial_action())[None]
        pack, logits, _, _ = policy.act(random_observation(IMAGE_SPACE, rng), context, last_action, [0.0],
                                        deterministic=True, sess=sess)
    assert logits.shape == (12,)
    assert dict(pack['environment']) == {asset: int(np.argmax(logits[4 * k:4 * k + 4]))
                                         for k, asset in enumerate(('a', 'b', 'c'))}
    assert pack['one_hot'].reshape(3, 4).sum(axis=1).tolist() == [1.0] * 3
    np.testing.assert_array_equal(pack['encoded'], pack['one_hot'])


@pytest.mark.parametrize('policy_class', [BaseAacPolicy, Aac1dPolicy])
def test_single_stream_policies_name_the_streams_of_a_multi_line_observation(policy_class):
    streams = DictSpace({'external': DictSpace({line: spaces.Box(-1, 1, (30, 1, 3), np.float32)
                                                for line in ('X', 'Y')})})
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r"streams \['X', 'Y'\].*StackedLstmPolicy"):
        policy_class(ob_space=streams, ac_space=TRADE_ACTIONS, rp_sequence_size=3, lstm_layers=(8,))


def test_dense_encoder_joins_the_streams_flattened_in_name_order():
    rng = np.random.default_rng(3)
    streams = {'Y': rng.normal(size=(5, 3, 1, 2)).astype(np.float32), 'X': rng.normal(size=(5, 4)).astype(np.float32)}
    with tf.Graph().as_default(), tf.Session() as sess:
        placeholders = {name: tf.placeholder(tf.float32, (None,) + x.shape[1:]) for name, x in streams.items()}
        encoded = dense_encoder(placeholders, dense_layers=(6,), name='enc')
        sess.run(tf.global_variables_initializer())
        w, b = sess.run(['enc/_layer_1/w:0', 'enc/_layer_1/b:0'])
        got = sess.run(encoded, {placeholders[name]: x for name, x in streams.items()})
    joined = np.concatenate([streams['X'], streams['Y'].reshape(5, -1)], axis=1)
    pre = joined @ w + b
    normed = (pre - pre.mean(axis=1, keepdims=True)) / np.sqrt(pre.var(axis=1, keepdims=True) + 1e-12)
    np.testing.assert_allclose(got, np.where(normed > 0, normed, np.expm1(normed)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('ac_space', [TRADE_ACTIONS, ActionDictSpace(assets=('X', 'Y'))], ids=['discrete', 'weights'])
def test_dense_policy_acts_on_every_stream_of_a_multi_line_observation(ac_space):
    streams = DictSpace({'external': DictSpace({line: spaces.Box(-1, 1, (30, 1, 3), np.float32)
                                                for line in ('X', 'Y')}),
                         'internal': spaces.Box(-2, 2, (20, 1, 6), np.float32)})
    rng = np.random.default_rng(4)
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.set_random_seed(4)
        policy = AacDensePolicy(ob_space=streams, ac_space=ac_space, rp_sequence_size=3, dense_layers=(8,),
                                lstm_layers=(8,))
        sess.run(tf.global_variables_initializer())
        context = sess.run(policy.on_lstm_init_state)
        last_action = ac_space.encode(ac_space.get_initial_action())[None]
        observation = random_observation(streams, rng)
        logits = {}
        for line in ('X', 'Y'):
            changed = dict(observation, external=dict(observation['external']))
            changed['external'][line] = -observation['external'][line]
            logits[line] = policy.act(changed, context, last_action, [0.0], deterministic=True, sess=sess)[1]
        logits['none'] = policy.act(observation, context, last_action, [0.0], deterministic=True, sess=sess)[1]
    assert logits['none'].shape == (ac_space.one_hot_depth,)
    for line in ('X', 'Y'):
        assert np.abs(logits[line] - logits['none']).max() > 1e-6, line
