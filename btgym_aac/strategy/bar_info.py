"""The per-bar info dicts of a step, kept as small records while the episode runs and made into dicts when read:
training reads the latest bar's info of a step and seldom the others, so most are never built."""
from collections.abc import Sequence

import backtrader as bt


def bar_info(record, tz):
    """The info dict of one bar.

    Args:
        record: tuple (step, datetime number, action, broker message, cash, value, (drawdown, max drawdown), position)
            from `BTgymBaseStrategy.bar_record`; position is a size or a dict asset -> size.
        tz: the time zone of the data's datetime line (None for naive times).

    Returns:
        dict with step, time, action, broker_message, broker_cash, broker_value, drawdown, max_drawdown and
        positions (a dict of sizes) or position (one size).
    """
    step, time, action, message, cash, value, (drawdown, max_drawdown), position = record
    info = {
        'step': step,
        'time': bt.num2date(time, tz=tz, naive=True),
        'action': dict(action),
        'broker_message': message,
        'broker_cash': cash,
        'broker_value': value,
        'drawdown': drawdown,
        'max_drawdown': max_drawdown,
    }
    if isinstance(position, dict):
        info['positions'] = dict(position)
    else:
        info['position'] = position
    return info


class BarInfos(Sequence):
    """The info dicts of the bars of one step, in order; each is built by `bar_info` the first time it is read.

    Args:
        records: list of `bar_info` records.
        tz: the time zone of the data's datetime line.
    """

    def __init__(self, records, tz):
        self._records = records
        self._tz = tz
        self._infos = [None] * len(records)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[position] for position in range(len(self))[index]]
        position = range(len(self._records))[index]
        info = self._infos[position]
        if info is None:
            info = self._infos[position] = bar_info(self._records[position], self._tz)
        return info

    def __len__(self):
        return len(self._records)

    def __eq__(self, other):
        if isinstance(other, (BarInfos, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self):
        return 'BarInfos({!r})'.format(list(self))
