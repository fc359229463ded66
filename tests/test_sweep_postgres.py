"""Sweeps sharing one study in PostgreSQL: two `btgym-aac sweep` processes split the trials between them, a sweep
with other settings is refused (`slow`), and processes opening the study at once on a new database all get it. The
server is a throwaway one (`pg_cluster`); PostgreSQL's binaries are required, not optional."""
import json
import os
import signal
import subprocess
import sys
import time

import optuna
import pytest
import sqlalchemy
from optuna.trial import TrialState

from btgym_aac.cli import main as cli_main
from btgym_aac.sweep.study import SURPLUS, ran as trials_that_ran
from pg_cluster import POSTGRES_ROOT, postgres_bin_dir, postgres_server
from proc_helpers import GROUP, live_processes, wait_until_group_ends
from small_runs import CONFIG_FILE, three_days_csv

TRIALS = 2
STUDY = 'shared'
OPEN_STUDY = '''
import sys

import psycopg2  # noqa: F401 (imported before the start, as is what open_study imports: they start together)
import sqlalchemy.dialects.postgresql.psycopg2  # noqa: F401

from btgym_aac.sweep.study import open_study

print('ready', flush=True)
for url in sys.stdin:
    open_study(url.strip(), sys.argv[1], {'folds': 1})
    print('opened', flush=True)
'''
"""Opens a study in each URL that comes on stdin (so that processes started apart open it at the same moment)."""
OPENERS = 4
SPACE_FILE = '''
from optuna.distributions import FloatDistribution

SPACE = {'trainer_config.kwargs.opt_learn_rate': FloatDistribution(1e-5, 1e-3, log=True)}
'''


@pytest.fixture
def postgres_url(tmp_path):
    """The URL of a database on a throwaway PostgreSQL server, stopped at the end (its log kept in tmp_path)."""
    if postgres_bin_dir() is None:
        pytest.fail('PostgreSQL is not installed (no {}/*/bin/initdb): this test needs its binaries, e.g. Debian\'s '
                    '`postgresql` package, as .ci/run installs'.format(POSTGRES_ROOT), pytrace=False)
    with postgres_server('sweeps', keep_log_in=str(tmp_path)) as url:
        yield url


def sweep_command(folder, url, out, *flags, **changed):
    """The `btgym-aac sweep` command line of the shared study, with `flags` and `changed` settings (--name: value)."""
    settings = {'--trials': TRIALS, '--folds': 1, '--train-steps': 200, '--test-episodes': 2, '--lockbox': 0,
                '--pruner': 'none', **changed}
    return ([sys.executable, '-m', 'btgym_aac.cli', 'sweep', str(folder / 'config.py'), '--data',
             str(folder / 'bars.csv'), '--space', str(folder / 'space.py'), '--out', str(out), '--storage', url,
             '--study', STUDY] + list(flags) + [str(part) for item in settings.items() for part in item])


def run_at_once(commands, logs, seconds):
    """Starts `commands` together, each in a session of its own with its output in its log file; returns their exit
    statuses once all have ended (each process group checked to be empty). Whatever still runs at the end, on a
    failure or a timeout, is killed."""
    processes = []
    try:
        for command, log in zip(commands, logs):
            with open(log, 'w') as output:
                processes.append(subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                                  stdin=subprocess.DEVNULL, start_new_session=True))
        deadline = time.time() + seconds
        statuses = [process.wait(timeout=max(1.0, deadline - time.time())) for process in processes]
        for process in processes:
            assert wait_until_group_ends(process.pid, 30) == [], 'processes of a sweep outlived it'
        return statuses
    finally:
        for process in processes:
            if process.poll() is None or live_processes(GROUP, process.pid):
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def trial_folders(out):
    """The numbers of the trials whose folders are in a sweep's `out`."""
    return {int(name[len('trial_'):]) for name in os.listdir(out / 'trials')} if (out / 'trials').exists() else set()


def walked_forward(out, numbers):
    """Whether every trial of `numbers` has its walk-forward's report in `out`."""
    return all((out / 'trials' / 'trial_{}'.format(number) / 'walk_forward.json').is_file() for number in numbers)


def output_of(*logs):
    """The ends of the commands' logs, for a failure's message."""
    return '\n'.join('--- {}\n{}'.format(log.name, log.read_text()[-4000:]) for log in logs)


@pytest.mark.slow
def test_two_sweeps_share_one_postgres_study_and_a_third_with_other_settings_is_refused(tmp_path, postgres_url,
                                                                                       capsys):
    (tmp_path / 'config.py').write_text(CONFIG_FILE)
    (tmp_path / 'space.py').write_text(SPACE_FILE)
    three_days_csv(tmp_path)
    outs, logs = [tmp_path / 'sweep_a', tmp_path / 'sweep_b'], [tmp_path / 'sweep_a.log', tmp_path / 'sweep_b.log']

    # the second command is a helper host's: it runs trials only, the first tests, waits for all and reports
    statuses = run_at_once([sweep_command(tmp_path, postgres_url, outs[0]),
                            sweep_command(tmp_path, postgres_url, outs[1], '--search-only')], logs, 480)
    assert statuses == [0, 0], output_of(*logs)
    assert 'search only: the lockbox test, the verdict and the report are made by' in logs[1].read_text()

    storage = optuna.storages.RDBStorage(postgres_url)
    try:
        every_trial = optuna.load_study(study_name=STUDY, storage=storage).get_trials()
        trials = trials_that_ran(every_trial)
        assert [trial.number for trial in trials] == list(range(TRIALS))
        # a trial both hosts started at once beyond TRIALS gave way without running
        assert all(trial.user_attrs[SURPLUS] and trial.state == TrialState.FAIL and not trial.params
                   for trial in every_trial[TRIALS:])
        assert all(trial.state in (TrialState.COMPLETE, TrialState.PRUNED) for trial in trials), \
            [(trial.number, trial.state.name, trial.user_attrs.get('error')) for trial in trials]
        ran = [trial_folders(out) for out in outs]
        assert ran[0] | ran[1] == set(range(TRIALS)) and not ran[0] & ran[1], ran  # each trial run by one process
        # Both processes start together and each trial lasts several seconds: the second could find no trial left
        # only if it reached the study after the first had started its last trial.
        assert ran[0] and ran[1], ran
        assert walked_forward(outs[0], ran[0]) and walked_forward(outs[1], ran[1])
        report = json.loads((outs[0] / 'sweep.json').read_text())  # written once no trial ran anywhere: all of them
        assert [row['number'] for row in report['trials']] == list(range(TRIALS))
        assert all(row['state'] == 'COMPLETE' for row in report['trials'])
        assert report['deflated_sharpe'].get('trials') in (None, TRIALS)
        assert not (outs[1] / 'sweep.json').exists()

        refused_out = tmp_path / 'sweep_c'  # (in this process: it is refused before any trial starts)
        capsys.readouterr()
        connections = connections_to(postgres_url)
        command = sweep_command(tmp_path, postgres_url, refused_out, **{'--test-episodes': 3})
        arguments = command[command.index('btgym_aac.cli') + 1:]
        assert cli_main(arguments) == 2
        assert connections_to(postgres_url) == connections  # the refused sweep keeps no connection open
        assert "study 'shared' in {} was started with other settings:\n  setting          then  now\n  " \
               "--test-episodes  2     3\n".format(postgres_url) in capsys.readouterr().err
        assert trial_folders(refused_out) == set()
        assert len(trials_that_ran(optuna.load_study(study_name=STUDY, storage=storage).get_trials())) == TRIALS
    finally:
        storage.remove_session()
        storage.engine.dispose()


def connections_to(url):
    """The number of connections to the database of `url` other than the one asking."""
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as connection:
            return connection.exec_driver_sql('SELECT count(*) FROM pg_stat_activity WHERE datname = '
                                              'current_database() AND pid <> pg_backend_pid()').scalar()
    finally:
        engine.dispose()


def new_database(url, name):
    """The URL of database `name`, created on the server of `url`."""
    engine = sqlalchemy.create_engine(url, isolation_level='AUTOCOMMIT')
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql('CREATE DATABASE {}'.format(name))
    finally:
        engine.dispose()
    return sqlalchemy.engine.make_url(url).set(database=name).render_as_string(hide_password=False)


def test_sweeps_starting_together_on_a_new_database_all_open_the_study(postgres_url):
    """Hosts started at once against an empty database: each creates Optuna's tables if missing; none may fail on
    the others' doing so. (Tried on three new databases: a single try misses the race now and then.)"""
    openers = [subprocess.Popen([sys.executable, '-c', OPEN_STUDY, STUDY], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(OPENERS)]
    try:
        assert [opener.stdout.readline() for opener in openers] == ['ready\n'] * OPENERS
        for attempt in range(3):
            url = new_database(postgres_url, 'opened_at_once_{}'.format(attempt))
            for opener in openers:
                opener.stdin.write(url + '\n')
                opener.stdin.flush()
            opened = [opener.stdout.readline() for opener in openers]
            if opened != ['opened\n'] * OPENERS:  # (communicate ends the others' input: they end)
                pytest.fail('opening the study at once in {}: {}\n{}'.format(url, opened, '\n'.join(
                    opener.communicate(timeout=60)[1] for opener in openers)), pytrace=False)
            storage = optuna.storages.RDBStorage(url)
            try:
                assert optuna.load_study(study_name=STUDY, storage=storage).user_attrs == {'settings': {'folds': 1}}
            finally:
                storage.remove_session()
                storage.engine.dispose()
        for opener in openers:
            opener.stdin.close()
        assert [opener.wait(timeout=60) for opener in openers] == [0] * OPENERS
    finally:
        for opener in openers:
            if opener.poll() is None:
                opener.kill()
                opener.wait()
