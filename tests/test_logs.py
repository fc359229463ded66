"""Loggers reach stderr when the application set up no logbook handler, and only its handlers (once) when it did;
the records can go to stdlib logging instead."""
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


def test_a_bubbling_handler_pushed_later_gets_each_record_once_and_stderr_none():
    finished = run_python('''
        import sys
        import logbook
        from btgym_aac.logs import get_logger
        log = get_logger('Launcher', 'shell')
        log.notice('before the handler')
        handler = logbook.StreamHandler(sys.stdout, bubble=True, format_string='OUT {record.message}')
        handler.push_application()
        log.notice('with the handler')
        handler.pop_application()
        log.notice('after the handler')
        logbook.Logger('another_library').warning('not a btgym_aac record')
    ''')
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.splitlines() == ['OUT with the handler']
    assert [line.split('] ', 1)[1] for line in finished.stderr.splitlines()] == [
        'NOTICE Launcher_shell: before the handler', 'NOTICE Launcher_shell: after the handler']


def test_records_go_to_stdlib_logging_with_its_levels_and_names():
    finished = run_python('''
        import logging, sys
        from btgym_aac.logs import get_logger, send_to_stdlib_logging
        logging.basicConfig(stream=sys.stdout, level=logging.DEBUG, format='%(name)s %(levelname)s %(message)s')
        log = get_logger('BTgymEnv', 3, verbose=2)
        send_to_stdlib_logging()
        log.notice('a notice')
        log.debug('a debug record')
        logging.getLogger('btgym_aac').setLevel(logging.WARNING)
        log.info('filtered by the stdlib level')
        log.error('an error')
    ''')
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.splitlines() == ['btgym_aac.BTgymEnv_3 INFO a notice',
                                            'btgym_aac.BTgymEnv_3 DEBUG a debug record',
                                            'btgym_aac.BTgymEnv_3 ERROR an error']
    assert finished.stderr == ''


def test_the_logger_group_silences_every_package_logger():
    finished = run_python('''
        from btgym_aac.logs import LOGGERS, get_logger
        first, second = get_logger('Worker', 0), get_logger('Worker', 1)
        LOGGERS.disabled = True
        first.error('silenced')
        second.error('silenced too')
    ''')
    assert finished.returncode == 0 and 'silenced' not in finished.stderr, finished.stderr


def test_the_group_keeps_no_logger_alive():
    # Datasets make two loggers per episode: a group holding them all would grow for the whole run.
    finished = run_python('''
        import gc, weakref
        from btgym_aac.logs import LOGGERS, get_logger
        made = [weakref.ref(get_logger('BTgymDataset', episode)) for episode in range(100)]
        gc.collect()
        assert [ref for ref in made if ref() is not None] == [] and LOGGERS.loggers == [], LOGGERS.loggers
    ''')
    assert finished.returncode == 0, finished.stderr


def test_error_summary_is_the_type_and_first_line_of_the_message():
    assert error_summary(ValueError('bad shape\n  details below')) == 'ValueError: bad shape'
    assert error_summary(KeyError()) == 'KeyError'
