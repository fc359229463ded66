"""The Launcher's configs: their defaults, how a user's dicts merge into them, and the checks they pass before any
task starts (settings of the right kind, data files that can be read)."""
import copy
import os

from btgym_aac.class_refs import ClassRef, same_class
from btgym_aac.distributed.network_namespace import check_isolation_mode
from btgym_aac.distributed.task_start import check_start_method, default_start_method
from btgym_aac.validation import check_whole_number, is_finite_real

CONFIG_NAMES = ('env_config', 'cluster_config', 'policy_config', 'trainer_config')


def _default_configs():
    """The defaults; their classes as ClassRefs (the launcher process does not import them)."""
    return dict(
        env_config={'class_ref': ClassRef('btgym_aac.env.base', 'BTgymEnv'), 'kwargs': {}},
        cluster_config={'host': '127.0.0.1', 'port': None, 'num_workers': 1, 'num_ps': 1, 'num_envs': 1,
                        'log_dir': './tmp/btgym_aac_log', 'initial_ckpt_dir': None,
                        'log_ckpt_subdir': 'current_train_checkpoint', 'network_isolation': 'auto',
                        'start_method': default_start_method()},
        policy_config={'class_ref': ClassRef('btgym_aac.algorithms.policy.base', 'BaseAacPolicy'),
                       'kwargs': {'lstm_layers': (256,)}},
        trainer_config={'class_ref': ClassRef('btgym_aac.algorithms.aac', 'A3C'), 'kwargs': {}},
    )


def merge_config(defaults, update):
    """Recursively merges `update` into a copy of `defaults` (nested dicts key by key, other values replaced).

    Raises:
        ValueError: `update` is not a dict (or None).
    """
    if update is None:
        return copy.copy(defaults)
    if not isinstance(update, dict):
        raise ValueError('expected a config dict, got {!r}'.format(update))
    merged = dict(defaults)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_config(merged[key], value)
        else:
            merged[key] = value
    return merged


def launcher_configs(**updates):
    """The Launcher's four configs: each of `updates` merged into its default, then checked.

    Args:
        **updates: `env_config`, `cluster_config`, `policy_config`, `trainer_config` as the user gave them (None
            or missing: the default).

    Returns:
        dict name -> merged config (a default trainer or policy class is a `class_refs.ClassRef`, imported where it
        is used); `cluster_config`'s `num_envs`, `num_workers`, `num_ps` and `port` are ints.
        A class config naming another class than the default's starts from that class alone: the default's
        kwargs are for the default class (`lstm_layers=(256,)` of BaseAacPolicy, say) and would override the
        user's class's own defaults.

    Raises:
        ValueError: a config without `class_ref`, or a `cluster_config` key unknown or of the wrong kind.
    """
    defaults = _default_configs()
    for name in ('env_config', 'policy_config', 'trainer_config'):
        update = updates.get(name)
        if isinstance(update, dict) and not same_class(update.get('class_ref', defaults[name]['class_ref']),
                                                       defaults[name]['class_ref']):
            defaults[name] = {'class_ref': update['class_ref'], 'kwargs': {}}
    configs = {name: merge_config(defaults[name], updates.get(name)) for name in CONFIG_NAMES}
    for name in ('env_config', 'policy_config', 'trainer_config'):
        if configs[name].get('class_ref') is None:
            raise ValueError('{} needs a `class_ref`'.format(name))
    cluster_config = configs['cluster_config']
    _check_cluster_config(cluster_config, defaults['cluster_config'])
    for key in ('num_envs', 'num_workers', 'num_ps'):
        cluster_config[key] = check_whole_number('cluster_config {}'.format(key), cluster_config[key], 1)
    if cluster_config['port']:
        cluster_config['port'] = check_whole_number('cluster_config port', cluster_config['port'], 1)
    return configs


def _check_cluster_config(config, known):
    """Raises ValueError naming an unknown `cluster_config` key or a `log_dir`, `log_ckpt_subdir`, `host`,
    `network_isolation` or `start_method` of the wrong kind."""
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise ValueError('unknown cluster_config key(s) {}; known: {}'.format(unknown, sorted(known)))
    if not isinstance(config['log_dir'], (str, os.PathLike)) or not str(config['log_dir']).strip():
        raise ValueError('cluster_config log_dir is empty or not a path: name the folder for logs and checkpoints, '
                         'got {!r}'.format(config['log_dir']))
    subdir = config['log_ckpt_subdir']
    if not isinstance(subdir, str) or not subdir.strip('/') or os.path.normpath(subdir.strip('/')).startswith('..'):
        raise ValueError('cluster_config log_ckpt_subdir must be a folder name inside the log dir, got {!r}'.format(
            subdir))
    if not isinstance(config['host'], str) or not config['host'].strip():
        raise ValueError('cluster_config host must be a host name or address, got {!r}'.format(config['host']))
    check_isolation_mode(config['network_isolation'])
    check_start_method(config['start_method'])


def positive_seconds(name, value):
    """`value` if it is a finite number of seconds > 0, else ValueError naming the setting."""
    if not is_finite_real(value) or value <= 0:
        raise ValueError('{} must be a positive number of seconds, got {!r}'.format(name, value))
    return value


def check_purge_previous(purge_previous, shared_log_dir):
    """Raises ValueError unless `purge_previous` is 0 (keep), 1 (ask) or 2 (delete), and 0 for a shared log dir."""
    if purge_previous not in (0, 1, 2) or isinstance(purge_previous, bool):
        raise ValueError('purge_previous must be 0 (keep), 1 (ask) or 2 (delete), got {!r}'.format(purge_previous))
    if shared_log_dir and purge_previous:
        raise ValueError('a log dir shared by hand-started cluster nodes is never emptied: purge_previous must be '
                         '0, got {!r}'.format(purge_previous))


def _data_sources(env_config):
    """(filename(s), parsing params) of every data source `env_config` names by file: its `filename`, its
    `dataset`'s, or every data line's of a multi-line dataset."""
    from btgym_aac.data.multi import BTgymMultiData

    kwargs = env_config.get('kwargs', {})
    dataset = kwargs.get('dataset')
    if dataset is None:
        return [(kwargs.get('filename'), kwargs.get('parsing_params'))]
    streams = dataset.data.values() if isinstance(dataset, BTgymMultiData) else [dataset]
    return [(getattr(data, 'filename', None), getattr(data, 'parsing_params', None)) for data in streams]


def read_data_files(env_config):
    """Reads the data files named by `env_config` (its `filename`, or its `dataset`'s, or those of every data line
    of a `BTgymMultiData`) once, so that a missing or unusable file stops the run here, before any task starts
    (see `data.parsing.read_ohlcv` and `data.sanity`). The data lines of a `BTgymMultiData` are also aligned, on a
    copy of it (the config's own stays unloaded: every env loads its own), so lines that cannot be aligned stop
    the run here too.

    Returns:
        list of (the bars of a source as a DataFrame, its `data.shared.source_key`), one per source read from files.

    Raises:
        FileNotFoundError: a data file is not a file here.
        DataError (a ValueError): a file cannot be read, fails a data check set to 'error', or the data lines of a
            BTgymMultiData cannot be aligned.
    """
    from btgym_aac.data.multi import BTgymMultiData
    from btgym_aac.data.parsing import read_ohlcv, resolve_parsing_params
    from btgym_aac.data.shared import source_key

    sources = []
    for filenames, parsing_params in _data_sources(env_config):
        if not filenames:
            continue
        for filename in [filenames] if isinstance(filenames, (str, os.PathLike)) else filenames:
            if isinstance(filename, (str, os.PathLike)) and not os.path.isfile(filename):
                what = 'is a folder, not a file' if os.path.isdir(filename) else 'does not exist'
                raise FileNotFoundError('data file {!r} (env_config filename) {}'.format(os.fspath(filename), what))
        sources.append((read_ohlcv(filenames, parsing_params), source_key(filenames,
                                                                          resolve_parsing_params(parsing_params))))
    dataset = env_config.get('kwargs', {}).get('dataset')
    if isinstance(dataset, BTgymMultiData):
        copy.deepcopy(dataset).read_csv()
    return sources
