"""A trainer's settings, validated in one place: a bad value raises ValueError naming the setting at trainer
construction, rather than failing in a runner thread or mid-training.

`trainer_attributes` turns `BaseAAC`'s constructor arguments into the attributes a trainer keeps (the original's
names: `self.model_gamma`, `self.use_memory`, ...), drawing the log-uniform ones.
"""
import numpy as np

from btgym_aac.algorithms.math_utils import log_uniform
from btgym_aac.validation import check_number, check_whole_number

IGNORED_ORIGINAL_ARGUMENTS = {
    'opt_decay': 'an RMSProp setting; the trainers use Adam',
    'opt_momentum': 'an RMSProp setting; the trainers use Adam',
    'replay_batch_size': 'replay batches take one sequence per runner',
}
"""Arguments of the original's trainers that these trainers accept and ignore, with why (logged as a warning)."""

REMOVED_HOOKS = {
    '_get_main_feeder': 'override process_data, or extra_feed for placeholders of your own',
    '_process_rollouts': 'override process_data (see trainer_feeds.train_batches)',
}
"""Hooks of the original's BaseAAC with no counterpart here, and what to override instead."""

LOG_UNIFORM_SETTINGS = ('model_beta', 'opt_learn_rate', 'rp_lambda', 'pc_lambda', 'vr_lambda', 'off_aac_lambda')
"""Settings given as a number or a [low, high] range to draw from log-uniformly, in the order they are drawn."""


def log_uniform_range(name, value):
    """Returns `value` if it is a number >= 0 or a [low, high] sequence of them (for `math_utils.log_uniform`).

    Args:
        name: setting named in the message.
        value: the setting's value.

    Returns:
        value.

    Raises:
        ValueError: naming the setting and the value.
    """
    try:
        bounds = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        bounds = np.empty(0)
    if isinstance(value, (bool, str)) or bounds.size == 0 or not np.all(np.isfinite(bounds)) or np.any(bounds < 0):
        raise ValueError('{} must be a finite number >= 0 or a [low, high] pair of them for a log-uniform draw, '
                         'got {!r}'.format(name, value))
    return value


def check_replay(memory_size, rollout_length, rp_sequence_size, reward_prediction):
    """Raises ValueError naming the replay setting that the runners' memories could not be built or sampled with.

    Args:
        memory_size: `replay_memory_size`, frames per memory.
        rollout_length: `replay_rollout_length` (`rollout_length` when not given), longest replayed sequence.
        rp_sequence_size: reward-prediction sample length in frames.
        reward_prediction: whether reward prediction samples the memory.
    """
    check_whole_number('replay_memory_size', memory_size)
    check_whole_number('replay_rollout_length', rollout_length)
    if rollout_length > memory_size:
        raise ValueError('replay_rollout_length {} (rollout_length when not given) is longer than replay_memory_size '
                         '{}: the memory cannot hold a sequence that long'.format(rollout_length, memory_size))
    if reward_prediction:
        check_whole_number('rp_sequence_size', rp_sequence_size)
        if rollout_length < rp_sequence_size:
            raise ValueError('replay_rollout_length {} is shorter than rp_sequence_size {}: the memory cannot '
                             'return reward-prediction samples that long'.format(rollout_length, rp_sequence_size))


def check_train_test_cycle(cycle):
    """Returns `episode_train_test_cycle` as an (n_train, n_test) tuple of ints >= 0, not both zero.

    Raises:
        ValueError: naming the setting and the value.
    """
    cycle = tuple(int(n) for n in cycle)
    if len(cycle) != 2 or min(cycle) < 0 or sum(cycle) == 0:
        raise ValueError('episode_train_test_cycle must be (n_train >= 0, n_test >= 0), not both zero; '
                         'got {!r}'.format(cycle))
    return cycle


def trainer_attributes(args):
    """Validates a trainer's settings and derives the flags that follow from them.

    Args:
        args: dict of `BaseAAC` constructor arguments by name (all but those in `aac._CONSTRUCTION_ARGUMENTS`).

    Returns:
        dict of attribute name -> value: every setting under its argument's name (but the `_use_*` flags), the
        log-uniform settings drawn (numpy's global random state), `opt_decay_steps` / `opt_end_learn_rate` /
        `replay_rollout_length` resolved, and the derived flags `use_value_replay` (off with
        `use_off_policy_aac`), `use_any_aux_tasks`, `use_memory`, `use_target_policy` and `use_global_network`.

    Raises:
        ValueError: a setting is out of its range; the message names it and its value.
    """
    attributes = {name: value for name, value in args.items() if not name.startswith('_')}
    for name in LOG_UNIFORM_SETTINGS:
        attributes[name] = log_uniform(log_uniform_range(name, args[name]), 1)
    for name in ('model_gamma', 'model_gae_lambda', 'gamma_pc'):
        check_number(name, args[name], high=1)
    check_number('opt_max_env_steps', args['opt_max_env_steps'], low_open=True)
    attributes['opt_decay_steps'] = args['opt_max_env_steps'] if args['opt_decay_steps'] is None else \
        check_number('opt_decay_steps', args['opt_decay_steps'], low_open=True)
    attributes['opt_end_learn_rate'] = attributes['opt_learn_rate'] if args['opt_end_learn_rate'] is None else \
        check_number('opt_end_learn_rate', args['opt_end_learn_rate'])
    for name in ('rollout_length', 'episode_summary_freq', 'env_render_freq', 'model_summary_freq', 'num_epochs',
                 'pi_prime_update_period'):
        attributes[name] = check_whole_number(name, args[name])
    attributes['episode_train_test_cycle'] = check_train_test_cycle(args['episode_train_test_cycle'])
    attributes['replay_rollout_length'] = attributes['rollout_length'] if args['replay_rollout_length'] is None \
        else args['replay_rollout_length']
    attributes['aux_render_modes'] = list(args['aux_render_modes'] or [])
    attributes.update(_derived_flags(args))
    if attributes['use_memory']:
        check_replay(args['replay_memory_size'], attributes['replay_rollout_length'], args['rp_sequence_size'],
                     args['use_reward_prediction'])
    return attributes


def _derived_flags(args):
    aux_tasks = args['use_value_replay'] or args['use_pixel_control'] or args['use_reward_prediction']
    return {
        'use_value_replay': False if args['use_off_policy_aac'] else args['use_value_replay'],
        'use_any_aux_tasks': aux_tasks,
        'use_memory': (aux_tasks or args['use_off_policy_aac']) and not args['_use_local_memory'],
        'use_target_policy': args['_use_target_policy'],
        'use_global_network': args['_use_global_network'],
    }


def check_removed_hooks(cls, base):
    """Raises TypeError when `cls` or a class between it and `base` defines one of `REMOVED_HOOKS`."""
    for name, instead in REMOVED_HOOKS.items():
        if any(name in vars(klass) for klass in cls.__mro__ if klass is not base):
            raise TypeError('{} overrides {}, a hook of the original trainer that BaseAAC no longer calls; {} '
                            '(see docs/custom-algorithms.md)'.format(cls.__name__, name, instead))


def fixed_kwargs(cls_name, kwargs, fixed):
    """`kwargs` with the settings subclass `cls_name` fixes; raises TypeError when `kwargs` sets one of them."""
    clash = sorted(set(kwargs) & set(fixed))
    if clash:
        raise TypeError('{} fixes {}; do not pass them (use BaseAAC or Unreal to set them)'.format(cls_name, clash))
    return dict(kwargs, **fixed)
