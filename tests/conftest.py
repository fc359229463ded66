"""Suite-wide set-up: Ctrl-C works in the test process and the commands it starts, however the suite was started;
TensorFlow sessions that tests make are configured as the package configures its own; the imported modules are
frozen for the garbage collector."""
import functools
import gc
import signal
import sys

import pytest


def pytest_configure(config):
    """A shell without job control starts background commands (`make test &`, `nohup ...`) with SIGINT ignored, and
    every process they start inherits that: the tests that press Ctrl-C would then see it ignored, as the launcher
    deliberately does for such runs. Python's own handler is restored here; exec resets it to the default in the
    commands the tests start."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_finish(session):
    """What collection imported (TensorFlow among it: most of the process's objects) lives as long as the process:
    it is moved out of the garbage collector's way (`gc.freeze`, as the launcher's forkserver does), so the full
    collections that the tests' graphs set off skip it (about 4 % of a test process's time otherwise)."""
    gc.freeze()


@pytest.fixture(autouse=True, scope='session')
def sessions_configured_as_the_package_does():
    """A `tf.Session` made without a config gets the one every session of the package has (grappler off, see
    `algorithms.common.sessions.session_config`) with idle threads that sleep (as a worker's, `worker.quiet_threads_config`), so
    that a test measures what users run and two xdist processes do not spin against each other. Tests that give a
    config keep theirs. Nothing is done where no test module imported TensorFlow."""
    if 'tensorflow' not in sys.modules:
        yield
        return
    from btgym_aac.compat import tf
    from btgym_aac.distributed.worker import quiet_threads_config

    original = tf.Session.__init__

    @functools.wraps(original)
    def configured_init(self, target='', graph=None, config=None):
        original(self, target, graph, quiet_threads_config() if config is None else config)

    tf.Session.__init__ = configured_init
    try:
        yield
    finally:
        tf.Session.__init__ = original


@pytest.fixture(scope='session')
def reference_artifact(tmp_path_factory):
    """(log dir, artifact folder) of an untrained reference run (see `saved_runs.exported_reference_run`), made
    once per test process: the modules using it share an xdist group."""
    from saved_runs import exported_reference_run

    return exported_reference_run(tmp_path_factory.mktemp('reference'))
