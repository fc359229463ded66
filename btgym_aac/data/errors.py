"""Exception raised for unusable market data or data-layer settings."""


class DataError(ValueError):
    """Market data cannot be read or sampled: bad file content, too few bars, no test interval, ..."""
