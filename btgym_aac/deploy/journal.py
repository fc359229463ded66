"""What a `trade` run keeps in its folder: the journal (JSON lines: the decisions, the closes of positions the
trader ordered and the end of every run), the saved state (after every decision and at the end) and the bars
processed (to rebuild the strategy and the broker when the run is started again).

Files of the folder:
    journal.jsonl: one JSON object per line, appended and flushed as it happens: a decision (it has `decision`), or
        a record whose `record` names its kind (`CLOSE_RECORD`, `END_RECORD`);
    state.json: the run's state after its latest decision or its end, replaced atomically;
    bars.jsonl: every group of bars the strategy processed, appended before the strategy sees it.

A process killed while it appends (SIGKILL included) leaves at most a last line cut short: it is left out when the
files are read, and cut off before the next line is appended.
"""
import datetime
import json
import os

from btgym_aac.deploy.json_values import to_json
from btgym_aac.deploy.live_feeds import Bar

JOURNAL_FILE = 'journal.jsonl'
STATE_FILE = 'state.json'
BARS_FILE = 'bars.jsonl'
CLOSE_RECORD = 'close'
"""A journal record: the trader closed the positions at `bar_time` (a guard, a silent feed, a stop), for `reason`."""
END_RECORD = 'end'
"""A journal record: a run ended (`ended`, `exit_code`), with the fills since its last decision and the broker's final
state."""


def _read_lines(path):
    """The JSON objects of a JSON-lines file ([] when there is none); a last line cut short by a crash is left
    out."""
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        lines = f.read().split('\n')
    values = []
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except ValueError:
            if number < len(lines) - 2:
                raise ValueError('{}: line {} is not JSON'.format(path, number + 1)) from None
    return values


def _cut_torn_line(path):
    """Truncates `path` after its last complete line (a line cut short by a crash is dropped)."""
    if not os.path.isfile(path):
        return
    with open(path, 'rb+') as f:
        content = f.read()
        complete = content.rfind(b'\n') + 1
        if complete < len(content):
            f.truncate(complete)


class TradingFolder:
    """The journal, state and bars files of a `trade` run in `folder` (made when missing).

    Args:
        folder: the run's folder.
    """

    def __init__(self, folder):
        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        self._journal = self._bars = None

    def path(self, name):
        return os.path.join(self.folder, name)

    def read_state(self):
        """The saved state, or None for a new run."""
        if not os.path.isfile(self.path(STATE_FILE)):
            return None
        with open(self.path(STATE_FILE)) as f:
            return json.load(f)

    def read_lines(self):
        """Every line journaled so far: decisions and records, in order."""
        return _read_lines(self.path(JOURNAL_FILE))

    def read_journal(self):
        """The decisions journaled so far."""
        return [entry for entry in self.read_lines() if 'record' not in entry]

    def read_records(self):
        """The journal's records that are no decision (closes, ends), in order."""
        return [entry for entry in self.read_lines() if 'record' in entry]

    def read_bars(self):
        """The groups of bars processed so far: list of dicts data line -> Bar."""
        return [{line: Bar(datetime.datetime.fromisoformat(bar[0]), *bar[1:]) for line, bar in group.items()}
                for group in _read_lines(self.path(BARS_FILE))]

    def append_bars(self, group):
        """Records a group of bars (dict data line -> Bar) before the strategy processes it."""
        if self._bars is None:
            self._bars = self._open_for_appending(BARS_FILE)
        self._bars.write(json.dumps({line: [bar.time.isoformat()] + list(bar[1:]) for line, bar in group.items()})
                         + '\n')
        self._bars.flush()

    def append_decision(self, entry):
        """Appends one decision, or a record (an entry with `record`), to the journal."""
        if self._journal is None:
            self._journal = self._open_for_appending(JOURNAL_FILE)
        self._journal.write(json.dumps(to_json(entry)) + '\n')
        self._journal.flush()

    def _open_for_appending(self, name):
        path = self.path(name)
        _cut_torn_line(path)
        return open(path, 'a')

    def save_state(self, state):
        """Replaces state.json (written to a temporary file first)."""
        staging = self.path(STATE_FILE + '.writing')
        with open(staging, 'w') as f:
            json.dump(to_json(state), f, indent=1)
        os.replace(staging, self.path(STATE_FILE))

    def close(self):
        """Closes the open files."""
        for handle in (self._journal, self._bars):
            if handle is not None:
                handle.close()
        self._journal = self._bars = None
