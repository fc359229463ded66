"""What makes a sweep the same search when it is run again: the settings its study records (data checksums, the
walk-forward's settings, the objective, the space and a digest of the configs), and the study a `--out` folder
belongs to (its trial folders are named by trial number, so one folder serves one study)."""
import json
import os

from btgym_aac.config_digest import config_digest
from btgym_aac.paths import write_json
from btgym_aac.sweep.space import describe_space
from btgym_aac.sweep.study import file_checksums, safe_url

OWNER_FILE = 'study.json'
def sweep_settings(paths, configs, space, **walk_forward):
    """The settings a sweep's study records and compares: the data files' checksums, `walk_forward` (lockbox,
    folds, train_steps, test_episodes, seed, embargo, objective), the space and the configs' digest."""
    return dict(walk_forward, data=file_checksums(paths), space=describe_space(space), configs=config_digest(configs))


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
