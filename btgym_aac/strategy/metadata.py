"""The `metadata` observation of a strategy: its space and its values for one episode."""
import numpy as np
from gymnasium import spaces

from btgym_aac.spaces import DictSpace

_COUNTER_HIGH = 10 ** 10


def metadata_space():
    """Episode metadata observation space.

    Integer fields are int64 boxes (the counters' bound 1e10 does not fit uint32, and the data layer produces
    int64 values); `timestamp` is the bar's POSIX time, float64.

    Returns:
        DictSpace with keys first_row, sample_num, timestamp, trial_num, trial_type, type.
    """
    return DictSpace({
        'type': spaces.Box(low=0, high=1, shape=(), dtype=np.int64),
        'trial_num': spaces.Box(low=0, high=_COUNTER_HIGH, shape=(), dtype=np.int64),
        'trial_type': spaces.Box(low=0, high=1, shape=(), dtype=np.int64),
        'sample_num': spaces.Box(low=0, high=_COUNTER_HIGH, shape=(), dtype=np.int64),
        'first_row': spaces.Box(low=0, high=_COUNTER_HIGH, shape=(), dtype=np.int64),
        'timestamp': spaces.Box(low=0, high=np.finfo(np.float64).max, shape=(), dtype=np.float64),
    })


def episode_metadata(meta):
    """Metadata values of an episode, from the episode sample's `metadata` dict (missing fields are 0).

    Args:
        meta: dict with optional type, parent_sample_num, parent_sample_type, sample_num, first_row.

    Returns:
        dict of `metadata_space()`'s keys -> numpy scalars; `timestamp` is 0 until the strategy sets it per bar.
    """
    return {
        'type': np.array(int(meta.get('type') or 0), dtype=np.int64),
        'trial_num': np.array(int(meta.get('parent_sample_num') or 0), dtype=np.int64),
        'trial_type': np.array(int(meta.get('parent_sample_type') or 0), dtype=np.int64),
        'sample_num': np.array(int(meta.get('sample_num') or 0), dtype=np.int64),
        'first_row': np.array(int(meta.get('first_row') or 0), dtype=np.int64),
        'timestamp': np.array(0.0, dtype=np.float64),
    }
