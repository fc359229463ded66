"""The `btgym-aac` command: train, evaluate, walk-forward, cluster-node, export, demo.

`parser` builds the argparse parser, `commands` holds the subcommands' handlers and `config_files` the config dicts
a run starts from (a config file's, with the flags' overrides).
"""
import sys

from btgym_aac.cli.commands import STARTED, STARTUP_PHASES, _startup_phases, _warn_of_changed_data
from btgym_aac.cli.config_files import _configs_from_args, asset_files, load_config_file
from btgym_aac.cli.parser import build_parser
from btgym_aac.distributed.launcher import make_launcher
from btgym_aac.distributed.run_config import DEFAULT_LOG_DIR, DEFAULT_MAX_STEPS, default_configs

__all__ = ['DEFAULT_LOG_DIR', 'DEFAULT_MAX_STEPS', 'STARTED', 'STARTUP_PHASES', '_configs_from_args',
           '_startup_phases', '_warn_of_changed_data', 'asset_files', 'build_parser', 'default_configs',
           'load_config_file', 'main', 'make_launcher']


def main(argv=None):
    """Entry point of the `btgym-aac` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (FileNotFoundError, ValueError, OSError) as exc:
        print('btgym-aac {}: {}'.format(args.command, exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print('\nbtgym-aac {}: interrupted'.format(args.command), file=sys.stderr)
        return 130
