"""Continuous wavelet transform with the Ricker ("Mexican hat") wavelet.

Stand-ins for `scipy.signal.ricker` and `scipy.signal.cwt`, which SciPy 1.15 removed; the numbers are those of
the SciPy functions (direct convolution where SciPy's `convolve` may pick an FFT, so they agree to rounding).
"""
import numpy as np


def ricker(points, a):
    """Ricker wavelet sampled at `points` positions centred on zero.

    psi(u) = A (1 - u^2 / a^2) exp(-u^2 / (2 a^2)), A = 2 / (sqrt(3 a) pi^(1/4)), at
    u = arange(0, points) - (points - 1) / 2. A fractional `points` is kept as it is: `arange` then yields
    ceil(points) samples, centred on (points - 1) / 2 (SciPy's behaviour, which `cwt` relies on).

    Args:
        points: number of samples (int or float).
        a: width parameter (> 0).

    Returns:
        float64 array [ceil(points)].
    """
    u = np.arange(0, points) - (points - 1.0) / 2
    usq = u ** 2
    wsq = a ** 2
    amplitude = 2 / (np.sqrt(3 * a) * np.pi ** 0.25)
    return amplitude * (1 - usq / wsq) * np.exp(-usq / (2 * wsq))


def cwt(data, wavelet, widths):
    """Continuous wavelet transform of a 1-D signal.

    For every width w the wavelet is sampled at M = min(10 w, len(data)) points (a float M is kept, see `ricker`)
    and row w is `np.convolve(data, conj(psi)[::-1], mode='same')`. The zero padding of 'same' mode truncates the
    wavelet's support at both ends of the signal, so the newest values see only the older half of the wavelet.

    Args:
        data: 1-D array [N].
        wavelet: callable (points, width) -> 1-D array, e.g. `ricker`.
        widths: sequence of widths.

    Returns:
        array [len(widths), N] of the dtype of `wavelet`'s output.
    """
    data = np.asarray(data)
    dtype = np.asarray(wavelet(1, widths[0])).dtype
    output = np.empty((len(widths), len(data)), dtype=dtype)
    for row, width in enumerate(widths):
        points = min(10 * width, len(data))
        psi = np.conj(wavelet(points, width))
        output[row] = np.convolve(data, psi[::-1], mode='same')
    return output
