"""The off-policy pass is built only where a loss reads it: the same variables and on-policy outputs without it,
trainers that ask for it exactly when their losses need it, and the policy contract that follows."""
import numpy as np
import pytest

from btgym_aac.algorithms import A3C, Unreal
from btgym_aac.algorithms.nn.layers import linear
from btgym_aac.algorithms.policy import AacDensePolicy, AacStackedRL2Policy, BaseAacPolicy
from btgym_aac.algorithms.policy.interface import OFF_POLICY_MEMBERS, missing_members
from btgym_aac.algorithms.policy.options import set_off_policy_pass
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


def test_pixel_control_builds_the_pass_it_reads():
    policy = built('base-image', tf.Graph(), pixel_control=True, off_policy_pass=False)
    assert policy.off_logits is not None and policy.pc_q is not None


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
    with started_trainer(trainer_class, [cartpole()], AacDensePolicy, dict(CARTPOLE_POLICY, **policy_kwargs),
                         test_mode=True, rollout_length=5, **flags) as (trainer, sess, _):
        for policy in (trainer.network, trainer.local_network):
            assert (policy.off_logits is not None) == expected
        data = trainer.get_data()
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
