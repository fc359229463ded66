"""A regime-switching market: a hidden Markov chain of drift regimes under gaussian noise, and its no-edge twin."""
import bisect
import math

import numpy as np

from btgym_aac.data.markets.frames import (DEFAULT_FREQ, DEFAULT_START, bar_index, check_non_negative,
                                           check_positive, market_frame, resolve_seed)

KIND = 'regime_switching'


def transition_matrix(num_states, mean_duration=None, transition=None):
    """The chain's transition matrix A (A[i, j] = P(next state j | state i)).

    Args:
        num_states: number of regimes (2 or 3).
        mean_duration: mean run length of every regime in bars (> 1): each bar a regime is left with probability
            1 / mean_duration, to any other regime alike. Ignored when `transition` is given.
        transition: the full matrix (rows summing to 1), or None.

    Returns:
        (num_states, num_states) float array.
    """
    if num_states not in (2, 3):
        raise ValueError('need 2 or 3 regimes, got {}'.format(num_states))
    if transition is None:
        if mean_duration is None or not mean_duration > 1:
            raise ValueError('mean_duration must be > 1 bar, got {!r}'.format(mean_duration))
        leave = 1.0 / mean_duration
        matrix = np.full((num_states, num_states), leave / (num_states - 1))
        np.fill_diagonal(matrix, 1.0 - leave)
        return matrix
    matrix = np.array(transition, dtype=np.float64)
    if matrix.shape != (num_states, num_states) or (matrix < 0).any() or not np.allclose(matrix.sum(axis=1), 1.0):
        raise ValueError('transition must be a {0}x{0} matrix of probabilities whose rows sum to 1, got {1!r}'.format(
            num_states, transition))
    return matrix


def stationary_distribution(matrix):
    """The chain's stationary distribution pi (pi @ A = pi, summing to 1)."""
    num_states = len(matrix)
    system = np.vstack([matrix.T - np.eye(num_states), np.ones(num_states)])
    target = np.concatenate([np.zeros(num_states), [1.0]])
    return np.linalg.lstsq(system, target, rcond=None)[0]


def regime_return_std(drifts, volatility, matrix):
    """Std of one bar's log return of the stationary edge market: sqrt(volatility**2 + Var_pi(drift)).

    Var_pi(drift) = sum_i pi_i * drifts_i**2 - (sum_i pi_i * drifts_i)**2 is the variance the switching adds.
    """
    pi = stationary_distribution(matrix)
    drifts = np.asarray(drifts, dtype=np.float64)
    return math.sqrt(volatility ** 2 + pi @ drifts ** 2 - (pi @ drifts) ** 2)


def _markov_chain(rng, num_bars, matrix):
    """States of the chain: the first from the stationary distribution, then each from its predecessor's row."""
    cumulative = np.cumsum(np.vstack([stationary_distribution(matrix), matrix]), axis=1).tolist()
    uniforms = rng.random(num_bars).tolist()
    last = len(matrix) - 1
    states = [min(bisect.bisect_right(cumulative[0], uniforms[0]), last)]
    for uniform in uniforms[1:]:
        states.append(min(bisect.bisect_right(cumulative[states[-1] + 1], uniform), last))
    return np.array(states)


def make_regime_switching_data(num_bars=100000, drifts=(3e-5, -3e-5), mean_duration=240.0, volatility=1e-4,
                               transition=None, base=1.1, edge=True, seed=None, start=DEFAULT_START,
                               freq=DEFAULT_FREQ, return_states=False):
    """Bars whose log return is drifts[regime] + volatility * N(0, 1), the regime a hidden Markov chain.

    The chain starts from its stationary distribution pi. No-edge twin (`edge=False`): zero drifts and a per-bar
    log return std equal to the edge market's, sqrt(volatility**2 + Var_pi(drift)) (`regime_return_std`); its
    chain is drawn all the same and has no effect. Bars are shaped as in `make_random_walk_data` (wicks of that
    per-bar scale). The recipe is in `df.attrs['market']`.

    Args:
        num_bars: number of bars.
        drifts: mean log return per bar of each regime (2 or 3 of them).
        mean_duration: mean run length of a regime in bars (see `transition_matrix`).
        volatility: std of the gaussian part of one bar's log return.
        transition: full transition matrix instead of `mean_duration` (then recorded with mean_duration None).
        base: first open price (> 0); the log close starts from log(base).
        edge: False for the no-edge twin.
        seed: seed of the generator; None draws one (recorded in the recipe).
        start: first bar time.
        freq: bar frequency.
        return_states: also return the hidden regime of every bar.

    Returns:
        DataFrame (DatetimeIndex; float64 columns open, high, low, close, volume), or (DataFrame, int array of
        regimes) with `return_states`.
    """
    index = bar_index(num_bars, start, freq)
    check_positive(base=base)
    check_non_negative(volatility=volatility)
    matrix = transition_matrix(len(drifts), mean_duration, transition)
    seed = resolve_seed(seed)
    params = dict(num_bars=len(index), drifts=[float(drift) for drift in drifts],
                  mean_duration=None if transition is not None else float(mean_duration), volatility=float(volatility),
                  transition=None if transition is None else matrix.tolist(), base=float(base), start=str(start),
                  freq=str(freq))
    rng = np.random.default_rng(seed)
    states = _markov_chain(rng, len(index), matrix)
    return_std = regime_return_std(drifts, volatility, matrix)
    if edge:
        log_returns = np.asarray(params['drifts'])[states] + volatility * rng.standard_normal(len(index))
    else:
        log_returns = return_std * rng.standard_normal(len(index))
    recipe = dict(kind=KIND, edge=bool(edge), seed=seed, params=params)
    frame = market_frame(math.log(base) + np.cumsum(log_returns), index, recipe, rng, return_std)
    return (frame, states) if return_states else frame
