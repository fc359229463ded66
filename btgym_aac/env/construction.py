"""Building environments from `{'class_ref', 'kwargs'}` configs, with per-env seeds."""


def build_from_config(config, **overrides):
    """Instantiates `config['class_ref'](**config['kwargs'], **overrides)`."""
    if not isinstance(config, dict) or 'class_ref' not in config:
        raise ValueError('a config must be a dict with `class_ref` and optional `kwargs`, got {!r}'.format(config))
    return config['class_ref'](**dict(config.get('kwargs', {}), **overrides))


def env_seed_kwargs(env_config, seed):
    """The seed argument of the env class (`random_seed` of BTgymEnv, `seed` of TestModeEnv), unless the config
    sets it already."""
    from btgym_aac.env import BTgymEnv
    from btgym_aac.env.gym_wrappers import TestModeEnv

    names = [name for cls, name in ((BTgymEnv, 'random_seed'), (TestModeEnv, 'seed'))
             if issubclass(env_config['class_ref'], cls)]
    if seed is None or not names or names[0] in env_config.get('kwargs', {}):
        return {}
    return {names[0]: seed}
