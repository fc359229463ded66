"""Logbook loggers named ``<Component>_<task>`` with levels chosen by ``verbose`` or ``log_level``.

Every logger is in the group `LOGGERS`. Logbook drops every record while no handler is set up, so the first logger
made in a process pushes a fallback handler that writes the package's records to stderr while, and only while,
no other logbook handler is set up: an application's own handlers, bubbling or not, get every record once.
`send_to_stdlib_logging()` hands the records to the standard library's `logging` instead.
"""
import logging

import logbook
import logbook.compat

TRACE, DEBUG, INFO, NOTICE, WARNING, ERROR, CRITICAL = (
    logbook.TRACE, logbook.DEBUG, logbook.INFO, logbook.NOTICE, logbook.WARNING, logbook.ERROR, logbook.CRITICAL
)
_VERBOSE_LEVELS = {0: NOTICE, 1: INFO, 2: DEBUG}
STDERR_FORMAT = '[{record.time:%H:%M:%S}] {record.level_name} {record.channel}: {record.message}'
STDLIB_PREFIX = 'btgym_aac'
OUR_RECORD = 'btgym_aac'
"""The key in `record.extra` that marks the records of the package's loggers."""


def _mark_as_ours(record):
    record.extra[OUR_RECORD] = True


LOGGERS = logbook.LoggerGroup(processor=_mark_as_ours)
"""The group of every btgym_aac logger: it marks their records, and ``LOGGERS.disabled = True`` silences them
all."""


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
    logger = logbook.Logger('{}_{}'.format(component, task), level=level_from(verbose, log_level))
    # Joined without `LOGGERS.add_logger`, whose list would keep every logger alive: datasets make two per episode.
    logger.group = LOGGERS
    return logger


GENERIC_LINES = ('Graph execution error:',)  # TensorFlow's heading above the real message


def error_summary(error):
    """`'<ExceptionType>: <first line of its message>'`, for one-line error messages (TensorFlow's generic heading
    and rules of '=' skipped)."""
    lines = [line.strip() for line in str(error).strip().splitlines()
             if line.strip() and set(line.strip()) != {'='} and line.strip() not in GENERIC_LINES]
    return '{}: {}'.format(type(error).__name__, lines[0]) if lines else type(error).__name__


def _is_ours(record):
    return bool(record.extra.get(OUR_RECORD))


def _alone_and_ours(record, handler):
    """Filter of the fallback handler: a record of the package, and no other handler set up."""
    return _is_ours(record) and all(
        other is handler for other in logbook.Handler.stack_manager.iter_context_objects())


class StdlibLoggingHandler(logbook.compat.LoggingHandler):
    """Passes the package's records to stdlib `logging` loggers named ``btgym_aac.<channel>``, e.g.
    ``btgym_aac.Launcher_shell``, honouring their levels (logbook's NOTICE becomes INFO)."""

    def __init__(self):
        super().__init__(filter=lambda record, handler: _is_ours(record), bubble=True)

    def get_logger(self, record):
        return logging.getLogger('{}.{}'.format(STDLIB_PREFIX, record.channel))

    def emit(self, record):
        logger, level = self.get_logger(record), self.convert_level(record.level)
        if logger.isEnabledFor(level):
            logger.handle(logger.makeRecord(logger.name, level, record.filename, record.lineno, record.message,
                                            (), record.exc_info, func=record.func_name))


def send_to_stdlib_logging():
    """Sends btgym_aac's records in this process to stdlib `logging` (loggers ``btgym_aac.<channel>``) instead of
    stderr. A Launcher's tasks are other processes: they keep writing to stderr.

    Returns:
        the pushed `StdlibLoggingHandler` (``handler.pop_application()`` undoes it).
    """
    handler = StdlibLoggingHandler()
    handler.push_application()
    return handler


def _ensure_a_handler():
    """Pushes the fallback stderr handler once per process."""
    global _FALLBACK
    if _FALLBACK is None:
        _FALLBACK = logbook.StderrHandler(format_string=STDERR_FORMAT, filter=_alone_and_ours, bubble=True)
        _FALLBACK.push_application()


_FALLBACK = None
