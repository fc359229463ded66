"""A run's configs: their defaults, the presets, the one rule that stacks them, their checks, their digest and the
file a run keeps them in.

A run is configured by five dicts (`CONFIG_NAMES`): `env_config`, `policy_config` and `trainer_config` (class
configs: `{'class_ref': class, 'kwargs': dict}`), `cluster_config` and `launcher_config` (the `Launcher`'s keyword
arguments). Every default is written once:
    * the Launcher's: `LAUNCHER_DEFAULTS` (`BTgymEnv`, `BaseAacPolicy`, `A3C`, the cluster settings) and the
      Launcher's own keyword defaults;
    * a class config's kwargs: the class's own (a trainer's settings: `algorithms.config.AacConfig`);
    * a preset (`PRESETS`) is a named layer of overrides of those; 'reference' is the original's notebook
      configuration, 'fast' the same run made cheaper (`_fast_preset`), 'dense' that with a small dense policy
      (`_dense_preset`) and 'tuned' that reading the time of day (`_tuned_preset`), the one `btgym-aac train`
      runs; a preset may have a layer of its own for envs of several assets (`MULTI_ASSET_LAYERS`), a trainer
      of its own for them (`MULTI_ASSET_ALGOS`) and env settings for each trainer (`MULTI_ASSET_ENV_SETTINGS`).

Layers stack by one rule (`merge_configs`), whether they come from a preset, a config file, a Launcher's
arguments or the command line: a layer's config dicts update the ones below key by key, a layer's `kwargs`
update the kwargs below argument by argument (an argument's value, a dict included, replaces the one below), and
a class config that names its `class_ref` replaces the class config below whole (its kwargs are for its class;
the class's own defaults fill in the rest). Command-line flags set single settings (`--algo` the trainer's class,
`--workers` `cluster_config['num_workers']`, ...), keeping the rest of their config.
"""
import copy
import hashlib
import json
import os

from btgym_aac.class_refs import ClassRef, class_name
from btgym_aac.config_modules import dumps_with_sources
from btgym_aac.validation import check_whole_number, is_finite_real

CONFIG_NAMES = ('env_config', 'cluster_config', 'policy_config', 'trainer_config', 'launcher_config')
CLASS_CONFIG_NAMES = ('env_config', 'policy_config', 'trainer_config')
DEFAULT_LOG_DIR = 'runs/btgym_aac'
DEFAULT_MAX_STEPS = 20000
DEFAULT_MAX_RESTARTS = 3
DEFAULT_RESTART_WINDOW_MINUTES = 10
"""The Launcher's restart budget: a task may be restarted `DEFAULT_MAX_RESTARTS` times within any
`DEFAULT_RESTART_WINDOW_MINUTES` minutes (docs/distributed.md, "Failures, restarts and stopping", says why)."""
TRAINER_CLASSES = {'a3c': 'A3C', 'unreal': 'Unreal', 'ppo': 'PPO'}
"""`--algo` names of the trainers of `btgym_aac.algorithms.aac`."""


def launcher_defaults():
    """The Launcher's default configs (`LAUNCHER_DEFAULTS`, fresh dicts); their classes as ClassRefs (the
    launcher process does not import them)."""
    from btgym_aac.distributed.tasks import default_start_method

    return dict(
        env_config={'class_ref': ClassRef('btgym_aac.env.base', 'BTgymEnv'), 'kwargs': {}},
        cluster_config={'host': '127.0.0.1', 'port': None, 'num_workers': 1, 'num_ps': 1, 'num_envs': 1,
                        'log_dir': './tmp/btgym_aac_log', 'initial_ckpt_dir': None,
                        'log_ckpt_subdir': 'current_train_checkpoint', 'network_isolation': 'auto',
                        'start_method': default_start_method()},
        policy_config={'class_ref': ClassRef('btgym_aac.algorithms.policy.base', 'BaseAacPolicy'), 'kwargs': {}},
        trainer_config={'class_ref': ClassRef('btgym_aac.algorithms.aac', 'A3C'), 'kwargs': {}},
        launcher_config={},
    )


def _reference_preset(algo):
    """The 'reference' preset: DevStrat_4_11 on the built-in sine data, RL2 stacked-LSTM policy, the original
    notebook's trainer settings, 2 workers.

    The policy's logits are not layer-normalised (`logits_layer_norm=False`, unlike the original's notebook):
    normalised logits limit how sure the policy can be of an action (with four actions and no learned offset, at
    most 0.77), and without them the trainers learn the reference env faster and end higher (docs/performance.md,
    "Against Stable-Baselines3").
    """
    from btgym_aac.env.registration import REFERENCE_ENV_KWARGS

    env_kwargs = copy.deepcopy(REFERENCE_ENV_KWARGS)
    env_kwargs['strategy'] = ClassRef('btgym_aac.strategy.gen4', 'DevStrat_4_11')
    return dict(
        env_config={'class_ref': ClassRef('btgym_aac.env.base', 'BTgymEnv'), 'kwargs': env_kwargs},
        cluster_config={'num_workers': 2, 'log_dir': DEFAULT_LOG_DIR},
        policy_config={'class_ref': ClassRef('btgym_aac.algorithms.policy.stacked_lstm', 'AacStackedRL2Policy'),
                       'kwargs': {'lstm_2_init_period': 60, 'logits_layer_norm': False}},
        trainer_config={'class_ref': ClassRef('btgym_aac.algorithms.aac', TRAINER_CLASSES[algo]), 'kwargs': dict(
            opt_end_learn_rate=1e-5, opt_decay_steps=50e6, model_beta=0.05, time_flat=True, model_summary_freq=10,
            episode_summary_freq=1)},
        launcher_config={'max_env_steps': DEFAULT_MAX_STEPS, 'save_secs': 60},
    )


def _fast_preset(algo):
    """The 'fast' preset: the reference's env, policy class and run, with LSTMs of 64 units, a held learn rate of
    1e-3, the trainer's default entropy weight (0.01) and 8 envs per worker acting in one batch: about half the
    reference's CPU per env step, for a like fraction of a known edge (docs/learning.md, "Presets").
    """
    layer = _reference_preset(algo)
    trainer_kwargs = layer['trainer_config']['kwargs']
    for name in ('opt_end_learn_rate', 'opt_decay_steps', 'model_beta'):
        del trainer_kwargs[name]
    trainer_kwargs['opt_learn_rate'] = 1e-3
    layer['policy_config']['kwargs']['lstm_layers'] = (64, 64)
    layer['cluster_config']['num_envs'] = 8
    return layer


def _dense_preset(algo):
    """The 'dense' preset: `fast`'s env, trainer and run with a small policy, `AacDensePolicy` as it comes (a dense
    encoder of 64 x 64 units over the flattened `external`, one LSTM of 64 units, noise-free heads): on the
    single-asset known-edge markets ahead of `fast` on regime switching and the intraday pattern and level with it
    on mean reversion; on the multi-asset ones, like `fast`, it takes nothing (docs/learning.md, "One hundred test
    episodes"; docs/multi-asset.md, "On 100 test episodes").
    """
    layer = _fast_preset(algo)
    layer['policy_config'] = {'class_ref': ClassRef('btgym_aac.algorithms.policy.dense', 'AacDensePolicy'),
                              'kwargs': {}}
    return layer


def _tuned_preset(algo):
    """The 'tuned' preset: `dense` on DevStrat_4_12 (SMA(8) to SMA(256) and the bar's time), the policy reading the
    time of day and of the week (`datetime_features`), its heads reading the encoder's features beside the LSTM's
    output (`heads_read_features`), advantages normalised per update (`normalize_advantages`), a discount of 0.9 per
    decision (`model_gamma`), and for A3C every train step's batch in 4 shuffled minibatches, an update each
    (`num_minibatches`; UNREAL's replay takes no minibatches, and PPO's were not measured): on the single-asset
    known-edge markets level with or ahead of `dense`, on the multi-asset ones the first preset to take part of the
    oracle, on markets made apart from the package level with SB3's PPO (docs/learning.md, "The tuned preset", "A
    shorter discount").
    """
    layer = _dense_preset(algo)
    env_kwargs = layer['env_config']['kwargs']
    env_kwargs['strategy'] = ClassRef('btgym_aac.strategy.gen4', 'DevStrat_4_12')
    del env_kwargs['state_ext_scale']  # DevStrat_4_12's own, one scale per SMA
    layer['policy_config']['kwargs'].update(datetime_features=True, heads_read_features=True)
    layer['trainer_config']['kwargs'].update(normalize_advantages=True, model_gamma=0.9)
    if algo == 'a3c':
        layer['trainer_config']['kwargs']['num_minibatches'] = 4
    return layer


PRESETS = {'reference': _reference_preset, 'fast': _fast_preset, 'dense': _dense_preset, 'tuned': _tuned_preset}
"""Preset name -> fn(algo) -> its layer of configs over `launcher_defaults()`."""


SB3_PPO_UPDATES = dict(num_epochs=10, num_minibatches=8, behaviour_logits=True, opt_learn_rate=3e-4, model_beta=0.0,
                       model_gae_lambda=0.95, clip_epsilon=0.2)
"""Stable-Baselines3's PPO defaults where this package has them (10 epochs over every train step's frames in
minibatches of 64, with 8 envs per worker and rollouts of 64: 8 minibatches; learn rate 3e-4, no entropy bonus, GAE
lambda 0.95, clip 0.2), the ratio taken against the acting policy's logits."""

MULTI_ASSET_PPO_UPDATES = dict(SB3_PPO_UPDATES, num_epochs=4)
"""PPO's updates under `tuned` on envs of several assets: `SB3_PPO_UPDATES` with 4 epochs instead of 10. With one
head per asset, at 40,000 env steps 0.70 of the basket's oracle against 0.60 and 0.37 of the pair's against 0.46; at
100,000, 0.73 of the basket's against 0.56 and 0.46 of the pair's against 0.49 (5 seeds each; docs/multi-asset.md,
"Four epochs for PPO on several assets")."""


def _tuned_multi_asset_layer(algo):
    """`tuned`'s settings for envs of several assets: for every trainer rollouts of 64 env steps (512 frames per worker
    and train step, a third of the updates per env step), and for PPO Stable-Baselines3's updates with 4 epochs
    (`MULTI_ASSET_PPO_UPDATES`). A3C's rollouts: on the cointegrated pair about twice the fraction of the oracle that
    rollouts of 20 take, on the basket level or a little ahead, where on one asset they cost a little early learning;
    UNREAL's a little ahead on the pair and level on the basket (docs/multi-asset.md, "Longer rollouts, the default on
    several assets"); PPO's with SB3's updates ahead of A3C's on the pair, near SB3's PPO (docs/multi-asset.md, "PPO
    with Stable-Baselines3's updates", "Four epochs for PPO on several assets")."""
    kwargs = dict(rollout_length=64, **(MULTI_ASSET_PPO_UPDATES if algo == 'ppo' else {}))
    return {'trainer_config': {'kwargs': kwargs}}


MULTI_ASSET_LAYERS = {'tuned': _tuned_multi_asset_layer}
"""Preset name -> fn(algo) -> its layer for envs of several assets, over the preset's own (`default_configs`'s
`multi_asset`); a preset missing here has none: `reference` is the original notebook's on every env."""


def _tuned_multi_asset_env(algo):
    """`tuned`'s env settings on several assets, for PPO: one categorical head per asset
    (`action_encoding='per_asset'`, Stable-Baselines3's layout of a MultiDiscrete action) where the original has one
    over the joint actions: by 20,000 env steps twice the joint head's fraction of the oracle, 0.32 against 0.16 on
    the pair and 0.56 against 0.27 on the basket (docs/multi-asset.md, "One head per asset for PPO", "Oracles that
    use the margin"); and a stream per pair of data lines (`MultiAssetSpreadStrategy`) beside each line's: on the pair
    0.45 of the oracle at 40,000 env steps against 0.37 and 0.53 against 0.43 at 100,000; the basket 0.73 against 0.73
    and 0.71 against 0.73 (docs/multi-asset.md, "Why the pair stops near half")."""
    if algo != 'ppo':
        return {}
    return {'action_encoding': 'per_asset',
            'strategy': ClassRef('btgym_aac.strategy.multi_asset', 'MultiAssetSpreadStrategy')}


MULTI_ASSET_ENV_SETTINGS = {'tuned': _tuned_multi_asset_env}
"""Preset name -> fn(algo) -> its MultiDiscreteEnv kwargs (`multi_asset_env_settings`); a preset missing here
has none."""


def multi_asset_env_settings(preset, algo, portfolio=False):
    """A preset's env kwargs for a run on several assets, over `multi_asset_env_config`'s.

    Args:
        preset: a name of `PRESETS`.
        algo: the run's trainer, a name of `TRAINER_CLASSES`, or None for a trainer class of the user's own.
        portfolio: True for a PortfolioEnv (target weights), which takes none of them.

    Returns:
        dict of env kwargs (empty where the preset has none, for `algo` None and for a PortfolioEnv).
    """
    if portfolio or algo is None or preset not in MULTI_ASSET_ENV_SETTINGS:
        return {}
    return MULTI_ASSET_ENV_SETTINGS[preset](algo)


def trainer_algo(trainer_config):
    """The `TRAINER_CLASSES` name of a trainer_config's class, or None for a class of the user's own."""
    algos = {('btgym_aac.algorithms.aac', name): algo for algo, name in TRAINER_CLASSES.items()}
    return algos.get(class_name(trainer_config.get('class_ref')))

DEFAULT_PRESET = 'tuned'
"""The preset `btgym-aac` and `default_configs` use unless told another: the best measured (docs/learning.md,
"The tuned preset"); `reference` is the original notebook's configuration."""

DEFAULT_ALGO = 'a3c'
"""The trainer of a run that names none, unless its preset names another for envs of several assets
(`MULTI_ASSET_ALGOS`)."""

MULTI_ASSET_ALGOS = {'tuned': 'ppo'}
"""Preset name -> the trainer of its runs on several assets that name none: under `tuned` PPO with Stable-Baselines3's
updates (`MULTI_ASSET_PPO_UPDATES`): with the joint head ahead of A3C on the cointegrated pair (0.36 of its oracle
against 0.26 by 100,000 env steps) and level with it on the basket (0.58 against 0.56; docs/multi-asset.md, "PPO, the
default trainer on several assets", "Oracles that use the margin")."""


def default_algo(preset=DEFAULT_PRESET, multi_asset=False):
    """The trainer a run takes when it names none.

    Args:
        preset: a name of `PRESETS`.
        multi_asset: True for a run on several assets.

    Returns:
        'a3c', 'unreal' or 'ppo': `preset`'s for several assets (`MULTI_ASSET_ALGOS`) where it has one, else
        `DEFAULT_ALGO`.
    """
    return MULTI_ASSET_ALGOS.get(preset, DEFAULT_ALGO) if multi_asset else DEFAULT_ALGO


def default_configs(algo=None, import_classes=True, preset=DEFAULT_PRESET, multi_asset=False):
    """The configs of a preset: `preset`'s layer over the Launcher's defaults, with the trainer of `algo`.

    Args:
        algo: 'a3c', 'unreal' or 'ppo'; None: the preset's (`default_algo`).
        import_classes: False gives the env, strategy, policy and trainer classes as `class_refs.ClassRef`s, which
            a Launcher passes to its tasks without importing them (TensorFlow, backtrader, matplotlib) itself;
            `btgym-aac train` does so.
        preset: a name of `PRESETS`.
        multi_asset: True for a run on several assets: the preset's layer for them (`MULTI_ASSET_LAYERS`) over its
            own. The env_config is still the single-asset one: put `multi_asset_env_config(..., preset, algo)` in
            its place (with the preset's settings for the trainer), as `btgym-aac train --assets` does.

    Returns:
        dict of env_config, cluster_config, policy_config, trainer_config, launcher_config; the launcher_config
        names the preset (`preset`), which the Launcher records in the run (run_config.pkl), and so evaluation
        reports and policy artifacts.

    Raises:
        ValueError: an unknown `algo` or `preset`.
    """
    import numpy as np

    if algo is None:
        algo = default_algo(preset, multi_asset)
    if algo not in TRAINER_CLASSES:
        raise ValueError('unknown algo {!r}; known: {}'.format(algo, ', '.join(TRAINER_CLASSES)))
    if preset not in PRESETS:
        raise ValueError('unknown preset {!r}; known: {}'.format(preset, ', '.join(PRESETS)))
    configs = merge_configs(launcher_defaults(), PRESETS[preset](algo))
    if multi_asset and preset in MULTI_ASSET_LAYERS:
        configs = merge_configs(configs, MULTI_ASSET_LAYERS[preset](algo))
    configs['launcher_config'] = dict(configs.get('launcher_config') or {}, preset=preset)
    env_kwargs = configs['env_config']['kwargs']
    if 'state_ext_scale' in env_kwargs:
        env_kwargs['state_ext_scale'] = np.asarray(env_kwargs['state_ext_scale'])
    if import_classes:
        for name in CLASS_CONFIG_NAMES:
            configs[name]['class_ref'] = _imported(configs[name]['class_ref'])
        if 'strategy' in env_kwargs:
            env_kwargs['strategy'] = _imported(env_kwargs['strategy'])
    return configs


def _imported(ref):
    return ref.resolve() if isinstance(ref, ClassRef) else ref


def merge_config(below, layer):
    """One config dict of `layer` over the one `below` (see the module docstring for the rule).

    Args:
        below: config dict (or None).
        layer: config dict, or None (nothing changes).

    Returns:
        a new dict (`kwargs` copied; the values themselves are shared).

    Raises:
        ValueError: `layer` or its `kwargs` is not a dict.
    """
    if layer is not None and not isinstance(layer, dict):
        raise ValueError('expected a config dict, got {!r}'.format(layer))
    below, layer = dict(below or {}), dict(layer or {})
    if layer.get('kwargs') is not None and not isinstance(layer['kwargs'], dict):
        raise ValueError('a config\'s kwargs must be a dict, got {!r}'.format(layer['kwargs']))
    if 'class_ref' in layer:
        merged = layer
    else:
        merged = dict(below, **layer)
        if 'kwargs' in layer:
            merged['kwargs'] = dict(below.get('kwargs') or {}, **(layer['kwargs'] or {}))
    if 'class_ref' in merged or 'kwargs' in merged:
        merged['kwargs'] = dict(merged.get('kwargs') or {})
    return merged


def merge_configs(below, layer):
    """Every config dict of `layer` over the one of `below` of its name (`merge_config`).

    Args:
        below, layer: dicts config name -> config dict (a name missing from `layer` keeps `below`'s).

    Returns:
        a new dict of config dicts.
    """
    return {name: merge_config(below.get(name), layer.get(name)) for name in dict.fromkeys([*below, *layer])}


def launcher_configs(**updates):
    """The Launcher's configs: the user's over `launcher_defaults()` (`merge_configs`), checked.

    Args:
        **updates: `env_config`, `cluster_config`, `policy_config`, `trainer_config` as the user gave them (None
            or missing: the default).

    Returns:
        dict name -> merged config (a default trainer or policy class is a `class_refs.ClassRef`, imported where it
        is used); `cluster_config`'s `num_envs`, `num_workers`, `num_ps` and `port` are ints.

    Raises:
        ValueError: a config without `class_ref`, or a `cluster_config` key unknown or of the wrong kind.
    """
    defaults = launcher_defaults()
    del defaults['launcher_config']
    configs = merge_configs(defaults, updates)
    for name in CLASS_CONFIG_NAMES:
        if configs[name].get('class_ref') is None:
            raise ValueError('{} needs a `class_ref`'.format(name))
    cluster_config = configs['cluster_config']
    _check_cluster_config(cluster_config, defaults['cluster_config'])
    for key in ('num_envs', 'num_workers', 'num_ps'):
        cluster_config[key] = check_whole_number('cluster_config {}'.format(key), cluster_config[key], 1)
    if cluster_config['port']:
        cluster_config['port'] = check_whole_number('cluster_config port', cluster_config['port'], 1)
    return configs


def _check_cluster_config(config, known):
    """Raises ValueError naming an unknown `cluster_config` key or a `log_dir`, `log_ckpt_subdir`, `host`,
    `network_isolation` or `start_method` of the wrong kind."""
    from btgym_aac.distributed.network_namespace import check_isolation_mode
    from btgym_aac.distributed.tasks import check_start_method

    unknown = sorted(set(config) - set(known))
    if unknown:
        raise ValueError('unknown cluster_config key(s) {}; known: {}'.format(unknown, sorted(known)))
    if not isinstance(config['log_dir'], (str, os.PathLike)) or not str(config['log_dir']).strip():
        raise ValueError('cluster_config log_dir is empty or not a path: name the folder for logs and checkpoints, '
                         'got {!r}'.format(config['log_dir']))
    subdir = config['log_ckpt_subdir']
    if not isinstance(subdir, str) or not subdir.strip('/') or os.path.normpath(subdir.strip('/')).startswith('..'):
        raise ValueError('cluster_config log_ckpt_subdir must be a folder name inside the log dir, got {!r}'.format(
            subdir))
    if not isinstance(config['host'], str) or not config['host'].strip():
        raise ValueError('cluster_config host must be a host name or address, got {!r}'.format(config['host']))
    check_isolation_mode(config['network_isolation'])
    check_start_method(config['start_method'])


def positive_seconds(name, value):
    """`value` if it is a finite number of seconds > 0, else ValueError naming the setting."""
    return _positive(name, value, 'seconds')


def positive_minutes(name, value):
    """`value` if it is a finite number of minutes > 0, else ValueError naming the setting."""
    return _positive(name, value, 'minutes')


def _positive(name, value, unit):
    if not is_finite_real(value) or value <= 0:
        raise ValueError('{} must be a positive number of {}, got {!r}'.format(name, unit, value))
    return value


def check_purge_previous(purge_previous, shared_log_dir):
    """Raises ValueError unless `purge_previous` is 0 (keep), 1 (ask) or 2 (delete), and 0 for a shared log dir."""
    if purge_previous not in (0, 1, 2) or isinstance(purge_previous, bool):
        raise ValueError('purge_previous must be 0 (keep), 1 (ask) or 2 (delete), got {!r}'.format(purge_previous))
    if shared_log_dir and purge_previous:
        raise ValueError('a log dir shared by hand-started cluster nodes is never emptied: purge_previous must be '
                         '0, got {!r}'.format(purge_previous))


def multi_asset_env_config(assets=None, portfolio=False, preset=None, algo=None, **dataset_kwargs):
    """The env_config of `btgym-aac train --assets`: MultiAssetStrategy trading every asset of a BTgymMultiData,
    with the reference configuration's broker, episode and reward settings, and a preset's settings for the run's
    trainer over them (`multi_asset_env_settings`).

    Args:
        assets: dict asset name -> CSV path(s) or DataFrame, in data line order; None or empty: the built-in
            cointegrated pair `X`, `Y` (`make_cointegrated_pair(seed=0)`).
        portfolio: PortfolioEnv (target weights) instead of MultiDiscreteEnv (one discrete action per asset).
        preset: a name of `PRESETS` whose settings for `algo` to take; None: the reference configuration's alone.
        algo: the run's trainer (see `trainer_algo`).
        **dataset_kwargs: more kwargs of every data line's `BTgymDataset` (e.g. `target_period` for test episodes),
            or other values of the reference's `episode_duration` and `time_gap`.

    Returns:
        dict with `class_ref` and `kwargs` (the dataset unloaded: the Launcher reads and aligns its files before
        any task starts, see `read_data_files`).
    """
    import pandas as pd

    from btgym_aac.data import BTgymDataset, BTgymMultiData, make_cointegrated_pair
    from btgym_aac.env import MultiDiscreteEnv, PortfolioEnv
    from btgym_aac.env.registration import REFERENCE_ENV_KWARGS
    from btgym_aac.strategy import MultiAssetStrategy

    assets = dict(assets or make_cointegrated_pair(seed=0))
    data_config = {name: ({'filename': None, 'dataframe': source} if isinstance(source, pd.DataFrame)
                          else {'filename': source}) for name, source in assets.items()}
    dataset = BTgymMultiData(data_class_ref=BTgymDataset, data_config=data_config,
                             **dict({key: REFERENCE_ENV_KWARGS[key] for key in ('episode_duration', 'time_gap')},
                                    **dataset_kwargs))
    kwargs = {key: REFERENCE_ENV_KWARGS[key] for key in (
        'start_cash', 'commission', 'leverage', 'drawdown_call', 'target_call', 'gamma', 'reward_scale')}
    kwargs.update(dataset=dataset, strategy=MultiAssetStrategy, asset_names=list(assets),
                  render_modes=['episode', 'human'])
    if not portfolio:
        kwargs['order_size'] = REFERENCE_ENV_KWARGS['order_size']
    kwargs.update(multi_asset_env_settings(preset, algo, portfolio))
    kwargs['strategy'] = _imported(kwargs['strategy'])
    return {'class_ref': PortfolioEnv if portfolio else MultiDiscreteEnv, 'kwargs': kwargs}


# ------------------------------------------------------------------------------------------ the data files

def _data_sources(env_config):
    """(filename(s), parsing params) of every data source `env_config` names by file: its `filename`, its
    `dataset`'s, or every data line's of a multi-line dataset."""
    from btgym_aac.data.multi import BTgymMultiData

    kwargs = env_config.get('kwargs', {})
    dataset = kwargs.get('dataset')
    if dataset is None:
        return [(kwargs.get('filename'), kwargs.get('parsing_params'))]
    streams = dataset.data.values() if isinstance(dataset, BTgymMultiData) else [dataset]
    return [(getattr(data, 'filename', None), getattr(data, 'parsing_params', None)) for data in streams]


def read_data_files(env_config):
    """Reads the data files named by `env_config` (its `filename`, or its `dataset`'s, or those of every data line
    of a `BTgymMultiData`) once, so that a missing or unusable file stops the run here, before any task starts
    (see `data.parsing.read_ohlcv` and `data.sanity`). The data lines of a `BTgymMultiData` are also aligned, on a
    copy of it (the config's own stays unloaded: every env loads its own), so lines that cannot be aligned stop
    the run here too.

    Returns:
        list of (the bars of a source as a DataFrame, its `data.shared.source_key`), one per source read from files.

    Raises:
        FileNotFoundError: a data file is not a file here.
        DataError (a ValueError): a file cannot be read, fails a data check set to 'error', or the data lines of a
            BTgymMultiData cannot be aligned.
    """
    from btgym_aac.data.multi import BTgymMultiData
    from btgym_aac.data.parsing import read_ohlcv, resolve_parsing_params
    from btgym_aac.data.shared import source_key

    sources = []
    for filenames, parsing_params in _data_sources(env_config):
        if not filenames:
            continue
        for filename in [filenames] if isinstance(filenames, (str, os.PathLike)) else filenames:
            if isinstance(filename, (str, os.PathLike)) and not os.path.isfile(filename):
                what = 'is a folder, not a file' if os.path.isdir(filename) else 'does not exist'
                raise FileNotFoundError('data file {!r} (env_config filename) {}'.format(os.fspath(filename), what))
        sources.append((read_ohlcv(filenames, parsing_params), source_key(filenames,
                                                                          resolve_parsing_params(parsing_params))))
    dataset = env_config.get('kwargs', {}).get('dataset')
    if isinstance(dataset, BTgymMultiData):
        copy.deepcopy(dataset).read_csv()
    return sources


COST_KWARGS = ('spread', 'slippage', 'slippage_fixed', 'commission', 'broker_commission', 'commission_scheme')
"""The env kwargs that set what fills cost (see `env.costs.env_kwargs_costs`)."""


def check_data_costs(env_config, frames):
    """Refuses the env's cost settings that are out of all proportion to the prices of the run's data, before any
    task starts (see `check_bar_costs`; of a large cost, the run's chief's env warns): against the bars of the
    files `read_data_files` read, else of the env's `dataset` (made from DataFrames; one that loads its bars later
    is left to the envs) or `dataframe`, else, without a data source, of the built-in sine data every env then
    takes.

    Args:
        env_config: the run's env config.
        frames: the DataFrames `read_data_files` returned, in its order.

    Raises:
        ValueError: see `check_bar_costs`.
    """
    kwargs = env_config.get('kwargs', {})
    if not any(name in kwargs for name in COST_KWARGS):
        return
    from btgym_aac.data.parsing import read_ohlcv
    from btgym_aac.data.synthetic import make_sine_data
    from btgym_aac.env.components import data_words, lowest_median_close

    filenames = [filenames for filenames, _ in _data_sources(env_config) if filenames]
    if filenames:
        medians = [(float(frame['close'].median()), data_words(names)) for frame, names in zip(frames, filenames)]
    elif kwargs.get('dataset') is not None:
        prices = lowest_median_close(kwargs['dataset'])
        if prices is None:  # a dataset that loads its bars later: its envs check them
            return
        medians = [prices]
    elif kwargs.get('dataframe') is not None:
        frame = read_ohlcv(kwargs['dataframe'], kwargs.get('parsing_params'))
        medians = [(float(frame['close'].median()), 'the env\'s dataframe')]
    else:
        medians = [(float(make_sine_data()['close'].median()), 'the built-in sine data')]
    check_bar_costs(kwargs, medians)


def check_bar_costs(env_kwargs, medians):
    """Refuses the cost settings among an env's kwargs that are out of all proportion to the prices of bars
    (`env.costs.check_cost_sizes`).

    Args:
        env_kwargs: the env's kwargs.
        medians: list of (the median close of bars, the bars in words for the messages).

    Raises:
        ValueError: a refused cost, named with the bars' median close and the cost's unit; a cost setting no
            broker takes.
    """
    from btgym_aac.env.costs import check_cost_sizes, env_kwargs_costs

    costs = env_kwargs_costs(env_kwargs)
    for median, words in medians:
        check_cost_sizes(costs, median, words)


# ------------------------------------------------------------------------------------------------ digest

DATA_SOURCE_KWARGS = ('dataset', 'dataframe', 'filename')
"""The env kwargs that give an env its data (evaluations, walk-forwards and sweeps replace them with their own)."""
UNSEEN_CONFIG_KEYS = {'cluster_config': ('log_dir', 'port', 'network_isolation', 'initial_ckpt_dir'),
                      'launcher_config': ('show_progress', 'preset', 'keep_checkpoint_every_steps')}
"""Config keys that do not change what a run trains (where it logs, how it is watched, the name of the preset
whose values the configs hold)."""


def config_digest(configs):
    """SHA-256 (first 16 hex digits) of the config dicts as runs train them (see `digested_configs`), so that a
    walk-forward or a sweep continued with other configs is told apart from the one it continues."""
    return hashlib.sha256(_digest_text(configs).encode()).hexdigest()[:16]


def digested_configs(configs):
    """The config dicts as `config_digest` sees them, JSON-ready: classes by their import paths, arrays as lists,
    the keys of UNSEEN_CONFIG_KEYS and the env's data source left out (walk-forwards and sweeps supply the data)."""
    return json.loads(_digest_text(configs))


def _digest_text(configs):
    seen = {}
    for name, config in sorted(configs.items()):
        config = {key: value for key, value in dict(config).items() if key not in UNSEEN_CONFIG_KEYS.get(name, ())}
        if name == 'env_config':
            config['kwargs'] = {key: value for key, value in dict(config.get('kwargs') or {}).items()
                                if key not in DATA_SOURCE_KWARGS}
        seen[name] = config
    return json.dumps(seen, sort_keys=True, default=_plain)


def _plain(value):
    """A JSON-ready stand-in for a value json cannot write: a class (or ClassRef) by its path, an array as a list,
    an object whose repr is object's (it holds a memory address, other in every process) by its class path and
    attributes, anything else by its repr."""
    if isinstance(value, ClassRef):
        return '{}.{}'.format(value.module, value.name)
    if hasattr(value, 'tolist'):
        return value.tolist()
    module, name = getattr(value, '__module__', None), getattr(value, '__qualname__', None)
    if callable(value) and module and name:
        return '{}.{}'.format(module, name)
    if type(value).__repr__ is object.__repr__:
        kind = type(value)
        return {'class': '{}.{}'.format(kind.__module__, kind.__qualname__), 'attributes': vars(value)
                if hasattr(value, '__dict__') else None}
    return repr(value)


# ------------------------------------------------------------------------------------------ run_config.pkl

RUN_CONFIG_FILE = 'run_config.pkl'
RUN_CONFIG_DICTS = ('env_config', 'policy_config', 'trainer_config', 'cluster_config')


def pickle_run_config(configs):
    """Pickles the run's configs in the launching process, where classes of its `__main__` have their real names
    (a spawned task knows them as `__mp_main__`'s, which no other process can load), with the sources of the
    config-file modules they refer to (see `config_modules`).

    The chief writes them to `<log_dir>/run_config.pkl` once its session is ready (its checkpoint restored), so a
    run that cannot set up leaves the file of the run whose checkpoint is in the log dir as it was;
    `btgym_aac.evaluation.load_policy` reads it.

    Args:
        configs: dict with env_config, policy_config, trainer_config, cluster_config, test_mode.

    Returns:
        bytes for `write_run_config`.
    """
    return dumps_with_sources(configs)


def write_run_config(log_dir, pickled):
    """Writes `pickled` configs to `<log_dir>/run_config.pkl` through a temporary file, so readers never see half
    a file (a failed write leaves the previous file and no temporary one).

    Args:
        log_dir: the run's log dir.
        pickled: bytes from `pickle_run_config`.
    """
    os.makedirs(log_dir, exist_ok=True)
    path = os.path.join(log_dir, RUN_CONFIG_FILE)
    staging = path + '.writing'
    try:
        with open(staging, 'wb') as f:
            f.write(pickled)
        os.replace(staging, path)
    finally:
        if os.path.exists(staging):
            os.remove(staging)
