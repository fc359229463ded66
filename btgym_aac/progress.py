"""Progress of the long commands (`train`, `evaluate`, `walk-forward`, `trade`, `sweep`): what is done, how fast, the
time left.

On a terminal a tqdm bar is redrawn in place, at most every `TERMINAL_REDRAW_SECONDS`; elsewhere (a log file, a
pipe) a plain line is written at the first update, then every `line_seconds` (`PLAIN_LINE_SECONDS` by default), and
at the end. The speed counts only what the command itself did, from its first update to the latest one that moved
the count (a resumed training run's first update is at its checkpoint's step, so the steps trained before do not
count; counts that arrive in batches, as training's reports do, give a steady speed): until the count has moved
there is no speed, and the time left says "no estimate yet".
"""
import shutil
import sys
import time

from tqdm import tqdm

PLAIN_LINE_SECONDS = 30.0
"""Seconds between two progress lines in a non-terminal."""
TERMINAL_REDRAW_SECONDS = 0.5
"""Seconds between two redraws of a progress bar on a terminal."""
BAR_FORMAT = '|{bar:10}| {desc}'
"""The terminal bar of a known total: tqdm draws the bar, the description is `progress_line`'s (the line is cut at
the terminal's width)."""


class _Bar(tqdm):
    """A tqdm bar without tqdm's monitor thread (every redraw is asked for)."""
    monitor_interval = 0


def speed(first, latest):
    """Things counted per second from `first` to `latest`, (count, seconds) pairs; None where the count or the
    time has not moved forward."""
    counted, seconds = latest[0] - first[0], latest[1] - first[1]
    return counted / seconds if counted > 0 and seconds > 0 else None


def progress_line(unit, count, total, per_second, note=''):
    """One line of progress, e.g. 'env steps 63000/80000 (79 %) | 100.0 env steps/s | time left 02:50 | episodes 4'.

    Args:
        unit: the counted thing, singular ('env step'; the plural adds an s).
        count: how many are done.
        total: how many there are at the end, None where unknown (no percentage, no time left).
        per_second: the speed (see `speed`), None before there is one.
        note: what follows the numbers ('' for nothing).

    Returns:
        str.
    """
    units = unit + 's'
    parts = ['{} {}/{} ({:.0f} %)'.format(units, count, total, 100.0 * count / total) if total else
             '{} {}'.format(units, count)]
    if per_second is not None:
        seconds_each = 1.0 / per_second
        parts.append('{:.1f} {}/s'.format(per_second, units) if per_second >= 1 else
                     '{:.1f} s per {}'.format(seconds_each, unit) if seconds_each < 60 else
                     '{} per {}'.format(tqdm.format_interval(seconds_each), unit))
    if total:
        left = max(total - count, 0)
        if left and per_second is None:
            parts.append('time left: no estimate yet')
        else:
            parts.append('time left ' + tqdm.format_interval(left / per_second if left else 0))
    if note:
        parts.append(note)
    return ' | '.join(parts)


class Progress:
    """The progress display of one command (see the module docstring); a context manager that closes it.

    Args:
        unit: the counted thing, singular ('env step', 'episode', 'bar', 'fold').
        total: the count at the end, None where unknown.
        stream: where it is shown (default: sys.stderr at construction).
        line_seconds: seconds between plain lines (0: a line at every update).
        terminal: True: a bar redrawn in place; False: plain lines; None: a bar where `stream` is a terminal.
        enabled: False shows nothing.
        clock: callable returning seconds, for the speed and the cadence (default: time.monotonic at construction).
    """

    def __init__(self, unit, total=None, stream=None, line_seconds=PLAIN_LINE_SECONDS, terminal=None, enabled=True,
                 clock=None):
        self.unit, self.total, self.enabled = unit, total, enabled
        self.clock = clock or time.monotonic
        self.stream = stream or sys.stderr
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self.interval = TERMINAL_REDRAW_SECONDS if self.terminal else line_seconds
        self.first = self.latest = None
        self.note = ''
        self.shown_at = self.shown = self.bar = None

    def update(self, count, note=''):
        """Records `count` things done (the first update starts the speed's clock; an unchanged count keeps the
        time it was reached) and `note`; shows them where the last showing is `interval` seconds old or more."""
        if not self.enabled:
            return
        now = self.clock()
        if self.latest is None or count != self.latest[0]:
            self.latest = (count, now)
        self.first = self.first or self.latest
        self.note = note
        if self.shown_at is None or now - self.shown_at >= self.interval:
            self._show(now)

    def line(self):
        """The current progress line (see `progress_line`)."""
        return progress_line(self.unit, self.latest[0], self.total, speed(self.first, self.latest), self.note)

    def close(self):
        """Shows the last update where its count or note was not shown, and ends the bar on its line (nothing where
        nothing was counted)."""
        if self.latest is None:
            return
        if (self.latest[0], self.note) != self.shown:
            self._show(self.clock())
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _show(self, now):
        line = self.line()
        self.shown_at, self.shown = now, (self.latest[0], self.note)
        if not self.terminal:
            print(line, file=self.stream, flush=True)
            return
        count = min(self.latest[0], self.total) if self.total else self.latest[0]  # (tqdm drops a total exceeded)
        size = shutil.get_terminal_size()  # (80 x 24 where the terminal says 0 x 0, as some pseudo-terminals do)
        if self.bar is None:  # (drawn as it is made)
            self.bar = _Bar(total=self.total, initial=count, desc=line, file=self.stream, ncols=size.columns,
                            nrows=size.lines, bar_format=BAR_FORMAT if self.total else '{desc}')
            return
        self.bar.n, self.bar.ncols, self.bar.nrows = count, size.columns, size.lines
        self.bar.set_description_str(line, refresh=False)
        self.bar.refresh()
