"""Suite-wide set-up: Ctrl-C works in the test process and the commands it starts, however the suite was started."""
import signal


def pytest_configure(config):
    """A shell without job control starts background commands (`make test &`, `nohup ...`) with SIGINT ignored, and
    every process they start inherits that: the tests that press Ctrl-C would then see it ignored, as the launcher
    deliberately does for such runs. Python's own handler is restored here; exec resets it to the default in the
    commands the tests start."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
