"""Batched acting: `act_batch` / `get_value_batch` against single calls, and the lockstep runner against one
runner per env."""
import numpy as np
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.algorithms import A3C, AacStackedRL2Policy, BaseAacPolicy
from btgym_aac.algorithms.nn.layers import linear
from btgym_aac.algorithms.acting import BaseEnvRunnerFn, RunnerThread
from btgym_aac.algorithms.acting.replica import ActingReplica
from btgym_aac.algorithms.acting.batched_runner import BatchedEnvRunnerFn, RunnerView
from btgym_aac.algorithms.acting.construction import has_batch_calls
from btgym_aac.compat import tf
from btgym_aac.logs import get_logger
from btgym_aac.strategy import DevStrat_4_11
from test_runners import ScriptedPolicy, ToyEnv, value_of
from trainer_helpers import started_trainer

pytestmark = pytest.mark.xdist_group('batched_acting')  # one xdist worker builds the module's fixtures

LOG = get_logger('test_batched_acting')
EIGHT_HOURS = {'days': 0, 'hours': 8, 'minutes': 0}


# ------------------------------------------------------------------------------------- the policies' batch calls

def observations_of(env, count):
    """`count` different observations: the reset's and those of the steps after it."""
    observation, _ = env.reset(seed=0)
    observations = [observation]
    while len(observations) < count:
        observation, _, _, _, _ = env.step(len(observations) % 4)
        observations.append(observation)
    return observations


@pytest.fixture(scope='module')
def trading_env():
    env = BTgymEnv(strategy=DevStrat_4_11, episode_duration=EIGHT_HOURS, render_enabled=False)
    yield env
    env.close()


@pytest.mark.parametrize('policy_class, kwargs', [
    (BaseAacPolicy, {'lstm_layers': (16,)}),
    (AacStackedRL2Policy, {'lstm_layers': (16, 8)}),
])
def test_a_batched_call_equals_single_calls(trading_env, policy_class, kwargs):
    """Logits, values, next contexts and greedy actions of one `act_batch` call over K envs equal K `act` calls on
    the same observations, contexts, last actions and rewards (noise-free layers); so do the values of
    `get_value_batch`."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        policy = policy_class(ob_space=trading_env.observation_space, ac_space=trading_env.action_space,
                              rp_sequence_size=4, linear_layer_ref=linear, static_rnn=True, **kwargs)
        init_op = tf.global_variables_initializer()
    rng = np.random.default_rng(0)
    count = 3
    observations = observations_of(trading_env, count)
    contexts = [tf.nest.map_structure(lambda leaf: rng.normal(size=leaf.get_shape().as_list()).astype(np.float32),
                                      policy.on_lstm_init_state) for _ in range(count)]
    depth = trading_env.action_space.encoded_depth
    last_actions = rng.integers(0, 2, size=(count, depth)).astype(np.float32)
    last_rewards = rng.normal(size=count)
    with tf.Session(graph=graph) as sess:
        sess.run(init_op)
        batched = policy.act_batch(observations, contexts, last_actions, last_rewards, deterministic=True, sess=sess)
        values = policy.get_value_batch(observations, contexts, last_actions, last_rewards, sess=sess)
        assert len(batched) == count and values.shape == (count,)
        for index in range(count):
            single = policy.act(observations[index], contexts[index], last_actions[index:index + 1],
                                last_rewards[index:index + 1], deterministic=True, sess=sess)
            (pack, logits, value, context), (single_pack, single_logits, single_value, single_context) = (
                batched[index], single)
            np.testing.assert_allclose(logits, single_logits, rtol=1e-5, atol=1e-6)
            assert value.shape == single_value.shape == (1,)
            np.testing.assert_allclose(value, single_value, rtol=1e-5, atol=1e-6)
            for leaf, single_leaf in zip(tf.nest.flatten(context), tf.nest.flatten(single_context)):
                assert leaf.shape == single_leaf.shape
                np.testing.assert_allclose(leaf, single_leaf, rtol=1e-5, atol=1e-6)
            assert pack['environment'] == single_pack['environment']
            np.testing.assert_array_equal(pack['one_hot'], single_pack['one_hot'])
            single_value = policy.get_value(observations[index], contexts[index], last_actions[index:index + 1],
                                            last_rewards[index:index + 1], sess=sess)
            assert values[index] == pytest.approx(single_value, rel=1e-5, abs=1e-6)
        assert len({tuple(np.round(row[1], 5)) for row in batched}) == count  # the rows differ from each other

        def sampled_actions(batch, seed):
            np.random.seed(seed)
            if batch:
                packs = [row[0] for row in policy.act_batch(observations, contexts, last_actions, last_rewards,
                                                            sess=sess)]
            else:
                packs = [policy.act(observations[index], contexts[index], last_actions[index:index + 1],
                                    last_rewards[index:index + 1], sess=sess)[0] for index in range(count)]
            return [pack['environment'] for pack in packs]

        draws = [sampled_actions(True, seed) for seed in range(30)]
        assert draws == [sampled_actions(False, seed) for seed in range(30)]
        assert len({repr(draw) for draw in draws}) > 1  # the draws are random, not the greedy ones


def test_batch_feed_rejects_mismatched_inputs(trading_env):
    graph = tf.Graph()
    with graph.as_default():
        policy = BaseAacPolicy(ob_space=trading_env.observation_space, ac_space=trading_env.action_space,
                               rp_sequence_size=4, lstm_layers=(8,))
    observations = observations_of(trading_env, 2)
    context = tf.nest.map_structure(lambda leaf: np.zeros(leaf.get_shape().as_list()), policy.on_lstm_init_state)
    depth = trading_env.action_space.encoded_depth
    with pytest.raises(ValueError, match=r'expected last_action of {} values \(\[2, {}\]\)'.format(2 * depth, depth)):
        policy._batch_feed(observations, [context, context], np.zeros((1, depth)), np.zeros(2))


# ------------------------------------------------------------------------------------------- the lockstep runner

class GreedyBatchPolicy(ScriptedPolicy):
    """ScriptedPolicy acting greedily (the same actions whatever the call order), with batch calls that record
    their sizes."""

    def __init__(self, ac_space):
        super().__init__(ac_space)
        self.batch_sizes = {'act': [], 'value': []}

    def act(self, observation, lstm_state, last_action, last_reward, deterministic=False, sess=None):
        return super().act(observation, lstm_state, last_action, last_reward, deterministic=True, sess=sess)

    def act_batch(self, observations, lstm_states, last_actions, last_rewards, deterministic=False, sess=None):
        self.batch_sizes['act'].append(len(observations))
        return [self.act(observation, context, last_actions[index:index + 1], last_rewards[index:index + 1])
                for index, (observation, context) in enumerate(zip(observations, lstm_states))]

    def get_value_batch(self, observations, lstm_states, last_actions, last_rewards, sess=None):
        self.batch_sizes['value'].append(len(observations))
        return np.array([value_of(observation) for observation in observations])


def assert_same_item(item, reference):
    assert set(item) == set(reference)
    for key in ('ep_summary', 'test_ep_summary'):
        assert item[key] == reference[key]
    rollout, expected = item['on_policy'], reference['on_policy']
    assert rollout.size == expected.size
    for index in range(expected.size):
        frame, expected_frame = rollout.get_frame(index), expected.get_frame(index)
        assert frame['position'] == expected_frame['position']
        for key in ('action', 'logits', 'reward', 'value', 'r', 'terminal', 'last_action', 'last_reward'):
            np.testing.assert_array_equal(frame[key], expected_frame[key], err_msg=key)
        np.testing.assert_array_equal(frame['state']['external'], expected_frame['state']['external'])


def test_lockstep_rounds_equal_one_runner_per_env():
    """Each env's data from the lockstep runner (episodes of 2, 3 and 5 steps, rollouts of 2: their rollouts end at
    different steps) equals what a runner of its own gives it, and every step is one batched policy call."""
    lengths, rounds = (2, 3, 5), 12
    policy = GreedyBatchPolicy(ToyEnv().action_space)
    generator = BatchedEnvRunnerFn(None, [ToyEnv(episode_length=length) for length in lengths], policy, 0, 2, None,
                                   1, 1, True, None, [None] * len(lengths), LOG)
    batched = [next(generator) for _ in range(rounds)]
    generator.close()
    assert all(len(round_items) == len(lengths) for round_items in batched)
    for index, length in enumerate(lengths):
        alone = BaseEnvRunnerFn(None, ToyEnv(episode_length=length), GreedyBatchPolicy(policy.ac_space), index, 2,
                                None, 1, 1, True, None, None, LOG)
        for round_items in batched:
            assert_same_item(round_items[index], next(alone))
    assert set(policy.batch_sizes['act']) == {3}
    assert policy.batch_sizes['value'] and max(policy.batch_sizes['value']) <= 3
    envs_acted = sum(policy.batch_sizes['act'])
    assert len(policy.acts) == envs_acted


def test_trainer_steps_several_envs_in_one_batched_thread(trading_env):
    """With two envs and `batch_acting` (the default) the runners are views of one thread that acts through the
    policy's batch calls, and a train step takes one rollout of each env; `batch_acting=False` gives one runner
    thread per env."""
    envs = [BTgymEnv(strategy=DevStrat_4_11, episode_duration=EIGHT_HOURS, render_enabled=False, random_seed=seed)
            for seed in (0, 1)]
    trainer_kwargs = dict(rollout_length=5, time_flat=True, episode_summary_freq=1)
    with started_trainer(A3C, envs, BaseAacPolicy, {'lstm_layers': (8,)}, **trainer_kwargs) as (trainer, sess, _):
        assert all(isinstance(runner, RunnerView) for runner in trainer.runners)
        assert trainer.runners[0].thread is trainer.runners[1].thread
        assert [runner.task for runner in trainer.runners] == [0, 0.01]
        frames = [trainer.process(sess) for _ in range(4)]
        assert all(6 <= count <= 10 for count in frames)
        assert sess.run(trainer.global_step) == sum(frames)
    envs = [BTgymEnv(strategy=DevStrat_4_11, episode_duration=EIGHT_HOURS, render_enabled=False) for _ in range(2)]
    with started_trainer(A3C, envs, BaseAacPolicy, {'lstm_layers': (8,)}, batch_acting=False,
                         **trainer_kwargs) as (trainer, sess, _):
        assert all(type(runner) is RunnerThread for runner in trainer.runners)
        assert trainer.process(sess) > 0


class OwnActPolicy(BaseAacPolicy):
    """A user's policy that acts its own way but has no batch call of its own."""

    def act(self, *args, **kwargs):
        return super().act(*args, **kwargs)


class OwnBatchPolicy(OwnActPolicy):
    def act_batch(self, *args, **kwargs):
        return super().act_batch(*args, **kwargs)


def test_only_policies_whose_batch_calls_are_their_own_act_batched():
    """A policy that overrides `act` but inherits `act_batch` acts one env at a time: batching would skip its act."""
    assert has_batch_calls(BaseAacPolicy.__new__(BaseAacPolicy))
    assert has_batch_calls(AacStackedRL2Policy.__new__(AacStackedRL2Policy))
    assert not has_batch_calls(OwnActPolicy.__new__(OwnActPolicy))
    assert has_batch_calls(OwnBatchPolicy.__new__(OwnBatchPolicy))
    assert has_batch_calls(GreedyBatchPolicy.__new__(GreedyBatchPolicy))
    replica = ActingReplica.__new__(ActingReplica)
    replica.policy = OwnActPolicy.__new__(OwnActPolicy)
    assert not has_batch_calls(replica)
    envs = [BTgymEnv(strategy=DevStrat_4_11, episode_duration=EIGHT_HOURS, render_enabled=False) for _ in range(2)]
    with started_trainer(A3C, envs, OwnActPolicy, {'lstm_layers': (8,)}, rollout_length=5,
                         time_flat=True) as (trainer, sess, _):
        assert all(type(runner) is RunnerThread for runner in trainer.runners)
        assert trainer.process(sess) > 0
