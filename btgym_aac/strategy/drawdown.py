"""The drawdown of the broker value, bar by bar, as backtrader's `DrawDown` observer computes it, kept by the strategy
itself so that episodes run without observers still have it."""

BEFORE_FIRST_BARS = (0.0, 0.0)


class DrawdownTracker:
    """Drawdown and maximum drawdown of the broker value, in percent, one entry per bar.

    The strategy updates it on every bar with the broker value. Backtrader's observers run after the strategy on a
    bar, so while the strategy runs an observer's line shows at `[0]` the previous bar's value and at `[-1]` the
    one before, and once the episode has ended the last bar's at `[0]`; `seen(ago)` gives those values (the
    drawdown statistics of the observations and infos have always been read that way).
    """

    def __init__(self):
        self.peak = float('-inf')
        self.max_drawdown = 0.0
        self.history = []
        self._lag = 2

    def update(self, value):
        """Adds the bar of broker value `value`.

        Returns:
            (drawdown, max drawdown) of this bar.
        """
        self.peak = max(self.peak, value)
        drawdown = 100.0 * (self.peak - value) / self.peak
        self.max_drawdown = max(self.max_drawdown, drawdown)
        self.history.append((drawdown, self.max_drawdown))
        return self.history[-1]

    def seen(self, ago=0):
        """(drawdown, max drawdown) as an observer line shows it at `[ago]` during the latest bar.

        Args:
            ago: 0 or negative.

        Returns:
            tuple of floats; (0.0, 0.0) before the first bars.
        """
        index = len(self.history) - self._lag + ago
        return self.history[index] if index >= 0 else BEFORE_FIRST_BARS

    def finish(self):
        """Marks the end of the episode: `seen(0)` is the last bar's from now on."""
        self._lag = 1


class _SeenLine:
    """One line of `DrawdownLines`: `line[ago]` reads the tracker as the observer's line would read."""

    def __init__(self, tracker, column):
        self._tracker = tracker
        self._column = column

    def __getitem__(self, ago):
        return self._tracker.seen(ago)[self._column]


class DrawdownLines:
    """`strategy.stats.drawdown` in an episode run without the `DrawDown` observer (one that is not drawn): lines
    `drawdown` and `maxdrawdown` whose `[ago]` give, while the strategy runs, what the observer's would.

    Args:
        tracker: the strategy's `DrawdownTracker`.
    """

    def __init__(self, tracker):
        self.drawdown = _SeenLine(tracker, 0)
        self.maxdrawdown = _SeenLine(tracker, 1)
