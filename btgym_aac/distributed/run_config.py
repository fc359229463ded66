"""The run's configs file, `<log_dir>/run_config.pkl`, read by `btgym_aac.evaluation.load_policy`.

The chief writes it once its session is ready (its checkpoint restored), so a run that cannot set up leaves the
file of the run whose checkpoint is in the log dir as it was.
"""
import os
import pickle

RUN_CONFIG_FILE = 'run_config.pkl'


def write_run_config(log_dir, configs):
    """Writes `configs` to `<log_dir>/run_config.pkl` through a temporary file, so readers never see half a file.

    Args:
        log_dir: the run's log dir.
        configs: dict with env_config, policy_config, trainer_config, cluster_config, test_mode.
    """
    os.makedirs(log_dir, exist_ok=True)
    path = os.path.join(log_dir, RUN_CONFIG_FILE)
    staging = path + '.writing'
    with open(staging, 'wb') as f:
        pickle.dump(configs, f)
    os.replace(staging, path)
