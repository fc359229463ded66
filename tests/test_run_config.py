"""A run's configs: one default per setting, presets as overrides of them, and the one rule that stacks the
layers (preset, config file, Launcher arguments, flags)."""
import inspect

import pytest

from btgym_aac.algorithms.config import AacConfig
from btgym_aac.class_refs import ClassRef, class_name
from btgym_aac.cli import _configs_from_args, build_parser
from btgym_aac.cli.config_files import algo_of
from btgym_aac.distributed.run_config import (DEFAULT_ALGO, DEFAULT_PRESET, MULTI_ASSET_ALGOS, MULTI_ASSET_LAYERS,
                                              PRESETS, TRAINER_CLASSES, config_digest, default_algo, default_configs,
                                              digested_configs, launcher_configs, launcher_defaults, merge_config,
                                              merge_configs, multi_asset_env_settings, trainer_algo)

REFERENCE_TRAINER_SETTINGS = dict(
    opt_learn_rate=1e-4, opt_end_learn_rate=1e-5, opt_decay_steps=50e6, model_gamma=0.99, model_gae_lambda=1.0,
    model_beta=0.05, rollout_length=20, time_flat=True, model_summary_freq=10, episode_summary_freq=1,
    env_render_freq=10)
"""The original notebook's trainer settings, as the reference configuration has always run them."""


def argument_defaults(cls):
    """Default of every constructor argument of `cls`, its base classes' included (a subclass's first)."""
    defaults = {}
    for klass in cls.__mro__:
        if '__init__' in vars(klass):
            for name, parameter in inspect.signature(klass.__init__).parameters.items():
                if parameter.default is not inspect.Parameter.empty:
                    defaults.setdefault(name, parameter.default)
    return defaults


def test_a_layer_updates_config_dicts_key_by_key_and_kwargs_argument_by_argument():
    below = {'class_ref': 'A', 'kwargs': {'x': 1, 'duration': {'days': 1, 'hours': 2}}}
    merged = merge_config(below, {'kwargs': {'duration': {'hours': 8}, 'y': 2}})
    assert merged == {'class_ref': 'A', 'kwargs': {'x': 1, 'duration': {'hours': 8}, 'y': 2}}
    assert below == {'class_ref': 'A', 'kwargs': {'x': 1, 'duration': {'days': 1, 'hours': 2}}}  # left alone
    assert merge_config({'num_workers': 2, 'log_dir': 'a'}, {'log_dir': 'b'}) == {'num_workers': 2, 'log_dir': 'b'}


def test_a_class_config_that_names_its_class_replaces_the_one_below_whole():
    below = {'class_ref': 'A', 'kwargs': {'x': 1}}
    assert merge_config(below, {'class_ref': 'A', 'kwargs': {'y': 2}}) == {'class_ref': 'A', 'kwargs': {'y': 2}}
    assert merge_config(below, {'class_ref': 'B'}) == {'class_ref': 'B', 'kwargs': {}}
    assert merge_config(below, None) == below and merge_config(below, None)['kwargs'] is not below['kwargs']


@pytest.mark.parametrize('layer, message', [(['a'], 'expected a config dict'), ({'kwargs': 3}, 'kwargs must be')])
def test_a_layer_that_is_not_a_config_dict_is_refused(layer, message):
    with pytest.raises(ValueError, match=message):
        merge_config({'class_ref': 'A', 'kwargs': {}}, layer)


def test_the_launcher_and_a_config_file_stack_by_the_same_rule(tmp_path):
    user = {'policy_config': {'kwargs': {'lstm_layers': (8,)}}, 'trainer_config': {'class_ref': 'mine.T'},
            'cluster_config': {'num_workers': 3}}
    defaults = launcher_defaults()
    expected = merge_configs(defaults, user)
    configs = launcher_configs(**user)
    for name in ('policy_config', 'trainer_config', 'cluster_config'):
        assert configs[name] == expected[name]
    assert configs['policy_config']['class_ref'] == defaults['policy_config']['class_ref']
    config_file = tmp_path / 'run.py'
    config_file.write_text("trainer_config = {'kwargs': {'rollout_length': 7}}\n"
                           "policy_config = {'class_ref': 'mine.P', 'kwargs': {'width': 3}}\n"
                           "cluster_config = {'num_workers': 3}\n")
    from_file = _configs_from_args(build_parser().parse_args(['train', str(config_file), '--algo', 'ppo']))
    preset = default_configs('ppo', import_classes=False)
    assert from_file['trainer_config']['kwargs'] == dict(preset['trainer_config']['kwargs'], rollout_length=7)
    assert from_file['trainer_config']['class_ref'] == ClassRef('btgym_aac.algorithms.aac', 'PPO')
    assert from_file['policy_config'] == {'class_ref': 'mine.P', 'kwargs': {'width': 3}}
    assert from_file['cluster_config'] == dict(preset['cluster_config'], num_workers=3)


def test_the_algo_flag_sets_the_class_and_keeps_the_config_files_trainer_kwargs(tmp_path):
    config_file = tmp_path / 'run.py'
    config_file.write_text("trainer_config = {'class_ref': 'mine.T', 'kwargs': {'rollout_length': 7}}\n")
    configs = _configs_from_args(build_parser().parse_args(['train', str(config_file), '--algo', 'unreal']))
    assert configs['trainer_config'] == {'class_ref': ClassRef('btgym_aac.algorithms.aac', 'Unreal'),
                                         'kwargs': {'rollout_length': 7}}


@pytest.mark.parametrize('algo', ['a3c', 'unreal', 'ppo'])
def test_the_reference_preset_gives_the_original_notebooks_settings(algo):
    configs = default_configs(algo, preset='reference')
    trainer = AacConfig(**configs['trainer_config']['kwargs'])
    assert {name: getattr(trainer, name) for name in REFERENCE_TRAINER_SETTINGS} == REFERENCE_TRAINER_SETTINGS
    policy = configs['policy_config']
    assert policy['class_ref'].__name__ == 'AacStackedRL2Policy'
    assert argument_defaults(policy['class_ref'])['lstm_layers'] == (256, 256)
    assert policy['kwargs'] == {'lstm_2_init_period': 60, 'logits_layer_norm': False}
    assert configs['cluster_config']['num_workers'] == 2 and configs['launcher_config']['max_env_steps'] == 20000


def test_the_fast_preset_is_the_reference_run_with_a_smaller_policy_more_envs_and_a_faster_learn_rate():
    reference, fast = (default_configs('a3c', import_classes=False, preset=name) for name in ('reference', 'fast'))
    assert config_digest({'env': fast['env_config']}) == config_digest({'env': reference['env_config']})
    assert fast['policy_config']['class_ref'] == reference['policy_config']['class_ref']
    assert fast['policy_config']['kwargs'] == dict(reference['policy_config']['kwargs'], lstm_layers=(64, 64))
    assert fast['cluster_config'] == dict(reference['cluster_config'], num_envs=8)
    trainer = AacConfig(**fast['trainer_config']['kwargs'])
    assert (trainer.opt_learn_rate, trainer.opt_end_learn_rate, trainer.model_beta) == (1e-3, None, 0.01)  # held
    assert fast['launcher_config'] == dict(reference['launcher_config'], preset='fast')


def test_the_dense_preset_is_the_fast_run_with_the_dense_policy_as_it_comes():
    fast, dense = (default_configs('a3c', import_classes=False, preset=name) for name in ('fast', 'dense'))
    assert dense['policy_config'] == {'class_ref': ClassRef('btgym_aac.algorithms.policy.dense', 'AacDensePolicy'),
                                      'kwargs': {}}
    for name in ('env_config', 'trainer_config', 'cluster_config'):
        assert config_digest({name: dense[name]}) == config_digest({name: fast[name]}), name
    assert dense['launcher_config'] == dict(fast['launcher_config'], preset='dense')


@pytest.mark.parametrize('algo, per_trainer', [('a3c', {'num_minibatches': 4}), ('ppo', {}), ('unreal', {})])
def test_the_tuned_preset_is_the_dense_run_reading_the_time_with_normalised_advantages(algo, per_trainer):
    dense, tuned = (default_configs(algo, import_classes=False, preset=name) for name in ('dense', 'tuned'))
    assert tuned['policy_config'] == dict(dense['policy_config'], kwargs=dict(
        dense['policy_config']['kwargs'], datetime_features=True, heads_read_features=True))
    assert tuned['trainer_config'] == dict(dense['trainer_config'], kwargs=dict(
        dense['trainer_config']['kwargs'], normalize_advantages=True, model_gamma=0.9, **per_trainer))
    env_kwargs = {key: value for key, value in dense['env_config']['kwargs'].items() if key != 'state_ext_scale'}
    assert tuned['env_config']['kwargs'] == dict(env_kwargs, strategy=ClassRef('btgym_aac.strategy.gen4',
                                                                               'DevStrat_4_12'))
    assert tuned['cluster_config'] == dense['cluster_config']
    assert tuned['launcher_config'] == dict(dense['launcher_config'], preset='tuned')


@pytest.mark.parametrize('preset', sorted(PRESETS))
def test_a_preset_overrides_defaults_and_never_restates_one(preset):
    """A preset's trainer settings are AacConfig fields whose values differ from AacConfig's defaults, and its
    cluster settings differ from the Launcher's: every default is written once."""
    layer = PRESETS[preset]('a3c')
    trainer_defaults = AacConfig()
    for name, value in layer['trainer_config']['kwargs'].items():
        assert getattr(trainer_defaults, name) != value, name
    cluster_defaults = launcher_defaults()['cluster_config']
    for name, value in layer['cluster_config'].items():
        assert name in cluster_defaults and cluster_defaults[name] != value, name
    policy_defaults = argument_defaults(layer['policy_config']['class_ref'].resolve())
    for name, value in layer['policy_config']['kwargs'].items():
        assert policy_defaults.get(name, inspect.Parameter.empty) != value, name


@pytest.mark.parametrize('preset', sorted(MULTI_ASSET_LAYERS))
@pytest.mark.parametrize('algo', ['a3c', 'unreal', 'ppo'])
def test_a_layer_for_several_assets_overrides_its_presets_settings_and_never_restates_one(preset, algo):
    single = AacConfig(**default_configs(algo, import_classes=False, preset=preset)['trainer_config']['kwargs'])
    layer = MULTI_ASSET_LAYERS[preset](algo)
    assert set(layer) <= {'trainer_config', 'policy_config', 'cluster_config'}
    for name, value in layer.get('trainer_config', {}).get('kwargs', {}).items():
        assert getattr(single, name) != value, name


@pytest.mark.parametrize('algo, per_trainer', [
    ('a3c', {'rollout_length': 64}), ('unreal', {'rollout_length': 64}),
    ('ppo', {'rollout_length': 64, 'num_epochs': 4, 'num_minibatches': 8, 'behaviour_logits': True,
             'opt_learn_rate': 3e-4, 'model_beta': 0.0, 'model_gae_lambda': 0.95, 'clip_epsilon': 0.2})])
def test_the_tuned_preset_on_several_assets_gives_longer_rollouts_and_ppo_sb3s_updates(algo, per_trainer):
    single, multi = (default_configs(algo, import_classes=False, multi_asset=flag) for flag in (False, True))
    assert multi['trainer_config'] == dict(single['trainer_config'], kwargs=dict(
        single['trainer_config']['kwargs'], **per_trainer))
    for name in ('env_config', 'policy_config', 'cluster_config', 'launcher_config'):
        assert config_digest({name: multi[name]}) == config_digest({name: single[name]}), name
    assert AacConfig(**single['trainer_config']['kwargs']).rollout_length == 20


@pytest.mark.parametrize('preset', ['reference', 'fast', 'dense'])
def test_presets_without_a_layer_for_several_assets_are_the_same_on_them(preset):
    assert preset not in MULTI_ASSET_LAYERS
    single, multi = (default_configs('a3c', import_classes=False, preset=preset, multi_asset=flag)
                     for flag in (False, True))
    assert config_digest(multi) == config_digest(single)


def _asset_flags(folder):
    """`--assets` entries of two empty CSV files in `folder` (read only when a run starts)."""
    files = []
    for name in ('X', 'Y'):
        (folder / (name + '.csv')).write_text('')
        files.append('{}={}'.format(name, folder / (name + '.csv')))
    return files


RUN_COMMANDS = [['train'], ['walk-forward', '--folds', '1'], ['sweep', '--trials', '2']]


@pytest.mark.parametrize('command', RUN_COMMANDS)
def test_the_assets_flag_takes_the_presets_layer_for_several_assets_under_a_config_file(command, tmp_path):
    files = _asset_flags(tmp_path)
    rollout = AacConfig().rollout_length

    def rollout_length(*flags):
        configs = _configs_from_args(build_parser().parse_args(command + list(flags)))
        return configs['trainer_config']['kwargs'].get('rollout_length', rollout)

    assert rollout_length('--assets', *files) == 64
    assert rollout_length('--assets', *files, '--preset', 'reference') == rollout
    assert rollout_length('--assets', *files, '--algo', 'ppo') == 64
    assert rollout_length('--assets', *files, '--algo', 'unreal') == 64
    config_file = tmp_path / 'run.py'
    config_file.write_text("trainer_config = {'kwargs': {'rollout_length': 7}}\n")
    assert rollout_length(str(config_file), '--assets', *files) == 7
    if command == ['train']:
        assert rollout_length() == rollout


@pytest.mark.parametrize('command', RUN_COMMANDS)
def test_a_run_on_several_assets_under_tuned_trains_ppo_unless_it_names_its_trainer(command, tmp_path):
    files = _asset_flags(tmp_path)

    def trainer(*flags):
        args = build_parser().parse_args(command + list(flags))
        trainer_config = _configs_from_args(args)['trainer_config']
        class_ref = trainer_config['class_ref']
        return (algo_of(args), class_ref.name if isinstance(class_ref, ClassRef) else class_ref.__name__,
                trainer_config['kwargs'])

    algo, class_name, kwargs = trainer('--assets', *files)
    assert (algo, class_name) == ('ppo', 'PPO') and kwargs['num_epochs'] == 4
    assert trainer('--assets', *files, '--preset', 'reference')[:2] == ('a3c', 'A3C')
    algo, class_name, kwargs = trainer('--assets', *files, '--algo', 'a3c')
    assert (algo, class_name) == ('a3c', 'A3C') and 'num_epochs' not in kwargs and kwargs['num_minibatches'] == 4
    assert trainer('--data', files[0].split('=')[1])[:2] == ('a3c', 'A3C')
    config_file = tmp_path / 'run.py'
    config_file.write_text("from btgym_aac.algorithms.aac import Unreal\n"
                           "trainer_config = {'class_ref': Unreal, 'kwargs': {}}\n")
    assert trainer(str(config_file), '--assets', *files)[1:] == ('Unreal', {})


@pytest.mark.parametrize('command', RUN_COMMANDS)
def test_ppo_on_several_assets_under_tuned_gets_one_head_per_asset(command, tmp_path):
    files = _asset_flags(tmp_path)

    def encoding(*flags):
        env_kwargs = _configs_from_args(build_parser().parse_args(command + list(flags)))['env_config']['kwargs']
        return env_kwargs.get('action_encoding')

    assert encoding('--assets', *files) == encoding('--assets', *files, '--algo', 'ppo') == 'per_asset'
    for other in (['--algo', 'a3c'], ['--algo', 'unreal'], ['--preset', 'reference'], ['--portfolio']):
        assert encoding('--assets', *files, *other) is None, other
    config_file = tmp_path / 'run.py'
    config_file.write_text("from btgym_aac.algorithms.aac import PPO\n"
                           "class MyPPO(PPO):\n    pass\n"
                           "trainer_config = {'class_ref': MyPPO, 'kwargs': {}}\n")
    assert encoding(str(config_file), '--assets', *files) is None
    assert encoding('--assets', *files, '--action-encoding', 'joint') == 'joint'
    assert encoding('--assets', *files, '--algo', 'a3c', '--action-encoding', 'per_asset') == 'per_asset'
    with pytest.raises(ValueError, match='--action-encoding is for discrete actions; --portfolio'):
        encoding('--assets', *files, '--portfolio', '--action-encoding', 'joint')
    with pytest.raises(ValueError, match='--action-encoding needs --assets'):
        encoding('--data', files[0].split('=')[1], '--action-encoding', 'joint')


def test_the_env_settings_for_several_assets_name_the_trainer_by_its_class():
    tuned_ppo = multi_asset_env_settings('tuned', 'ppo')
    assert tuned_ppo == {'action_encoding': 'per_asset', 'strategy': tuned_ppo['strategy']}
    assert class_name(tuned_ppo['strategy']) == ('btgym_aac.strategy.multi_asset', 'MultiAssetSpreadStrategy')
    assert multi_asset_env_settings('tuned', 'ppo', portfolio=True) == {}
    assert multi_asset_env_settings('tuned', 'a3c') == multi_asset_env_settings('reference', 'ppo') == {}
    assert multi_asset_env_settings('tuned', None) == {}
    for algo in TRAINER_CLASSES:
        for import_classes in (False, True):
            assert trainer_algo(default_configs(algo, import_classes=import_classes)['trainer_config']) == algo
    assert trainer_algo({'class_ref': ClassRef('my_trainers', 'PPO')}) is None


def test_the_default_trainer_is_a3c_but_on_several_assets_the_presets_own():
    assert default_algo() == default_algo('reference', multi_asset=True) == DEFAULT_ALGO == 'a3c'
    assert default_algo('tuned', multi_asset=True) == MULTI_ASSET_ALGOS['tuned'] == 'ppo'
    assert set(MULTI_ASSET_ALGOS) <= set(MULTI_ASSET_LAYERS)
    for multi_asset in (False, True):
        trainer = default_configs(import_classes=False, multi_asset=multi_asset)['trainer_config']
        assert trainer == default_configs(default_algo(multi_asset=multi_asset), import_classes=False,
                                          multi_asset=multi_asset)['trainer_config']
    assert trainer['class_ref'].name == 'PPO'


def test_an_unknown_preset_or_algo_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match="unknown preset 'quick'; known: reference, fast, dense, tuned"):
        default_configs(preset='quick')
    with pytest.raises(ValueError, match="unknown algo 'dqn'; known: a3c, unreal, ppo"):
        default_configs('dqn')


def test_the_preset_and_the_kept_checkpoints_are_left_out_of_the_digest():
    configs = default_configs('a3c', import_classes=False)
    assert configs['launcher_config']['preset'] == DEFAULT_PRESET == 'tuned'
    unnamed = dict(configs, launcher_config={key: value for key, value in configs['launcher_config'].items()
                                             if key != 'preset'})
    assert config_digest(configs) == config_digest(unnamed)
    assert 'preset' not in digested_configs(configs)['launcher_config']
    keeping = dict(configs, launcher_config=dict(configs['launcher_config'], keep_checkpoint_every_steps=5000))
    assert config_digest(keeping) == config_digest(configs)
    assert config_digest(dict(configs, launcher_config=dict(configs['launcher_config'], max_env_steps=5))) != \
        config_digest(configs)


def test_a_launcher_records_the_preset_of_its_configs_in_the_run(tmp_path):
    from btgym_aac.distributed.launcher import make_launcher

    configs = default_configs('a3c', import_classes=False, preset='reference')
    configs['cluster_config'] = dict(configs['cluster_config'], log_dir=str(tmp_path / 'run'))
    assert make_launcher(configs).run_config()['preset'] == 'reference'
    del configs['launcher_config']['preset']
    assert make_launcher(configs).run_config()['preset'] is None
