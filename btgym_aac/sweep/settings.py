"""The settings a sweep's study records, which make a sweep run again the same search (the data's checksums, the
walk-forward's settings, the objective, the space and the configs), and, for a command whose settings differ from
those recorded, what changed: a table of setting, then, now.
"""
import json
import os

from optuna.distributions import (CategoricalDistribution, FloatDistribution, IntDistribution,
                                  json_to_distribution)

from btgym_aac.distributed.run_config import config_digest, digested_configs
from btgym_aac.paths import sha256_file
from btgym_aac.sweep.space import describe_space

CONFIG_DICTS = 'config_dicts'
"""The settings' key of the config dicts the `configs` digest is of: it tells which config keys changed, and is not
compared by itself (a study started before it was recorded has the digest alone)."""
FLAGS = {'data': '--data', 'lockbox': '--lockbox', 'folds': '--folds', 'train_steps': '--train-steps',
         'test_episodes': '--test-episodes', 'seed': '--seed', 'embargo': '--embargo', 'objective': '--objective'}
"""The command's flag of each recorded setting that one sets, in the order of the table's rows (then the space's,
then the configs')."""
CONFIG_FLAGS = {'trainer_config.class_ref': '--algo', 'cluster_config.num_workers': '--workers',
                'cluster_config.num_envs': '--envs-per-worker'}
"""The config keys that a flag of the command sets (besides the config file)."""
NOT_SET = 'not set'
NOT_SEARCHED = 'not searched'
WIDEST_VALUE = 60


def file_checksums(paths):
    """[[file name, SHA-256]] of the data files (for several assets, a dict asset -> them): a study is the same
    search on any host holding the same data."""
    if isinstance(paths, dict):
        return {asset: file_checksums(files) for asset, files in paths.items()}
    return [[os.path.basename(path), sha256_file(path)] for path in paths]


def sweep_settings(paths, configs, space, **walk_forward):
    """The settings a sweep's study records and compares: the data files' checksums, `walk_forward` (lockbox,
    folds, train_steps, test_episodes, seed, embargo, objective), the space, the configs' digest and the config
    dicts it is of (see CONFIG_DICTS)."""
    return dict(walk_forward, data=file_checksums(paths), space=describe_space(space), configs=config_digest(configs),
                **{CONFIG_DICTS: digested_configs(configs)})


def changed_settings(previous, current):
    """The settings that differ between a study's recorded ones and a command's, one row per change: a flag's
    value, a name of the space, a data file, a config key (the digest alone where the study predates CONFIG_DICTS).

    Args:
        previous: the study's settings (`sweep_settings`).
        current: the command's.

    Returns:
        list of (setting, then, now) strings; empty when they agree.
    """
    rows = []
    order = list(FLAGS) + ['space', 'configs']
    for key in sorted((set(previous) | set(current)) - {CONFIG_DICTS},
                      key=lambda key: (order.index(key) if key in order else len(order), key)):
        then, now = previous.get(key), current.get(key)
        if then == now:
            continue
        if key == 'space':
            rows.extend(_space_rows(then or {}, now or {}))
        elif key == 'data':
            rows.extend(_data_change_rows(then or [], now or []))
        elif key == 'configs':
            rows.extend(_config_rows(previous.get(CONFIG_DICTS), current.get(CONFIG_DICTS), then, now))
        else:
            rows.append((FLAGS.get(key, key), _shown(then), _shown(now)))
    return rows


def changes_table(rows):
    """`changed_settings`'s rows as an aligned table under a header (setting, then, now), one line each."""
    rows = [('setting', 'then', 'now')] + list(rows)
    widths = [max(len(row[column]) for row in rows) for column in range(2)]
    return '\n'.join('  {}  {}  {}'.format(setting.ljust(widths[0]), then.ljust(widths[1]), now).rstrip()
                     for setting, then, now in rows)


def _space_rows(then, now):
    """A row per name of the space (`describe_space`'s dicts) that is searched in one only or over other values."""
    return [('space ' + name, _distribution(then.get(name)), _distribution(now.get(name)))
            for name in sorted(set(then) | set(now)) if then.get(name) != now.get(name)]


def _distribution(text):
    """A distribution's JSON (`describe_space`) in words: 'float [1e-05, 0.001] log', 'int [1, 4]', 'one of [10,
    20]'."""
    if text is None:
        return NOT_SEARCHED
    distribution = json_to_distribution(text)
    if isinstance(distribution, CategoricalDistribution):
        return 'one of {}'.format(_shown(list(distribution.choices)))
    kind = {FloatDistribution: 'float', IntDistribution: 'int'}[type(distribution)]
    words = '{} [{!r}, {!r}]'.format(kind, distribution.low, distribution.high)
    if distribution.log:
        words += ' log'
    if distribution.step != (1 if kind == 'int' else None):
        words += ' step {!r}'.format(distribution.step)
    return words


def _data_change_rows(then, now):
    """The rows of data files that differ: by their place in --data, or per asset of --assets (dicts asset ->
    files); one row when one side had one asset and the other several."""
    if isinstance(then, dict) and isinstance(now, dict):
        return [row for asset in list(then) + [name for name in now if name not in then]
                for row in _data_rows(then.get(asset, []), now.get(asset, []), '--assets ' + asset)]
    if isinstance(then, dict) or isinstance(now, dict):
        return [('--data / --assets', *('assets ' + ' '.join(side) if isinstance(side, dict) else 'one asset'
                                        for side in (then, now)))]
    return _data_rows(then, now)


def _data_rows(then, now, flag='--data'):
    """A row per data file ([name, SHA-256]) that differs, by its place in `flag`'s files."""
    label = flag if max(len(then), len(now)) == 1 else flag + ' file {}'
    return [(label.format(place + 1), _data_file(then, place), _data_file(now, place))
            for place in range(max(len(then), len(now))) if _data_file(then, place) != _data_file(now, place)]


def _data_file(files, place):
    if place >= len(files):
        return NOT_SET
    name, checksum = files[place]
    return '{} (SHA-256 {}...)'.format(name, checksum[:12])


def _config_rows(then, now, then_digest, now_digest):
    """A row per config key (dotted: 'trainer_config.class_ref', 'env_config.kwargs.reward_scale') whose value
    differs between two `digested_configs`; the digests' row where one of them is None (not recorded)."""
    if then is None or now is None:
        return [('configs (digest)', _shown(then_digest), _shown(now_digest))]
    then, now = _flat(then), _flat(now)
    return [(_config_label(key), _cell(then, key), _cell(now, key)) for key in sorted(set(then) | set(now))
            if key not in then or key not in now or _text(then[key]) != _text(now[key])]


def _config_label(key):
    return '{} ({})'.format(key, CONFIG_FLAGS[key]) if key in CONFIG_FLAGS else key


def _text(value):
    """A value's JSON, for comparing (NaN equals NaN there)."""
    return json.dumps(value, sort_keys=True)


def _flat(tree, prefix=''):
    """{dotted key: value} of the non-empty dicts nested in `tree` (lists and empty dicts are values)."""
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            flat.update(_flat(value, '{}{}.'.format(prefix, key)))
        else:
            flat['{}{}'.format(prefix, key)] = value
    return flat


def _cell(values, key):
    return _shown(values[key]) if key in values else NOT_SET


def _shown(value):
    """A value in a table cell: strings as they are, None as 'none', others as Python writes them, cut at
    WIDEST_VALUE."""
    text = value if isinstance(value, str) else 'none' if value is None else repr(value)
    return text if len(text) <= WIDEST_VALUE else text[:WIDEST_VALUE - 3] + '...'
