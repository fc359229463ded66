"""Logbook loggers named ``<Component>_<task>`` with levels chosen by ``verbose`` or ``log_level``.

Logbook drops every record while no handler is set up, so the first logger made in a process where the
application has pushed no logbook handler pushes one that writes to stderr.
"""
import logbook

TRACE, DEBUG, INFO, NOTICE, WARNING, ERROR, CRITICAL = (
    logbook.TRACE, logbook.DEBUG, logbook.INFO, logbook.NOTICE, logbook.WARNING, logbook.ERROR, logbook.CRITICAL
)
_VERBOSE_LEVELS = {0: NOTICE, 1: INFO, 2: DEBUG}
STDERR_FORMAT = '[{record.time:%H:%M:%S}] {record.level_name} {record.channel}: {record.message}'


def level_from(verbose=0, log_level=None):
    """Resolves the logbook level.

    Args:
        verbose: 0 -> NOTICE, 1 -> INFO, 2 or more -> DEBUG; used when ``log_level`` is None.
        log_level: explicit logbook level; wins over ``verbose``.

    Returns:
        int logbook level.
    """
    if log_level is not None:
        return log_level
    return _VERBOSE_LEVELS.get(verbose, DEBUG)


def get_logger(component, task=0, verbose=0, log_level=None):
    """Makes a logbook logger named ``<component>_<task>``.

    Args:
        component: component name, e.g. 'BTgymEnv'.
        task: task (worker) number appended to the name.
        verbose: see `level_from`.
        log_level: see `level_from`.

    Returns:
        logbook.Logger
    """
    _ensure_a_handler()
    return logbook.Logger('{}_{}'.format(component, task), level=level_from(verbose, log_level))


GENERIC_LINES = ('Graph execution error:',)  # TensorFlow's heading above the real message


def error_summary(error):
    """`'<ExceptionType>: <first line of its message>'`, for one-line error messages (TensorFlow's generic heading
    and rules of '=' skipped)."""
    lines = [line.strip() for line in str(error).strip().splitlines()
             if line.strip() and set(line.strip()) != {'='} and line.strip() not in GENERIC_LINES]
    return '{}: {}'.format(type(error).__name__, lines[0]) if lines else type(error).__name__


def _ensure_a_handler():
    """Pushes an application-wide stderr handler unless some logbook handler is already set up."""
    if next(iter(logbook.Handler.stack_manager.iter_context_objects()), None) is None:
        logbook.StderrHandler(format_string=STDERR_FORMAT, bubble=True).push_application()
