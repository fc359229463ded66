"""NumPy signal helpers of the experts: bar resampling, relative extrema and a Gaussian window."""
import numpy as np

from btgym_aac.validation import check_whole_number


def resample_data(episode_data, factor=1):
    """Merges every `factor` bars into one and returns the middle of its high-low range.

    The data are padded by repeating the last row up to a whole number of merged bars.

    Args:
        episode_data: array [L, >= 3] of raw bars, columns open, high, low[, close, volume].
        factor: bars per merged bar, a whole number >= 1.

    Returns:
        float array [ceil(L / factor)]: (max(high) + min(low)) / 2 of every merged bar.

    Raises:
        ValueError: `episode_data` is not a non-empty [L, >= 3] array, or `factor` is not a whole number >= 1.
    """
    factor = check_whole_number('resampling_factor', factor)
    data = np.asarray(episode_data, dtype=np.float64)
    if data.ndim != 2 or data.shape[0] == 0 or data.shape[1] < 3:
        raise ValueError('episode_data must be a non-empty [bars, columns] array with open, high and low columns, '
                         'got shape {}'.format(data.shape))
    size = -(-data.shape[0] // factor)
    padding = size * factor - data.shape[0]
    if padding:
        data = np.concatenate([data, np.repeat(data[-1:], padding, axis=0)], axis=0)
    high = data[:, 1].reshape(size, factor).max(axis=-1)
    low = data[:, 2].reshape(size, factor).min(axis=-1)
    return (high + low) / 2.0


def relative_extrema(y, order, comparator):
    """Indices of the points of `y` that beat all their neighbours up to `order` steps away on both sides.

    Neighbour indices beyond the ends are clipped to the ends, so the first and the last point never qualify.

    Args:
        y: 1-D array.
        order: how many neighbours on each side to compare with, a whole number >= 1.
        comparator: elementwise comparison, e.g. `np.greater` (maxima) or `np.less` (minima).

    Returns:
        sorted int array of indices.
    """
    y = np.asarray(y)
    positions = np.arange(len(y))
    beats_all = np.ones(len(y), dtype=bool)
    for shift in range(1, order + 1):
        for neighbours in (positions + shift, positions - shift):
            beats_all &= comparator(y, y[np.clip(neighbours, 0, len(y) - 1)])
    return np.flatnonzero(beats_all)


def gaussian_window(size, std):
    """Gaussian window w_n = exp(-0.5 ((n - (size - 1) / 2) / std)^2), n = 0 ... size - 1 (peak 1).

    Args:
        size: number of points, a whole number >= 1.
        std: standard deviation in points, > 0.

    Returns:
        float array [size].
    """
    n = np.arange(size) - (size - 1) / 2.0
    return np.exp(-0.5 * (n / std) ** 2)


def smooth(x, kernel):
    """Convolution of `x` with `kernel`, centred and cut to the length of `x`.

    Equals `np.convolve(x, kernel, mode='same')` when `len(x) >= len(kernel)`, and keeps the length of `x` when the
    kernel is longer.

    Args:
        x: 1-D array.
        kernel: 1-D array.

    Returns:
        array [len(x)].
    """
    start = (len(kernel) - 1) // 2
    return np.convolve(x, kernel, mode='full')[start:start + len(x)]
