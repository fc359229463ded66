"""Summary statistics of bar data, as pandas `describe()` gives them, computed with numpy (faster than pandas)."""
import numpy as np
import pandas as pd

DESCRIBE_ROWS = ('count', 'mean', 'std', 'min', '25%', '50%', '75%', 'max')


def describe_bars(frame):
    """Count, mean, std (ddof 1), min, quartiles (linear interpolation) and max of every column.

    Args:
        frame: DataFrame of numeric columns with at least one row.

    Returns:
        float64 DataFrame with the rows of `DESCRIBE_ROWS` and the columns of `frame`, equal to `frame.describe()`.
    """
    values = frame.to_numpy(np.float64)
    rows = [np.full(values.shape[1], float(len(values))), values.mean(axis=0), values.std(axis=0, ddof=1),
            values.min(axis=0)]
    rows.extend(np.percentile(values, [25, 50, 75], axis=0))
    rows.append(values.max(axis=0))
    return pd.DataFrame(np.array(rows), index=list(DESCRIBE_ROWS), columns=frame.columns)
