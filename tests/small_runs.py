"""Settings of the tests' short Launcher runs on generated bars: the default preset with six-hour episodes, a
policy of 16 units (dense layers and one LSTM), one worker, and three days of a random walk to walk forward or sweep
over."""
from btgym_aac.data import make_random_walk_data, write_histdata_csv
from btgym_aac.distributed.run_config import default_configs

SIX_HOURS = {'days': 0, 'hours': 6, 'minutes': 0}
CONFIG_FILE = '''
from btgym_aac.distributed.run_config import default_configs

_configs = default_configs()
env_config = _configs['env_config']
env_config['kwargs'].update(episode_duration={'days': 0, 'hours': 6, 'minutes': 0}, time_gap={'hours': 1},
                            render_enabled=False)
policy_config = {'class_ref': _configs['policy_config']['class_ref'],
                 'kwargs': dict(_configs['policy_config']['kwargs'], dense_layers=(16, 16), lstm_layers=(16,))}
trainer_config = _configs['trainer_config']
cluster_config = {'num_workers': 1, 'num_ps': 1, 'num_envs': 1}
launcher_config = {'save_secs': 5, 'show_progress': False}
'''
"""A config file with the settings of `small_configs`."""


def small_configs():
    """The default configuration at the tests' small size (see the module docstring)."""
    configs = default_configs()
    configs['env_config']['kwargs'].update(episode_duration=SIX_HOURS, time_gap={'hours': 1}, render_enabled=False)
    configs['policy_config']['kwargs'].update(dense_layers=(16, 16), lstm_layers=(16,))
    configs['cluster_config'] = {'num_workers': 1, 'num_ps': 1, 'num_envs': 1}
    configs['launcher_config'] = {'save_secs': 5, 'show_progress': False}
    return configs


def three_days_csv(folder, seed=1):
    """Writes three days of a random walk's minute bars as `<folder>/bars.csv`; returns its path."""
    return write_histdata_csv(make_random_walk_data(num_bars=3 * 1440, seed=seed), str(folder / 'bars.csv'))
