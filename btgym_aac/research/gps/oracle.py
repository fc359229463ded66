"""Look-ahead experts that turn a whole episode of prices into advised action distributions.

Both experts see the future of the episode: their advice is a training signal for imitation losses, never an
achievable policy. Actions are indices: 0 hold, 1 buy, 2 sell, 3 close.
"""
import numpy as np

from btgym_aac.research.gps import price_signal
from btgym_aac.validation import check_number, check_whole_number


def _check_action_space(action_space, owner, size=None):
    """Returns `action_space` as a tuple of ints if it is 0, 1, ..., A - 1 with A >= 3 (A == `size` if given)."""
    actions = tuple(int(action) for action in np.asarray(action_space).reshape(-1))
    wanted = 'A = {}'.format(size) if size else 'A >= 3'
    if len(actions) < 3 or (size and len(actions) != size) or actions != tuple(range(len(actions))):
        raise ValueError('{}: action_space must be the action indices 0 ... A - 1 (hold, buy, sell[, close]) with '
                         '{}, got {!r}'.format(owner, wanted, action_space))
    return actions


class Oracle:
    """Advises buy at a price low followed by a rise and sell at a high followed by a fall.

    `fit` resamples the episode to environment steps, finds the local extrema of the high-low middle, drops
    extrema closer in value than `pips_threshold * pips_scale` to the last kept one, marks buy / sell at the kept
    points, stretches each signal over `kernel_size - 1` steps and smooths it into a distribution over actions.
    `close` is never advised.
    """

    resample_data = staticmethod(price_signal.resample_data)

    def __init__(self, action_space=(0, 1, 2, 3), time_threshold=5, pips_threshold=10, pips_scale=1e-4,
                 kernel_size=5, kernel_stddev=1):
        """
        Args:
            action_space: action indices 0 ... A - 1 (A >= 3): hold, buy, sell[, close, ...].
            time_threshold: an extremum beats its `time_threshold` neighbours on each side (environment steps).
            pips_threshold: smallest value change between kept extrema, in pips (>= 0).
            pips_scale: price value of one pip (> 0).
            kernel_size: Gaussian smoothing window length in steps; signals last `kernel_size - 1` steps.
            kernel_stddev: Gaussian window standard deviation in steps (> 0).
        """
        self.action_space = _check_action_space(action_space, 'Oracle')
        self.time_threshold = check_whole_number('time_threshold', time_threshold)
        pips_threshold = check_number('pips_threshold', pips_threshold)
        self.value_threshold = pips_threshold * check_number('pips_scale', pips_scale, low_open=True)
        self.kernel_size = check_whole_number('kernel_size', kernel_size)
        self.kernel = price_signal.gaussian_window(self.kernel_size,
                                                   check_number('kernel_stddev', kernel_stddev, low_open=True))

    @staticmethod
    def filter_by_margine(lst, threshold):
        """Keeps the first point, then every point whose value differs from the last kept one by at least
        `threshold` (left to right). A loop: no recursion limit on long episodes.

        Args:
            lst: list of (value, index) pairs.
            threshold: smallest value difference to keep a point.

        Returns:
            list of the kept pairs.
        """
        kept = list(lst[:1])
        for point in lst[1:]:
            if abs(point[0] - kept[-1][0]) >= threshold:
                kept.append(point)
        return kept

    def estimate_actions(self, episode_data):
        """Hold everywhere except buy / sell at the kept extrema (see the class docstring).

        Args:
            episode_data: 1-D array [R] of (resampled) prices.

        Returns:
            int array [R] of action indices; at kept point i: buy if the next kept point is higher, else sell;
            the last kept point stays hold.
        """
        y = np.asarray(episode_data, dtype=np.float64)
        if y.ndim != 1 or y.size == 0:
            raise ValueError('estimate_actions: expected a non-empty 1-D price array, got shape {}'.format(y.shape))
        indices = np.sort(np.concatenate([
            price_signal.relative_extrema(y, self.time_threshold, np.greater),
            price_signal.relative_extrema(y, self.time_threshold, np.less),
            [0, y.size - 1],
        ]))
        points = self.filter_by_margine([(y[i], i) for i in indices], self.value_threshold)
        hold, buy, sell = self.action_space[:3]
        advice = np.full(y.size, hold, dtype=np.int64)
        for (value, index), (next_value, _) in zip(points[:-1], points[1:]):
            advice[index] = buy if value < next_value else sell
        return advice

    def adjust_signals(self, signal):
        """Stretches signals: scanning left to right, a non-hold signal at i overwrites the next
        `kernel_size - 2` steps, and the scan resumes after them.

        Args:
            signal: 1-D int array of action indices.

        Returns:
            a new array of the same shape.
        """
        signal = np.array(signal)
        length = self.kernel_size - 1
        i = 0
        while i < signal.size:
            if signal[i] == self.action_space[0]:
                i += 1
            else:
                end = min(i + max(length, 1), signal.size)
                signal[i:end] = signal[i]
                i = end
        return signal

    def fit(self, episode_data, resampling_factor=1):
        """Advised action distribution for every resampled step.

        Column 0 (hold) is the one-hot hold indicator; every other column is its one-hot indicator convolved
        with the Gaussian kernel (centred) plus 0.1; rows are normalised to sum to 1.

        Args:
            episode_data: array [L, >= 3] of raw bars (open, high, low[, close, volume]).
            resampling_factor: bars per environment step (the strategy's skip_frame).

        Returns:
            float array [ceil(L / resampling_factor), A].
        """
        signals = self.adjust_signals(self.estimate_actions(self.resample_data(episode_data, resampling_factor)))
        one_hot = np.eye(len(self.action_space))[signals]
        distribution = one_hot.copy()
        for column in range(1, one_hot.shape[-1]):
            distribution[:, column] = price_signal.smooth(one_hot[:, column], self.kernel) + 0.1
        return distribution / distribution.sum(axis=-1, keepdims=True)


class Oracle2:
    """Advises by discounted future price potentials: the rise still to come (buy), the fall still to come
    (sell), close where neither is large, hold a fifth of close."""

    resample_data = staticmethod(price_signal.resample_data)

    def __init__(self, action_space=(0, 1, 2, 3), gamma=1.0, **kwargs):
        """
        Args:
            action_space: the action indices (0, 1, 2, 3): hold, buy, sell, close.
            gamma: discount of later price moves, in (0, 1].
            **kwargs: other expert settings (e.g. an `Oracle` expert_config), ignored.
        """
        self.action_space = _check_action_space(action_space, 'Oracle2', size=4)
        self.gamma = check_number('gamma', gamma, high=1, low_open=True)

    @staticmethod
    def _potential(x, gamma, pick):
        """Backward recursion p_last = 0, p_i = pick(x_{i+1} - x_i + pick(gamma * p_{i+1}, 0), 0), as a loop."""
        x = np.asarray(x, dtype=np.float64)
        potential = np.zeros(x.size)
        for i in range(x.size - 2, -1, -1):
            potential[i] = pick(x[i + 1] - x[i] + pick(gamma * potential[i + 1], 0.0), 0.0)
        return potential

    def p_up(self, x, gamma=1.0):
        """Discounted rise potential of every point of `x` (>= 0); returns an array like `x`."""
        return self._potential(x, gamma, max)

    def p_down(self, x, gamma=1.0):
        """Discounted fall potential of every point of `x` (<= 0); returns an array like `x`."""
        return self._potential(x, gamma, min)

    def fit(self, episode_data, resampling_factor=1):
        """Advised action distribution for every resampled step.

        up = p_up, down = -p_down, both divided by (max up + max down) / 2 (left as they are when both maxima are
        0, a flat episode); close = max(1 - up - down, 0), hold = 0.2 close; rows [hold, up, down, close]
        normalised to sum to 1.

        Args:
            episode_data: array [L, >= 3] of raw bars (open, high, low[, close, volume]).
            resampling_factor: bars per environment step.

        Returns:
            float array [ceil(L / resampling_factor), 4].
        """
        y = self.resample_data(episode_data, resampling_factor)
        up = self.p_up(y, self.gamma)
        down = -self.p_down(y, self.gamma)
        scale = (up.max() + down.max()) / 2.0
        if scale > 0:
            up, down = up / scale, down / scale
        close = np.maximum(1.0 - up - down, 0.0)
        rows = np.stack([0.2 * close, up, down, close], axis=-1)
        return rows / rows.sum(axis=-1, keepdims=True)
