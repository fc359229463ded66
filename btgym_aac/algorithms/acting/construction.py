"""The runners a trainer starts: one per env, each with its replay memory (when the trainer's tasks replay)."""
import collections

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
    `runner.base.env_task(task, i)`.

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
