"""The Optuna study of a sweep: its storage (SQLite in the sweep's folder by default, any RDB URL such as
PostgreSQL's to share it across processes and hosts), the check that a command continues it with the settings it
was started with (see `settings`), the `--out` folder it owns (its trial folders are named by trial number, so one
folder serves one study), and its trials' book-keeping: which count towards the number asked for, and which were
cut off and run again."""
import contextlib
import json
import os
import re
import time
import warnings

import optuna
import sqlalchemy.exc
from optuna.exceptions import ExperimentalWarning
from optuna.trial import TrialState

from btgym_aac.paths import write_json
from btgym_aac.sweep.settings import changed_settings, changes_table

STUDY_FILE = 'sweep.db'
DEFAULT_STUDY = 'sweep'
HEARTBEAT_SECONDS = 30
GRACE_SECONDS = 300
"""A trial whose process has not beaten its heartbeat for GRACE_SECONDS (a host that died) is failed and run again
(with the same values) by the next trial any process of the study starts."""

INTERRUPTED = 'interrupted'
CONTINUES = 'continues'
SURPLUS = 'surplus'
SETTINGS = 'settings'
OWNER_FILE = 'study.json'


def storage_url(storage, out):
    """`storage`, or the SQLite file in `out` when it is None."""
    return storage or 'sqlite:///{}'.format(os.path.join(os.path.abspath(out), STUDY_FILE))


def open_study(url, name, settings, direction='maximize'):
    """Creates or loads study `name` in the storage at `url` and checks that it is the same search.

    Args:
        url: SQLAlchemy URL of the storage.
        name: the study's name.
        settings: JSON-ready dict of what defines the search (`settings.sweep_settings`): recorded with a new
            study, compared with an existing one's.
        direction: 'maximize'.

    Returns:
        the optuna Study (sampler and pruner are set by the caller).

    Raises:
        ValueError: the study was started with other settings (a table of each one that changed: setting, then,
            now).
    """
    try:
        storage = _storage(url)
        study = optuna.create_study(storage=storage, study_name=name, direction=direction, load_if_exists=True)
    except (sqlalchemy.exc.SQLAlchemyError, ImportError) as error:
        raise ValueError('--storage {}: the study cannot be opened there ({}: {})'.format(
            safe_url(url), type(error).__name__, str(error).splitlines()[0] if str(error) else '')) from error
    if study.user_attrs.get(SETTINGS) is None:
        study.set_user_attr(SETTINGS, settings)  # (a process that sets them at the same moment may win: read back)
    changed = changed_settings(study.user_attrs[SETTINGS], settings)
    if changed:
        storage.remove_session()  # the refusing caller gets no study: its connections go now, not at exit
        storage.engine.dispose()
        raise ValueError('study {!r} in {} was started with other settings:\n{}\ncontinue it with the same ones, or '
                         'start another study (another --study and --out)'.format(name, safe_url(url),
                                                                                 changes_table(changed)))
    return study


def _storage(url, attempts=5):
    """Optuna's RDB storage at `url`, with heartbeats. Processes that create a new database's tables at the same
    moment collide (PostgreSQL: a type or table made twice): the loser tries again and finds them made."""
    for attempt in range(attempts):
        try:
            with experimental_feature('heartbeat_interval'):
                return optuna.storages.RDBStorage(url, heartbeat_interval=HEARTBEAT_SECONDS,
                                                  grace_period=GRACE_SECONDS,
                                                  heartbeat_stale_trial_callback=_run_again_if_stale)
        except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.ProgrammingError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.2 * (attempt + 1))


@contextlib.contextmanager
def experimental_feature(name):
    """Silences Optuna's ExperimentalWarning about feature `name` (an argument's or a function's name) inside the
    block, where this package uses that feature knowingly; every other warning is left as it is."""
    with warnings.catch_warnings():
        warnings.filterwarnings('ignore', category=ExperimentalWarning,
                                message=r'(Argument ``{0}``|([\w.]+\.)?{0}) is (an )?experimental'.format(
                                    re.escape(name)))
        yield


def safe_url(url):
    """The URL without its password."""
    head, at, tail = url.rpartition('@')
    if not at or ':' not in head.split('//', 1)[-1]:
        return url
    scheme, _, credentials = head.partition('//')
    return '{}//{}:***@{}'.format(scheme, credentials.split(':', 1)[0], tail)


def check_owner(out, url, name):
    """Raises ValueError when `out` holds the trials of another study than `name` in the storage at `url`.

    Returns:
        whether `out` is already claimed by that study (see `claim_out`).
    """
    path = os.path.join(out, OWNER_FILE)
    if not os.path.exists(path):
        return False
    with open(path) as f:
        previous = json.load(f)
    if previous != {'storage': safe_url(url), 'study': name}:
        raise ValueError('{} holds the trials of study {!r} in {}: give study {!r} another --out (a study\'s '
                         'trial folders are named by trial number)'.format(out, previous.get('study'),
                                                                            previous.get('storage'), name))
    return True


def claim_out(out, url, name):
    """Records that `out` holds the trials of study `name` in the storage at `url`, or checks that it does.

    Raises:
        ValueError: `out` holds another study's trials.
    """
    if not check_owner(out, url, name):
        write_json({'storage': safe_url(url), 'study': name}, os.path.join(out, OWNER_FILE))


def root_number(trial):
    """The number of the trial that `trial` continues (its own when it continues none): its folder's name."""
    return trial.user_attrs.get(CONTINUES, trial.number)


def _latest_of_each_folder(trials):
    """{root number: the latest trial of that folder} (a trial and those run again in its folder share one; a
    surplus trial, which never ran, has none)."""
    latest = {}
    for trial in ran(trials):
        if root_number(trial) not in latest or trial.number > latest[root_number(trial)].number:
            latest[root_number(trial)] = trial
    return latest


def counted_numbers(trials):
    """The numbers of the trials that count towards the sweep's number of trials: done, pruned, or failed by their
    own error; not one cut off by a stop or a lost host (it is, or will be, run again).

    Args:
        trials: all the study's trials.
    """
    latest = _latest_of_each_folder(trials)
    return {trial.number for trial in ran(trials) if trial.state in (TrialState.COMPLETE, TrialState.PRUNED)
            or trial.state == TrialState.FAIL and not trial.user_attrs.get(INTERRUPTED)
            and latest[root_number(trial)].number == trial.number}


def ran(trials):
    """`trials` without the surplus ones (see `is_surplus`), which gave way without running."""
    return [trial for trial in trials if not trial.user_attrs.get(SURPLUS)]


def is_surplus(trial, total):
    """Whether `trial`, just started, is one more than the sweep's `total`. Processes sharing a study that find one
    trial wanting at the same moment (`wants_another`) each start one; the trials counted and those running with a
    lower number than `trial` show whether it is the one too many, which then gives way (marked `SURPLUS`, failed,
    never run).

    Args:
        trial: an `optuna.Trial` this process is about to run.
        total: the number of trials the sweep asks for.
    """
    trials = trial.study.get_trials(deepcopy=False)
    ahead = {other.number for other in ran(trials)
             if other.state == TrialState.RUNNING and other.number < trial.number}
    return len(counted_numbers(trials) | ahead) >= total


def wants_another(study, total):
    """Whether the study needs one more trial started to reach `total` (trials running elsewhere included)."""
    trials = study.get_trials(deepcopy=False)
    running = sum(trial.state == TrialState.RUNNING for trial in trials)
    return len(counted_numbers(trials)) + running < total


def running_elsewhere(study):
    """Fails the trials of lost processes (see GRACE_SECONDS) and returns the number of trials still running."""
    with experimental_feature('fail_stale_trials'):
        optuna.storages.fail_stale_trials(study)
    return len(study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))


def fail_orphans(study):
    """Marks every running trial as cut off (failed, interrupted). Only for a study that no other process can be
    running: the embedded one of a sweep folder this process has locked, whose running trials were left by a process
    that was killed.

    Returns:
        the numbers of those trials.
    """
    storage = study._storage  # (the storage `open_study` made; Study has no public name for it)
    study_id = storage.get_study_id_from_name(study.study_name)
    orphans = [trial.number for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
    for number in orphans:
        trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, number)
        storage.set_trial_user_attr(trial_id, INTERRUPTED, True)
        storage.set_trial_state_values(trial_id, TrialState.FAIL)
    return orphans


def run_interrupted_again(study):
    """Queues every trial that a stop cut off, and that nothing has run again since (the latest trial of its folder),
    to run again with the same values, in the same folder (its walk-forward goes on from its last finished fold).

    Returns:
        the numbers of the trials queued again.
    """
    queued = []
    latest = _latest_of_each_folder(study.get_trials(deepcopy=False))
    for trial in sorted(latest.values(), key=lambda trial: trial.number):
        if trial.state == TrialState.FAIL and trial.user_attrs.get(INTERRUPTED):
            _queue_again(study, trial)
            queued.append(trial.number)
    return queued


def _run_again_if_stale(study, trial):
    """Optuna's callback for a trial failed because its process stopped beating: queue it again."""
    _queue_again(study, trial)


def _queue_again(study, trial):
    study.enqueue_trial(trial.params, user_attrs={CONTINUES: root_number(trial)}, skip_if_exists=False)
