"""The scripts in `examples/`: each config file loads, its environment steps, its launcher accepts its configs, and
(slow) a short `btgym-aac train` of it runs to the end and saves a checkpoint."""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from btgym_aac.cli import load_config_file
from btgym_aac.distributed.launcher import make_launcher
from btgym_aac.distributed.checkpoints import latest_checkpoint

EXAMPLES = sorted((pathlib.Path(__file__).resolve().parents[1] / 'examples').glob('*.py'))


def test_every_notebook_port_is_covered():
    assert [path.name for path in EXAMPLES] == ['a3c_atari_pong.py', 'a3c_sine.py', 'guided_a3c.py',
                                                'multi_discrete_causal_conv.py', 'portfolio_causal_conv.py',
                                                'ppo_sine.py', 'unreal_stacked_lstm_strat_4_11.py']


@pytest.mark.parametrize('path', EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_example_config_builds_a_stepping_env_and_a_launcher(path, tmp_path):
    configs = load_config_file(str(path))
    assert set(configs) == {'env_config', 'cluster_config', 'policy_config', 'trainer_config', 'launcher_config'}
    env_config = configs['env_config']
    env = env_config['class_ref'](**env_config['kwargs'])
    try:
        observation, _ = env.reset(seed=0)
        assert set(observation) == set(env.observation_space.spaces)
        observation, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert np.isfinite(reward) and set(observation) == set(env.observation_space.spaces)
    finally:
        env.close()
    configs['cluster_config'] = dict(configs['cluster_config'], log_dir=str(tmp_path / 'run'))
    launcher = make_launcher(configs)
    assert launcher.max_env_steps == configs['launcher_config']['max_env_steps']
    assert launcher.cluster_config['num_workers'] == configs['cluster_config']['num_workers']
    assert launcher.log_dir == str(tmp_path / 'run')


@pytest.mark.slow
@pytest.mark.parametrize('path', EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_example_trains_briefly_and_saves(path, tmp_path):
    log_dir = tmp_path / 'run'
    finished = subprocess.run([sys.executable, '-m', 'btgym_aac.cli', 'train', str(path), '--workers', '1',
                               '--max-steps', '300', '--log-dir', str(log_dir)],
                              capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr[-3000:]
    checkpoint = latest_checkpoint(str(log_dir / 'current_train_checkpoint'))
    assert checkpoint is not None and int(checkpoint.rsplit('-', 1)[1]) >= 300
