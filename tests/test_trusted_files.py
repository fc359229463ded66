"""Pickled run configs are read only from files and log dirs that this user (or root) owns and no other user can
write: anything else is refused with a message naming the file and the override."""
import os
import pwd

import pytest

from btgym_aac.cli import main as cli_main
from btgym_aac.distributed.run_config import RUN_CONFIG_DICTS, RUN_CONFIG_FILE, pickle_run_config, write_run_config
from btgym_aac.evaluation.loading import read_run_config
from btgym_aac.paths import UntrustedFileError


@pytest.fixture
def log_dir(tmp_path):
    folder = tmp_path / 'run'
    write_run_config(str(folder), pickle_run_config({name: {'marker': name} for name in RUN_CONFIG_DICTS}))
    os.chmod(folder, 0o755)
    os.chmod(folder / RUN_CONFIG_FILE, 0o644)
    return folder


def test_a_run_config_of_this_user_is_read(log_dir):
    assert read_run_config(str(log_dir))['policy_config'] == {'marker': 'policy_config'}


def test_a_run_config_writable_by_others_is_refused_unless_allowed(log_dir):
    path = log_dir / RUN_CONFIG_FILE
    os.chmod(path, 0o646)
    with pytest.raises(UntrustedFileError, match=r'refusing to load {}: it is writable by every user \(mode 646\), '
                                                 r'and unpickling it can run any code'.format(path)):
        read_run_config(str(log_dir))
    assert read_run_config(str(log_dir), allow_untrusted=True)['env_config'] == {'marker': 'env_config'}


def test_a_log_dir_writable_by_others_is_refused_but_a_sticky_one_is_not(log_dir):
    os.chmod(log_dir, 0o777)
    with pytest.raises(UntrustedFileError, match=r'its folder is writable by every user \(mode 777\)'):
        read_run_config(str(log_dir))
    os.chmod(log_dir, 0o1777)  # like /tmp: others may add files but not replace this user's
    assert read_run_config(str(log_dir))['trainer_config'] == {'marker': 'trainer_config'}


@pytest.mark.skipif(os.geteuid() != 0, reason='only root can give a file to another user')
def test_a_run_config_owned_by_another_user_is_refused_by_evaluate(log_dir, capsys):
    os.chown(log_dir / RUN_CONFIG_FILE, 65534, 65534)
    with pytest.raises(UntrustedFileError, match='it is owned by uid 65534, not by you'):
        read_run_config(str(log_dir))
    assert cli_main(['evaluate', str(log_dir)]) == 2
    error = capsys.readouterr().err
    assert 'btgym-aac evaluate: refusing to load' in error and '--allow-untrusted-config' in error


@pytest.mark.skipif(os.geteuid() != 0, reason='only root can give a file to another group')
def test_a_run_config_writable_by_a_group_with_other_members_is_refused(log_dir):
    others = sorted(user.pw_name for user in pwd.getpwall() if user.pw_gid == 65534 and user.pw_uid != 0)
    if not others:
        pytest.skip('needs a user other than root whose primary group is 65534 (nobody / nogroup); there is none here')
    path = log_dir / RUN_CONFIG_FILE
    os.chmod(path, 0o664)
    assert read_run_config(str(log_dir))['env_config'] == {'marker': 'env_config'}  # the owner's own group
    os.chown(path, -1, 65534)
    with pytest.raises(UntrustedFileError, match=r'writable by its group \(mode 664\), gid 65534, which has other '
                                                 r'members \({}'.format(others[0])):
        read_run_config(str(log_dir))
    os.chmod(path, 0o644)
    assert read_run_config(str(log_dir))['env_config'] == {'marker': 'env_config'}
