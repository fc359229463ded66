"""Runners: rollout sizes, n-step bootstraps, frame contiguity, episode statistics against the env's own numbers,
test episodes kept out of memory, rendering rules, the runner thread's error/stop/timeout handling, and the
synchronous runners' get_data / get_batch."""
import copy
import queue
import threading
import time

import numpy as np
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.algorithms.common.memory import Memory
from btgym_aac.algorithms.nn.layers import linear
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac.algorithms.common.rollout import make_data_getter
from btgym_aac.algorithms.acting import (BaseEnvRunnerFn, BaseSynchroRunner, RunnerStopped, RunnerThread,
                                        VerboseSynchroRunner)
from btgym_aac.algorithms.acting.aux_renderings import lstm_h_history, min_max_255
from btgym_aac.algorithms.acting.env_runner import act_and_step, collect_rollout, initial_action_code
from btgym_aac.algorithms.utils import LSTMStateTuple
from btgym_aac.compat import tf
from btgym_aac.data import EnvResetConfig, make_sine_data
from btgym_aac.env import gym_wrappers
from btgym_aac.env.training_envs import EpisodeRecorder
from btgym_aac.logs import get_logger
from btgym_aac.spaces import ActionDictSpace
from btgym_aac.strategy import DevStrat_4_11

LOG = get_logger('test_runners')
EIGHT_HOURS = {'days': 0, 'hours': 8, 'minutes': 0}


# ------------------------------------------------------------------------------------------------- test doubles

class RecordingEnv(BTgymEnv):
    """DevStrat_4_11 env on short episodes that records, per episode, its rewards, steps, last broker value and
    `get_stat()` result, independently of the runner."""

    def __init__(self, **kwargs):
        self.records = []
        defaults = dict(strategy=DevStrat_4_11, episode_duration=EIGHT_HOURS, render_enabled=False, random_seed=0)
        super().__init__(**dict(defaults, **kwargs))

    def reset(self, **kwargs):
        observation, info = super().reset(**kwargs)
        self.records.append({'reward': 0.0, 'steps': 0, 'type': int(observation['metadata']['type'])})
        return observation, info

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        record = self.records[-1]
        record['reward'] += reward
        record['steps'] += 1
        record['final_value'] = info['broker_value']
        return observation, reward, terminated, truncated, info

    def get_stat(self):
        stat = super().get_stat()
        self.records[-1]['stat'] = stat
        return stat


def env_with_test_data(**kwargs):
    return RecordingEnv(dataframe=make_sine_data(num_bars=4000), target_period={'days': 1, 'hours': 0, 'minutes': 0},
                        **kwargs)


class ToyEnv:
    """Test-mode env: observation {'external': [t / 10]}, reward t at step t, `episode_length` steps per episode.

    Records the threads that reset/step it; raises if a finished episode is stepped, or ValueError('boom') at
    overall step `fail_at_step`.
    """

    def __init__(self, episode_length=3, render_enabled=False, fail_at_step=None, step_delay=0.0, frame_shape=(1,)):
        self.action_space = ActionDictSpace(assets=('default_asset',), base_actions=('left', 'right'))
        self.episode_length = episode_length
        self.render_enabled = render_enabled
        self.fail_at_step = fail_at_step
        self.step_delay = step_delay
        self.frame_shape = frame_shape
        self.threads = set()
        self.total_steps = 0
        self.t = 0
        self.done = True

    def _observation(self):
        return {'external': np.full(self.frame_shape, self.t / 10.0)}

    def reset(self, seed=None, options=None):
        self.threads.add(threading.get_ident())
        self.t, self.done = 0, False
        return self._observation(), {}

    def step(self, action):
        self.threads.add(threading.get_ident())
        if self.done:
            raise RuntimeError('stepped a finished episode')
        self.total_steps += 1
        if self.total_steps == self.fail_at_step:
            raise ValueError('boom')
        time.sleep(self.step_delay)
        self.t += 1
        self.done = self.t >= self.episode_length
        return self._observation(), float(self.t), self.done, False, {}


def value_of(observation):
    return float(np.mean(observation['external']))


def counted_context(count):
    """Two-LSTM context (stacked policy layout) whose leaves all carry the step count."""
    def lstm(scale):
        return (LSTMStateTuple(np.full((1, 2), float(count)), scale * count * np.array([[1.0, -1.0, 0.5]])),)
    return lstm(1.0), lstm(2.0)


def context_count(context):
    return int(context[0][0].c[0, 0])


class ScriptedPolicy:
    """Plain-Python policy: V(s) = mean of `external`, context = steps since the episode start, seeded random
    actions (argmax of fixed logits when deterministic); episode sample types follow `sample_types` cyclically."""

    def __init__(self, ac_space, sample_types=(0,), seed=0):
        self.ac_space = ac_space
        self.sample_types = sample_types
        self.rng = np.random.default_rng(seed)
        self.callback = {}
        self.configs_given = 0
        self.config_envs = []
        self.acts = []
        self.initial_contexts = []

    def get_sample_config(self, env=None):
        sample_type = self.sample_types[self.configs_given % len(self.sample_types)]
        self.configs_given += 1
        self.config_envs.append(env)
        config = copy.deepcopy(EnvResetConfig)
        for key in config:
            config[key]['sample_type'] = sample_type
        return config

    def get_initial_features(self, state=None, context=None, sess=None, env=None):
        self.initial_contexts.append(context)
        self.config_envs.append(env)
        return counted_context(0)

    def act(self, observation, lstm_state, last_action, last_reward, deterministic=False, sess=None):
        assert last_action.shape == (1, self.ac_space.encoded_depth) and np.shape(last_reward) == (1,)
        depth = self.ac_space.one_hot_depth
        logits = np.linspace(1.0, 0.0, depth)
        index = 0 if deterministic else int(self.rng.integers(depth))
        metadata = observation.get('metadata', {})
        self.acts.append({'deterministic': deterministic, 'type': int(metadata.get('type', 0)),
                          'thread': threading.get_ident()})
        action = {'default_asset': index}
        pack = {'environment': action, 'encoded': self.ac_space.encode(action),
                'one_hot': self.ac_space.one_hot_encode(action)}
        return pack, logits, np.array([value_of(observation)]), counted_context(context_count(lstm_state) + 1)

    def get_value(self, observation, lstm_state, last_action, last_reward, sess=None):
        return value_of(observation)


class SpyMemory(Memory):
    """Memory that records every frame the runner offers it; `made` keeps the instances."""
    made = []

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.offered = []
        SpyMemory.made.append(self)

    def add(self, frame):
        self.offered.append(frame)
        super().add(frame)


def spy_memory_config(history_size, max_sample_size=5, priority_sample_size=3):
    return {'class_ref': SpyMemory, 'kwargs': dict(history_size=history_size, max_sample_size=max_sample_size,
                                                   priority_sample_size=priority_sample_size,
                                                   use_priority_sampling=True, seed=0)}


def run_fn(env, policy, rollout_length, test_mode=False, task=0, episode_summary_freq=1, env_render_freq=1,
           memory_config=None):
    return BaseEnvRunnerFn(None, env, policy, task, rollout_length, None, episode_summary_freq, env_render_freq,
                           test_mode, None, memory_config, LOG)


def take(generator, count):
    return [next(generator) for _ in range(count)]


def frames_of(rollouts):
    """Flat list of frame dicts of several rollouts, in order."""
    return [rollout.get_frame(index) for rollout in rollouts for index in range(rollout.size)]


def assert_contiguous_episodes(frames):
    """Steps advance by one inside an episode; after a terminal frame the next episode starts at step 0."""
    for before, after in zip(frames[:-1], frames[1:]):
        if before['terminal']:
            assert after['position'] == {'episode': before['position']['episode'] + 1, 'step': 0}
        else:
            assert after['position'] == {'episode': before['position']['episode'],
                                         'step': before['position']['step'] + 1}


def assert_bootstraps(rollouts, following_first_frames):
    """r of every frame: V(next state); 0 after a terminal; a rollout's last non-terminal frame bootstraps with the
    value of the state its successor starts in."""
    for rollout, next_first in zip(rollouts, following_first_frames):
        r = [float(np.ravel(value)[0]) for value in rollout['r']]
        values = [float(np.ravel(value)[0]) for value in rollout['value']]
        assert r[:-1] == pytest.approx(values[1:])
        if rollout['terminal'][-1]:
            assert r[-1] == 0.0
        else:
            assert r[-1] == pytest.approx(value_of(next_first['state']))


def assert_actions_chain(frames, ac_space):
    """last_action / last_reward / context of each frame come from the previous frame of the same episode."""
    for before, after in zip(frames[:-1], frames[1:]):
        if after['position']['step'] == 0:
            np.testing.assert_array_equal(after['last_action'], ac_space.encode(ac_space.get_initial_action()))
            assert float(after['last_reward']) == 0.0 and context_count(after['context']) == 0
        else:
            previous = {'default_asset': int(np.argmax(before['action']))}
            np.testing.assert_array_equal(after['last_action'], ac_space.encode(previous))
            assert float(after['last_reward']) == before['reward']
            assert context_count(after['context']) == after['position']['step']


# ----------------------------------------------------------------------------------------------- BaseEnvRunnerFn

@pytest.mark.parametrize('truncated, bootstrap', [(False, 0.0), (True, 7.5)], ids=['terminated', 'truncated'])
def test_an_episode_cut_by_a_time_limit_is_bootstrapped_and_a_terminated_one_is_not(truncated, bootstrap):
    frames = iter([{'reward': 1.0, 'value': 0.5, 'terminal': False, 'truncated': False},
                   {'reward': 1.0, 'value': 0.5, 'terminal': True, 'truncated': truncated}])
    rollout, terminal = collect_rollout(lambda: next(frames), bootstrap_value=lambda: 7.5, remember=lambda frame: None,
                                        rollout_length=5)
    assert terminal and rollout.size == 2
    assert [float(np.asarray(r).item()) for r in rollout['r']] == [0.5, bootstrap]


def test_act_and_step_marks_a_time_limit_apart_from_termination():
    env = gym_wrappers.TestModeEnv(env_id='CartPole-v1', seed=0, max_episode_steps=3)
    policy = ScriptedPolicy(env.action_space)
    state, _ = env.reset()
    flags = []
    for step in range(3):
        transition = act_and_step(None, env, policy, state, counted_context(step), initial_action_code(env),
                                  np.asarray(0.0), {'episode': 0, 'step': step})
        state = transition.state
        flags.append((transition.experience['terminal'], transition.experience['truncated']))
    env.close()
    assert flags == [(False, False), (False, False), (True, True)]


def test_rollouts_are_bounded_contiguous_and_bootstrapped():
    env = RecordingEnv()
    policy = ScriptedPolicy(env.action_space)
    items = take(run_fn(env, policy, rollout_length=5), 12)
    rollouts = [item['on_policy'] for item in items]
    for rollout in rollouts:
        assert 1 <= rollout.size <= 5
        assert not any(rollout['terminal'][:-1])
        assert rollout['terminal'][-1] or rollout.size == 5
    frames = frames_of(rollouts)
    assert_contiguous_episodes(frames)
    assert_bootstraps(rollouts[:-1], [rollout.get_frame(0) for rollout in rollouts[1:]])
    assert_actions_chain(frames, env.action_space)
    finished = [record for record in env.records if 'stat' in record]
    assert len(finished) >= 2
    for episode, record in enumerate(finished):
        episode_frames = [frame for frame in frames if frame['position']['episode'] == episode]
        assert len(episode_frames) == record['steps']
        assert sum(frame['reward'] for frame in episode_frames) == pytest.approx(record['reward'])
    assert all(item['off_policy'] is None and item['off_policy_rp'] is None for item in items)
    assert set(items[0]) == {'on_policy', 'off_policy', 'off_policy_rp', 'ep_summary', 'test_ep_summary',
                             'render_summary'}


def test_episode_summaries_average_the_env_statistics():
    env = RecordingEnv()
    generator = run_fn(env, ScriptedPolicy(env.action_space), rollout_length=7, episode_summary_freq=2)
    summaries = []
    while len(summaries) < 2:
        item = next(generator)
        if item['on_policy']['terminal'][-1]:
            summaries.append(item['ep_summary'])
        else:
            assert item['ep_summary'] is None
    assert summaries[1] is None
    item = next(generator)
    while not item['on_policy']['terminal'][-1]:
        item = next(generator)
    summaries.append(item['ep_summary'])

    def expected(records):
        return {
            'total_r': np.mean([record['reward'] for record in records]),
            'cpu_time': np.mean([record['stat']['runtime'].total_seconds() for record in records]),
            'final_value': np.mean([record['final_value'] for record in records]),
            'steps': np.mean([record['stat']['length'] for record in records]),
            'agent_steps': np.mean([record['steps'] for record in records]),
        }
    assert summaries[0] == pytest.approx(expected(env.records[:1]))
    assert summaries[2] == pytest.approx(expected(env.records[1:3]))
    assert summaries[2]['steps'] > 10 * env.records[1]['steps'] / 2  # bars, not env steps (skip_frame 10)


def test_test_episodes_are_summarised_apart_and_never_reach_memory():
    SpyMemory.made.clear()
    env = env_with_test_data()
    policy = ScriptedPolicy(env.action_space, sample_types=(0, 1))
    generator = run_fn(env, policy, rollout_length=5, memory_config=spy_memory_config(history_size=30))
    first = next(generator)
    memory = SpyMemory.made[0]
    assert [record['type'] for record in env.records[:3]] == [0, 1, 0]
    assert policy.config_envs == [env] * len(policy.config_envs), 'the runner names its env to the policy'
    assert first['on_policy']['position']['episode'][0] == 2, 'nothing is yielded while the memory fills'
    assert first['ep_summary']['total_r'] == pytest.approx(env.records[0]['reward'])
    assert first['test_ep_summary'] == pytest.approx({'total_r': env.records[1]['reward'],
                                                      'final_value': env.records[1]['final_value'],
                                                      'steps': env.records[1]['stat']['length'],
                                                      'agent_steps': env.records[1]['steps']})
    items = [first]
    while len(env.records) < 5:
        items.append(next(generator))
    test_rollouts = [item['on_policy'] for item in items if item['on_policy']['state']['metadata']['type'][0]]
    assert test_rollouts and all(np.all(rollout['state']['metadata']['type']) for rollout in test_rollouts)
    test_ends = [item for item in items if item['test_ep_summary'] is not None]
    assert test_ends[-1]['test_ep_summary']['total_r'] == pytest.approx(env.records[3]['reward'])
    assert all(int(frame['state']['metadata']['type']) == 0 for frame in memory.offered)
    train_steps = sum(record['steps'] for record in env.records[:4] if record['type'] == 0)
    assert len(memory.offered) >= train_steps
    for item in items:
        assert item['off_policy'].size <= 5 and not np.any(item['off_policy']['state']['metadata']['type'])
        assert item['off_policy_rp'].size == 3


@pytest.mark.parametrize('rollout_length, sizes', [(1, [1, 1, 1]), (2, [2, 1])])
def test_short_rollouts_never_step_a_finished_episode(rollout_length, sizes):
    env = ToyEnv(episode_length=3)
    items = take(run_fn(env, ScriptedPolicy(env.action_space), rollout_length, test_mode=True), 3 * len(sizes))
    rollouts = [item['on_policy'] for item in items]
    assert [rollout.size for rollout in rollouts] == sizes * 3
    frames = frames_of(rollouts)
    assert_contiguous_episodes(frames)
    assert_bootstraps(rollouts[:-1], [rollout.get_frame(0) for rollout in rollouts[1:]])
    summaries = [item['ep_summary'] for item in items if item['on_policy']['terminal'][-1]]
    assert summaries == [{'total_r': 6.0, 'steps': 3}] * 3
    assert all(item['test_ep_summary'] is None for item in items)


@pytest.mark.parametrize('render_enabled, task, rendered_episodes', [
    (True, 0.01, [0, 2, 4]), (True, 0, [0, 2, 4]), (True, 1, []), (False, 0, []),
])
def test_render_summaries_come_from_rendering_envs_of_the_chief(render_enabled, task, rendered_episodes):
    env = ToyEnv(episode_length=2, render_enabled=render_enabled, frame_shape=(2, 2, 1))
    items = take(run_fn(env, ScriptedPolicy(env.action_space), rollout_length=2, test_mode=True, task=task,
                        env_render_freq=2), 5)
    rendered = [index for index, item in enumerate(items) if item['render_summary'] is not None]
    assert rendered == rendered_episodes
    for index in rendered:
        image = items[index]['render_summary']['render_atari']
        assert image.dtype == np.uint8 and image.shape == (1, 2, 2, 1)
        np.testing.assert_array_equal(image, np.full((1, 2, 2, 1), int(0.2 * 255)))


class RecordFlagEnv(ToyEnv):
    """ToyEnv with BTgymEnv's `record_episode` switch, noting its value at every reset."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.record_episode = True
        self.recorded = []

    def reset(self, seed=None, options=None):
        self.recorded.append(self.record_episode)
        return super().reset(seed=seed, options=options)


@pytest.mark.parametrize('task, render_enabled, expected', [
    (0, True, [True, False, False, True, False, False]), (0.02, True, [True, False, False, True, False, False]),
    (1, True, [False] * 6), (0, False, [False] * 6),
])
def test_runners_record_only_the_episodes_they_will_draw(task, render_enabled, expected):
    """Both runner kinds set `env.record_episode` before each reset to whether that episode is rendered (through
    the `EpisodeRecorder` the trainers wrap envs in)."""
    env = EpisodeRecorder(RecordFlagEnv(episode_length=2, render_enabled=render_enabled, frame_shape=(2, 2, 1)))
    items = take(run_fn(env, ScriptedPolicy(env.action_space), rollout_length=2, test_mode=True, task=task,
                        env_render_freq=3), 5)
    assert env.env.recorded == expected
    assert [item['render_summary'] is not None for item in items] == expected[:5]
    synchro_env = RecordFlagEnv(episode_length=2, render_enabled=render_enabled, frame_shape=(2, 2, 1))
    runner = synchro(synchro_env, ScriptedPolicy(synchro_env.action_space), task=task, env_render_freq=3,
                     test=True, rollout_length=2)
    runner.start(None, None)
    synchro_items = [runner.get_data() for _ in range(6)]
    assert all(item['terminal'] for item in synchro_items)
    assert synchro_env.recorded[:6] == [item['render_summary'] is not None for item in synchro_items]
    assert any(synchro_env.recorded) == any(expected)


def test_vector_observations_give_no_test_mode_picture():
    env = ToyEnv(episode_length=2, render_enabled=True)
    items = take(run_fn(env, ScriptedPolicy(env.action_space), rollout_length=2, test_mode=True, task=0,
                        env_render_freq=1), 3)
    assert all(item['render_summary'] is None for item in items)


def test_trading_env_renders_its_modes():
    env = RecordingEnv(render_enabled=True, render_modes=['human'])
    generator = run_fn(env, ScriptedPolicy(env.action_space), rollout_length=20)
    item = next(generator)
    assert item['on_policy']['terminal'][-1]
    image = item['render_summary']['human']
    assert set(item['render_summary']) == {'human'}
    assert image.dtype == np.uint8 and image.ndim == 4 and image.shape[0] == 1 and image.shape[-1] == 3
    assert image.std() > 0


def test_bad_runner_arguments():
    env = ToyEnv()
    with pytest.raises(ValueError, match='rollout_length'):
        next(run_fn(env, ScriptedPolicy(env.action_space), rollout_length=0, test_mode=True))
    with pytest.raises(ValueError, match='memory_config'):
        next(run_fn(env, ScriptedPolicy(env.action_space), 2, test_mode=True, memory_config={'kwargs': {}}))


# -------------------------------------------------------------------------------------------------- RunnerThread

def toy_runner(env, task=0, rollout_length=2, **kwargs):
    return RunnerThread(env=env, policy=ScriptedPolicy(env.action_space), task=task, rollout_length=rollout_length,
                        episode_summary_freq=1, env_render_freq=1, test=True, ep_summary=None, **kwargs)


def test_runner_thread_steps_its_env_only_in_its_own_thread():
    env = ToyEnv(episode_length=3)
    runner = toy_runner(env, global_step_op=None, aux_render_modes=None)
    runner.start_runner(None, None)
    items = [runner.get_data(timeout=10) for _ in range(3)]
    getter = make_data_getter(runner.queue, timeout=10)
    items += [getter() for _ in range(3)]
    assert [item['on_policy'].size for item in items] == [2, 1] * 3
    assert_contiguous_episodes(frames_of([item['on_policy'] for item in items]))
    assert runner.stop(timeout=5)
    assert env.threads == {runner.ident} and runner.ident != threading.get_ident()
    assert {act['thread'] for act in runner.policy.acts} == {runner.ident}
    assert runner.error is None


def test_runner_thread_error_is_raised_by_get_data_quickly():
    env = ToyEnv(episode_length=3, fail_at_step=5)
    runner = toy_runner(env, task=0.02)
    runner.start_runner(None, None)
    delivered = 0
    with pytest.raises(RuntimeError, match=r'task 0\.02 died.*boom') as raised:  # not queue.Empty after 30 s
        while True:
            runner.get_data(timeout=30)
            delivered += 1
    assert delivered == 2  # rollouts of steps 1-2 and 3; step 5 fails inside the third rollout
    assert isinstance(runner.error, ValueError) and raised.value.__cause__ is runner.error
    with pytest.raises(RuntimeError, match='died'):
        runner.get_data(timeout=30)


def test_stop_ends_runners_blocked_on_a_full_queue_or_busy_stepping():
    blocked = toy_runner(ToyEnv(episode_length=1000))
    busy = toy_runner(ToyEnv(episode_length=10 ** 6, step_delay=0.005), rollout_length=10 ** 6)
    blocked.start_runner(None, None)
    busy.start_runner(None, None)
    deadline = time.monotonic() + 10
    while not blocked.queue.full() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert blocked.queue.full()
    assert blocked.stop(timeout=30) and busy.stop(timeout=30)  # each thread ended within the wait
    assert not blocked.is_alive() and not busy.is_alive()
    assert blocked.error is None and busy.error is None
    with pytest.raises(RuntimeError, match='stopped'):
        busy.get_data(timeout=5)


class HangingToyEnv(ToyEnv):
    """ToyEnv whose step `hang_at_step` blocks until `release` is set."""

    def __init__(self, hang_at_step, **kwargs):
        super().__init__(**kwargs)
        self.hang_at_step, self.release = hang_at_step, threading.Event()

    def step(self, action):
        if self.total_steps + 1 == self.hang_at_step:
            self.release.wait()
        return super().step(action)


def test_a_stop_event_of_the_caller_ends_a_wait_for_data_from_a_hung_env():
    env = HangingToyEnv(hang_at_step=3, episode_length=10 ** 6)
    runner = toy_runner(env, rollout_length=2)
    stop = threading.Event()
    runner.start_runner(None, None, stop_event=stop)
    assert runner.get_data(timeout=10)['on_policy'].size == 2
    threading.Timer(0.3, stop.set).start()
    with pytest.raises(RunnerStopped, match='stopped on request'):  # not queue.Empty after 60 s
        runner.get_data(timeout=60)
    assert stop.is_set() and runner.is_alive()  # the wait ended on the event while the env still hangs
    env.release.set()
    runner.join(5)
    assert not runner.is_alive() and runner.error is None  # the freed runner stops at its next queue put
    assert runner.queue.empty()


def test_get_data_timeout_and_unstarted_runner():
    runner = toy_runner(ToyEnv(episode_length=10 ** 6, step_delay=0.01), rollout_length=10 ** 6)
    with pytest.raises(RuntimeError, match='not started'):
        runner.get_data()
    runner.start_runner(None, None)
    started = time.monotonic()
    with pytest.raises(queue.Empty):
        runner.get_data(timeout=0.3)
    assert time.monotonic() - started >= 0.3  # the whole timeout was waited (a lower bound: load cannot break it)
    assert runner.is_alive() and runner.error is None
    assert runner.stop(timeout=5)


def test_runner_thread_with_a_tf_policy_counts_global_episodes():
    env = RecordingEnv()
    with tf.Graph().as_default(), tf.Session() as sess:
        global_episode = tf.Variable(0, trainable=False, name='global_episode')
        with tf.variable_scope('local'):
            policy = AacDensePolicy(ob_space=env.observation_space, ac_space=env.action_space, rp_sequence_size=3,
                                    dense_layers=(8,), lstm_layers=(8,), linear_layer_ref=linear)
        policy.inc_episode = tf.assign_add(global_episode, 1)
        sess.run(tf.global_variables_initializer())
        runner = RunnerThread(env=env, policy=policy, task=0, rollout_length=10, episode_summary_freq=1,
                              env_render_freq=1, test=False, ep_summary=None)
        runner.start_runner(sess, None)
        items = [runner.get_data(timeout=30) for _ in range(4)]
        assert runner.stop(timeout=10)
        finished = sum(1 for item in items if item['on_policy']['terminal'][-1])
        # The runner may have run on past the items taken: count the episodes the env saw finish (get_stat called).
        ended = sum('stat' in record for record in env.records)
        assert finished >= 1 and ended >= finished and all('stat' in record for record in env.records[:-1])
        assert sess.run(global_episode) == ended
        assert [item['ep_summary'] is not None for item in items] == \
            [bool(item['on_policy']['terminal'][-1]) for item in items]
        batch = items[0]['on_policy'].process(gamma=0.99, size=10)
        assert batch['action'].shape == (10, 4) and batch['context'][0].h.shape == (1, 8)
        frame = items[0]['on_policy'].get_frame(1)
        value = policy.get_value(frame['state'], frame['context'], frame['last_action'][None],
                                 frame['last_reward'][None], sess=sess)
        assert float(items[0]['on_policy'].get_frame(0)['r'][0]) == pytest.approx(value, rel=1e-5)


# ---------------------------------------------------------------------------------------------- synchro runners

def synchro(env, policy, runner_class=BaseSynchroRunner, **kwargs):
    defaults = dict(task=0, rollout_length=5, episode_summary_freq=1, env_render_freq=1, ep_summary=None)
    return runner_class(env=env, policy=policy, **dict(defaults, **kwargs))


def test_synchro_get_data_is_contiguous_and_acts_greedily_in_test_episodes():
    SpyMemory.made.clear()
    env = env_with_test_data()
    policy = ScriptedPolicy(env.action_space, sample_types=(0, 1))
    runner = synchro(env, policy, memory_config=spy_memory_config(history_size=20))
    runner.start(None, None)
    memory = SpyMemory.made[0]
    assert memory.is_full()
    items = []
    while len(env.records) < 5:
        items.append(runner.get_data())
    rollouts = [item['on_policy'] for item in items]
    frames = frames_of(rollouts)
    assert_contiguous_episodes(frames)
    assert_bootstraps(rollouts[:-1], [rollout.get_frame(0) for rollout in rollouts[1:]])
    for item in items:
        rollout = item['on_policy']
        assert rollout.size <= 5 and item['terminal'] == rollout['terminal'][-1]
        assert item['is_test'] == bool(rollout['state']['metadata']['type'][0])
        assert (item['test_ep_summary'] is not None) == (item['terminal'] and item['is_test'])
        assert (item['ep_summary'] is not None) == (item['terminal'] and not item['is_test'])
        assert item['off_policy'].size <= 5 and item['off_policy_rp'].size == 3
    assert {act['deterministic'] for act in policy.acts if act['type'] == 1} == {True}
    assert {act['deterministic'] for act in policy.acts if act['type'] == 0} == {False}
    assert any(item['is_test'] for item in items)
    assert policy.config_envs == [env] * len(policy.config_envs) and len(policy.config_envs) > 5
    assert all(int(frame['state']['metadata']['type']) == 0 for frame in memory.offered)
    assert set(frames[0]['info']) >= {'broker_value', 'step'} and 'bars' not in frames[0]['info']


def test_synchro_samples_memory_while_it_fills():
    env = RecordingEnv()
    runner = synchro(env, ScriptedPolicy(env.action_space),
                     memory_config={'class_ref': Memory, 'kwargs': dict(history_size=100, max_sample_size=5,
                                                                        priority_sample_size=3, seed=0)})
    first = runner.get_data()
    assert first['off_policy'].size == first['on_policy'].size == 5 and first['off_policy_rp'] is None
    assert first['off_policy']['position'] == first['on_policy']['position']


def test_synchro_get_batch_keeps_the_trial():
    env = RecordingEnv()
    policy = ScriptedPolicy(env.action_space)
    runner = synchro(env, policy)
    config = policy.get_sample_config()
    untouched = copy.deepcopy(config)
    trial_numbers = {}
    for same_trial in (True, False):
        batch = runner.get_batch(size=6, same_trial=same_trial, data_sample_config=config if same_trial else None)
        data = batch['data']
        assert len(data) >= 6 and any(item['terminal'] for item in data)
        terminal_steps = [item['on_policy']['position']['step'][-1] + 1 for item in data if item['terminal']]
        assert [context_count(context) for context in batch['terminal_context']] == terminal_steps
        episodes = {}
        for item in data:
            rollout = item['on_policy']
            episodes.setdefault(rollout['position']['episode'][0], set()).update(
                int(number) for number in rollout['state']['metadata']['trial_num'])
        assert len(episodes) >= 2 and all(len(numbers) == 1 for numbers in episodes.values())
        trial_numbers[same_trial] = [numbers.pop() for numbers in episodes.values()]
        assert data[0]['on_policy']['position']['step'][0] == 0
    assert len(set(trial_numbers[True])) == 1
    assert len(set(trial_numbers[False])) == len(trial_numbers[False])
    assert config == untouched


def test_synchro_rollout_length_one_in_test_mode():
    env = ToyEnv(episode_length=3)
    runner = synchro(env, ScriptedPolicy(env.action_space), rollout_length=1, test=True)
    runner.start(None, None)
    items = [runner.get_data() for _ in range(6)]
    assert [item['on_policy'].size for item in items] == [1] * 6
    assert [item['terminal'] for item in items] == [False, False, True] * 2
    assert_bootstraps([item['on_policy'] for item in items][:-1], [item['on_policy'].get_frame(0)
                                                                   for item in items[1:]])
    assert [item['ep_summary'] for item in items if item['terminal']] == [{'total_r': 6.0, 'steps': 3}] * 2
    assert items[3]['on_policy'].get_frame(0)['position'] == {'episode': 2, 'step': 0}


def test_verbose_synchro_renders_policy_views():
    env = RecordingEnv(render_enabled=True, render_modes=['human'])
    runner = synchro(env, ScriptedPolicy(env.action_space), runner_class=VerboseSynchroRunner, rollout_length=40)
    runner.start(None, None)
    item = runner.get_data()
    assert item['terminal']
    renderings = item['render_summary']
    assert set(renderings) == {'human', 'action_prob', 'value_fn', 'lstm_1_h', 'lstm_2_h'}
    for image in renderings.values():
        assert image.dtype == np.uint8 and image.ndim == 4 and image.shape[0] == 1 and image.shape[-1] == 3
        assert image.std() > 0
    with pytest.raises(NotImplementedError, match='lstm_3_h'):
        synchro(env, None, runner_class=VerboseSynchroRunner, aux_render_modes=('lstm_3_h',))


def test_lstm_h_history_and_scaling():
    stacked = [counted_context(count) for count in range(3)]
    np.testing.assert_array_equal(lstm_h_history(stacked, 1), 2.0 * np.outer(range(3), [1.0, -1.0, 0.5]))
    flat = [(LSTMStateTuple(np.zeros((1, 2)), np.array([[count, 1.0]])),) for count in range(2)]
    np.testing.assert_array_equal(lstm_h_history(flat, 0), [[0.0, 1.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match='2 LSTM parts'):
        lstm_h_history(flat, 1)
    np.testing.assert_array_equal(min_max_255([[1.0, 3.0], [2.0, 1.0]]), [[0.0, 255.0], [128.0, 0.0]])
    np.testing.assert_array_equal(min_max_255(np.ones((2, 2))), np.zeros((2, 2)))


def test_sleep_waits_for_the_global_step():
    class CountingSession:
        def __init__(self, increment):
            self.step, self.increment = 0, increment

        def run(self, fetch):
            self.step += self.increment
            return self.step

    env = ToyEnv()
    runner = synchro(env, ScriptedPolicy(env.action_space), test=True, slowdown_steps=3, global_step_op='step')
    runner.sess = CountingSession(increment=1)
    runner.sleep(poll_interval=0.001)
    assert runner.sess.step == 4
    runner.sess = CountingSession(increment=0)
    with pytest.raises(TimeoutError):
        runner.sleep(poll_interval=0.001, timeout=0.05)
    assert synchro(env, None, task=1, slowdown_steps=3, global_step_op='step').slowdown_steps == 0
