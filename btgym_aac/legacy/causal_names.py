"""The original's "casual" names: it spelled causal "casual", this package spells it "causal".

The original named its causal data domain `BTgymCasualDataDomain` (module `btgym.datafeed.casual`), and its
causal-convolution research `btgym.research.casual_conv` (`CasualConvStrategy`, `conv_1d_casual_encoder`, ...);
this package named them after it at first (`btgym_aac.data.casual`, `btgym_aac.research.casual_conv`). Both
spellings work; each old name is the very object of its new name (`isinstance` sees one class, `is` holds):

- `RENAMED_NAMES`: old name -> 'module:new name'. They are this module's attributes (imported on first use), which
  the public lazy name tables (`btgym_aac`, `btgym_aac.data`) and the original's `btgym_aac.datafeed.casual` point
  to.
- `RENAMED_MODULES`: old module path -> the module now holding it. Each old path is a module made on import
  (`module_paths` finds them) that shows its new module's names, and the old names of those among them: pickles,
  config strings (`class_refs`) and imports that name `btgym_aac.research.casual_conv.strategy.CasualConvStrategy_0`
  or `btgym_aac.data.casual.BTgymCasualDataDomain` get this package's objects.

Like the rest of `btgym_aac.legacy` this module imports only the standard library until a name is asked for.
"""
import importlib

RENAMED_NAMES = {
    'BTgymCasualDataDomain': 'btgym_aac.data.causal:BTgymCausalDataDomain',
    'BTgymCasualTrial': 'btgym_aac.data.causal:BTgymCausalTrial',
    'CasualConvStrategy': 'btgym_aac.research.causal_conv.strategy:CausalConvStrategy',
    'CasualConvStrategy_0': 'btgym_aac.research.causal_conv.strategy:CausalConvStrategy_0',
    'CasualConvStrategy_1': 'btgym_aac.research.causal_conv.strategy:CausalConvStrategy_1',
    'CasualConvStrategyMulti': 'btgym_aac.research.causal_conv.strategy:CausalConvStrategyMulti',
    'conv_1d_casual_encoder': 'btgym_aac.research.causal_conv.networks:conv_1d_causal_encoder',
    'conv_1d_casual_attention_encoder': 'btgym_aac.research.causal_conv.networks:conv_1d_causal_attention_encoder',
    'CasualConvPolicy_0_0': 'btgym_aac.research.causal_conv.policy:CausalConvPolicy_0_0',
}
"""Old name -> 'module:new name' of the object it names."""

_CONV = 'btgym_aac.research.casual_conv'
RENAMED_MODULES = dict(
    {'btgym_aac.data.casual': 'btgym_aac.data.causal', _CONV: 'btgym_aac.research.causal_conv'},
    **{'{}.{}'.format(_CONV, name): 'btgym_aac.research.causal_conv.{}'.format(name)
       for name in ('strategy', 'networks', 'policy', 'layers', 'wavelets')},
)
"""Old module path -> the module's path now."""

_NEW_NAMES = {old: target.partition(':')[2] for old, target in RENAMED_NAMES.items()}


def __getattr__(name):
    if name not in RENAMED_NAMES:
        raise AttributeError('module {!r} has no attribute {!r}'.format(__name__, name))
    module, _, new_name = RENAMED_NAMES[name].partition(':')
    return getattr(importlib.import_module(module), new_name)


def __dir__():
    return sorted(list(globals()) + list(RENAMED_NAMES))


def _old_names(module):
    """The old names of the names `module` lists (a lazy package lists its names without importing them): old name
    -> new name."""
    names = set(dir(module))
    return {old: new for old, new in _NEW_NAMES.items() if new in names}


def fill_module(module):
    """Makes `module`, made for an old path of `RENAMED_MODULES`, show the names of the module now holding it (imported
    here) under their names and, for the renamed ones, under their old names too; a submodule of an old package
    path is that submodule's old path."""
    old_path = module.__name__
    new = importlib.import_module(RENAMED_MODULES[old_path])
    old_names = _old_names(new)
    public = getattr(new, '__all__', None)
    if public is None:
        public = [name for name in vars(new) if not name.startswith('_')]
    own = vars(module)

    def __getattr__(name):
        if name in old_names:
            return getattr(new, old_names[name])
        if '{}.{}'.format(old_path, name) in RENAMED_MODULES:
            return importlib.import_module('{}.{}'.format(old_path, name))
        try:
            return getattr(new, name)
        except AttributeError:
            raise AttributeError('module {!r} has no attribute {!r}'.format(old_path, name)) from None

    def __dir__():
        return sorted(set(own) | set(dir(new)) | set(old_names))

    module.__doc__ = 'The old path `{}` of `{}`: its names, and the old names of those renamed.'.format(
        old_path, new.__name__)
    module.__all__ = sorted(set(public) | {old for old, name in old_names.items() if name in public})
    module.__getattr__, module.__dir__ = __getattr__, __dir__
