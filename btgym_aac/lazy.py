"""Lazy public names of a package: imported from their modules on first use."""
import importlib


def lazy_names(package_name, public, package_globals):
    """Module-level `__getattr__` and `__dir__` that import `public` names on first access.

    Args:
        package_name: the package's `__name__`.
        public: dict name -> module path holding it.
        package_globals: the package's `globals()`.

    Returns:
        (__getattr__, __dir__) functions.
    """
    def __getattr__(name):
        if name in public:
            return getattr(importlib.import_module(public[name]), name)
        raise AttributeError('module {!r} has no attribute {!r}'.format(package_name, name))

    def __dir__():
        return sorted(list(package_globals) + list(public))

    return __getattr__, __dir__
