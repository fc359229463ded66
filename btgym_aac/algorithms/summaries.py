"""Episode summaries of the trainers: placeholders, merged summary ops and the writer helpers.

TensorBoard tags (those of the original BTGym): `episode_train/{total_reward, cpu_time_sec, final_value, env_steps}`,
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


def write_runner_summaries(sess, writer, ep_summary, data, model_data, test_mode, render, step, episode):
    """Writes a train iteration's episode statistics and renderings (at `episode`) and its model summary (at
    `step`), reading a counter from the session only when something is written at it.

    Args:
        sess: session.
        writer: tf.summary.FileWriter.
        ep_summary: the dict of `make_episode_summaries`.
        data: merged runner data (`ep_summary`, `test_ep_summary` and `render_summary` lists, one per runner).
        model_data: serialized model summary or None.
        test_mode: gymnasium test environments (Atari-style tags).
        render: write the first runner's renderings (the chief does).
        step, episode: ints, or tensors to read them from.
    """
    summaries = []
    train_stats = average_stats(data['ep_summary'])
    if train_stats:
        op = ep_summary['atari_stat_op' if test_mode else 'btgym_stat_op']
        summaries.append(sess.run(op, stat_feed(ep_summary, train_stats)))
    test_stats = average_stats(data['test_ep_summary'])
    if test_stats:
        summaries.append(sess.run(ep_summary['test_btgym_stat_op'], stat_feed(ep_summary, test_stats)))
    renderings = next((images for images in data['render_summary'] if images), None)
    if render and renderings and ep_summary['render_op'] is not None:
        feed = {ep_summary[mode]: image for mode, image in renderings.items() if mode in ep_summary}
        summaries.append(sess.run(ep_summary['render_op'], feed))
    if summaries:
        episode = _counter_value(sess, episode)
        for summary in summaries:
            writer.add_summary(summary, episode)
    if model_data is not None:
        writer.add_summary(tf.Summary.FromString(model_data), _counter_value(sess, step))
    if summaries or model_data is not None:
        writer.flush()


def _counter_value(sess, counter):
    return counter if isinstance(counter, (int, np.integer)) else sess.run(counter)
