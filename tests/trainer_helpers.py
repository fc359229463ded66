"""Helpers shared by the trainer tests: a trainer started in its own session, numpy references of returns, GAE
and log-softmax, and the scalar summaries of event files."""
import contextlib
import glob

import numpy as np

from btgym_aac.compat import tf


@contextlib.contextmanager
def started_trainer(trainer_class, envs, policy_class, policy_kwargs, summary_dir=None, **kwargs):
    """Trainer started in its own session, its runners acting, writing summaries to `summary_dir` (None: none);
    yields (trainer, session, raw local gradients of its loss), and stops it, closes its summary writer and its
    envs at the end."""
    graph = tf.Graph()
    with graph.as_default():
        trainer = trainer_class(env=envs, task=0, random_seed=0,
                                policy_config={'class_ref': policy_class, 'kwargs': policy_kwargs}, **kwargs)
        raw_grads = tf.gradients(trainer.loss, trainer.local_network.var_list)
        init_op = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    writer = tf.summary.FileWriter(str(summary_dir)) if summary_dir is not None else None
    try:
        sess.run(init_op)
        trainer.start(sess, writer)
        yield trainer, sess, raw_grads
    finally:
        trainer.stop()
        sess.close()
        if writer is not None:
            writer.close()
        for env in trainer.env_list:
            env.close()


def loop_returns_and_advantages(rewards, values, bootstrap, gamma, gae_lambda):
    """n-step returns and GAE advantages of one rollout, by a plain backward loop."""
    returns, advantages = np.zeros(len(rewards)), np.zeros(len(rewards))
    running_return, running_gae, next_value = bootstrap, 0.0, bootstrap
    for t in reversed(range(len(rewards))):
        running_return = rewards[t] + gamma * running_return
        delta = rewards[t] + gamma * next_value - values[t]
        running_gae = delta + gamma * gae_lambda * running_gae
        returns[t], advantages[t] = running_return, running_gae
        next_value = values[t]
    return returns, advantages


def log_softmax(logits):
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _events(log_dir):
    for path in sorted(glob.glob(str(log_dir) + '/events.*')):
        yield from tf.train.summary_iterator(path)


def scalar_events(log_dir):
    """{tag: [(step, simple_value), ...] in write order} of the summaries in the event files of `log_dir`."""
    events = {}
    for event in _events(log_dir):
        for value in event.summary.value:
            events.setdefault(value.tag, []).append((event.step, value.simple_value))
    return events


def graph_written(log_dir):
    """True when an event file of `log_dir` holds the graph."""
    return any(event.graph_def for event in _events(log_dir))


def tagged(events, suffix):
    """The events of the one tag ending with `suffix`."""
    tags = [tag for tag in events if tag.endswith(suffix)]
    assert len(tags) == 1, (suffix, sorted(events))
    return events[tags[0]]
