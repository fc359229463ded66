"""The reference configuration of `btgym-aac` and the Launcher made from a set of config dicts."""
import inspect

DEFAULT_LOG_DIR = 'runs/btgym_aac'
DEFAULT_MAX_STEPS = 20000
CONFIG_NAMES = ('env_config', 'cluster_config', 'policy_config', 'trainer_config', 'launcher_config')


def default_configs(algo='a3c', import_classes=True):
    """The reference configuration: DevStrat_4_11 on the built-in sine data, RL2 stacked-LSTM policy.

    The policy's logits are not layer-normalised (`logits_layer_norm=False`, unlike the original's notebook):
    normalised logits limit how sure the policy can be of an action (with four actions and no learned offset, at
    most 0.77), and without them the trainers learn the reference env faster and end higher (docs/performance.md,
    "Against Stable-Baselines3").

    Args:
        algo: 'a3c', 'unreal' or 'ppo'.
        import_classes: False gives the env, strategy, policy and trainer classes as `class_refs.ClassRef`s, which
            a Launcher passes to its tasks without importing them (TensorFlow, backtrader, matplotlib) itself;
            `btgym-aac train` does so.

    Returns:
        dict of env_config, cluster_config, policy_config, trainer_config, launcher_config.
    """
    import copy

    import numpy as np

    from btgym_aac.class_refs import ClassRef
    from btgym_aac.env.registration import REFERENCE_ENV_KWARGS

    classes = {
        'env': ClassRef('btgym_aac.env.base', 'BTgymEnv'),
        'strategy': ClassRef('btgym_aac.strategy.gen4', 'DevStrat_4_11'),
        'policy': ClassRef('btgym_aac.algorithms.policy.stacked_lstm', 'AacStackedRL2Policy'),
        'trainer': ClassRef('btgym_aac.algorithms.aac', {'a3c': 'A3C', 'unreal': 'Unreal', 'ppo': 'PPO'}[algo]),
    }
    if import_classes:
        classes = {role: ref.resolve() for role, ref in classes.items()}
    env_kwargs = copy.deepcopy(REFERENCE_ENV_KWARGS)
    env_kwargs.update(strategy=classes['strategy'], state_ext_scale=np.asarray(env_kwargs['state_ext_scale']))
    return dict(
        env_config={'class_ref': classes['env'], 'kwargs': env_kwargs},
        cluster_config={'num_workers': 2, 'num_ps': 1, 'num_envs': 1, 'log_dir': DEFAULT_LOG_DIR},
        policy_config={'class_ref': classes['policy'], 'kwargs': {
            'lstm_layers': (256, 256), 'lstm_2_init_period': 60, 'logits_layer_norm': False}},
        trainer_config={'class_ref': classes['trainer'], 'kwargs': dict(
            opt_learn_rate=1e-4, opt_end_learn_rate=1e-5, opt_decay_steps=50e6, model_gamma=0.99,
            model_gae_lambda=1.0, model_beta=0.05, rollout_length=20, time_flat=True, model_summary_freq=10,
            episode_summary_freq=1, env_render_freq=10)},
        launcher_config={'max_env_steps': DEFAULT_MAX_STEPS, 'save_secs': 60},
    )


def multi_asset_env_config(assets=None, portfolio=False, **dataset_kwargs):
    """The env_config of `btgym-aac train --assets`: MultiAssetStrategy trading every asset of a BTgymMultiData,
    with the reference configuration's broker, episode and reward settings.

    Args:
        assets: dict asset name -> CSV path(s) or DataFrame, in data line order; None or empty: the built-in
            cointegrated pair `X`, `Y` (`make_cointegrated_pair(seed=0)`).
        portfolio: PortfolioEnv (target weights) instead of MultiDiscreteEnv (one discrete action per asset).
        **dataset_kwargs: more kwargs of every data line's `BTgymDataset` (e.g. `target_period` for test episodes).

    Returns:
        dict with `class_ref` and `kwargs` (the dataset unloaded: the Launcher reads and aligns its files before
        any task starts, see `launcher_config.read_data_files`).
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
                             episode_duration=REFERENCE_ENV_KWARGS['episode_duration'],
                             time_gap=REFERENCE_ENV_KWARGS['time_gap'], **dataset_kwargs)
    kwargs = {key: REFERENCE_ENV_KWARGS[key] for key in (
        'start_cash', 'commission', 'leverage', 'drawdown_call', 'target_call', 'gamma', 'reward_scale')}
    kwargs.update(dataset=dataset, strategy=MultiAssetStrategy, asset_names=list(assets),
                  render_modes=['episode', 'human'])
    if not portfolio:
        kwargs['order_size'] = REFERENCE_ENV_KWARGS['order_size']
    return {'class_ref': PortfolioEnv if portfolio else MultiDiscreteEnv, 'kwargs': kwargs}


def make_launcher(configs, **overrides):
    """A Launcher from `configs` (the dicts of `default_configs`'s layout) and Launcher keyword overrides.

    Raises:
        ValueError: `launcher_config` has a key the Launcher does not take.
    """
    from btgym_aac.distributed.launcher import Launcher

    kwargs = dict(configs.get('launcher_config', {}), **overrides)
    known = inspect.signature(Launcher).parameters
    unknown = sorted(set(kwargs) - set(known))
    if unknown:
        raise ValueError('launcher_config has unknown key(s) {}; Launcher takes {}'.format(
            ', '.join(unknown), ', '.join(name for name in known if not name.endswith('_config'))))
    return Launcher(env_config=configs['env_config'], cluster_config=configs['cluster_config'],
                    policy_config=configs['policy_config'], trainer_config=configs['trainer_config'], **kwargs)
