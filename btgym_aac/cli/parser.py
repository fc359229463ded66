"""The argparse parser of the `btgym-aac` command: one subcommand per handler of `commands`."""
import argparse

from btgym_aac.cli.commands import _cluster_node, _demo, _evaluate, _export, _train, _walk_forward
from btgym_aac.cli.order_flags import add_order_flags
from btgym_aac.cli.sweep_command import _sweep
from btgym_aac.cli.trade_command import _parity, _tearsheet, _trade
from btgym_aac.distributed.run_config import (DEFAULT_ALGO, DEFAULT_LOG_DIR, DEFAULT_MAX_RESTARTS, DEFAULT_MAX_STEPS,
                                              DEFAULT_PRESET, DEFAULT_RESTART_WINDOW_MINUTES, MULTI_ASSET_ALGOS, PRESETS,
                                              TRAINER_CLASSES)
from btgym_aac.progress import PLAIN_LINE_SECONDS
from btgym_aac.spaces import ENCODINGS
from btgym_aac.sweep import OBJECTIVES, PRUNERS

COMMAND_DESCRIPTION = ('The `btgym-aac` command: train, evaluate, walk-forward, sweep, cluster-node, export, trade, '
                       'tearsheet, demo.')

ALGO_HELP = 'trainer (default {}{})'.format(DEFAULT_ALGO, ''.join(
    '; with --assets under {}: {}'.format(preset, algo) for preset, algo in sorted(MULTI_ASSET_ALGOS.items())))


def _whole_number(text):
    """argparse type of --seed and --max-restarts: a whole number >= 0."""
    try:
        number = int(text)
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError('must be a whole number >= 0, got {!r}'.format(text))
    return number


def _add_run_flags(parser, cluster_spec_given=False):
    """Flags of `train` and `cluster-node` (whose cluster spec fixes the workers and ports: no --workers, --port)."""
    parser.add_argument('config', nargs='?', help='Python file defining env_config, cluster_config, '
                        'policy_config, trainer_config (and optionally launcher_config)')
    parser.add_argument('--algo', choices=tuple(TRAINER_CLASSES), help=ALGO_HELP)
    parser.add_argument('--preset', choices=tuple(PRESETS), default=DEFAULT_PRESET,
                        help='the configuration the config file and the flags change (default: {}; reference: the '
                        'original notebook\'s; docs/configuration.md)'.format(DEFAULT_PRESET))
    if not cluster_spec_given:
        parser.add_argument('--workers', type=int, help='number of workers (default 2)')
    parser.add_argument('--envs-per-worker', type=int,
                        help="environments per worker acting in one batch (default: the preset's, 8; reference: 1)")
    parser.add_argument('--max-steps', type=int, help='env steps to train (default {})'.format(DEFAULT_MAX_STEPS))
    parser.add_argument('--keep-checkpoint-every-steps', type=int, metavar='N',
                        help='also keep a checkpoint every N env steps in LOG_DIR/kept_checkpoints, none removed '
                        '(evaluate any of them with evaluate --checkpoint)')
    parser.add_argument('--log-dir', help='logs and checkpoints (default {})'.format(DEFAULT_LOG_DIR))
    parser.add_argument('--data', nargs='+', metavar='CSV', help='train on these OHLC CSV files')
    parser.add_argument('--assets', nargs='*', metavar='NAME=CSV',
                        help='trade several assets, one OHLC CSV file each, with one discrete action per asset '
                        '(MultiDiscreteEnv, MultiAssetStrategy); without entries: the built-in cointegrated pair '
                        'X, Y')
    _add_asset_env_flags(parser)
    parser.add_argument('--seed', type=_whole_number, help='root random seed')
    if not cluster_spec_given:
        parser.add_argument('--port', type=int, help='first cluster port (default: free ports)')
    parser.add_argument('--initial-ckpt-dir', metavar='DIR', help='start from the latest checkpoint in DIR '
                        '(e.g. written by export), global step 0, instead of resuming or starting from scratch')
    isolation_help = ('auto (default): run the cluster in a private network namespace where the system allows it '
                      '(Linux), else warn that its ports are open to the network; require: refuse to run without '
                      'it; off: no isolation, no warning')
    if cluster_spec_given:
        isolation_help = ('a cluster node cannot be isolated: auto (default) warns that its port is open to the '
                          'network, require refuses to run, off runs without the warning')
    parser.add_argument('--network-isolation', choices=('auto', 'require', 'off'), help=isolation_help)
    parser.add_argument('--max-restarts', type=_whole_number, metavar='N',
                        help='restarts allowed per task (each worker, each parameter server) within any '
                        '--restart-window; one more stops the run (default {})'.format(DEFAULT_MAX_RESTARTS))
    parser.add_argument('--restart-window', type=_positive_number, metavar='MINUTES',
                        help='the sliding window over which a task\'s restarts are counted (default {:g})'.format(
                            DEFAULT_RESTART_WINDOW_MINUTES))
    _add_cost_flags(parser)
    add_order_flags(parser)


def _add_cost_flags(parser):
    """The env's cost settings as flags (see `btgym_aac.env.costs`); each given one replaces the config's."""
    costs = parser.add_argument_group('costs', 'each one given replaces the setting of the config (or of the '
                                      'evaluated run); by default there is no cost but the commission')
    costs.add_argument('--spread', type=_spread, metavar='PRICE', help='bid/ask spread in price units, half paid '
                       'on each side of a fill (1 pip of EURUSD: 0.0001), or "data": each bar\'s spread from data '
                       'with bid and ask prices or a spread column')
    costs.add_argument('--slippage', type=float, metavar='FRACTION', help='backtrader\'s slippage, a fraction of '
                       'the price')
    costs.add_argument('--slippage-fixed', type=float, metavar='PRICE', help='backtrader\'s slippage in price units')
    costs.add_argument('--commission', type=float, help='the strategy\'s commission: a fraction of the traded value '
                       '(percent scheme) or money per unit (per_unit)')
    costs.add_argument('--commission-scheme', metavar='SCHEME', help='percent (of the traded value) or per_unit')


def _spread(text):
    """The --spread value: 'data', or the number (checked with the other costs)."""
    if text == 'data':
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("a number >= 0 or 'data', got {!r}".format(text)) from None


def _add_episode_plots_flag(parser, instead):
    """The --no-episode-plots flag (the PNG plots of every evaluated episode take about half an evaluation's time)."""
    parser.add_argument('--no-episode-plots', action='store_true',
                        help='write no PNG plot per evaluated episode: {}'.format(instead))


def _add_tearsheet_flag(parser):
    """The --no-tearsheet flag of a command that writes tearsheet.html."""
    parser.add_argument('--no-tearsheet', action='store_true',
                        help='write no tearsheet.html (one self-contained HTML page of the results)')


def _add_untrusted_flag(parser, why):
    """The --allow-untrusted-config flag of a command that unpickles a run's configs (`why` says when)."""
    parser.add_argument('--allow-untrusted-config', action='store_true',
                        help='{}; unpickling runs code, so it is refused when another user owns the file or the log '
                        'dir, or could write them: this flag reads it anyway (only for runs of users you '
                        'trust)'.format(why))


def _add_command(commands, name, **kwargs):
    """A subcommand parser that takes no abbreviated flags (`--port` must not be read as `--portfolio`)."""
    return commands.add_parser(name, allow_abbrev=False, **kwargs)


def _add_train_command(commands):
    """Adds `train`: the run flags and how to treat the log dir's earlier run (--fresh, --resume, --resume-from).

    Args:
        commands: the subparsers action of the `btgym-aac` parser.
    """
    train = _add_command(commands, 'train', help='train on a local cluster', description=_train.__doc__)
    _add_run_flags(train)
    resume = train.add_mutually_exclusive_group()
    resume.add_argument('--fresh', action='store_true',
                        help='delete the log dir contents (only files a run writes) and start anew')
    resume.add_argument('--resume', action='store_true', help='continue from the log dir checkpoint (default)')
    resume.add_argument('--resume-from', metavar='CHECKPOINT',
                        help='continue from this earlier checkpoint of the log dir (model_parameters-<step>) where '
                        'the latest is damaged; the later checkpoints\' files are moved to <checkpoint '
                        'folder>/set_aside')
    train.add_argument('--progress-seconds', type=_positive_number, metavar='SECONDS',
                       help='where stdout is no terminal (a log file, a pipe), a progress line every SECONDS '
                       '(default {:g}; on a terminal a bar is redrawn in place)'.format(PLAIN_LINE_SECONDS))
    _add_untrusted_flag(train, 'a resumed log dir\'s run_config.pkl is read to compare its data with this run\'s')
    train.set_defaults(run=_train)


def _add_data_flags(parser, required, data_help, assets_help):
    """Adds --data CSV ... and --assets NAME=CSV[,CSV] ..., one or the other (`cli.config_files.data_argument` reads
    them).

    Args:
        parser: the command's parser.
        required: one of them must be given.
        data_help, assets_help: their help texts.
    """
    data = parser.add_mutually_exclusive_group(required=required)
    data.add_argument('--data', nargs='+', metavar='CSV', help=data_help)
    data.add_argument('--assets', nargs='+', metavar='NAME=CSV[,CSV]', help=assets_help)


def _add_evaluate_command(commands):
    """Adds `evaluate LOG_DIR`.

    Args:
        commands: the subparsers action of the `btgym-aac` parser.
    """
    evaluate = _add_command(commands, 'evaluate', help='evaluate a trained run against baselines',
                            description=_evaluate.__doc__)
    evaluate.add_argument('log_dir', metavar='LOG_DIR', help='log dir of a btgym-aac train run')
    _add_data_flags(evaluate, False, 'evaluate a single-asset run on these OHLC CSV files',
                    "evaluate a multi-asset run on these files, one entry per asset of the run, in its order (several "
                    'files of one asset, comma-separated, are concatenated in time)')
    evaluate.add_argument('--checkpoint', metavar='PATH',
                          help='evaluate this checkpoint of the run (a path prefix such as LOG_DIR/kept_checkpoints/'
                          'model_parameters-40000, or a checkpoint folder) instead of its latest')
    evaluate.add_argument('--episodes', type=int, help='seeded episodes per agent (default: 5)')
    evaluate.add_argument('--tile', action='store_true',
                          help='instead of seeded episodes, consecutive test episodes covering every bar of the data '
                          'after the first warm-up (each episode\'s warm-up overlaps the one before)')
    evaluate.add_argument('--out', help='folder for report.json and the plots (default: LOG_DIR/evaluation)')
    evaluate.add_argument('--seed', type=_whole_number, default=0, help='seed of the first episode (default: 0)')
    _add_episode_plots_flag(evaluate, 'report.json alone')
    _add_tearsheet_flag(evaluate)
    _add_cost_flags(evaluate)
    _add_untrusted_flag(evaluate, 'the run\'s configs are unpickled from LOG_DIR/run_config.pkl')
    evaluate.set_defaults(run=_evaluate)


def _add_cluster_node_command(commands):
    """Adds `cluster-node`: the run flags less those its cluster spec fixes, and this node's role.

    Args:
        commands: the subparsers action of the `btgym-aac` parser.
    """
    node = _add_command(commands, 'cluster-node', help='run one task of a multi-host cluster',
                        description=_cluster_node.__doc__)
    _add_run_flags(node, cluster_spec_given=True)
    node.add_argument('--cluster', metavar='SPEC.json',
                      help='JSON {"ps": ["host:port", ...], "worker": ["host:port", ...]} (default: TF_CONFIG, '
                      'else the SLURM job step)')
    node.add_argument('--job', choices=('ps', 'worker'), help='this node\'s job (default: from TF_CONFIG or SLURM)')
    node.add_argument('--task', type=int, help='this node\'s task index (default: from TF_CONFIG or SLURM)')
    node.set_defaults(run=_cluster_node)


def _add_export_command(commands):
    """Adds `export LOG_DIR DEST`.

    Args:
        commands: the subparsers action of the `btgym-aac` parser.
    """
    export = _add_command(commands, 'export', help='write the policy artifact of a run (checkpoint, SavedModel, ONNX, '
                          'manifest)', description=_export.__doc__)
    export.add_argument('log_dir', metavar='LOG_DIR')
    export.add_argument('dest', metavar='DEST')
    export.add_argument('--ckpt-subdir', help="the checkpoint folder under LOG_DIR (default: the run's, "
                        'current_train_checkpoint unless it was configured otherwise)')
    export.add_argument('--checkpoint-only', action='store_true',
                        help='copy the checkpoint alone, as an initial_ckpt_dir (needs no run_config.pkl)')
    _add_untrusted_flag(export, 'the run\'s configs are unpickled from LOG_DIR/run_config.pkl')
    export.set_defaults(run=_export)


def _add_asset_env_flags(parser):
    """The flags of the env of a run on several assets: `--portfolio` and `--action-encoding`."""
    parser.add_argument('--portfolio', action='store_true',
                        help='with --assets: trade target portfolio weights (PortfolioEnv) instead')
    parser.add_argument('--action-encoding', choices=ENCODINGS,
                        help="with --assets, not --portfolio: the policy's action head, one categorical over the "
                        "assets' joint actions (joint, the original's) or one per asset (per_asset); default: the "
                        "preset's (tuned: per_asset for PPO, else joint)")


def _add_walk_forward_flags(parser, data_use):
    """The flags `walk-forward` and `sweep` share: the config, the data (to `data_use`) and each fold's training
    and test."""
    parser.add_argument('config', nargs='?', help='Python file defining the config dicts (default: the --preset '
                        'configuration)')
    parser.add_argument('--algo', choices=tuple(TRAINER_CLASSES), help=ALGO_HELP)
    parser.add_argument('--preset', choices=tuple(PRESETS), default=DEFAULT_PRESET,
                        help='the configuration the config file and the flags change (default: {}; reference: the '
                        'original notebook\'s; docs/configuration.md)'.format(DEFAULT_PRESET))
    _add_data_flags(parser, True, 'OHLC CSV files to ' + data_use,
                    'several assets to {}, one OHLC CSV file (or several, comma-separated) each, aligned on their '
                    'common bar times and cut at the same times'.format(data_use))
    _add_asset_env_flags(parser)
    parser.add_argument('--train-steps', type=int, help='env steps per fold (default: the config\'s max_env_steps)')
    parser.add_argument('--test-episodes', type=int, default=5, help='test episodes per block (default: 5)')
    parser.add_argument('--embargo', metavar='DURATION',
                        help='a gap between each fold\'s last training bar and its test block, e.g. 2h or 90min '
                        '(default: none)')
    parser.add_argument('--workers', type=int, help='number of workers (default 2)')
    parser.add_argument('--seed', type=_whole_number, help='root random seed (default 0)')
    parser.add_argument('--network-isolation', choices=('auto', 'require', 'off'),
                        help='as for train (default auto)')
    _add_episode_plots_flag(parser, 'each fold\'s evaluation writes its report alone; its own plots are written '
                            'anyway')
    _add_cost_flags(parser)
    add_order_flags(parser)


def _add_walk_forward_command(commands):
    """Adds `walk-forward`: the data, the folds and how each fold trains and is tested.

    Args:
        commands: the subparsers action of the `btgym-aac` parser.
    """
    walk = _add_command(commands, 'walk-forward', help='train and test fold by fold along time',
                        description=_walk_forward.__doc__)
    _add_walk_forward_flags(walk, 'walk through')
    walk.add_argument('--folds', type=int, required=True, help='K: K+1 blocks, K train/test folds')
    walk.add_argument('--continue', dest='continue_training', action='store_true',
                      help='fold k starts from fold k-1\'s checkpoint instead of from scratch')
    walk.add_argument('--out', default='runs/walk_forward', help='output folder (default: runs/walk_forward)')
    _add_tearsheet_flag(walk)
    walk.set_defaults(run=_walk_forward)


def _add_sweep_command(commands):
    """Adds `sweep`: the data, the trials, the space and storage, and each trial's walk-forward settings (named as
    in `walk-forward`).

    Args:
        commands: the subparsers action of the `btgym-aac` parser.
    """
    sweep = _add_command(commands, 'sweep', help='search settings with Optuna, scored out of sample, with a lockbox',
                         description=_sweep.__doc__)
    _add_walk_forward_flags(sweep, 'search on')
    sweep.add_argument('--trials', type=int, required=True, help='trials the study should hold')
    sweep.add_argument('--out', default='runs/sweep', help='output folder (default: runs/sweep)')
    sweep.add_argument('--space', metavar='SPACE.py', help='Python file defining SPACE, a dict of config key names '
                       '(e.g. trainer_config.kwargs.opt_learn_rate) to Optuna distributions (default: the built-in '
                       'space of --algo)')
    sweep.add_argument('--storage', metavar='URL', help='the study\'s storage, e.g. postgresql://user@host/db, '
                       'shared by every sweep given it (default: SQLite in --out)')
    sweep.add_argument('--study', help='the study\'s name in the storage (default: sweep)')
    sweep.add_argument('--objective', choices=OBJECTIVES, default=OBJECTIVES[0],
                       help='what a trial maximises out of sample (default: policy minus buy-and-hold per episode)')
    sweep.add_argument('--lockbox', type=float, default=0.2, metavar='FRACTION',
                       help='share of the data\'s time span, at its end, that no trial sees (default 0.2; 0: none)')
    sweep.add_argument('--pruner', choices=PRUNERS, default=PRUNERS[0],
                       help='stop a hopeless trial after a fold (default: Optuna\'s median pruner)')
    sweep.add_argument('--parallel', type=int, default=1, metavar='K', help='trials at a time (default 1)')
    sweep.add_argument('--search-only', action='store_true', help='with --storage: run trials only (a helper host); '
                       'the lockbox test and the report are left to a sweep command without it sharing the study')
    sweep.add_argument('--folds', type=int, default=2, help='walk-forward folds of every trial (default 2)')
    sweep.set_defaults(run=_sweep)


def _positive_number(text):
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError('must be a number > 0, got {}'.format(text))
    return value


def _add_trade_command(commands):
    """Adds `trade ARTIFACT --feed SPEC --out DIR`.

    Args:
        commands: the subparsers action of the `btgym-aac` parser.
    """
    trade = _add_command(commands, 'trade', help='trade live bars with a policy artifact (paper or shadow)',
                         description=_trade.__doc__)
    trade.add_argument('artifact', metavar='ARTIFACT', help='a policy artifact folder (btgym-aac export)')
    trade.add_argument('--feed', action='append', required=True, metavar='[LINE=]SPEC',
                       help='replay:FILE[:SPEED], ccxt:EXCHANGE:SYMBOL:TIMEFRAME or python:MODULE:CALLABLE; one per '
                       'data line (LINE=SPEC) for several assets')
    trade.add_argument('--mode', choices=('paper', 'shadow'), default='paper')
    trade.add_argument('--out', required=True, help='folder of the journal and the saved state')
    trade.add_argument('--backend', choices=('onnx', 'tf'), default='onnx')
    trade.add_argument('--max-bar-delay', type=_positive_number, metavar='SECONDS',
                       help='warn when a feed is silent this long (paper: close the positions)')
    trade.add_argument('--max-drawdown', type=_positive_number, metavar='PERCENT',
                       help='close the positions and stop once the value is this far below its peak')
    trade.add_argument('--flatten-on-exit', action='store_true',
                       help='on Ctrl-C / SIGTERM close the positions first (their orders fill on the next bar)')
    trade.add_argument('--stop-on-silence', action='store_true',
                       help='with --max-bar-delay: a silent feed ends the run at once (exit status 6), its positions '
                       'left as they are')
    trade.add_argument('--close-at-end', action='store_true',
                       help='replayed files: close the positions before the files end, as evaluate ends an episode '
                       '(such a run cannot be continued)')
    trade.add_argument('--reset-state', type=_state_reset, metavar='RULE',
                       help="when the policy's recurrent state starts afresh: episode (every training episode's "
                       'decisions, the default), day (each UTC day of the bars), never, or a number of decisions')
    trade.set_defaults(run=_trade)


def _state_reset(text):
    from btgym_aac.deploy.trader import check_state_reset

    try:
        return check_state_reset(int(text) if text.isdigit() else text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _add_tearsheet_command(commands):
    """Adds `tearsheet ARTIFACT TRADE_DIR`.

    Args:
        commands: the subparsers action of the `btgym-aac` parser.
    """
    tearsheet = _add_command(commands, 'tearsheet', help='write the tearsheet (an HTML page) of a trade run',
                             description=_tearsheet.__doc__)
    tearsheet.add_argument('artifact', metavar='ARTIFACT', help='the policy artifact the run traded with')
    tearsheet.add_argument('trade_dir', metavar='TRADE_DIR', help='the --out folder of the trade run')
    tearsheet.add_argument('--out', metavar='FILE', help='the HTML file (default: TRADE_DIR/tearsheet.html)')
    tearsheet.set_defaults(run=_tearsheet)


def _add_parity_command(commands):
    """Adds `parity LOG_DIR ARTIFACT --data CSV ... --out DIR`.

    Args:
        commands: the subparsers action of the `btgym-aac` parser.
    """
    parity = _add_command(commands, 'parity', help='check that an artifact trades as its run is evaluated',
                          description=_parity.__doc__)
    parity.add_argument('log_dir', metavar='LOG_DIR', help='log dir of a btgym-aac train run')
    parity.add_argument('artifact', metavar='ARTIFACT', help='its policy artifact (btgym-aac export)')
    _add_data_flags(parity, True, 'OHLC CSV files of the bars',
                    "a multi-asset run's files, one entry per asset of the run, in its order")
    parity.add_argument('--out', required=True, help='a new folder for the replayed bars, the trade run and '
                        'parity.json')
    parity.add_argument('--window', type=int, default=0,
                        help='which of the data\'s consecutive episode windows (default: 0, the first)')
    parity.add_argument('--backend', choices=('onnx', 'tf'), default='onnx', help='the artifact\'s backend '
                        '(default: onnx)')
    _add_untrusted_flag(parity, 'the run\'s configs are unpickled from LOG_DIR/run_config.pkl')
    parity.set_defaults(run=_parity)


def _add_demo_command(commands):
    """Adds `demo`.

    Args:
        commands: the subparsers action of the `btgym-aac` parser.
    """
    demo = _add_command(commands, 'demo', help='run one episode on the built-in data and save its renderings',
                        description=_demo.__doc__)
    demo.add_argument('--out', default='out/demo', help='folder for the PNG files (default: out/demo)')
    demo.add_argument('--seed', type=_whole_number, default=0, help='random seed (default: 0)')
    demo.set_defaults(run=_demo)


def build_parser():
    """Returns the argparse parser of the `btgym-aac` command."""
    parser = argparse.ArgumentParser(prog='btgym-aac', description=COMMAND_DESCRIPTION)
    commands = parser.add_subparsers(dest='command', required=True)
    for add_command in (_add_train_command, _add_evaluate_command, _add_cluster_node_command, _add_export_command,
                        _add_trade_command, _add_tearsheet_command, _add_parity_command, _add_walk_forward_command,
                        _add_sweep_command, _add_demo_command):
        add_command(commands)
    return parser
