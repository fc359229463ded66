"""What a trainer sets up for acting: its runners, one per env (or the views of one batched runner thread), each
with its replay memory when the trainer's tasks replay, and the train/test episode cycle of each env behind the
trainer's `get_sample_config` (`SampleCycles`).
"""
import collections
import threading

from btgym_aac.algorithms.common.memory import Memory
from btgym_aac.algorithms.acting.replica import ActingReplica
from btgym_aac.algorithms.acting import BaseEnvRunnerFn, RunnerThread
from btgym_aac.algorithms.acting.env_runner import env_task
from btgym_aac.algorithms.acting.batched_runner import BatchedRunnerThread

RunnerSetup = collections.namedtuple('RunnerSetup', ['task', 'runner_config', 'ep_summary', 'global_step',
                                                     'log_level', 'random_seed'])
"""What runners get from their trainer besides its config and envs: worker task, `runner_config` ({'class_ref',
'kwargs'}), episode summaries (see `summaries.make_episode_summaries`), the global step tensor, logbook level and
random seed (or None)."""


def memory_config(config, setup, index):
    """Replay memory config of the runner of env `index` (None without memory); each memory draws its samples from
    its own seed (`[random_seed, task, index]`).

    Args:
        config: the trainer's resolved `AacConfig`.
        setup: RunnerSetup.
        index: env index.
    """
    if not config.use_memory:
        return None
    seed = None if setup.random_seed is None else [setup.random_seed, setup.task, index]
    return dict(class_ref=Memory, kwargs=dict(
        history_size=config.replay_memory_size, max_sample_size=config.replay_rollout_length,
        priority_sample_size=config.rp_sequence_size, reward_threshold=config.rp_reward_threshold,
        use_priority_sampling=config.use_reward_prediction, task=setup.task, log_level=setup.log_level, seed=seed))


def _common_kwargs(config, setup, policy):
    return dict(policy=policy, rollout_length=config.rollout_length, episode_summary_freq=config.episode_summary_freq,
                env_render_freq=config.env_render_freq, test=config.test_mode, ep_summary=setup.ep_summary,
                log_level=setup.log_level, global_step_op=setup.global_step,
                aux_render_modes=list(config.aux_render_modes))


def _defining_class(cls, name):
    return next(klass for klass in cls.__mro__ if name in vars(klass))


def has_batch_calls(policy):
    """Whether `policy` (or the policy of an `ActingReplica`) has `act_batch` and `get_value_batch` defined by its
    class where `act` and `get_value` are, or below: a subclass that overrides `act` alone would not act its own
    way in a batch."""
    policy = policy.policy if isinstance(policy, ActingReplica) else policy
    for single, batched in (('act', 'act_batch'), ('get_value', 'get_value_batch')):
        if not (callable(getattr(policy, batched, None)) and callable(getattr(policy, single, None))):
            return False
        if not issubclass(_defining_class(type(policy), batched), _defining_class(type(policy), single)):
            return False
    return True


def acts_batched(config, envs, runner_config, policy):
    """Whether `envs` are stepped by one `BatchedRunnerThread`: `config.batch_acting` is set, there are several envs,
    the runners are the default ones (`RunnerThread` running `BaseEnvRunnerFn`, no other runner kwargs) and `policy`
    has batch calls of its own (`has_batch_calls`)."""
    return (bool(config.batch_acting) and len(envs) > 1 and runner_config['class_ref'] is RunnerThread
            and runner_config.get('kwargs', {}) == {'runner_fn_ref': BaseEnvRunnerFn} and has_batch_calls(policy))


def make_runners(config, envs, setup, policy):
    """The runners of `envs`, acting with `policy`: one per env, the env's own task number being
    `env_runner.env_task(task, i)`.

    With batched acting (see `acts_batched`) they are the views of one `BatchedRunnerThread`. Otherwise each is a
    `setup.runner_config` runner, which gets the rollout length, summary and render periods, episode summaries,
    memory config and global step, then `runner_config['kwargs']` (which take precedence).

    Args:
        config: the trainer's resolved `AacConfig`.
        envs: list of environments.
        setup: RunnerSetup.
        policy: the policy the runners act with (the local policy or its `ActingReplica`).
    """
    if acts_batched(config, envs, setup.runner_config, policy):
        thread = BatchedRunnerThread(
            envs=envs, task=setup.task, memory_configs=[memory_config(config, setup, index)
                                                        for index in range(len(envs))],
            **_common_kwargs(config, setup, policy))
        return thread.views
    runners = []
    for index, env in enumerate(envs):
        kwargs = dict(env=env, task=env_task(setup.task, index), memory_config=memory_config(config, setup, index),
                      **_common_kwargs(config, setup, policy))
        kwargs.update(setup.runner_config.get('kwargs', {}))
        runners.append(setup.runner_config['class_ref'](**kwargs))
    return runners


class SampleCycle:
    """Sample configs of one env's episodes: `train_episodes` train then `test_episodes` test episodes, repeatedly,
    and a new data trial when the sample type changes and every `episodes_per_trial` episodes.

    Args:
        train_episodes, test_episodes: the `episode_train_test_cycle` (not both zero).
        episodes_per_trial: episodes per data trial (>= 1).
    """

    def __init__(self, train_episodes, test_episodes, episodes_per_trial):
        self.cycle = (train_episodes, test_episodes)
        self.episodes_per_trial = episodes_per_trial
        self.train_count = self.test_count = 0
        self.trial_episode = 0
        self.last_sample_type = None

    def _next_sample_type(self):
        num_train, num_test = self.cycle
        if self.train_count == num_train and self.test_count == num_test:
            self.train_count = self.test_count = 0
        if self.train_count < num_train:
            self.train_count += 1
            return 0
        self.test_count += 1
        return 1

    def next_config(self, new_trial=None):
        """Config of the next episode.

        Args:
            new_trial: force (True) or forbid (False) a new trial; None follows the schedule.

        Returns:
            {'episode_config': {...}, 'trial_config': {...}} for `env.reset(**config)`.
        """
        sample_type = self._next_sample_type()
        if new_trial is None:
            new_trial = sample_type != self.last_sample_type or self.trial_episode % self.episodes_per_trial == 0
        self.trial_episode = 1 if new_trial else self.trial_episode + 1
        self.last_sample_type = sample_type
        return {
            'episode_config': dict(get_new=True, sample_type=sample_type, b_alpha=1.0, b_beta=1.0),
            'trial_config': dict(get_new=bool(new_trial), sample_type=sample_type, b_alpha=1.0, b_beta=1.0),
        }


class SampleCycles:
    """One `SampleCycle` per env, made on the env's first request; thread-safe (a worker's runner threads share
    it).

    Args:
        train_test_cycle: the `episode_train_test_cycle`.
        episodes_per_trial: episodes per data trial (>= 1).
    """

    def __init__(self, train_test_cycle, episodes_per_trial):
        self.train_test_cycle = tuple(train_test_cycle)
        self.episodes_per_trial = episodes_per_trial
        self._cycles = {}
        self._lock = threading.Lock()

    def next_config(self, env, new_trial=None):
        """Config of `env`'s next episode (see `SampleCycle.next_config`); `env` None has a cycle of its own."""
        with self._lock:
            cycle = self._cycles.get(id(env))
            if cycle is None:
                cycle = self._cycles[id(env)] = SampleCycle(*self.train_test_cycle,
                                                            episodes_per_trial=self.episodes_per_trial)
            return cycle.next_config(new_trial)
