"""Search spaces of a sweep: config keys by dotted name (`trainer_config.kwargs.opt_learn_rate`,
`env_config.kwargs.reward_scale`, `policy_config.kwargs.heads_read_features`, ...) mapped to Optuna distributions.

A space file is a Python file that defines `SPACE`, such a dict. `check_space` refuses, before any trial starts, a
name that no config accepts; `configs_with` puts a trial's values into a copy of the configs.
"""
import copy
import difflib
import inspect
import os
import runpy

from optuna.distributions import (BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution,
                                  distribution_to_json)

CONFIGS_WITH_KWARGS = ('env_config', 'policy_config', 'trainer_config')
FLAT_CONFIGS = ('launcher_config',)
SPACE_VARIABLE = 'SPACE'

A3C_SPACE = {
    'trainer_config.kwargs.opt_learn_rate': FloatDistribution(1e-5, 1e-3, log=True),
    'trainer_config.kwargs.model_beta': FloatDistribution(1e-3, 1e-1, log=True),
    'trainer_config.kwargs.rollout_length': CategoricalDistribution([10, 20, 40]),
    'trainer_config.kwargs.model_gae_lambda': FloatDistribution(0.9, 1.0),
    'env_config.kwargs.reward_scale': FloatDistribution(1.0, 20.0, log=True),
}
"""The built-in space of A3C (and UNREAL) on the reference configuration: learn rate, entropy weight, rollout
length, GAE lambda and the env's reward scale."""

PPO_SPACE = dict(A3C_SPACE, **{
    'trainer_config.kwargs.clip_epsilon': FloatDistribution(0.05, 0.3),
    'trainer_config.kwargs.num_epochs': IntDistribution(1, 4),
})
"""The built-in space of PPO: A3C's plus the clip range and the epochs per rollout."""


def builtin_space(algo):
    """The built-in space of trainer `algo` ('a3c', 'unreal' or 'ppo')."""
    return dict(PPO_SPACE if algo == 'ppo' else A3C_SPACE)


def load_space(path):
    """The `SPACE` dict a space file defines.

    Raises:
        FileNotFoundError: no such file. ValueError: it fails, defines no `SPACE`, or one that is not a dict of
            names to Optuna distributions.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError('search space file {!r} does not exist'.format(path))
    try:
        namespace = runpy.run_path(path)
    except Exception as error:
        raise ValueError('search space file {} failed: {}: {}'.format(path, type(error).__name__, error)) from error
    if SPACE_VARIABLE not in namespace:
        raise ValueError('search space file {} defines no {} (a dict of config key names to Optuna '
                         'distributions)'.format(path, SPACE_VARIABLE))
    space = namespace[SPACE_VARIABLE]
    if not isinstance(space, dict) or not space:
        raise ValueError('search space file {}: {} must be a non-empty dict, got {!r}'.format(
            path, SPACE_VARIABLE, space))
    wrong = sorted(name for name, value in space.items() if not isinstance(value, BaseDistribution))
    if wrong:
        raise ValueError('search space file {}: {} are not Optuna distributions (optuna.distributions.'
                         'FloatDistribution, IntDistribution or CategoricalDistribution)'.format(path, wrong))
    return space


def describe_space(space):
    """The space as JSON-ready {name: Optuna's JSON of the distribution}."""
    return {name: distribution_to_json(distribution) for name, distribution in sorted(space.items())}


def suggest(trial, space):
    """Draws a value of every name of `space` for an Optuna `trial`; returns {name: value}."""
    return {name: _suggest_one(trial, name, distribution) for name, distribution in space.items()}


def _suggest_one(trial, name, distribution):
    if isinstance(distribution, FloatDistribution):
        return trial.suggest_float(name, distribution.low, distribution.high, log=distribution.log,
                                   step=distribution.step)
    if isinstance(distribution, IntDistribution):
        return trial.suggest_int(name, distribution.low, distribution.high, log=distribution.log,
                                 step=distribution.step)
    if isinstance(distribution, CategoricalDistribution):
        return trial.suggest_categorical(name, distribution.choices)
    raise ValueError('search space {}: unsupported distribution {!r}'.format(name, distribution))


def configs_with(configs, values):
    """A deep copy of `configs` with every dotted name of `values` set to its value."""
    configs = copy.deepcopy(configs)
    for name, value in values.items():
        parts = name.split('.')
        target = configs
        for part in parts[:-1]:
            target[part] = dict(target.get(part) or {})
            target = target[part]
        target[parts[-1]] = value
    return configs


def check_space(space, configs):
    """Refuses the names of `space` that no config accepts.

    A name is `<config>.kwargs.<key>` for env_config, policy_config and trainer_config (the key set in the config
    already, or one its class takes: a trainer setting, a policy argument, an env, dataset, broker or strategy
    param), or `launcher_config.<key>` (an argument of the Launcher).

    Raises:
        ValueError: naming every refused name and why.
    """
    problems = [problem for problem in (_name_problem(name, configs) for name in sorted(space)) if problem]
    if problems:
        raise ValueError('search space: {}'.format('; '.join(problems)))


def _name_problem(name, configs):
    """Why no config accepts `name`, or None."""
    parts = name.split('.')
    if parts[0] in CONFIGS_WITH_KWARGS:
        if len(parts) != 3 or parts[1] != 'kwargs':
            return '{!r} is not of the form {}.kwargs.KEY'.format(name, parts[0])
        config = configs.get(parts[0]) or {}
        kwargs = dict(config.get('kwargs') or {})
        if parts[-1] in kwargs or _class_takes(parts[0], _class_of(config), kwargs, parts[-1]):
            return None
        known = set(kwargs) | _init_parameters(_class_of(config))
        if parts[0] == 'trainer_config':
            from btgym_aac.algorithms.config import SETTING_NAMES

            known |= SETTING_NAMES
    elif parts[0] in FLAT_CONFIGS:
        known = _launcher_arguments()
        if len(parts) == 2 and parts[1] in known:
            return None
        if len(parts) != 2:
            return '{!r} is not of the form {}.KEY'.format(name, parts[0])
    else:
        return '{!r} names no config (the first part is one of {})'.format(
            name, ', '.join(CONFIGS_WITH_KWARGS + FLAT_CONFIGS))
    close = difflib.get_close_matches(parts[-1], sorted(known), n=1)
    return '{!r}: {} takes no {!r}{}'.format(name, parts[0], parts[-1],
                                              ' (did you mean {!r}?)'.format(close[0]) if close else '')


def _class_of(config):
    reference = config.get('class_ref')
    return reference.resolve() if hasattr(reference, 'resolve') else reference


def _class_takes(config_name, cls, kwargs, key):
    """Whether the class of an env, policy or trainer config takes kwarg `key`."""
    if cls is None:
        return False
    if config_name == 'trainer_config':
        from btgym_aac.algorithms.config import SETTING_NAMES

        return key in SETTING_NAMES or key in _init_parameters(cls)
    if config_name == 'policy_config':
        from btgym_aac.algorithms.policy.interface import unread_policy_kwargs

        return key not in unread_policy_kwargs(cls, dict(kwargs, **{key: None}))
    return key in _env_kwargs(cls, kwargs)


def _env_kwargs(env_class, kwargs):
    """An env's own, dataset, broker and strategy params."""
    from btgym_aac.env.components import DATASET_KWARGS, ENGINE_DEFAULTS
    from btgym_aac.strategy.base import BTgymBaseStrategy

    strategy = kwargs.get('strategy')
    strategy = strategy.resolve() if hasattr(strategy, 'resolve') else strategy
    names = set(DATASET_KWARGS) | set(ENGINE_DEFAULTS) | _init_parameters(env_class)
    return names | set((strategy or BTgymBaseStrategy).params._getkeys())


def _init_parameters(cls):
    """The named parameters of the `__init__`s of `cls` and its bases (none without a class)."""
    from btgym_aac.algorithms.policy.interface import init_parameters

    return init_parameters(cls) if cls is not None else set()


def _launcher_arguments():
    from btgym_aac.distributed.launcher import Launcher

    return {name for name in inspect.signature(Launcher).parameters if not name.endswith('_config')}
