"""Names imported on first use: classes named by module and name (`ClassRef`), and the lazy public names of a
package (`lazy_names`).

The launcher process only checks and passes on the classes of its configs; its tasks build with them. The
reference configuration's trainer and policy classes are given to it as `ClassRef`s, so that it does not import
TensorFlow (seconds of CPU, and most of a task's memory: `benchmarks/process_memory.py`) for classes it never
uses. A `ClassRef` pickles as the class itself: a task, or a later reader of the run's saved configs, gets the real
class. Packages import their public names through `lazy_names`, so that importing a package stays cheap (importing
`btgym_aac` imports no TensorFlow).
"""
import importlib


def import_class(module, name):
    """The attribute `name` of module `module`, imported."""
    return getattr(importlib.import_module(module), name)


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
            return import_class(public[name], name)
        raise AttributeError('module {!r} has no attribute {!r}'.format(package_name, name))

    def __dir__():
        return sorted(list(package_globals) + list(public))

    return __getattr__, __dir__


def resolved(value):
    """The class a ClassRef names, imported; any other value as it is."""
    return value.resolve() if isinstance(value, ClassRef) else value


def class_name(value):
    """`(module, qualified name)` of a class or ClassRef, None for anything else."""
    if isinstance(value, ClassRef):
        return value.module, value.name
    if isinstance(value, type):
        return value.__module__, value.__qualname__
    return None


def same_class(first, second):
    """True when `first` and `second` are the same class, each given as a class or a ClassRef (neither imported);
    for other values, whether they are the same object."""
    names = class_name(first), class_name(second)
    return names[0] == names[1] if None not in names else first is second


class ClassRef:
    """The class `name` of module `module`, imported when it is first called or asked for an attribute (other than
    `__name__` and `__qualname__`). Copies are the same ClassRef; pickled, it is the class itself.

    Args:
        module: module that defines the class.
        name: the class's name there.
    """

    def __init__(self, module, name):
        self.module = module
        self.name = name

    def resolve(self):
        """The class, imported."""
        return import_class(self.module, self.name)

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __getattr__(self, attribute):
        if attribute == '__qualname__':
            return self.name
        if attribute == '__name__':
            return self.name.rpartition('.')[2]
        if attribute in ('module', 'name') or attribute.startswith('__'):
            raise AttributeError(attribute)
        return getattr(self.resolve(), attribute)

    def __reduce__(self):
        return import_class, (self.module, self.name)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __eq__(self, other):
        return same_class(self, other)

    def __hash__(self):
        return hash((self.module, self.name))

    def __repr__(self):
        return "ClassRef('{}', '{}')".format(self.module, self.name)
