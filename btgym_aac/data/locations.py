"""Where a bar lies in its source, for messages: the line of a file as an editor shows it, or the row of a DataFrame.

A locator is called with a bar's position among the rows read from its source (0-based) and returns its place,
'line 3008' or 'row 12'. A file's line numbers count the header and the blank lines that the reader skips; they are
found when a message first needs one, by reading the file again.
"""
import numpy as np

_BLANK = ' \t'
"""What a line pandas skips as blank holds (besides its end): only these characters, the separator excepted."""


class FileLines:
    """Names the data rows of a CSV file by their line numbers (1-based, the header and blank lines counted)."""

    def __init__(self, path, sep, skipped_lines, encoding='utf-8-sig'):
        """Args:
            path: the file.
            sep: its field separator (a tab separator makes a line holding a tab a data line, as pandas reads it).
            skipped_lines: lines before the data that the reader skipped (1 for a header line, else 0).
            encoding: the file's text encoding.
        """
        self.path, self._sep, self._skipped, self._encoding = path, sep, skipped_lines, encoding
        self._numbers = None

    def _data_line_numbers(self):
        """The line number of every data row: the lines after the skipped ones that are not blank (a line ends at
        \\n, \\r\\n or \\r, as pandas' C parser ends lines)."""
        blank = ''.join(char for char in _BLANK if char != self._sep)
        with open(self.path, encoding=self._encoding) as handle:
            return np.array([number for number, line in enumerate(handle, 1)
                             if number > self._skipped and line.rstrip('\r\n').strip(blank)], dtype=np.int64)

    def line(self, position):
        """The line number (1-based) of data row `position` (0-based)."""
        if self._numbers is None:
            self._numbers = self._data_line_numbers()
        return int(self._numbers[position])

    def __call__(self, position):
        return 'line {}'.format(self.line(position))


def frame_rows(position):
    """Names a row of a DataFrame source: 'row <position + 1>'."""
    return 'row {}'.format(position + 1)


def kept_rows(rows, kept):
    """The locator of a source's bars after some were dropped: bar i is row `kept[i]` of the source.

    Args:
        rows: the source's locator.
        kept: positions in the source of the bars kept, in their order.
    """
    return lambda position: rows(int(kept[position]))


def bar_at(frame, position, rows=None):
    """Names a bar of `frame` for messages: 'line 3008 (2017-01-04 04:45:00)', or its time alone without `rows`.

    Args:
        frame: bars with a DatetimeIndex.
        position: the bar's position in `frame`.
        rows: the locator of `frame`'s source, or None.
    """
    if rows is None:
        return str(frame.index[position])
    return '{} ({})'.format(rows(position), frame.index[position])
