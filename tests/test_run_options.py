"""Run options: several envs per worker (`num_envs`, `render_last_env`), `btgym-aac train --fresh` and
`btgym-aac export --ckpt-subdir`."""
import json
import os
import shutil
import textwrap

import numpy as np
import pytest

from btgym_aac.algorithms import A3C, Launcher
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac.cli import main as cli_main
from btgym_aac.compat import tf
from btgym_aac.distributed.checkpoints import FastSaver, checkpoint_step, latest_checkpoint
from btgym_aac.distributed.worker import _env_kwargs
from btgym_aac.env import gym_wrappers
from btgym_aac.evaluation.loading import read_run_config

pytestmark = pytest.mark.xdist_group('run_options')  # one xdist worker builds the module's fixtures

CKPT = 'current_train_checkpoint'
CARTPOLE = {'class_ref': gym_wrappers.TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}}
SMALL_POLICY = {'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (16,), 'lstm_layers': (16,)}}
TWO_ENV_STEPS = 300


class RecordingEnv(gym_wrappers.TestModeEnv):
    """CartPole writing to `<record_dir>/env_<task>.jsonl` the task, seed and render flag it was made with, then a
    line per finished episode."""

    def __init__(self, record_dir, **kwargs):
        super().__init__(**kwargs)
        self.record_path = os.path.join(record_dir, 'env_{}.jsonl'.format(kwargs['task']))
        self._write({key: kwargs[key] for key in ('task', 'seed', 'render_enabled')})

    def _write(self, record):
        with open(self.record_path, 'a') as f:
            f.write(json.dumps(record) + '\n')

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        if terminated or truncated:
            self._write({'episode_end': True})
        return observation, reward, terminated, truncated, info


# ------------------------------------------------------------------------------------------ envs per worker

@pytest.mark.parametrize('num_envs, task, render_last_env, tasks, seeds, renders', [
    (1, 0, True, ['0'], [7], [True]),
    (1, 0, False, ['0'], [7], [True]),
    (1, 1, True, ['1'], [7], [False]),
    (3, 0, True, ['0.0', '0.01', '0.02'], [7, 8, 9], [False, False, True]),
    (3, 0, False, ['0.0', '0.01', '0.02'], [7, 8, 9], [True, True, True]),
    (3, 1, True, ['1.0', '1.01', '1.02'], [7, 8, 9], [False, False, False]),
    (3, 1, False, ['1.0', '1.01', '1.02'], [7, 8, 9], [False, False, False]),
])
def test_each_env_of_a_worker_gets_its_task_seed_and_render_flag(num_envs, task, render_last_env, tasks, seeds,
                                                                 renders):
    """Env i of worker `task` gets task `task + 0.01 i` (the worker's own task, unchanged, when alone), seed
    `random_seed + i`, and renders only on the chief: its last env with `render_last_env`, else all of them."""
    config = {'env_config': CARTPOLE, 'num_envs': num_envs, 'task': task, 'render_last_env': render_last_env,
              'random_seed': 7}
    made = [_env_kwargs(config, index) for index in range(num_envs)]
    assert [repr(kwargs.pop('task')) for kwargs in made] == tasks
    assert made == [{'env_id': 'CartPole-v1', 'seed': seed, 'render_enabled': render}
                    for seed, render in zip(seeds, renders)]


def test_env_kwargs_keep_the_configs_render_off_and_add_no_seed_without_a_random_seed():
    config = {'env_config': dict(CARTPOLE, kwargs={'env_id': 'CartPole-v1', 'render_enabled': False}),
              'num_envs': 2, 'task': 0, 'render_last_env': False, 'random_seed': None}
    assert [_env_kwargs(config, index) for index in range(2)] == [
        {'env_id': 'CartPole-v1', 'task': 0, 'render_enabled': False},
        {'env_id': 'CartPole-v1', 'task': 0.01, 'render_enabled': False}]


@pytest.fixture(scope='module')
def two_env_run(tmp_path_factory):
    """A finished Launcher run of one worker with two RecordingEnvs: (launcher, result, record dir)."""
    root = tmp_path_factory.mktemp('two_envs')
    records = root / 'records'
    records.mkdir()
    launcher = Launcher(
        env_config={'class_ref': RecordingEnv, 'kwargs': {'env_id': 'CartPole-v1', 'record_dir': str(records)}},
        cluster_config={'num_workers': 1, 'num_envs': 2, 'log_dir': str(root / 'run')},
        policy_config=SMALL_POLICY, trainer_config={'class_ref': A3C, 'kwargs': {'rollout_length': 20}},
        test_mode=True, max_env_steps=TWO_ENV_STEPS, save_secs=3600, root_random_seed=0, show_progress=False)
    return launcher, launcher.run(), records


def env_records(record_dir, name):
    with open(os.path.join(str(record_dir), name)) as f:
        return [json.loads(line) for line in f]


def test_a_worker_with_two_envs_trains_both_to_max_env_steps(two_env_run):
    """Each env of the worker was made with its own task, seed and render flag (the chief's last env alone
    renders), both played episodes, and the run's episode count is theirs together."""
    launcher, result, records = two_env_run
    assert result['completed'] and result['global_step'] >= TWO_ENV_STEPS
    assert sorted(os.listdir(str(records))) == ['env_0.0.jsonl', 'env_0.01.jsonl']
    seed = launcher.task_seeds[0]
    first, last = env_records(records, 'env_0.0.jsonl'), env_records(records, 'env_0.01.jsonl')
    assert first[0] == {'task': 0, 'seed': seed, 'render_enabled': False}
    assert last[0] == {'task': 0.01, 'seed': seed + 1, 'render_enabled': True}
    episodes = [len(first) - 1, len(last) - 1]
    assert min(episodes) >= 1 and sum(episodes) == result['episodes']
    assert checkpoint_step(latest_checkpoint(os.path.join(launcher.log_dir, CKPT))) == result['global_step']


# --------------------------------------------------------------------------------------------------- --fresh

def write_cartpole_config(path):
    path.write_text(textwrap.dedent('''
        from btgym_aac.algorithms import A3C
        from btgym_aac.algorithms.policy import AacDensePolicy
        from btgym_aac.env.gym_wrappers import TestModeEnv

        env_config = {'class_ref': TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}}
        policy_config = {'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (16,), 'lstm_layers': (16,)}}
        trainer_config = {'class_ref': A3C, 'kwargs': {'rollout_length': 20}}
        cluster_config = {'num_envs': 2}
        launcher_config = {'test_mode': True, 'save_secs': 3600, 'show_progress': False}
    '''))
    return str(path)


def checkpoint_files(step):
    """The files of a checkpoint folder holding the one checkpoint of `step`."""
    return ['checkpoint', 'model_parameters-{}.data-00000-of-00001'.format(step),
            'model_parameters-{}.index'.format(step)]


def test_train_fresh_empties_the_log_dir_and_starts_at_step_zero(two_env_run, tmp_path, capsys):
    """`train --fresh` on the log dir of a finished run (same model, so it could resume) deletes its checkpoints,
    events and run config: the new run trains from step 0 and leaves only its own files."""
    launcher, previous, _ = two_env_run
    log_dir = tmp_path / 'run'
    shutil.copytree(launcher.log_dir, str(log_dir))
    assert sorted(os.listdir(str(log_dir / CKPT))) == checkpoint_files(previous['global_step'])
    old_events = set(os.listdir(str(log_dir / 'worker_0')))
    assert len(old_events) == 1
    steps = 100
    assert previous['global_step'] >= 3 * steps  # a resumed run would start past its end
    code = cli_main(['train', write_cartpole_config(tmp_path / 'config.py'), '--fresh', '--workers', '1',
                     '--max-steps', str(steps), '--log-dir', str(log_dir), '--seed', '0'])
    assert code == 0
    step = checkpoint_step(latest_checkpoint(str(log_dir / CKPT)))
    assert 'done: {} env steps'.format(step) in capsys.readouterr().out
    assert steps <= step < previous['global_step']
    assert sorted(os.listdir(str(log_dir / CKPT))) == checkpoint_files(step)
    assert sorted(os.listdir(str(log_dir))) == ['.launcher.lock', CKPT, 'run_config.pkl', 'worker_0']
    assert read_run_config(str(log_dir))['env_config']['class_ref'] is gym_wrappers.TestModeEnv  # this run's
    new_events = os.listdir(str(log_dir / 'worker_0'))
    assert len(new_events) == 1 and not old_events & set(new_events)


# --------------------------------------------------------------------------------------------------- export

def write_checkpoints(directory, values):
    """Saves variable `global/weights` ([2] floats) at each (step, value) of `values` into `directory`."""
    directory.mkdir(parents=True)
    graph = tf.Graph()
    with graph.as_default(), tf.Session(graph=graph) as sess:
        weights = tf.Variable([0.0, 0.0], name='global/weights')
        saver = FastSaver()
        for step, value in values:
            sess.run(weights.assign([value, -value]))
            saver.save(sess, os.path.join(str(directory), 'model_parameters'), global_step=step)


def test_export_from_a_named_checkpoint_subdir_copies_its_latest_checkpoint(tmp_path, capsys):
    log_dir = tmp_path / 'run'
    write_checkpoints(log_dir / CKPT, [(5, 5.0)])
    write_checkpoints(log_dir / 'best', [(3, 3.0), (8, 8.0)])
    dest = tmp_path / 'exported'
    assert cli_main(['export', '--checkpoint-only', str(log_dir), str(dest), '--ckpt-subdir', 'best']) == 0
    assert capsys.readouterr().out == 'exported {}\n'.format(dest / 'model_parameters-8')
    exported = latest_checkpoint(str(dest))
    assert exported == str(dest / 'model_parameters-8')
    reader = tf.train.load_checkpoint(exported)
    assert reader.get_variable_to_shape_map() == {'global/weights': [2]}
    np.testing.assert_array_equal(reader.get_tensor('global/weights'), [8.0, -8.0])


def test_export_from_a_missing_checkpoint_subdir_exits_2_naming_it(tmp_path, capsys):
    log_dir = tmp_path / 'run'
    write_checkpoints(log_dir / CKPT, [(5, 5.0)])
    dest = tmp_path / 'exported'
    assert cli_main(['export', '--checkpoint-only', str(log_dir), str(dest), '--ckpt-subdir', 'missing']) == 2
    assert capsys.readouterr().err == "btgym-aac export: no checkpoint folder {!r}: {!r} holds the folders {}\n".format(
        str(log_dir / 'missing'), str(log_dir), CKPT)
    assert not dest.exists()


def test_export_from_an_empty_checkpoint_folder_or_a_missing_log_dir_exits_2_saying_which(tmp_path, capsys):
    log_dir = tmp_path / 'run'
    (log_dir / 'empty').mkdir(parents=True)
    dest = tmp_path / 'exported'
    assert cli_main(['export', '--checkpoint-only', str(log_dir), str(dest), '--ckpt-subdir', 'empty']) == 2
    assert capsys.readouterr().err == 'btgym-aac export: no checkpoint to export in {!r}\n'.format(
        str(log_dir / 'empty'))
    missing = tmp_path / 'no_run'
    assert cli_main(['export', '--checkpoint-only', str(missing), str(dest)]) == 2
    assert capsys.readouterr().err == ("btgym-aac export: no checkpoint folder {!r}: its log dir {!r} does not "
                                       "exist\n".format(str(missing / CKPT), str(missing)))
    assert not dest.exists()
