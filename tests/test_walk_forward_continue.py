"""`btgym-aac walk-forward --continue`: a walk-forward interrupted after its first fold continues with the next fold
started from the previous fold's checkpoint, and is refused once its data file changed."""
import contextlib
import io
import json
import os
import pathlib
import re

import numpy as np
import pytest

from btgym_aac.distributed import launcher as launcher_module
from btgym_aac.cli import main as cli_main
from btgym_aac.compat import tf
from btgym_aac.data import make_random_walk_data, write_histdata_csv
from btgym_aac.distributed.checkpoints import latest_checkpoint
from btgym_aac.walk_forward.runner import SETTINGS_FILE, _check_settings
from small_runs import CONFIG_FILE as WALK_FORWARD_CONFIG_FILE

pytestmark = pytest.mark.xdist_group('walk_forward_continue')  # one xdist worker builds the module's fixtures

CONFIG_FILE = WALK_FORWARD_CONFIG_FILE + '''
trainer_config = {'class_ref': trainer_config['class_ref'],
                  'kwargs': {'opt_learn_rate': 1e-12, 'rollout_length': 20, 'time_flat': True}}
launcher_config = {'save_secs': 3600, 'show_progress': False}
'''
"""A learn rate of 1e-12: a fold started from the previous fold's checkpoint ends with its weights."""


def cli(arguments):
    """(exit status, stderr) of `btgym-aac` run in this process."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = cli_main(arguments)
    return code, stderr.getvalue()


def interrupt_fold_1(make_launcher):
    """`make_launcher` that raises KeyboardInterrupt (Ctrl-C) for fold 1 once its launcher is made (which leaves its
    lock file in the fold's log dir), before it trains: a fold stopped before its first checkpoint."""

    def make(configs, **kwargs):
        launcher = make_launcher(configs, **kwargs)
        if configs['cluster_config']['log_dir'].endswith(os.path.join('fold_1', 'run')):
            raise KeyboardInterrupt
        return launcher

    return make


def model_weights(ckpt_dir):
    reader = tf.train.load_checkpoint(latest_checkpoint(ckpt_dir))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith('global/') and 'Adam' not in name and 'global_step' not in name
            and 'global_episode' not in name}


@pytest.fixture(scope='module')
def interrupted(tmp_path_factory):
    """A `walk-forward --continue` of 2 folds interrupted after fold 0: (command, out folder, its stderr, the entries
    of the out folder and of fold 1's folder it left)."""
    root = tmp_path_factory.mktemp('walk_forward_continue')
    config = root / 'config.py'
    config.write_text(CONFIG_FILE)
    data = write_histdata_csv(make_random_walk_data(num_bars=3 * 1440, seed=1), str(root / 'bars.csv'))
    out = root / 'wf'
    command = ['walk-forward', str(config), '--data', data, '--folds', '2', '--train-steps', '100',
               '--test-episodes', '1', '--out', str(out), '--continue', '--no-episode-plots']
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(launcher_module, 'make_launcher', interrupt_fold_1(launcher_module.make_launcher))
        code, stderr = cli(command)
    assert code == 130, stderr
    left = {'out': sorted(os.listdir(str(out))), 'fold_1': sorted(os.listdir(str(out / 'fold_1'))),
            'fold_1/run': sorted(os.listdir(str(out / 'fold_1' / 'run')))}
    return command, out, stderr, left


def files_in(folder):
    """{path relative to `folder`: (size, modification time)} of every file under it."""
    files = {}
    for parent, _, names in os.walk(str(folder)):
        for name in names:
            path = os.path.join(parent, name)
            files[os.path.relpath(path, str(folder))] = (os.path.getsize(path), os.path.getmtime(path))
    return files


def test_an_interrupted_walk_forward_says_how_to_continue_and_keeps_its_first_fold(interrupted):
    _, out, stderr, left = interrupted
    assert stderr.endswith('\n\nwalk-forward interrupted: run the same command again to continue it\n')
    assert left == {'out': ['fold_0', 'fold_1', 'walk_forward_settings.json'],
                    'fold_1': ['run', 'test.csv', 'train.csv'], 'fold_1/run': ['.data_cache', '.launcher.lock']}
    assert json.loads((out / 'fold_0' / 'fold.json').read_text())['continued_from'] is None
    assert os.listdir(str(out / 'fold_0' / 'evaluation')) == ['report.json']  # --no-episode-plots


def test_continuing_after_the_data_file_changed_is_refused_naming_both_versions(interrupted):
    """The settings file holds the data file's path, size and modification time: a rewritten file is refused with
    exit status 2 before anything trains."""
    command, out, _, _ = interrupted
    data = pathlib.Path(command[command.index('--data') + 1])
    before = json.loads((out / 'walk_forward_settings.json').read_text())['data']
    original, stat, files = data.read_bytes(), data.stat(), files_in(out)
    try:
        write_histdata_csv(make_random_walk_data(num_bars=3 * 1440, seed=2), str(data))
        now = [[str(data), data.stat().st_size, data.stat().st_mtime]]
        code, stderr = cli(command)
    finally:
        data.write_bytes(original)
        os.utime(str(data), ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert code == 2
    assert stderr == ('btgym-aac walk-forward: {} holds a walk-forward with other settings (data {!r}, not {!r}): '
                      'continue it with the same ones, or give another --out\n'.format(out, before, now))
    assert files_in(out) == files


def test_continuing_with_other_configs_is_refused_naming_their_digests(interrupted, tmp_path):
    """A config file changed between a stop and the rerun would mix folds trained with other settings."""
    command, out, _, _ = interrupted
    changed = tmp_path / 'changed.py'
    changed.write_text(CONFIG_FILE.replace("'opt_learn_rate': 1e-12", "'opt_learn_rate': 1e-4"))
    files = files_in(out)
    code, stderr = cli([command[0], str(changed)] + command[2:])
    assert code == 2
    assert re.search(r"holds a walk-forward with other settings \(configs '\w{16}', not '\w{16}'\)", stderr), stderr
    assert files_in(out) == files


def test_a_walk_forward_of_an_earlier_version_continues_without_the_configs_check(tmp_path):
    settings = {'folds': 2, 'seed': 0}
    (tmp_path / SETTINGS_FILE).write_text(json.dumps(settings))  # recorded before configs were
    _check_settings(str(tmp_path), dict(settings, configs='0123456789abcdef'))
    with pytest.raises(ValueError, match="other settings \\(folds 2, not 3\\)"):
        _check_settings(str(tmp_path), dict(settings, folds=3, configs='0123456789abcdef'))


def test_continuing_trains_the_next_fold_from_the_previous_folds_checkpoint(interrupted, capsys):
    """Fold 0 is read back; fold 1, stopped before its first checkpoint, starts again from fold 0's: it records that
    checkpoint folder and, barely trained, ends with its weights. The printed results name the costs."""
    command, out, _, _ = interrupted
    fold_0 = (out / 'fold_0' / 'fold.json').read_text()
    code, stderr = cli(command)
    assert code == 0, stderr
    assert 'costs: spread 0, slippage 0, slippage_fixed 0, commission 0.0001, commission_scheme percent (run ' \
           'settings)' in capsys.readouterr().out.splitlines()
    report = json.loads((out / 'walk_forward.json').read_text())
    assert (out / 'fold_0' / 'fold.json').read_text() == fold_0  # read back, not redone
    previous_checkpoints = str(out / 'fold_0' / 'run' / 'current_train_checkpoint')
    assert [fold['continued_from'] for fold in report['folds']] == [None, previous_checkpoints]
    assert report['settings']['continue_training'] is True
    started_from = model_weights(previous_checkpoints)
    trained = model_weights(str(out / 'fold_1' / 'run' / 'current_train_checkpoint'))
    assert trained.keys() == started_from.keys() and 'global/dense_encoder/_layer_1/w' in trained
    for name, value in trained.items():
        np.testing.assert_allclose(value, started_from[name], atol=1e-6, err_msg=name)
