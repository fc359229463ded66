"""The backtrader feed of a data sample: `PandasDirectData` that preloads its bars column by column, with a `spread`
line where the bars have one."""
from array import array

import backtrader as bt
from backtrader.utils.dateintern import date2num


class ColumnPreloadedData(bt.feeds.PandasDirectData):
    """`PandasDirectData` whose `preload()` fills each line from a whole DataFrame column at once.

    Backtrader's own preload loads one bar at a time through its generic feed machinery (a pointer move on every
    line, a getattr per field), a large part of a reset of the reference env. The lines end as they would: the same
    values (datetimes through backtrader's own `date2num`, missing columns NaN) and the pointers at home. Feeds with
    filters, an input time zone or date bounds, which act bar by bar, preload the original way.
    """

    def preload(self):
        bar_by_bar = (self._filters or self._ffilters or self._tzinput or self.p.fromdate is not None
                      or self.p.todate is not None or self._barstack or self._barstash)
        if bar_by_bar:
            super().preload()
            return
        frame = self.p.dataname
        for name in self.getlinealiases():
            column = getattr(self.params, name)
            if name == 'datetime':
                values = [date2num(moment) for moment in frame.index.to_pydatetime()]
            elif column < 0:
                values = [float('nan')] * len(frame)
            else:  # `column` indexes `itertuples()` rows, whose item 0 is the index
                values = frame.iloc[:, column - 1].to_numpy(dtype=float).tolist()
            getattr(self.lines, name).array.extend(array('d', values))
        self.home()


class SpreadPreloadedData(ColumnPreloadedData):
    """`ColumnPreloadedData` with a `spread` line (the ask minus the bid at each bar's open), which the env's
    broker reads with `spread='data'` (`btgym_aac.env.costs`)."""
    lines = ('spread',)
    params = (('spread', 6),)
