"""Episode summaries of the trainers: placeholders, merged summary ops and the writer helpers.

TensorBoard tags, each under the trainer's name scope (e.g. `A3C/`): the original BTGym's
`episode_train/{total_reward, cpu_time_sec, final_value, env_steps}`, `episode_test/{total_reward, final_value,
env_steps}` and test mode `episode/{total_reward, steps}`, plotted against the global episode count, plus
`agent_steps` (env steps of the agent; `env_steps` counts bars, as in the original) in both BTGym families; the
same scalars again against the global step under `episode_train_by_step/`, `episode_test_by_step/` and
`episode_by_step/`; one image summary per rendering mode (test mode: `model/state`).
"""
import numpy as np

from btgym_aac.compat import tf


TRAIN_SCALARS = (('total_reward', 'total_r'), ('cpu_time_sec', 'cpu_time'), ('final_value', 'final_value'),
                 ('env_steps', 'steps'), ('agent_steps', 'agent_steps'))
TEST_SCALARS = (('total_reward', 'total_r'), ('final_value', 'final_value'), ('env_steps', 'steps'),
                ('agent_steps', 'agent_steps'))
ATARI_SCALARS = (('total_reward', 'total_r'), ('steps', 'steps'))
EPISODE_SCALARS = (('episode_train', TRAIN_SCALARS, 'btgym_stat_op'),
                   ('episode_test', TEST_SCALARS, 'test_btgym_stat_op'),
                   ('episode', ATARI_SCALARS, 'atari_stat_op'))
"""(tag family, (tag, placeholder key) pairs, op key) of the episode scalars."""


def by_step_key(op_key):
    """The key of the by-step twin of an episode-scalar op, e.g. 'btgym_stat_op' -> 'btgym_stat_by_step_op'."""
    return op_key[:-len('_op')] + '_by_step_op'


def _merged_scalars(summary, family, tags):
    return tf.summary.merge([tf.summary.scalar('{}/{}'.format(family, tag), summary[key]) for tag, key in tags],
                            name=family)


def make_episode_summaries(render_modes, test_mode):
    """Builds the episode-summary placeholders and ops.

    Args:
        render_modes: rendering modes whose images are summarised (env modes plus auxiliary modes).
        test_mode: True for gymnasium test environments (Atari-style tags and state image).

    Returns:
        dict: placeholders `total_r`, `cpu_time`, `final_value`, `steps`, `agent_steps`, `render_atari`, one
        uint8 image placeholder per render mode, and ops `render_op`, `btgym_stat_op`, `test_btgym_stat_op`,
        `atari_stat_op` and their `*_by_step_op` twins (e.g. `btgym_stat_by_step_op`).
    """
    summary = dict(
        render_atari=tf.placeholder(tf.uint8, [None, None, None, 1], name='render_atari_pl'),
        total_r=tf.placeholder(tf.float32, name='total_r_pl'),
        cpu_time=tf.placeholder(tf.float32, name='cpu_time_pl'),
        final_value=tf.placeholder(tf.float32, name='final_value_pl'),
        steps=tf.placeholder(tf.int32, name='steps_pl'),
        agent_steps=tf.placeholder(tf.int32, name='agent_steps_pl'),
    )
    if test_mode:
        summary['render_op'] = tf.summary.image('model/state', summary['render_atari'])
    else:
        images = []
        for mode in render_modes:
            summary[mode] = tf.placeholder(tf.uint8, [None, None, None, None], name='{}_pl'.format(mode))
            images.append(tf.summary.image(mode, summary[mode]))
        summary['render_op'] = tf.summary.merge(images) if images else None
    for family, tags, op_key in EPISODE_SCALARS:
        summary[op_key] = _merged_scalars(summary, family, tags)
        summary[by_step_key(op_key)] = _merged_scalars(summary, family + '_by_step', tags)
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
    by_episode, by_step = [], []
    train_stats = average_stats(data['ep_summary'])
    if train_stats:
        op = 'atari_stat_op' if test_mode else 'btgym_stat_op'
        _add_scalars(sess, ep_summary, op, train_stats, by_episode, by_step)
    test_stats = average_stats(data['test_ep_summary'])
    if test_stats:
        _add_scalars(sess, ep_summary, 'test_btgym_stat_op', test_stats, by_episode, by_step)
    renderings = next((images for images in data['render_summary'] if images), None)
    if render and renderings and ep_summary['render_op'] is not None:
        feed = {ep_summary[mode]: image for mode, image in renderings.items() if mode in ep_summary}
        by_episode.append(sess.run(ep_summary['render_op'], feed))
    if model_data is not None:
        by_step.append(tf.Summary.FromString(model_data))
    for summaries, counter in ((by_episode, episode), (by_step, step)):
        if summaries:
            counter = _counter_value(sess, counter)
            for summary in summaries:
                writer.add_summary(summary, counter)
    if by_episode or by_step:
        writer.flush()


def _add_scalars(sess, ep_summary, op_key, stats, by_episode, by_step):
    """Evaluates an episode-scalar op and its by-step twin on `stats`, appending their summaries."""
    ops = [ep_summary[op_key], ep_summary[by_step_key(op_key)]]
    per_episode, per_step = sess.run(ops, stat_feed(ep_summary, stats))
    by_episode.append(per_episode)
    by_step.append(per_step)


def _counter_value(sess, counter):
    return counter if isinstance(counter, (int, np.integer)) else sess.run(counter)


class RunnerSummaryWriter:
    """Writes a worker's train-step summaries (see `write_runner_summaries`) to one FileWriter.

    Args:
        writer: tf.summary.FileWriter.
        ep_summary: the dict of `make_episode_summaries`.
        test_mode: gymnasium test environments (Atari-style tags).
        chief: whether this worker writes renderings (the chief does).
        global_step, global_episode: the counters (tensors) a summary is written at by default.
    """

    def __init__(self, writer, ep_summary, test_mode, chief, global_step, global_episode):
        self.writer, self.ep_summary, self.test_mode, self.chief = writer, ep_summary, test_mode, chief
        self.global_step, self.global_episode = global_step, global_episode

    def write(self, sess, data, model_data=None, step=None, episode=None):
        """Writes the episode statistics and renderings of merged runner `data` and the serialized `model_data`.

        Args:
            sess: session.
            data: merged runner data.
            model_data: serialized model summary or None.
            step, episode: summary steps (default: the global step, the global episode).
        """
        write_runner_summaries(sess, self.writer, self.ep_summary, data, model_data, self.test_mode, self.chief,
                               self.global_step if step is None else step,
                               self.global_episode if episode is None else episode)
