"""The flags of orders as actions (`--stop-loss`, `--take-profit`, `--distance-unit`, `--pip-size`, `--atr-period`,
`--trailing-stop`, `--sizer`): the env kwargs they set for every command that builds configs, and the settings they
refuse before anything runs."""
import pytest

from btgym_aac import cli as cli_module
from btgym_aac.cli import main as cli_main
from btgym_aac.env.training_envs import build_from_config, training_env_config

FLAGS = ['--stop-loss', '20', '--take-profit', '40', '--distance-unit', 'pips', '--pip-size', '0.01',
         '--atr-period', '7', '--trailing-stop', '--sizer', 'risk=1.5']
EXPECTED = {'stop_loss': 20.0, 'take_profit': 40.0, 'distance_unit': 'pips', 'pip_size': 0.01, 'atr_period': 7,
            'trailing_stop': True, 'sizer': {'kind': 'risk', 'percent': 1.5}, 'order_size': None}


def env_kwargs(arguments):
    parser = cli_module.build_parser()
    return cli_module._configs_from_args(parser.parse_args(arguments))['env_config']['kwargs']


def test_order_flags_set_the_env_kwargs_of_every_command_that_builds_configs():
    for command in (['train'], ['walk-forward', '--data', 'a.csv', '--folds', '1'],
                    ['sweep', '--data', 'a.csv', '--trials', '2'], ['train', '--assets']):
        kwargs = env_kwargs(command + FLAGS)
        assert {key: kwargs[key] for key in EXPECTED} == EXPECTED, command
    plain = env_kwargs(['train'])
    assert not set(EXPECTED) - {'order_size'} & set(plain)
    assert plain['order_size'] == 2000  # the reference configuration's, kept without --sizer
    assert env_kwargs(['train', '--sizer', 'fixed=700'])['sizer'] == {'kind': 'fixed', 'stake': 700}
    assert env_kwargs(['train', '--sizer', 'percent=10'])['sizer'] == {'kind': 'percent', 'percent': 10.0}


def test_the_env_built_from_the_flags_config_gives_its_strategy_the_settings():
    config = training_env_config(cli_module._configs_from_args(cli_module.build_parser().parse_args(
        ['train'] + FLAGS))['env_config'])
    env = build_from_config(config)
    try:
        assert {key: env.strategy_params[key] for key in EXPECTED} == EXPECTED
    finally:
        env.close()


@pytest.mark.parametrize('flags, message', [
    (['--trailing-stop'], 'trailing_stop=True needs stop_loss (the trail distance), got stop_loss=None'),
    (['--sizer', 'risk=1'], '--sizer: sizer {\'kind\': \'risk\', \'percent\': 1.0} needs stop_loss (the risk of a '
                            'trade is its stop distance), got stop_loss=None'),
    (['--stop-loss', '1', '--sizer', 'risk=200'], "--stop-loss, --sizer: sizer['percent'] must be a finite number in "
                                                  "[0, 100], got 200.0"),
    (['--stop-loss', '-1'], 'stop_loss must be a finite number > 0, got -1.0'),
    (['--atr-period', '0'], 'atr_period'),
    (['--assets', '--portfolio', '--take-profit', '1'], 'need discrete actions (portfolio_actions)'),
])
def test_bad_order_flags_stop_before_anything_runs(tmp_path, capsys, flags, message):
    assert cli_main(['train', '--log-dir', str(tmp_path / 'run')] + flags) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / 'run').exists()


@pytest.mark.parametrize('value, message', [
    ('big=3', "fixed=UNITS, percent=PERCENT or risk=PERCENT, got 'big=3'"),
    ('percent=ten', "percent= takes a number, got 'ten'"),
])
def test_a_sizer_flag_that_is_no_kind_and_number_is_a_usage_error(tmp_path, capsys, value, message):
    with pytest.raises(SystemExit) as stopped:
        cli_main(['train', '--log-dir', str(tmp_path / 'run'), '--sizer', value])
    assert stopped.value.code == 2
    assert 'argument --sizer: ' + message in capsys.readouterr().err
    assert not (tmp_path / 'run').exists()
