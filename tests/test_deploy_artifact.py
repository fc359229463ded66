"""The policy artifact (`btgym-aac export`) and its runtime (`load_artifact`): what the folder holds, that both
backends decide as the run's own checkpoint policy, that the ONNX backend never imports TensorFlow, and that a
damaged or foreign artifact is refused naming the problem."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from saved_runs import CKPT_SUBDIR, write_saved_run
from test_evaluation_multi_asset import POLICY_CONFIG as MULTI_ASSET_POLICY_CONFIG
from test_evaluation_multi_asset import TRAINER_CONFIG as MULTI_ASSET_TRAINER_CONFIG
from test_evaluation_multi_asset import env_config as multi_asset_env_config

import btgym_aac
from btgym_aac.cli import main as cli_main
from btgym_aac.data import BTgymDataset, make_random_walk_data, write_histdata_csv
from btgym_aac.deploy.manifest import ArtifactError, data_description, sha256_file
from btgym_aac.deploy.runtime import load_artifact
from btgym_aac.distributed.checkpoints import latest_checkpoint
from btgym_aac.evaluation.loading import load_policy, make_env, read_run_config

pytestmark = pytest.mark.xdist_group('deploy')  # one xdist worker builds the reference artifact (conftest)

STEP = 100
PARITY_STEPS = 1000
TOLERANCE = 1e-5


def test_the_artifact_holds_checkpoint_graphs_and_a_manifest_of_every_file(reference_artifact):
    log_dir, artifact = reference_artifact
    names = set(os.listdir(artifact))
    assert {'checkpoint', 'manifest.json', 'policy.onnx', 'saved_model',
            'model_parameters-{}.index'.format(STEP)} <= names
    assert not [name for name in names if name.endswith('.pkl')]
    assert latest_checkpoint(artifact) == os.path.join(artifact, 'model_parameters-{}'.format(STEP))
    with open(os.path.join(artifact, 'manifest.json')) as f:
        manifest = json.load(f)
    on_disk = sorted(os.path.relpath(os.path.join(root, name), artifact)
                     for root, _, files in os.walk(artifact) for name in files if name != 'manifest.json')
    assert sorted(manifest['files']) == on_disk
    assert all(manifest['files'][name] == sha256_file(os.path.join(artifact, name)) for name in on_disk)
    assert manifest['package']['version'] == btgym_aac.__version__ and manifest['global_step'] == STEP
    assert manifest['strategy']['class'] == 'btgym_aac.strategy.gen4:DevStrat_4_11'
    assert manifest['strategy']['params']['skip_frame'] == manifest['skip_frame'] == 10
    assert manifest['env']['kwargs']['state_ext_scale']['__ndarray__'] == [3000.0, 2500.0, 2000.0, 1500.0, 1000.0]
    assert manifest['action_space'] == {'assets': ['default_asset'], 'base_actions': ['hold', 'buy', 'sell', 'close'],
                                        'encoding': 'joint', 'initial_action': {'default_asset': 0}}
    assert manifest['observation_space']['observation/external']['shape'] == [30, 1, 5]
    assert [spec['name'] for spec in manifest['inputs']] == [
        'observation/external', 'observation/internal', 'state_in/0', 'state_in/1', 'state_in/2', 'state_in/3',
        'last_action', 'last_reward']  # RL² metadata is read between episodes only, not by the acting graph
    data = read_run_config(log_dir)['env_config']['kwargs']['dataframe']
    assert manifest['data']['data']['bars'] == len(data)
    assert manifest['data']['data']['first_bar'] == data.index[0].isoformat()
    assert manifest['data']['data']['last_bar'] == data.index[-1].isoformat()
    assert manifest['data']['data']['files'] == []  # trained on a DataFrame


def play_in_parity(log_dir, artifact, steps, seed=1):
    """Plays `steps` env steps with the run's checkpoint policy (`load_policy`) acting and both artifact backends
    deciding on the same observations, state carried over; returns the largest probability and value differences
    and the number of actions that differ."""
    backends = {name: load_artifact(artifact, backend=name) for name in ('onnx', 'tf')}
    env = make_env(read_run_config(log_dir))
    largest, mismatches = {'probabilities': 0.0, 'value': 0.0}, 0
    try:
        with load_policy(log_dir, env=env) as reference:
            observation, _ = env.reset(seed=seed)
            reference.reset(observation)
            for backend in backends.values():
                backend.reset()
            for _ in range(steps):
                action = reference.act(observation)
                for backend in backends.values():
                    chosen, probabilities, value = backend.act(observation)
                    mismatches += chosen != action
                    largest['probabilities'] = max(largest['probabilities'], float(
                        np.max(np.abs(probabilities - reference.last_probabilities))))
                    largest['value'] = max(largest['value'], abs(value - reference.last_value))
                observation, reward, terminated, truncated, _ = env.step(action)
                reference.observe(reward)
                for backend in backends.values():
                    backend.observe(reward)
                if terminated or truncated:
                    observation, _ = env.reset()
                    reference.reset(observation)
                    for backend in backends.values():
                        backend.reset()
    finally:
        env.close()
        for backend in backends.values():
            backend.close()
    return largest, mismatches


def test_both_backends_decide_as_the_checkpoint_policy_over_a_thousand_steps(reference_artifact):
    largest, mismatches = play_in_parity(*reference_artifact, steps=PARITY_STEPS)
    assert mismatches == 0
    assert largest['probabilities'] <= TOLERANCE and largest['value'] <= TOLERANCE


def test_a_multi_asset_policy_exports_and_acts_as_its_checkpoint(tmp_path):
    log_dir = write_saved_run(tmp_path / 'run', multi_asset_env_config('discrete'), MULTI_ASSET_POLICY_CONFIG,
                              MULTI_ASSET_TRAINER_CONFIG, step=40)
    assert cli_main(['export', log_dir, str(tmp_path / 'artifact')]) == 0
    largest, mismatches = play_in_parity(log_dir, str(tmp_path / 'artifact'), steps=60)
    assert mismatches == 0
    assert largest['probabilities'] <= TOLERANCE and largest['value'] <= TOLERANCE
    with open(str(tmp_path / 'artifact' / 'manifest.json')) as f:
        manifest = json.load(f)
    assert manifest['action_space']['assets'] == ['A', 'B'] and set(manifest['data']) == {'A', 'B'}


def test_the_data_record_names_each_training_file_with_its_checksum(tmp_path):
    bars = make_random_walk_data(num_bars=200, seed=3)
    paths = [str(write_histdata_csv(bars.iloc[:120], tmp_path / 'DAT_ASCII_EURUSD_M1_201701.csv')),
             str(write_histdata_csv(bars.iloc[120:], tmp_path / 'DAT_ASCII_EURUSD_M1_201702.csv'))]
    several = BTgymDataset(filename=paths, episode_duration={'hours': 1})
    several.read_csv()
    record = data_description(several)['data']
    assert record['files'] == [{'path': path, 'sha256': sha256_file(path)} for path in paths]
    assert record['bars'] == 200 and record['first_bar'] == bars.index[0].isoformat()
    one = BTgymDataset(filename=tmp_path / 'DAT_ASCII_EURUSD_M1_201701.csv', episode_duration={'hours': 1})
    one.read_csv()
    assert data_description(one)['data']['files'] == [{'path': paths[0], 'sha256': sha256_file(paths[0])}]


def test_a_manifest_with_the_earlier_data_record_still_loads(reference_artifact, tmp_path):
    def earlier_record(manifest):  # a data line's record as export wrote it before the list of files
        manifest['data']['data'].pop('files', None)
        manifest['data']['data'].update(path="['a.csv', 'b.csv']", sha256=None)

    folder = copy_of(reference_artifact[1], tmp_path)
    edit_manifest(folder, earlier_record)
    with load_artifact(folder) as policy:
        assert policy.manifest['data']['data']['path'] == "['a.csv', 'b.csv']"


NO_TENSORFLOW = """
import sys
import numpy as np
from btgym_aac.deploy.runtime import load_artifact
policy = load_artifact(sys.argv[1])
observation = {name.split('/', 1)[1]: np.full(spec['shape'], 0.5, dtype=spec['dtype'])
               for name, spec in policy.manifest['observation_space'].items() if '/' not in name.split('/', 1)[1]}
action, probabilities, value = policy.act(observation)
policy.observe(0.1)
policy.act(observation)
print(action, round(float(probabilities.sum()), 6), 'tensorflow' in sys.modules)
"""


def test_the_onnx_backend_acts_without_importing_tensorflow(reference_artifact):
    _, artifact = reference_artifact
    finished = subprocess.run([sys.executable, '-c', NO_TENSORFLOW, artifact], capture_output=True, text=True,
                              timeout=120)
    assert finished.returncode == 0, finished.stderr
    action, total, imported = finished.stdout.split()
    assert action in {'0', '1', '2', '3'} and total == '1.0' and imported == 'False'


def test_state_saved_and_restored_continues_the_same_decisions(reference_artifact):
    _, artifact = reference_artifact
    observations = [{'external': np.random.default_rng(step).normal(size=(30, 1, 5)).astype(np.float32),
                     'internal': np.random.default_rng(100 + step).normal(size=(20, 1, 6)).astype(np.float32)}
                    for step in range(6)]
    with load_artifact(artifact) as straight, load_artifact(artifact) as resumed:
        expected = []
        for step, observation in enumerate(observations):
            expected.append(straight.act(observation)[1])
            straight.observe(0.01 * step)
            if step == 2:
                saved = json.loads(json.dumps(straight.get_state()))
        resumed.set_state(saved)
        got = []
        for step in range(3, 6):
            got.append(resumed.act(observations[step])[1])
            resumed.observe(0.01 * step)
    np.testing.assert_array_equal(np.array(got), np.array(expected[3:]))


def copy_of(artifact, tmp_path):
    target = str(tmp_path / 'copy')
    shutil.copytree(artifact, target)
    return target


def edit_manifest(folder, change):
    path = os.path.join(folder, 'manifest.json')
    with open(path) as f:
        manifest = json.load(f)
    change(manifest)
    with open(path, 'w') as f:
        json.dump(manifest, f)


def remove_onnx(folder):
    os.remove(os.path.join(folder, 'policy.onnx'))


def change_saved_model(folder):
    with open(os.path.join(folder, 'saved_model', 'saved_model.pb'), 'ab') as f:
        f.write(b'\0')


def add_a_file(folder):
    with open(os.path.join(folder, 'notes.txt'), 'w') as f:
        f.write('x')


def other_major_version(folder):
    edit_manifest(folder, lambda manifest: manifest['package'].update(version='7.0.0'))


def unknown_strategy(folder):
    edit_manifest(folder, lambda manifest: manifest['strategy'].update({'class': 'no_such_module:Strategy'}))


@pytest.mark.parametrize('damage, message', [
    (remove_onnx, 'misses policy.onnx'),
    (change_saved_model, 'the SHA-256 of saved_model/saved_model.pb does not match its manifest'),
    (add_a_file, 'holds notes.txt, which its manifest does not list'),
    (other_major_version, 'written by btgym-aac 7.0.0, another major version'),
    (unknown_strategy, "the policy artifact's class 'no_such_module:Strategy' cannot be imported"),
], ids=['missing-file', 'changed-file', 'unlisted-file', 'major-version', 'strategy-class'])
@pytest.mark.parametrize('backend', ['onnx', 'tf'])
def test_a_bad_artifact_is_refused_naming_the_problem(reference_artifact, tmp_path, damage, message, backend):
    folder = copy_of(reference_artifact[1], tmp_path)
    damage(folder)
    with pytest.raises(ArtifactError) as raised:
        load_artifact(folder, backend=backend)
    assert message in str(raised.value)


def test_a_folder_that_is_no_artifact_is_refused(tmp_path):
    with pytest.raises(ArtifactError, match='is not a folder'):
        load_artifact(str(tmp_path / 'missing'))
    with pytest.raises(ArtifactError, match='holds no manifest.json'):
        load_artifact(str(tmp_path))
    with pytest.raises(ValueError, match="backend must be one of onnx, tf, got 'torch'"):
        load_artifact(str(tmp_path), backend='torch')


def test_export_without_run_configs_names_the_checkpoint_only_option(tmp_path, capsys):
    (tmp_path / 'run' / CKPT_SUBDIR).mkdir(parents=True)
    assert cli_main(['export', str(tmp_path / 'run'), str(tmp_path / 'out')]) == 2
    assert 'holds no run_config.pkl' in capsys.readouterr().err and not (tmp_path / 'out').exists()


def test_export_replaces_an_earlier_artifact_but_not_a_folder_of_other_files(reference_artifact, tmp_path, capsys):
    log_dir, artifact = reference_artifact
    target = copy_of(artifact, tmp_path)
    assert cli_main(['export', log_dir, target]) == 0
    assert load_artifact(target).manifest['global_step'] == STEP
    add_a_file(target)
    assert cli_main(['export', log_dir, target]) == 2
    assert 'is not empty and does not hold an exported checkpoint' in capsys.readouterr().err
    assert os.path.isfile(os.path.join(target, 'notes.txt'))


def test_settings_written_as_json_read_back_equal():
    from gymnasium import spaces

    from btgym_aac.deploy.json_values import UnreadableValue, from_json, to_json
    from btgym_aac.spaces import DictSpace
    from btgym_aac.strategy import DevStrat_4_11

    settings = {'scale': np.linspace(3e3, 1e3, 5), 'actions': ('hold', 'buy'), 'cap': float('inf'), 'size': 2000,
                'strategy': DevStrat_4_11, 'names': ['A', 'B'], 'by_number': {1: 'one'}, 'flag': np.bool_(True),
                'shape': DictSpace({'external': spaces.Box(-1.0, 1.0, (30, 1, 3), np.float32)})}
    written = json.loads(json.dumps(to_json(settings)))
    read = from_json(written)
    np.testing.assert_array_equal(read['scale'], settings['scale'])
    assert read['scale'].dtype == np.float64 and read['actions'] == ('hold', 'buy') and read['cap'] == float('inf')
    assert read['strategy'] is DevStrat_4_11 and read['by_number'] == {1: 'one'} and read['flag'] is True
    assert read['names'] == ['A', 'B'] and read['size'] == 2000 and read['shape'] == settings['shape']
    assert isinstance(read['shape'], DictSpace)
    with pytest.raises(UnreadableValue, match='written as its repr'):
        from_json(to_json(object()))


def test_the_tf_backend_session_computes_as_the_training_sessions(reference_artifact):
    """Grappler's rewrites (on in a default session) changed a trained policy's outputs by about 1e-4; the TF
    backend's session, as every session of the package, runs without them."""
    with load_artifact(reference_artifact[1], backend='tf') as policy:
        assert policy.backend.session._config.graph_options.rewrite_options.disable_meta_optimizer


class _OnnxNeedsNewerMlDtypes:
    """An import finder failing tf2onnx's import as onnx >= 1.18 does beside ml_dtypes < 0.5."""

    def find_spec(self, name, path=None, target=None):
        if name == 'tf2onnx':
            raise AttributeError("module 'ml_dtypes' has no attribute 'float4_e2m1fn'")
        return None


def test_an_onnx_that_cannot_be_imported_beside_this_tensorflow_is_named_with_its_fix(tmp_path, monkeypatch):
    from btgym_aac.deploy.export import write_onnx

    monkeypatch.delitem(sys.modules, 'tf2onnx', raising=False)
    monkeypatch.setattr(sys, 'meta_path', [_OnnxNeedsNewerMlDtypes()] + sys.meta_path)
    with pytest.raises(ImportError, match=r"float4_e2m1fn'\): onnx 1\.18 and later need ml_dtypes 0\.5 or later, which "
                                          r"TensorFlow \S+ does not allow; install onnx<1\.18"):
        write_onnx(None, str(tmp_path / 'policy.onnx'))
    assert not (tmp_path / 'policy.onnx').exists()
