"""Backtrader's simple moving average with the same values at a fraction of its start-up cost.

Backtrader's `SimpleMovingAverage` computes, when an episode starts (preloaded, `runonce`), every bar's average as
`math.fsum` of the window over the period: bars times period additions, a large part of an episode's start for the
long averages of the DevStrat strategies (periods up to 512). `math.fsum` returns the correctly rounded sum of the
window; so does exact integer arithmetic: each price is a binary fraction, so over a common power-of-two
denominator the window sums are whole numbers, which running sums give for every bar at once, and Python's
integer division rounds each correctly. Same numbers, bars plus period operations.
"""
import itertools

import backtrader as bt


def window_sums(values, period):
    """Correctly rounded sums of every window of `period` consecutive values (what `math.fsum` of each gives).

    Args:
        values: sequence of finite floats, at least `period` of them.
        period: window length (>= 1).

    Returns:
        list of len(values) - period + 1 floats; entry i is the sum of values[i:i + period].

    Raises:
        OverflowError, ValueError: a value is infinite or NaN.
    """
    ratios = [value.as_integer_ratio() for value in values]
    denominator = max(ratio[1] for ratio in ratios)
    running = [0, *itertools.accumulate(numerator * (denominator // ratio_denominator)
                                        for numerator, ratio_denominator in ratios)]
    return [(running[end] - running[end - period]) / denominator for end in range(period, len(running))]


class ExactAverage(bt.indicators.Average):
    """Backtrader's `Average` (line `av`: fsum of the last `period` values over `period`) whose preloaded values
    come from `window_sums`; data holding NaN or infinity are averaged by backtrader's own loop."""

    def once(self, start, end):
        source = self.data.array
        period = self.p.period
        try:
            sums = window_sums(source[start - period + 1:end], period)
        except (OverflowError, ValueError):
            return super().once(start, end)
        line = self.line.array
        for bar, total in enumerate(sums, start):
            line[bar] = total / period


class SimpleMovingAverage(bt.indicators.SimpleMovingAverage):
    """Backtrader's `SimpleMovingAverage` (line `sma`, same values, same minimum period) over an `ExactAverage`."""
    alias = ()

    def __init__(self):
        self.lines[0] = ExactAverage(self.data, period=self.p.period)
        super(bt.indicators.MovingAverageSimple, self).__init__()  # not its own, which would add an Average
