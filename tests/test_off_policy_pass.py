"""The off-policy pass is built only where a loss reads it: the same variables and on-policy outputs without it,
trainers that ask for it exactly when their losses need it, and the policy contract that follows."""
import numpy as np
import pytest

from btgym_aac.algorithms import A3C, Unreal
from btgym_aac.algorithms.nn.layers import linear
from btgym_aac.algorithms.policy import AacDensePolicy, AacStackedRL2Policy, BaseAacPolicy
from btgym_aac.algorithms.policy.interface import OFF_POLICY_MEMBERS, missing_members
from btgym_aac.algorithms.policy.interface import set_off_policy_pass
from btgym_aac.algorithms.learner import policy_inputs_feed, train_batches
from btgym_aac.compat import tf
from btgym_aac.env import gym_wrappers
from test_policies import CASES, TRAINER_KWARGS, random_observation
from trainer_helpers import started_trainer

CARTPOLE_POLICY = {'dense_layers': (8,), 'lstm_layers': (8,)}


def built(case_id, graph, **overrides):
    policy_class, ob_space, ac_space, kwargs, _ = CASES[case_id]
    with graph.as_default(), tf.variable_scope('local'):
        tf.set_random_seed(5)
        return policy_class(ob_space=ob_space, ac_space=ac_space, rp_sequence_size=3,
                            **dict(kwargs, **TRAINER_KWARGS, **overrides))


@pytest.mark.parametrize('case_id', ['base-trading', 'rl2-trading', 'dense-vector'])
def test_without_the_pass_a_policy_has_the_same_variables_and_on_policy_outputs_and_fewer_ops(case_id):
    with_pass, without_pass = tf.Graph(), tf.Graph()
    full = built(case_id, with_pass, linear_layer_ref=linear, pixel_control=False)
    lean = built(case_id, without_pass, linear_layer_ref=linear, pixel_control=False, off_policy_pass=False)
    assert [(v.name, v.shape.as_list()) for v in lean.var_list] == [(v.name, v.shape.as_list()) for v in full.var_list]
    assert all(getattr(lean, name) is None for name in OFF_POLICY_MEMBERS + ('vr_value',))
    assert all(getattr(full, name) is not None for name in OFF_POLICY_MEMBERS + ('vr_value',))
    assert len(without_pass.get_operations()) < 0.9 * len(with_pass.get_operations())

    _, ob_space, _, _, _ = CASES[case_id]
    observation = random_observation(ob_space, np.random.default_rng(0))
    outputs = []
    for graph, policy in ((with_pass, full), (without_pass, lean)):
        with graph.as_default(), tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for variable in policy.var_list:  # the same weights in both graphs
                seed = sum(map(ord, variable.name))
                variable.load(np.random.default_rng(seed).normal(0, 0.1, variable.shape.as_list()), sess)
            context = sess.run(policy.on_lstm_init_state)
            last_action = np.zeros(policy.ac_space.encoded_depth, np.float32)
            _, logits, value, _ = policy.act(observation, context, last_action, 0.5, sess=sess)
            outputs.append(np.concatenate([np.ravel(logits), np.ravel(value)]))
    np.testing.assert_allclose(outputs[1], outputs[0], rtol=1e-6)


def policy_scope(policy):
    """The name scope of a policy's heads (`local/`, `global/`, `A3C/local/`)."""
    return policy.on_logits.name.split('dense_aac/')[0]


def off_inputs(policy):
    """The placeholders of the off-policy pass's inputs (its LSTM context excepted)."""
    return [policy.off_last_a_in, policy.off_last_reward_in, policy.off_batch_size,
            policy.off_time_length] + tf.nest.flatten(policy.off_state_in)


def one_sequence(policy, sess, steps, rng):
    """A processed batch (see `policy_inputs_feed`) of one sequence of `steps` random frames from the zero
    context."""
    frames = [random_observation(policy.ob_space, rng) for _ in range(steps)]
    return {'state': tf.nest.map_structure(lambda *leaves: np.stack(leaves), *frames),
            'context': sess.run(policy.on_lstm_init_state),
            'last_action': rng.uniform(size=(steps, policy.ac_space.encoded_depth)).astype(np.float32),
            'last_reward': rng.normal(size=steps).astype(np.float32), 'batch_size': 1, 'time_steps': [steps]}


def test_pixel_control_builds_the_pass_it_reads():
    """With `off_policy_pass=False` pixel control still builds the off-policy pass in the policy's graph and scope:
    its logits and values equal the on-policy pass's on the same inputs, and the Q map [N, 20, 20, A] is computed
    from the off-policy inputs alone."""
    graph = tf.Graph()
    policy = built('base-image', graph, linear_layer_ref=linear, pixel_control=True, off_policy_pass=False)
    depth, q_map = policy.ac_space.one_hot_depth, CASES['base-image'][4]
    assert policy.off_logits.get_shape().as_list() == [None, depth]
    assert policy.off_vf.get_shape().as_list() == [None]
    assert policy.pc_q.get_shape().as_list() == [None, *q_map, depth]
    assert policy_scope(policy) == 'local/'
    for tensor in (policy.off_logits, policy.off_vf, policy.pc_q):
        assert tensor.graph is graph and tensor.name.startswith('local/')
    with graph.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        batch = one_sequence(policy, sess, 6, np.random.default_rng(1))
        off_logits, off_vf, pc_q = sess.run([policy.off_logits, policy.off_vf, policy.pc_q],
                                            policy_inputs_feed(policy, 'off', batch))
        on_logits, on_vf = sess.run([policy.on_logits, policy.on_vf], policy_inputs_feed(policy, 'on', batch))
    assert off_logits.shape == (6, depth) and pc_q.shape == (6, *q_map, depth)
    np.testing.assert_allclose(off_logits, on_logits, rtol=1e-6, atol=0)
    np.testing.assert_allclose(off_vf, on_vf, rtol=1e-6, atol=0)


def cartpole():
    return gym_wrappers.TestModeEnv(env_id='CartPole-v1')


@pytest.mark.parametrize('trainer_class, flags, policy_kwargs, expected', [
    (A3C, {}, {}, False),
    (A3C, {}, {'off_policy_pass': True}, True),  # the user's setting is kept
    (Unreal, {'use_value_replay': True, 'replay_memory_size': 50}, {}, True),
    (Unreal, {'use_off_policy_aac': True, 'replay_memory_size': 50}, {}, True),
    (Unreal, {'use_reward_prediction': True, 'replay_memory_size': 50}, {}, False),
])
def test_a_trainer_builds_the_pass_exactly_when_a_loss_reads_it(trainer_class, flags, policy_kwargs, expected):
    """Where a loss reads it, both policies' off-policy pass reads the off-policy inputs and equals their on-policy
    pass on the same batch; elsewhere nothing reads those inputs."""
    with started_trainer(trainer_class, [cartpole()], AacDensePolicy, dict(CARTPOLE_POLICY, **policy_kwargs),
                         test_mode=True, rollout_length=5, **flags) as (trainer, sess, _):
        data = trainer.get_data()
        on_policy = train_batches(trainer.config, data, [True]).on_policy
        for policy in (trainer.network, trainer.local_network):
            assert {bool(placeholder.consumers()) for placeholder in off_inputs(policy)} == {expected}
            if not expected:
                assert [getattr(policy, name) for name in OFF_POLICY_MEMBERS] == [None] * 3
                continue
            assert policy.off_logits.get_shape().as_list() == [None, 2]  # CartPole's two actions
            assert policy.off_logits.graph is sess.graph and policy.off_logits.name.startswith(policy_scope(policy))
            off = sess.run([policy.off_logits, policy.off_vf], policy_inputs_feed(policy, 'off', on_policy))
            on = sess.run([policy.on_logits, policy.on_vf], policy_inputs_feed(policy, 'on', on_policy))
            assert off[0].shape == (5, 2) and off[1].shape == (5,)
            np.testing.assert_allclose(off[0], on[0], rtol=1e-6, atol=0)
            np.testing.assert_allclose(off[1], on[1], rtol=1e-6, atol=0)
        feed = trainer.process_data(sess, data, [True], trainer.local_network)
        sess.run(trainer.train_op, feed)  # the loss trains either way


def test_the_contract_asks_for_the_pass_only_with_a_loss_that_reads_it():
    class PolicyWithoutPass:
        def __init__(self, **kwargs):
            pass

    kwargs = {}
    set_off_policy_pass(PolicyWithoutPass, kwargs, {'use_off_policy_aac': True, 'use_value_replay': False,
                                                    'use_pixel_control': False})
    assert kwargs == {}  # a class that does not name it is not given it
    set_off_policy_pass(AacStackedRL2Policy, kwargs, {'use_off_policy_aac': False, 'use_value_replay': False,
                                                      'use_pixel_control': True})
    assert kwargs == {'off_policy_pass': True}

    lean = built('base-trading', tf.Graph(), pixel_control=False, off_policy_pass=False)
    assert isinstance(lean, BaseAacPolicy)
    assert missing_members(lean) == []
    assert missing_members(lean, {'use_off_policy_aac': True}) == sorted(OFF_POLICY_MEMBERS)
    assert missing_members(lean, {'use_value_replay': True}) == sorted(OFF_POLICY_MEMBERS + ('vr_value',))
