"""Exceptions raised for unusable market data or data-layer settings."""


class DataError(ValueError):
    """Market data cannot be read or sampled: bad file content, too few bars, no test interval, ..."""


class DataCheckError(DataError):
    """A data sanity check set to 'error' failed (see `sanity`).

    Attributes:
        check: the check's name.
        problem: what it found, naming the source and the first bad bar (the message without the remedy).
        remedy: what the reader of the message can do about it.
    """

    def __init__(self, check, problem, remedy):
        super().__init__('{} (data check {!r}: {})'.format(problem, check, remedy))
        self.check, self.problem, self.remedy = check, problem, remedy

    def __reduce__(self):  # pickled (to cross processes) with the arguments it was made with
        return type(self), (self.check, self.problem, self.remedy)
