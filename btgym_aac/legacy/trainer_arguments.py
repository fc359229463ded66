"""What a trainer does with the original's arguments and hooks that it has no use for (the settings themselves
are `config.AacConfig`)."""

IGNORED_ORIGINAL_ARGUMENTS = {
    'opt_decay': 'an RMSProp setting; the trainers use Adam',
    'opt_momentum': 'an RMSProp setting; the trainers use Adam',
    'replay_batch_size': 'replay batches take one sequence per runner',
}
"""Arguments of the original's trainers that these trainers accept and ignore, with why (logged as a warning)."""

REMOVED_HOOKS = {
    '_get_main_feeder': 'override process_data, or extra_feed for placeholders of your own',
    '_process_rollouts': 'override process_data (see feeds.train_batches)',
}
"""Hooks of the original's BaseAAC with no counterpart here, and what to override instead."""


def check_removed_hooks(cls, base):
    """Raises TypeError when `cls` or a class between it and `base` defines one of `REMOVED_HOOKS`."""
    for name, instead in REMOVED_HOOKS.items():
        if any(name in vars(klass) for klass in cls.__mro__ if klass is not base):
            raise TypeError('{} overrides {}, a hook of the original trainer that BaseAAC no longer calls; {} '
                            '(see docs/custom-algorithms.md)'.format(cls.__name__, name, instead))

