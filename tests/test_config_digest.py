"""The configs' digest that walk-forwards and sweeps record: the same in every process for the same configs, other
for other settings, blind to where a run logs and to the data source they supply."""
import subprocess
import sys

import numpy as np

from btgym_aac.distributed.run_config import config_digest
from btgym_aac.distributed.run_config import default_configs

DIGEST_IN_A_NEW_PROCESS = '''
from btgym_aac.distributed.run_config import config_digest
from btgym_aac.distributed.run_config import default_configs

class Scaler:
    def __init__(self, factor):
        self.factor = factor

configs = default_configs(import_classes=False)
configs['env_config']['kwargs']['scaler'] = Scaler(3)
print(config_digest(configs))
'''


class Scaler:
    def __init__(self, factor):
        self.factor = factor


def digest_with(**env_kwargs):
    configs = default_configs(import_classes=False)
    configs['env_config']['kwargs'].update(env_kwargs)
    return config_digest(configs)


def test_the_digest_is_the_same_in_every_process_objects_included():
    """An object whose repr holds its memory address counts by its class and attributes."""
    digests = {subprocess.run([sys.executable, '-c', DIGEST_IN_A_NEW_PROCESS], capture_output=True, text=True,
                              check=True, timeout=120).stdout.strip() for _ in range(2)}
    assert len(digests) == 1 and len(digests.pop()) == 16
    assert digest_with(scaler=Scaler(3)) == digest_with(scaler=Scaler(3)) != digest_with(scaler=Scaler(4))


def test_settings_change_the_digest_and_log_dirs_and_data_sources_do_not():
    reference = digest_with()
    assert digest_with(reward_scale=8) != reference
    assert digest_with(state_ext_scale=np.ones(5)) != reference
    assert digest_with(filename='other.csv', dataframe=None) == reference
    configs = default_configs()  # classes imported: named by their paths as ClassRefs are
    configs['cluster_config'] = dict(configs['cluster_config'], log_dir='elsewhere', port=12000)
    assert config_digest(configs) == reference
