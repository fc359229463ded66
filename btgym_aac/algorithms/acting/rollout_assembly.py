"""Rollouts cut from an episode's frames: n-step bootstrap values and the replay memory's feed."""
import numpy as np

from btgym_aac.algorithms.common.rollout import Rollout


class RolloutAssembler:
    """Builds rollouts of at most `rollout_length` frames of one episode from frames pushed one at a time.

    A frame's ``'r'`` is the next frame's value; the last frame of a rollout gets 0 after a terminated step, else
    the bootstrap value of the state the episode goes on from. Every completed frame goes through `remember`.

    Args:
        rollout_length: maximum number of frames.
        remember: callable(frame) called with every completed frame (replay memory).
    """

    def __init__(self, rollout_length, remember):
        self.rollout_length = rollout_length
        self.remember = remember
        self._start()

    def _start(self):
        self.rollout = Rollout()
        self.pending = None

    def _complete(self, frame, r):
        frame['r'] = np.asarray(r, dtype=np.float64).reshape(1)
        self.rollout.add(frame)
        self.remember(frame)

    def add(self, experience):
        """Adds the frame of the step just taken (without ``'r'``).

        Returns:
            True when the rollout is due (full, or its episode is over): call `finish` before adding more.
        """
        if self.pending is not None:
            self._complete(self.pending, experience['value'])
        self.pending = experience
        return experience['terminal'] or self.rollout.size + 1 >= self.rollout_length

    @property
    def needs_bootstrap(self):
        """Whether `finish` will call its `bootstrap_value` (the episode goes on after the last frame)."""
        return not (self.pending['terminal'] and not self.pending.get('truncated', False))

    def finish(self, bootstrap_value):
        """Completes the due rollout and starts the next one.

        Args:
            bootstrap_value: callable() -> V(current state), called only when `needs_bootstrap`.

        Returns:
            (Rollout, terminal).
        """
        last = self.pending
        self._complete(last, bootstrap_value() if self.needs_bootstrap else 0.0)
        rollout = self.rollout
        self._start()
        return rollout, last['terminal']


def collect_rollout(step, bootstrap_value, remember, rollout_length, stop_requested=None):
    """Collects up to `rollout_length` frames of one episode.

    The terminal check runs after every step, including the first, so ``rollout_length == 1`` works and a finished
    episode is never stepped; every frame goes through `remember` (the caller keeps test-episode frames out of
    replay memory).

    Args:
        step: callable() -> experience frame without ``'r'``; acts and advances the runner by one env step.
        bootstrap_value: callable() -> V(current state), used for the last frame of a non-terminal rollout.
        remember: callable(frame) called with every completed frame (replay memory).
        rollout_length: maximum number of frames.
        stop_requested: callable() -> bool, checked before every env step; True abandons the rollout.

    Returns:
        (Rollout, terminal), or None when stopped.
    """
    assembler = RolloutAssembler(rollout_length, remember)
    while stop_requested is None or not stop_requested():
        if assembler.add(step()):
            return assembler.finish(bootstrap_value)
    return None

