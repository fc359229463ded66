"""The policy contract: how a trainer builds a policy, what it checks of it, and what trainers and runners read
from a policy object.

A policy class is built by the trainer as `policy_class(**kwargs)` inside a variable scope, once for the global
copy and once per local copy (see `BaseAAC`), with `ob_space`, `ac_space`, `rp_sequence_size`, `aux_estimate`,
`static_rnn`, `task` and `cluster_spec` added to the user's `policy_config['kwargs']` (and `pixel_control=True`
unless given, when the trainer uses pixel control; `off_policy_pass`, unless given, to a class whose `__init__`
names it: True when a loss reads the off-policy pass, see `OFF_POLICY_PASS_FLAGS` and `set_off_policy_pass`).
The trainer warns of the kwargs no part of the policy reads (`unread_policy_kwargs`), and the policies check the
arguments they share (`check_spaces`, `checked_layers`). `BaseAacPolicy` and its subclasses implement the
contract; a policy written from scratch must provide `AacPolicy`'s members, plus those of `AUXILIARY_MEMBERS` for
each auxiliary task the trainer enables. `check_policy` names what is missing.
"""
import inspect
from typing import Any, Protocol, runtime_checkable

from btgym_aac.spaces import ActionDictSpace, DictSpace

OFF_POLICY_PASS_FLAGS = ('use_off_policy_aac', 'use_value_replay', 'use_pixel_control')
"""Trainer flags whose losses read a policy's off-policy pass (`off_logits`, `off_vf`, `vr_value`, `pc_q`)."""

OFF_POLICY_MEMBERS = ('off_lstm_state_pl_flatten', 'off_logits', 'off_vf')
AUXILIARY_MEMBERS = {
    'use_off_policy_aac': OFF_POLICY_MEMBERS,
    'use_value_replay': OFF_POLICY_MEMBERS + ('vr_value',),
    'use_pixel_control': OFF_POLICY_MEMBERS + ('pc_q', 'pc_change_state_in', 'pc_change_last_state_in',
                                               'get_pc_target'),
    'use_reward_prediction': ('rp_state_in', 'rp_batch_size', 'rp_logits'),
}
"""Members a policy needs for the off-policy loss and each auxiliary task, by the trainer flag that enables it."""


@runtime_checkable
class AacPolicy(Protocol):
    """Members every policy has. Tensors are of the policy's own graph; N = batch_size * time_length frames.

    Inputs: `on_state_in` / `off_state_in` (nested dict of placeholders like the observation space),
    `on_last_a_in` [N, E] (the previous action's binary code, `ac_space.encode`), `on_last_reward_in` [N],
    `on_batch_size` (sequences), `on_time_length` (their lengths), `on_lstm_state_pl_flatten` (flat list of RNN
    context placeholders); `train_phase` (bool scalar, default False).

    Outputs read by the losses: `on_logits` [N, A] and `on_vf` [N] (and, of the off-policy pass, which only the
    off-policy, value-replay and pixel-control losses read, `off_logits`, `off_vf` and `off_lstm_state_pl_flatten`:
    see `AUXILIARY_MEMBERS`); `var_list`, the
    variables the trainer trains and syncs, in creation order (global and local copies pair by position): the
    trainable ones plus any that must travel with them, such as normalisation statistics; `on_lstm_init_state`.

    Acting (runners): `act`, `get_value`, `get_initial_features`, `callback` (dict of name -> fn(policy, ...)
    called by runners with extra per-step data; may be empty).

    Set by the trainer on local copies: `global_step`, `global_episode`, `inc_episode` and `get_sample_config`.
    """
    ob_space: Any
    ac_space: Any
    train_phase: Any
    var_list: list
    on_state_in: Any
    on_last_a_in: Any
    on_last_reward_in: Any
    on_batch_size: Any
    on_time_length: Any
    on_lstm_state_pl_flatten: Any
    on_lstm_init_state: Any
    on_logits: Any
    on_vf: Any
    off_state_in: Any
    off_last_a_in: Any
    off_last_reward_in: Any
    off_batch_size: Any
    off_time_length: Any
    callback: dict

    def act(self, observation, lstm_state, last_action, last_reward, deterministic=False, sess=None):
        """Returns (action pack {'environment': action dict, 'encoded': [E], 'one_hot': [A]}, logits [A], value [1],
        next context)."""

    def get_value(self, observation, lstm_state, last_action, last_reward, sess=None):
        """Returns the value estimate of one observation, a float."""

    def get_initial_features(self, sess=None, **kwargs):
        """Returns the RNN context at an episode's start."""


def missing_members(policy, trainer_flags=None):
    """Names of the members `policy` lacks (absent or None) for the trainer's enabled tasks.

    Args:
        policy: a built policy object.
        trainer_flags: dict of `AUXILIARY_MEMBERS` flags -> bool (None: only the core members).

    Returns:
        sorted list of names.
    """
    names = set(AacPolicy.__annotations__) | {'act', 'get_value', 'get_initial_features'}
    for flag, members in AUXILIARY_MEMBERS.items():
        if (trainer_flags or {}).get(flag):
            names.update(members)
    return sorted(name for name in names if getattr(policy, name, None) is None)


def check_policy(policy, trainer_flags=None):
    """Raises TypeError naming the members `policy` lacks (see `missing_members`)."""
    missing = missing_members(policy, trainer_flags)
    if missing:
        enabled = sorted(flag for flag, on in (trainer_flags or {}).items() if on)
        raise TypeError('policy {} lacks {} (needed by the trainer{}); see btgym_aac.algorithms.policy.interface'
                        .format(type(policy).__name__, missing,
                                ' with {}'.format(', '.join(enabled)) if enabled else ''))


def check_spaces(ob_space, ac_space, owner='policy'):
    """Validates the observation and action spaces of a policy (or of the env a trainer is given).

    Args:
        ob_space, ac_space: the spaces.
        owner: who checks, starting the messages ('policy', 'trainer').

    Raises:
        TypeError: `ob_space` is not a DictSpace or `ac_space` not an ActionDictSpace.
        ValueError: `ob_space` has no `external` key.
    """
    if not isinstance(ob_space, DictSpace):
        raise TypeError('{}: ob_space must be a btgym_aac.spaces.DictSpace, got {!r}'.format(owner, ob_space))
    if 'external' not in ob_space.spaces:
        raise ValueError('{}: ob_space needs an `external` key, got keys {}'.format(owner, list(ob_space.spaces)))
    if not isinstance(ac_space, ActionDictSpace):
        raise TypeError('{}: ac_space must be a btgym_aac.spaces.ActionDictSpace, got {!r}'.format(owner, ac_space))


def checked_layers(sizes, arg_name='lstm_layers'):
    """Returns layer `sizes` as a tuple of positive ints; raises ValueError naming `arg_name` if empty or invalid."""
    layers = tuple(sizes)
    if not layers or any(isinstance(size, bool) or int(size) != size or size <= 0 for size in layers):
        raise ValueError('policy: {} must be a non-empty sequence of positive ints, got {!r}'.format(arg_name, sizes))
    return tuple(int(size) for size in layers)


def named_parameters(function):
    """Names of the parameters of `function` other than self, *args and **kwargs (none when it has no signature)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != 'self'}


def init_parameters(cls):
    """Names of the parameters of the `__init__` of class `cls` and of its bases."""
    named = set()
    for klass in cls.__mro__:
        if '__init__' in vars(klass):
            named |= named_parameters(vars(klass)['__init__'])
    return named


def unread_policy_kwargs(policy_class, kwargs):
    """Keys of `kwargs` named neither by an `__init__` of `policy_class` or of its bases nor by a builder its
    leftover kwargs reach (`policy_class.kwargs_readers(kwargs)`), so that a misspelt option is reported instead of
    being silently dropped (the policies pass their leftover kwargs on to network builders that ignore what they do
    not know).

    Args:
        policy_class: policy class.
        kwargs: the user's policy kwargs (`policy_config['kwargs']`).

    Returns:
        sorted list of the unread keys; empty for a class without `kwargs_readers`, whose use of kwargs is unknown.
    """
    readers = getattr(policy_class, 'kwargs_readers', None)
    if readers is None:
        return []
    named = init_parameters(policy_class)
    for reader in readers(kwargs):
        named |= named_parameters(reader)
    return sorted(set(kwargs) - named)


def set_off_policy_pass(policy_class, kwargs, trainer_flags):
    """Sets `kwargs['off_policy_pass']`, unless given, to whether a loss of the trainer reads the off-policy pass
    (any of `OFF_POLICY_PASS_FLAGS` on), for a policy class whose `__init__` (or a base's) takes it.

    Args:
        policy_class: policy class.
        kwargs: policy kwargs, changed in place.
        trainer_flags: dict flag -> bool with the `OFF_POLICY_PASS_FLAGS`.
    """
    if 'off_policy_pass' in init_parameters(policy_class):
        kwargs.setdefault('off_policy_pass', any(trainer_flags[flag] for flag in OFF_POLICY_PASS_FLAGS))
