"""Finds the policy kwargs that no part of a policy reads, so that a misspelt option is reported instead of being
silently dropped (the policies pass their leftover kwargs on to network builders that ignore what they do not know).
"""
import inspect


def _named_parameters(function):
    """Names of the parameters of `function` other than *args and **kwargs (none when it has no signature)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


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
    named = set()
    for klass in policy_class.__mro__:
        if '__init__' in vars(klass):
            named |= _named_parameters(vars(klass)['__init__'])
    for reader in readers(kwargs):
        named |= _named_parameters(reader)
    return sorted(set(kwargs) - named)
