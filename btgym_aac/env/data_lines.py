"""The bars of an env's data, whether it holds one data line (a DataFrame in `data`) or several (a
`BTgymMultiData`, whose aligned lines share one index)."""
import pandas as pd

from btgym_aac.data.columns import PRICE_COLUMNS


def bars(data):
    """The bars that set an episode's length and timestamps: the data's DataFrame, or the master line's of a
    multi-line dataset.

    Args:
        data: a dataset, trial or episode.

    Returns:
        DataFrame of OHLCV bars.
    """
    frame = getattr(data, 'frame', None)
    return data.data if frame is None else frame


def price_bars(data):
    """The prices of every data line (all lines of a multi-line dataset, one under another).

    Args:
        data: a dataset, trial or episode.

    Returns:
        DataFrame of the open, high, low and close columns.
    """
    frames = getattr(data, 'frames', None)
    if frames is None:
        return data.data[list(PRICE_COLUMNS)]
    return pd.concat([frame[list(PRICE_COLUMNS)] for frame in frames.values()])
