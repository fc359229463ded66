"""The runners a trainer starts: one per env, each with its replay memory (when the trainer's tasks replay)."""
from btgym_aac.algorithms.memory import Memory
from btgym_aac.algorithms.policy.replica import ActingReplica
from btgym_aac.algorithms.runner import BaseEnvRunnerFn, RunnerThread
from btgym_aac.algorithms.runner.base import env_task
from btgym_aac.algorithms.runner.batched import BatchedRunnerThread


def memory_config(trainer, index):
    """Replay memory config of the runner of env `index` (None without memory); each memory draws its samples from
    its own seed (`[random_seed, task, index]`).

    Args:
        trainer: reads `use_memory`, `replay_memory_size`, `replay_rollout_length`, `rp_sequence_size`,
            `rp_reward_threshold`, `use_reward_prediction`, `task`, `log_level` and `random_seed`.
        index: env index.
    """
    if not trainer.use_memory:
        return None
    seed = None if trainer.random_seed is None else [trainer.random_seed, trainer.task, index]
    return dict(class_ref=Memory, kwargs=dict(
        history_size=trainer.replay_memory_size, max_sample_size=trainer.replay_rollout_length,
        priority_sample_size=trainer.rp_sequence_size, reward_threshold=trainer.rp_reward_threshold,
        use_priority_sampling=trainer.use_reward_prediction, task=trainer.task, log_level=trainer.log_level,
        seed=seed))


def _common_kwargs(trainer, policy):
    return dict(policy=policy, rollout_length=trainer.rollout_length, episode_summary_freq=trainer.episode_summary_freq,
                env_render_freq=trainer.env_render_freq, test=trainer.test_mode, ep_summary=trainer.ep_summary,
                log_level=trainer.log_level, global_step_op=trainer.global_step,
                aux_render_modes=trainer.aux_render_modes)


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


def acts_batched(trainer, policy):
    """Whether the trainer's envs are stepped by one `BatchedRunnerThread`: `trainer.batch_acting` is set, there
    are several envs, the runners are the default ones (`RunnerThread` running `BaseEnvRunnerFn`, no other runner
    kwargs) and `policy` has batch calls of its own (`has_batch_calls`)."""
    config = trainer.runner_config
    return (bool(trainer.batch_acting) and len(trainer.env_list) > 1 and config['class_ref'] is RunnerThread
            and config.get('kwargs', {}) == {'runner_fn_ref': BaseEnvRunnerFn} and has_batch_calls(policy))


def make_runners(trainer, policy):
    """The runners of `trainer.env_list`, acting with `policy`: one per env, the env's own task number being
    `runner.base.env_task(task, i)`.

    With batched acting (see `acts_batched`) they are the views of one `BatchedRunnerThread`. Otherwise each is a
    `trainer.runner_config` runner, which gets the trainer's rollout length, summary and render periods, episode
    summaries, memory config and global step, then `runner_config['kwargs']` (which take precedence).
    """
    if acts_batched(trainer, policy):
        thread = BatchedRunnerThread(
            envs=trainer.env_list, task=trainer.task,
            memory_configs=[memory_config(trainer, index) for index in range(len(trainer.env_list))],
            **_common_kwargs(trainer, policy))
        return thread.views
    runners = []
    for index, env in enumerate(trainer.env_list):
        kwargs = dict(env=env, task=env_task(trainer.task, index), memory_config=memory_config(trainer, index),
                      **_common_kwargs(trainer, policy))
        kwargs.update(trainer.runner_config.get('kwargs', {}))
        runners.append(trainer.runner_config['class_ref'](**kwargs))
    return runners
