"""Finds the policy kwargs that no part of a policy reads, so that a misspelt option is reported instead of being
silently dropped (the policies pass their leftover kwargs on to network builders that ignore what they do not know).
"""
import inspect

OFF_POLICY_PASS_FLAGS = ('use_off_policy_aac', 'use_value_replay', 'use_pixel_control')
"""Trainer flags whose losses read a policy's off-policy pass (`off_logits`, `off_vf`, `vr_value`, `pc_q`)."""


def named_parameters(function):
    """Names of the parameters of `function` other than self, *args and **kwargs (none when it has no signature)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != 'self'}


def unread_policy_kwargs(policy_class, kwargs):
    """Keys of `kwargs` named neither by an `__init__` of `policy_class` or of its bases nor by a builder its
    leftover kwargs reach (`policy_class.kwargs_readers(kwargs)`).

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


def init_parameters(cls):
    """Names of the parameters of the `__init__` of class `cls` and of its bases."""
    named = set()
    for klass in cls.__mro__:
        if '__init__' in vars(klass):
            named |= named_parameters(vars(klass)['__init__'])
    return named


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
