"""Config files and flag overrides of the `btgym-aac` command: the config dicts a `train`, `cluster-node` or
`walk-forward` run starts from."""
import difflib
import os
import sys
import traceback

from btgym_aac.class_refs import ClassRef
from btgym_aac.cli.order_flags import order_flags
from btgym_aac.config_modules import load_config_module
from btgym_aac.logs import error_summary
from btgym_aac.distributed.run_config import (CONFIG_NAMES, TRAINER_CLASSES, default_algo, default_configs,
                                              merge_configs, multi_asset_env_config, trainer_algo)


def load_config_file(path):
    """Runs a Python config file as a module of its own (see `config_modules`: the classes it defines reach the
    cluster's processes and the run's saved configs) and returns the notebook-style dicts it defines.

    Raises:
        FileNotFoundError: no such file. ValueError: it cannot be run, exits, defines none of the config dicts,
            or defines one that is not a dict.
    """
    if os.path.isdir(path):
        raise ValueError('config file {!r} is a folder'.format(path))
    if not os.path.isfile(path):
        raise FileNotFoundError('config file {!r} does not exist'.format(path))
    try:
        namespace = load_config_module(path)
    except SyntaxError as error:
        raise ValueError('config file {} line {}: {}'.format(path, error.lineno, error.msg)) from error
    except SystemExit as error:
        raise ValueError('config file {} exited (exit status {!r}) instead of defining its configs'.format(
            path, error.code)) from error
    except Exception as error:
        lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == path]
        raise ValueError('config file {}{} failed: {}'.format(
            path, ' line {}'.format(lines[-1]) if lines else '', error_summary(error))) from error
    configs = {name: namespace[name] for name in CONFIG_NAMES if name in namespace}
    for name in sorted(set(namespace) - set(CONFIG_NAMES)):
        close = difflib.get_close_matches(name, CONFIG_NAMES, n=1, cutoff=0.8)
        if close and close[0] not in namespace:
            print('btgym-aac: warning: config file {} defines `{}`, not `{}`: it is ignored'.format(
                path, name, close[0]), file=sys.stderr)
    if not configs:
        raise ValueError('config file {} defines none of {}'.format(path, ', '.join(CONFIG_NAMES)))
    for name, config in configs.items():
        if not isinstance(config, dict):
            raise ValueError('config file {}: {} must be a dict, got {}'.format(path, name, type(config).__name__))
    return configs


def _configs_from_args(args):
    """The config dicts of a run: the config file's dicts over the preset's (`run_config.merge_configs`; with
    `--assets`, the preset's for several assets, its env settings for the run's trainer among them,
    `run_config.multi_asset_env_settings`; without `--algo`, with the preset's trainer, `run_config.default_algo`),
    then the flags, each setting one setting (`--algo` the trainer's class, keeping its kwargs).

    Args:
        args: the parsed flags of `train`, `cluster-node`, `walk-forward` or `sweep`.

    Returns:
        dict of the config dicts, by name (`env_config`, `cluster_config`, `launcher_config`, ...).

    Raises:
        FileNotFoundError, ValueError: see `load_config_file`, `asset_files` and `_check_initial_checkpoint`; a
            flag that conflicts with another or with the config file.
    """
    file_configs = load_config_file(args.config) if args.config else {}
    multi_asset = _on_several_assets(args)
    configs = merge_configs(default_configs(args.algo, import_classes=False, preset=args.preset,
                                            multi_asset=multi_asset), file_configs)
    if args.algo:
        configs['trainer_config']['class_ref'] = ClassRef('btgym_aac.algorithms.aac', TRAINER_CLASSES[args.algo])
    cluster = configs['cluster_config'] = dict(configs['cluster_config'])
    launcher = configs['launcher_config'] = dict(configs.get('launcher_config', {}))
    env_kwargs = dict(configs['env_config'].get('kwargs', {}))
    for flag, key in (('workers', 'num_workers'), ('envs_per_worker', 'num_envs'), ('log_dir', 'log_dir'),
                      ('port', 'port'), ('initial_ckpt_dir', 'initial_ckpt_dir'),
                      ('network_isolation', 'network_isolation')):
        if getattr(args, flag, None) is not None:
            cluster[key] = getattr(args, flag)
    if getattr(args, 'initial_ckpt_dir', None) is not None:
        _check_initial_checkpoint(args.initial_ckpt_dir)
    for flag, key in (('max_steps', 'max_env_steps'), ('progress_seconds', 'progress_seconds'),
                      ('keep_checkpoint_every_steps', 'keep_checkpoint_every_steps'),
                      ('seed', 'root_random_seed'), ('max_restarts', 'max_restarts'),
                      ('restart_window', 'restart_window_minutes')):
        if getattr(args, flag, None) is not None:
            launcher[key] = getattr(args, flag)
    if multi_asset:
        configs['env_config'] = _multi_asset_env_config(args, 'env_config' in file_configs,
                                                        trainer_algo(configs['trainer_config']))
        configs['env_config']['kwargs'].update(_action_encoding_flag(args), **cost_flags(args), **order_flags(args))
        return configs
    if getattr(args, 'portfolio', False):
        raise ValueError('--portfolio needs --assets (the assets whose weights it trades)')
    if getattr(args, 'action_encoding', None):
        raise ValueError('--action-encoding needs --assets (the assets whose actions it encodes)')
    if getattr(args, 'data', None):
        if env_kwargs.get('dataset') is not None:
            raise ValueError('--data would replace the config\'s `dataset` (a {}) by a BTgymDataset of the files: '
                             'give the files to that dataset in the config file, or drop --data'.format(
                                 type(env_kwargs['dataset']).__name__))
        paths = [os.path.abspath(path) for path in args.data]
        env_kwargs['filename'] = paths if len(paths) > 1 else paths[0]
    env_kwargs.update(cost_flags(args), **order_flags(args))
    configs['env_config'] = dict(configs['env_config'], kwargs=env_kwargs)
    return configs


def algo_of(args):
    """The trainer of a command's run, as `_configs_from_args` configures it: `--algo`, or without it the preset's
    (`run_config.default_algo`; on several assets under `tuned`, PPO)."""
    return args.algo or default_algo(args.preset, multi_asset=_on_several_assets(args))


def _on_several_assets(args):
    """Whether the command's run trades several assets (`--assets`, with or without entries)."""
    return getattr(args, 'assets', None) is not None


COST_FLAGS = ('spread', 'slippage', 'slippage_fixed', 'commission', 'commission_scheme')
"""The cost flags (`parser._add_cost_flags`), named as the env settings they set."""


def cost_flags(args):
    """The env cost settings given as flags.

    Returns:
        dict setting -> value of those given.

    Raises:
        ValueError: a value no broker takes (named, as the env would name it).
    """
    given = {name: getattr(args, name) for name in COST_FLAGS if getattr(args, name, None) is not None}
    if given:
        from btgym_aac.env.costs import COST_DEFAULTS, check_costs
        from btgym_aac.validation import check_number

        check_costs(dict(COST_DEFAULTS, **{name: given[name] for name in given if name in COST_DEFAULTS}))
        if 'commission' in given:
            check_number('commission', given['commission'])
    return given


def asset_files(entries):
    """The `--assets NAME=CSV[,CSV...] ...` entries as an ordered dict asset -> absolute path, or list of paths
    (several files of one asset, concatenated in time).

    Raises:
        ValueError: an entry without a name or a file, or a name given twice. FileNotFoundError: no such file.
    """
    assets = {}
    for entry in entries:
        name, sign, given = entry.partition('=')
        paths = given.split(',')
        if not sign or not name or not all(paths):
            raise ValueError('--assets entry {!r} is not NAME=CSV[,CSV...]'.format(entry))
        if name in assets:
            raise ValueError('--assets names {!r} twice'.format(name))
        for path in paths:
            if not os.path.isfile(path):
                raise FileNotFoundError('--assets {}: no such file {!r}'.format(name, path))
        absolute = [os.path.abspath(path) for path in paths]
        assets[name] = absolute if len(absolute) > 1 else absolute[0]
    return assets


def data_argument(args):
    """The data of a command taking --data or --assets: the --data files, or a dict asset -> file(s)
    (`asset_files`)."""
    return asset_files(args.assets) if getattr(args, 'assets', None) else args.data


def _multi_asset_env_config(args, config_file_env, algo):
    """The env_config of `--assets` (and `--portfolio`), with the preset's settings for the trainer `algo`; refuses
    --data and a config file's own env_config (`config_file_env`)."""
    if getattr(args, 'data', None):
        raise ValueError('--assets and --data both give the data: give each asset\'s file as NAME=CSV')
    if config_file_env:
        raise ValueError('--assets would replace the env_config of {}: give the assets\' data to its dataset '
                         'there, or drop --assets'.format(args.config))
    return multi_asset_env_config(asset_files(args.assets), portfolio=args.portfolio, preset=args.preset, algo=algo)


def _action_encoding_flag(args):
    """The env setting `--action-encoding` gives a run on several assets (none when it is not given).

    Raises:
        ValueError: it is given with --portfolio, whose target weights have no discrete encoding.
    """
    if not getattr(args, 'action_encoding', None):
        return {}
    if args.portfolio:
        raise ValueError('--action-encoding is for discrete actions; --portfolio trades target weights')
    return {'action_encoding': args.action_encoding}


def _check_initial_checkpoint(folder):
    """FileNotFoundError unless `folder` (the `--initial-ckpt-dir` flag) holds a checkpoint; a Launcher given such a
    folder in its config starts without it, as the original, but a flag asks for it explicitly."""
    from btgym_aac.distributed.checkpoints import latest_checkpoint

    if latest_checkpoint(os.path.expanduser(folder)) is None:
        raise FileNotFoundError('initial_ckpt_dir {!r} holds no checkpoint'.format(folder))
