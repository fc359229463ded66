"""Training in one process, without the launcher: the global and local policies share one local session.

For tests, notebooks and debugging. The configs follow the launcher's conventions (`class_ref` + `kwargs`).
"""
import os
import time

import numpy as np

from btgym_aac.algorithms.common.sessions import session_config
from btgym_aac.algorithms.learner import train_until
from btgym_aac.compat import tf
from btgym_aac.env.training_envs import EpisodeRecorder, build_from_config, env_seed_kwargs, training_env_config
from btgym_aac.logs import WARNING


def train_in_process(env_config, policy_config, trainer_config, max_env_steps, log_dir=None, random_seed=None,
                     num_envs=1, log_level=WARNING, target_mean_reward=None, target_window=20):
    """Trains a trainer (A3C, Unreal, PPO, ...) in this process until `max_env_steps` env steps.

    Args:
        env_config: {'class_ref': env class, 'kwargs': dict}; `num_envs` environments are built from it.
        policy_config: {'class_ref': policy class, 'kwargs': dict}.
        trainer_config: {'class_ref': trainer class, 'kwargs': dict}.
        max_env_steps: stop when the global step reaches this.
        log_dir: TensorBoard summaries go to `<log_dir>/worker_0` (None: no summaries).
        random_seed: seeds numpy, TF and the environments' episode sampling.
        num_envs: environments (runners) of the worker.
        log_level: logbook level of the trainer.
        target_mean_reward: stop early once the mean total reward of the last `target_window` train episodes
            reaches this (None: train for `max_env_steps`).
        target_window: episodes averaged for `target_mean_reward`.

    Returns:
        dict with `global_step`, `episodes` (finished train episodes), `test_episodes`,
        `mean_reward_last_10` (mean total reward of the last 10 train episodes, None before any),
        `episode_rewards` (all train episodes), `train_episodes` (their `EpisodeRecorder` records),
        `wall_time` (seconds), `train_steps` and `target_reached_at`
        (global step at which `target_mean_reward` was reached, or None).
    """
    envs = []
    env_config = training_env_config(env_config)
    try:
        for index in range(num_envs):
            seed = None if random_seed is None else random_seed + index
            envs.append(EpisodeRecorder(build_from_config(env_config, **env_seed_kwargs(env_config, seed))))
        target = None if target_mean_reward is None else (float(target_mean_reward), int(target_window))
        return _train(envs, policy_config, trainer_config, max_env_steps, log_dir, random_seed, log_level, target)
    finally:
        for env in envs:
            env.close()


def _train_episodes(envs):
    episodes = sorted((episode for env in envs for episode in env.episodes), key=lambda e: e['seconds'])
    return [episode for episode in episodes if not episode['test']], len(episodes)


def _train_rewards(envs):
    train, num_episodes = _train_episodes(envs)
    return [episode['total_reward'] for episode in train], num_episodes


def _target_reached(envs, target):
    if target is None:
        return False
    rewards, _ = _train_rewards(envs)
    threshold, window = target
    return len(rewards) >= window and float(np.mean(rewards[-window:])) >= threshold


def _train(envs, policy_config, trainer_config, max_env_steps, log_dir, random_seed, log_level, target):
    graph = tf.Graph()
    with graph.as_default():
        trainer_kwargs = dict(trainer_config.get('kwargs', {}))
        trainer_kwargs.setdefault('log_level', log_level)
        trainer = trainer_config['class_ref'](env=envs, task=0, policy_config=policy_config,
                                              random_seed=random_seed, **trainer_kwargs)
        init_op = tf.global_variables_initializer()
        graph.finalize()
    writer = tf.summary.FileWriter(os.path.join(log_dir, 'worker_0'), graph) if log_dir else None
    start = time.perf_counter()
    reached = []

    def target_reached(step):
        if _target_reached(envs, target):
            reached.append(step)
        return bool(reached)

    with tf.Session(graph=graph, config=session_config(intra_op_parallelism_threads=1,
                                                       inter_op_parallelism_threads=2)) as sess:
        sess.run(init_op)
        trainer.start(sess, writer)
        try:
            global_step, train_steps = train_until(trainer, sess, max_env_steps, after_step=target_reached)
        finally:
            trainer.stop()
            if writer is not None:
                writer.close()
    episodes, num_episodes = _train_episodes(envs)
    train = [episode['total_reward'] for episode in episodes]
    return {
        'global_step': global_step,
        'episodes': len(train),
        'test_episodes': num_episodes - len(train),
        'mean_reward_last_10': float(np.mean(train[-10:])) if train else None,
        'episode_rewards': train,
        'train_episodes': episodes,
        'wall_time': time.perf_counter() - start,
        'train_steps': train_steps,
        'target_reached_at': reached[0] if reached else None,
    }
