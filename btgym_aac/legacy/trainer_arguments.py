"""What a trainer does with the original's arguments, hooks and attribute names (the settings themselves are
`config.AacConfig`)."""

IGNORED_ORIGINAL_ARGUMENTS = {
    'opt_decay': 'an RMSProp setting; the trainers use Adam',
    'opt_momentum': 'an RMSProp setting; the trainers use Adam',
    'replay_batch_size': 'replay batches take one sequence per runner',
}
"""Arguments of the original's trainers that these trainers accept and ignore, with why (logged as a warning)."""

REMOVED_HOOKS = {
    '_get_main_feeder': 'override extra_feed for placeholders of your own',
    '_process_rollouts': 'override extra_feed for placeholders of your own (the batches are learner.TrainBatches)',
    'process_data': 'the train step builds its feeds in Learner.update_feeds; override extra_feed for placeholders of '
                    'your own',
    'process_summary': 'the train step writes its summaries with Learner.summaries (summaries.RunnerSummaryWriter)',
}
"""Hooks of the original's BaseAAC that the train step does not call, and what to override instead."""


def check_removed_hooks(cls, base):
    """Raises TypeError when `cls` or a class between it and `base` defines one of `REMOVED_HOOKS`."""
    for name, instead in REMOVED_HOOKS.items():
        if any(name in vars(klass) for klass in cls.__mro__ if klass is not base):
            raise TypeError('{} overrides {}, a hook of the original trainer that BaseAAC no longer calls; {} '
                            '(see docs/custom-algorithms.md)'.format(cls.__name__, name, instead))



def original_attributes(setting_names, op_names):
    """A base class giving a trainer the original BaseAAC's attribute names of its settings
    (`trainer.model_gamma`, `trainer.use_memory`, ...) and train-step ops (`trainer.sync`, `trainer.grads`, ...):
    read-only views of `trainer.config` and `trainer.train_ops`, for code ported from the original.

    Args:
        setting_names: names read from `config`.
        op_names: names read from `train_ops`.

    Returns:
        class.
    """
    def view(source, name):
        return property(lambda self: getattr(getattr(self, source), name),
                        doc='`{}.{}` (the original\'s attribute name).'.format(source, name))

    namespace = {name: view('config', name) for name in setting_names}
    namespace.update({name: view('train_ops', name) for name in op_names})
    namespace['__doc__'] = 'The original BaseAAC\'s attribute names, read from `config` and `train_ops`.'
    return type('OriginalTrainerAttributes', (), namespace)
