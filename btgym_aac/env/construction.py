"""Building environments from `{'class_ref', 'kwargs'}` configs, with per-env seeds."""
DATA_MASTER_KWARGS = ('port', 'data_port', 'data_master')


def build_from_config(config, **overrides):
    """Instantiates `config['class_ref'](**config['kwargs'], **overrides)`."""
    if not isinstance(config, dict) or 'class_ref' not in config:
        raise ValueError('a config must be a dict with `class_ref` and optional `kwargs`, got {!r}'.format(config))
    return config['class_ref'](**dict(config.get('kwargs', {}), **overrides))


def env_seed_kwargs(env_config, seed):
    """The seed argument of the env class (`random_seed` of BTgymEnv, `seed` of TestModeEnv), unless the config
    sets it already."""
    from btgym_aac.class_refs import resolved
    from btgym_aac.env import BTgymEnv
    from btgym_aac.env.gym_wrappers import TestModeEnv

    names = [name for cls, name in ((BTgymEnv, 'random_seed'), (TestModeEnv, 'seed'))
             if issubclass(resolved(env_config['class_ref']), cls)]
    if seed is None or not names or names[0] in env_config.get('kwargs', {}):
        return {}
    return {names[0]: seed}


def training_env_config(env_config):
    """`env_config` for the envs of a training run, none of them a data master.

    Every env of a run gets the config's own data (the original made the run's first env a data master serving
    the others), so `port`, `data_port` and `data_master` are dropped; an env config with `data_master=False`
    keeps them, its envs taking their data from a data master env outside the run.
    """
    kwargs = dict(env_config.get('kwargs', {}))
    if kwargs.get('data_master', True) is False:
        return env_config
    for key in DATA_MASTER_KWARGS:
        kwargs.pop(key, None)
    return dict(env_config, kwargs=kwargs)
