"""Loggers reach stderr when the application set up no logbook handler, and only its handlers when it did."""
import subprocess
import sys
import textwrap

from btgym_aac.logs import error_summary


def run_python(code):
    return subprocess.run([sys.executable, '-c', textwrap.dedent(code)], capture_output=True, text=True, timeout=60)


def test_records_reach_stderr_without_an_application_handler():
    finished = run_python('''
        from btgym_aac.logs import get_logger
        log = get_logger('Launcher', 'shell')
        log.notice('resumed from ckpt-7')
        log.info('below the notice level')
    ''')
    assert finished.returncode == 0
    assert 'NOTICE Launcher_shell: resumed from ckpt-7' in finished.stderr
    assert 'below the notice level' not in finished.stderr


def test_an_application_handler_is_used_alone():
    finished = run_python('''
        import logbook
        from btgym_aac.logs import get_logger
        with logbook.TestHandler() as handler:
            get_logger('Worker', 1).warning('worker 1 died')
        assert handler.has_warning('worker 1 died'), handler.records
    ''')
    assert finished.returncode == 0, finished.stderr
    assert 'worker 1 died' not in finished.stderr


def test_error_summary_is_the_type_and_first_line_of_the_message():
    assert error_summary(ValueError('bad shape\n  details below')) == 'ValueError: bad shape'
    assert error_summary(KeyError()) == 'KeyError'
