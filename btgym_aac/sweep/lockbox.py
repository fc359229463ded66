"""A sweep's data: the last stretch of the data's time span (the lockbox) is set aside before the search, so that no
trial ever sees it; the rest is what the trials' walk-forwards cut into folds."""
import os

from btgym_aac.data.parsing import read_ohlcv
from btgym_aac.validation import check_number
from btgym_aac.walk_forward.blocks import whole_block, write_block_file

DATA_DIR = 'data'
VALIDATION_FILE = 'validation.csv'
LOCKBOX_FILE = 'lockbox.csv'


def split_lockbox(frame, fraction):
    """Cuts `frame` in time: the bars of the last `fraction` of its time span form the lockbox.

    Args:
        frame: OHLCV DataFrame sorted by time.
        fraction: in [0, 1); 0: no lockbox.

    Returns:
        (validation DataFrame, lockbox DataFrame; empty for fraction 0).

    Raises:
        ValueError: `fraction` out of range, or a part without bars.
    """
    check_number('lockbox', fraction, 0, 1)
    if fraction == 1:
        raise ValueError('lockbox must be below 1 (a share of the time span), got 1')
    whole = whole_block(0, frame)
    cut = whole.stop - (whole.stop - whole.start) * fraction
    validation, lockbox = frame[frame.index < cut], frame[frame.index >= cut]
    if not len(validation) or (fraction > 0 and not len(lockbox)):
        raise ValueError('a lockbox of {} of the time span leaves {} bars to search on and {} in the lockbox: give '
                         'a fraction that leaves bars on both sides'.format(fraction, len(validation), len(lockbox)))
    return validation, lockbox


def read_sweep_data(paths, parsing_params, fraction):
    """Reads the data files and sets the lockbox aside (see `split_lockbox`).

    Args:
        paths: the data's CSV files.
        parsing_params: the env's `parsing_params` (how to read them).
        fraction: the lockbox's share of the time span.

    Returns:
        (validation DataFrame, lockbox DataFrame).
    """
    return split_lockbox(read_ohlcv(paths, parsing_params), fraction)


def write_sweep_data(validation, lockbox, out, market=None):
    """Writes both parts of the data under `<out>/data/` (kept when they exist: written by a sweep of the same
    settings, which the study checks first).

    Args:
        validation, lockbox: the parts (`read_sweep_data`).
        out: the sweep's folder.
        market: the data's known-edge `MarketSpec` (written beside both parts), or None.

    Returns:
        (validation file, lockbox file or None).
    """
    folder = os.path.join(out, DATA_DIR)
    os.makedirs(folder, exist_ok=True)
    validation_file = write_block_file([validation], os.path.join(folder, VALIDATION_FILE), market)
    lockbox_file = write_block_file([lockbox], os.path.join(folder, LOCKBOX_FILE), market) if len(lockbox) else None
    return validation_file, lockbox_file
