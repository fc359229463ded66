"""The training loop shared by a distributed worker and `train_in_process`: train steps until a step budget, a
stop request or the caller's own condition."""
from btgym_aac.algorithms.runner import RunnerStopped


def train_until(trainer, sess, max_env_steps, stop_event=None, after_step=None):
    """Runs `trainer.process(sess)` until the global step reaches `max_env_steps`.

    The trainer must be started (`trainer.start(sess, writer)`); the caller stops it.

    Args:
        trainer: a started trainer (`BaseAAC` or subclass).
        sess: its session.
        max_env_steps: global step to train to.
        stop_event: threading.Event whose setting ends the loop before the next step (None: none); the loop also
            ends when the runners raise RunnerStopped (stopped on request while a step waits for data).
        after_step: fn(global_step) called after every train step; returning True ends the loop.

    Returns:
        (global step at the end, train steps run).
    """
    step = int(sess.run(trainer.global_step))
    train_steps = 0
    while step < max_env_steps and not (stop_event is not None and stop_event.is_set()):
        try:
            frames = trainer.process(sess)
        except RunnerStopped:
            break
        train_steps += 1
        step = trainer.last_global_step if frames else int(sess.run(trainer.global_step))
        if after_step is not None and after_step(step):
            break
    return step, train_steps
