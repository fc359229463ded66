"""The run's configs file, `<log_dir>/run_config.pkl`, read by `btgym_aac.evaluation.load_policy`.

The chief writes it once its session is ready (its checkpoint restored), so a run that cannot set up leaves the
file of the run whose checkpoint is in the log dir as it was.
"""
import os

from btgym_aac.config_modules import dumps_with_sources

RUN_CONFIG_FILE = 'run_config.pkl'
RUN_CONFIG_DICTS = ('env_config', 'policy_config', 'trainer_config', 'cluster_config')


def pickle_run_config(configs):
    """Pickles the run's configs in the launching process, where classes of its `__main__` have their real names
    (a spawned task knows them as `__mp_main__`'s, which no other process can load), with the sources of the
    config-file modules they refer to (see `config_modules`).

    Args:
        configs: dict with env_config, policy_config, trainer_config, cluster_config, test_mode.

    Returns:
        bytes for `write_run_config`.
    """
    return dumps_with_sources(configs)


def write_run_config(log_dir, pickled):
    """Writes `pickled` configs to `<log_dir>/run_config.pkl` through a temporary file, so readers never see half
    a file (a failed write leaves the previous file and no temporary one).

    Args:
        log_dir: the run's log dir.
        pickled: bytes from `pickle_run_config`.
    """
    os.makedirs(log_dir, exist_ok=True)
    path = os.path.join(log_dir, RUN_CONFIG_FILE)
    staging = path + '.writing'
    try:
        with open(staging, 'wb') as f:
            f.write(pickled)
        os.replace(staging, path)
    finally:
        if os.path.exists(staging):
            os.remove(staging)
