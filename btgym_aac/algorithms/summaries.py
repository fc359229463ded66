"""Episode summaries of the trainers: placeholders, merged summary ops and the writer helpers.

TensorBoard tags (as the original): `episode_train/{total_reward, cpu_time_sec, final_value, env_steps}`,
`episode_test/{total_reward, final_value, env_steps}`, test mode `episode/{total_reward, steps}`, and one image
summary per rendering mode (test mode: `model/state`).
"""
import numpy as np

from btgym_aac.compat import tf


def make_episode_summaries(render_modes, test_mode):
    """Builds the episode-summary placeholders and ops.

    Args:
        render_modes: rendering modes whose images are summarised (env modes plus auxiliary modes).
        test_mode: True for gymnasium test environments (Atari-style tags and state image).

    Returns:
        dict: placeholders `total_r`, `cpu_time`, `final_value`, `steps`, `render_atari`, one uint8 image
        placeholder per render mode, and ops `render_op`, `btgym_stat_op`, `test_btgym_stat_op`, `atari_stat_op`.
    """
    summary = dict(
        render_atari=tf.placeholder(tf.uint8, [None, None, None, 1], name='render_atari_pl'),
        total_r=tf.placeholder(tf.float32, name='total_r_pl'),
        cpu_time=tf.placeholder(tf.float32, name='cpu_time_pl'),
        final_value=tf.placeholder(tf.float32, name='final_value_pl'),
        steps=tf.placeholder(tf.int32, name='steps_pl'),
    )
    if test_mode:
        summary['render_op'] = tf.summary.image('model/state', summary['render_atari'])
    else:
        images = []
        for mode in render_modes:
            summary[mode] = tf.placeholder(tf.uint8, [None, None, None, None], name='{}_pl'.format(mode))
            images.append(tf.summary.image(mode, summary[mode]))
        summary['render_op'] = tf.summary.merge(images) if images else None
    summary['btgym_stat_op'] = tf.summary.merge([
        tf.summary.scalar('episode_train/total_reward', summary['total_r']),
        tf.summary.scalar('episode_train/cpu_time_sec', summary['cpu_time']),
        tf.summary.scalar('episode_train/final_value', summary['final_value']),
        tf.summary.scalar('episode_train/env_steps', summary['steps']),
    ], name='episode_train_btgym')
    summary['test_btgym_stat_op'] = tf.summary.merge([
        tf.summary.scalar('episode_test/total_reward', summary['total_r']),
        tf.summary.scalar('episode_test/final_value', summary['final_value']),
        tf.summary.scalar('episode_test/env_steps', summary['steps']),
    ], name='episode_test_btgym')
    summary['atari_stat_op'] = tf.summary.merge([
        tf.summary.scalar('episode/total_reward', summary['total_r']),
        tf.summary.scalar('episode/steps', summary['steps']),
    ], name='episode_atari')
    return summary


def average_stats(stats):
    """Averages per-key episode statistics over the runners that reported any.

    Args:
        stats: list (one entry per runner) of dicts key -> number, or None.

    Returns:
        dict key -> mean value, empty when no runner reported.
    """
    collected = {}
    for stat in stats:
        for key, value in (stat or {}).items():
            collected.setdefault(key, []).append(value)
    return {key: float(np.mean(values)) for key, values in collected.items()}


def stat_feed(summary, stats):
    """Feed dict of averaged statistics for the placeholders of `make_episode_summaries`."""
    return {summary[key]: value for key, value in stats.items() if key in summary}
