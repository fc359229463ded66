"""The runners a trainer starts: one per env, each with its replay memory (when the trainer's tasks replay)."""
from btgym_aac.algorithms.memory import Memory


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


def make_runners(trainer, policy):
    """One runner of `trainer.runner_config` per env of `trainer.env_list`, acting with `policy`.

    The runner gets the trainer's rollout length, summary and render periods, episode summaries, memory config
    and global step, then `runner_config['kwargs']` (which take precedence). Runner of env i has task number
    `task + 0.01 * i`.
    """
    runners = []
    for index, env in enumerate(trainer.env_list):
        kwargs = dict(env=env, policy=policy, task=trainer.task + 0.01 * index,
                      rollout_length=trainer.rollout_length, episode_summary_freq=trainer.episode_summary_freq,
                      env_render_freq=trainer.env_render_freq, test=trainer.test_mode, ep_summary=trainer.ep_summary,
                      memory_config=memory_config(trainer, index), log_level=trainer.log_level,
                      global_step_op=trainer.global_step, aux_render_modes=trainer.aux_render_modes)
        kwargs.update(trainer.runner_config.get('kwargs', {}))
        runners.append(trainer.runner_config['class_ref'](**kwargs))
    return runners
