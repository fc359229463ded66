"""The `btgym-aac` command: train, evaluate, walk-forward, cluster-node, export, demo."""
import argparse
import difflib
import json
import os
import sys
import time
import traceback

from btgym_aac.config_modules import load_config_module
from btgym_aac.distributed.task_start import start_forkserver_early
from btgym_aac.logs import error_summary
from btgym_aac.run_configs import (CONFIG_NAMES, DEFAULT_LOG_DIR, DEFAULT_MAX_STEPS, default_configs, make_launcher,
                                   multi_asset_env_config)


def _process_start_time():
    """When this process started (`time.time()` scale, to 10 ms), from /proc (Linux: its start in clock ticks
    after boot); elsewhere, now."""
    try:
        with open('/proc/self/stat') as stat:
            ticks = int(stat.read().rpartition(')')[2].split()[19])
        since_start = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf('SC_CLK_TCK')
    except (OSError, ValueError, IndexError, AttributeError):
        return time.time()
    return time.time() - since_start


STARTED = _process_start_time()


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
    configs = default_configs(args.algo or 'a3c', import_classes=False)
    file_configs = load_config_file(args.config) if args.config else {}
    if file_configs:
        for name, config in file_configs.items():
            merged = name in ('cluster_config', 'launcher_config')
            configs[name] = dict(configs[name], **config) if merged else config
        if args.algo:
            trainer = default_configs(args.algo, import_classes=False)['trainer_config']['class_ref']
            configs['trainer_config'] = dict(configs['trainer_config'], class_ref=trainer)
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
    if getattr(args, 'max_steps', None) is not None:
        launcher['max_env_steps'] = args.max_steps
    if getattr(args, 'seed', None) is not None:
        launcher['root_random_seed'] = args.seed
    if getattr(args, 'assets', None) is not None:
        configs['env_config'] = _multi_asset_env_config(args, 'env_config' in file_configs)
        return configs
    if getattr(args, 'portfolio', False):
        raise ValueError('--portfolio needs --assets (the assets whose weights it trades)')
    if getattr(args, 'data', None):
        if env_kwargs.get('dataset') is not None:
            raise ValueError('--data would replace the config\'s `dataset` (a {}) by a BTgymDataset of the files: '
                             'give the files to that dataset in the config file, or drop --data'.format(
                                 type(env_kwargs['dataset']).__name__))
        paths = [os.path.abspath(path) for path in args.data]
        env_kwargs['filename'] = paths if len(paths) > 1 else paths[0]
    configs['env_config'] = dict(configs['env_config'], kwargs=env_kwargs)
    return configs


def asset_files(entries):
    """The `--assets NAME=CSV ...` entries as an ordered dict.

    Raises:
        ValueError: an entry without a name or a file, or a name given twice. FileNotFoundError: no such file.
    """
    assets = {}
    for entry in entries:
        name, sign, path = entry.partition('=')
        if not sign or not name or not path:
            raise ValueError('--assets entry {!r} is not NAME=CSV'.format(entry))
        if name in assets:
            raise ValueError('--assets names {!r} twice'.format(name))
        if not os.path.isfile(path):
            raise FileNotFoundError('--assets {}: no such file {!r}'.format(name, path))
        assets[name] = os.path.abspath(path)
    return assets


def _multi_asset_env_config(args, config_file_env):
    """The env_config of `--assets` (and `--portfolio`); refuses --data and a config file's own env_config
    (`config_file_env`)."""
    if getattr(args, 'data', None):
        raise ValueError('--assets and --data both give the data: give each asset\'s file as NAME=CSV')
    if config_file_env:
        raise ValueError('--assets would replace the env_config of {}: give the assets\' data to its dataset '
                         'there, or drop --assets'.format(args.config))
    return multi_asset_env_config(asset_files(args.assets), portfolio=args.portfolio)


def _check_initial_checkpoint(folder):
    """FileNotFoundError unless `folder` (the `--initial-ckpt-dir` flag) holds a checkpoint; a Launcher given such a
    folder in its config starts without it, as the original, but a flag asks for it explicitly."""
    from btgym_aac.distributed.checkpoints import latest_checkpoint

    if latest_checkpoint(os.path.expanduser(folder)) is None:
        raise FileNotFoundError('initial_ckpt_dir {!r} holds no checkpoint'.format(folder))


def _warn_of_changed_data(launcher, allow_untrusted=False):
    """Warns when a resumed run's data files differ from those it was trained on (its saved run config, read only
    when this user owns it: see `read_run_config`)."""
    from btgym_aac.distributed.checkpoints import latest_checkpoint

    if launcher.purged or latest_checkpoint(launcher.current_ckpt_dir) is None:
        return
    from btgym_aac.evaluation.loading import read_run_config  # (unpickling the saved classes imports them)

    try:
        saved = read_run_config(launcher.log_dir, allow_untrusted)
    except (FileNotFoundError, ValueError):
        return
    before = saved['env_config'].get('kwargs', {}).get('filename')
    now = launcher.env_config.get('kwargs', {}).get('filename')
    if before != now:
        print('btgym-aac: warning: resuming {}, trained on data {}, with data {}'.format(
            launcher.log_dir, before or 'built in', now or 'built in'), file=sys.stderr)


def _stop_by(interrupt):
    """(words, exit status) of a KeyboardInterrupt: SIGTERM (`StopRequested`, 143) or Ctrl-C (130)."""
    from btgym_aac.distributed.stop_signals import StopRequested

    return ('stopped by SIGTERM', 143) if isinstance(interrupt, StopRequested) else ('interrupted', 130)


def _train(args):
    """Trains with the launcher: the reference configuration, or CONFIG.py's dicts, with flag overrides (the
    tasks' forkserver starts first, so that its imports overlap with the config file's)."""
    start_forkserver_early()
    configs = _configs_from_args(args)
    purge = 2 if args.fresh else 0
    launcher = make_launcher(configs, purge_previous=purge, resume_from=args.resume_from)
    _warn_of_changed_data(launcher, args.allow_untrusted_config)
    print('logs and checkpoints: {} (tensorboard --logdir {} --host 127.0.0.1)'.format(launcher.log_dir,
                                                                                       launcher.log_dir))
    run_started = time.time()
    try:
        result = launcher.run()
    except KeyboardInterrupt as interrupt:
        words, status = _stop_by(interrupt)
        print('\n{}: workers stopped; {}'.format(words, launcher.checkpoint_report()))
        return status
    except RuntimeError as exc:
        print('training failed: {}'.format(exc), file=sys.stderr)
        return 1
    if not result['completed']:
        print('training stopped at env step {} of {}: the workers were stopped from outside (a signal); {} (train '
              'again with this log dir to resume)'.format(result['global_step'], launcher.max_env_steps,
                                                          launcher.checkpoint_report()), file=sys.stderr)
        return 1
    print('done: {global_step} env steps, {episodes} episodes in {seconds:.0f} s; checkpoint in {ckpt}'.format(
        ckpt=launcher.current_ckpt_dir, **result))
    if result['first_step_seconds'] is not None:
        before_run = run_started - STARTED
        print('first trained step {:.1f} s after the command started{}'.format(
            before_run + result['first_step_seconds'],
            _startup_phases(result['startup_task'], result['startup_seconds'], before_run)))
    return 0


STARTUP_PHASES = (('imported', 'configs and TensorFlow imported'), ('graph_built', 'graph built'),
                  ('session_ready', 'session ready'))


def _startup_phases(task, startup_seconds, before_run):
    """' (worker N: ... at X s, ...)': when worker `task` passed its start-up phases, from the command's start."""
    phases = ['{} at {:.1f} s'.format(words, before_run + startup_seconds[phase])
              for phase, words in STARTUP_PHASES if phase in startup_seconds]
    return ' (worker {}: {})'.format(task, ', '.join(phases)) if phases else ''


def _cluster_role(args, cluster_config):
    """(cluster spec, job, task) of a cluster-node: from --cluster (with --job and --task), else from TF_CONFIG,
    else from a SLURM job step; --job and --task override the role TF_CONFIG or SLURM gives.

    Raises:
        ValueError: no source of the cluster, or a malformed one (naming the field).
    """
    from btgym_aac.distributed.cluster import check_cluster_spec
    from btgym_aac.distributed.scheduler_cluster import role_from_slurm, role_from_tf_config

    if args.cluster:
        if args.job is None or args.task is None:
            raise ValueError('--cluster needs --job and --task (the role of this node in it)')
        with open(args.cluster) as f:
            try:
                spec = json.load(f)
            except json.JSONDecodeError as error:
                raise ValueError('cluster spec {} is not valid JSON: {}'.format(args.cluster, error)) from error
        return check_cluster_spec(spec, args.cluster), args.job, args.task
    if os.environ.get('TF_CONFIG'):
        spec, job, task = role_from_tf_config(os.environ['TF_CONFIG'])
        source = 'TF_CONFIG'
    elif 'SLURM_PROCID' in os.environ:
        spec, job, task = role_from_slurm(cluster_config.get('num_ps', 1), cluster_config.get('port'))
        source = 'the SLURM job step'
    else:
        raise ValueError('cluster-node needs the cluster: --cluster SPEC.json with --job and --task, a TF_CONFIG '
                         'environment variable (Kubeflow TFJob, Vertex AI, SageMaker) or a SLURM job step')
    if spec is not None:
        check_cluster_spec(spec, source)
    return spec, args.job or job, task if args.task is None else args.task


def _cluster_node(args):
    """Runs one parameter server or worker of a multi-host cluster: described by a JSON spec (--cluster, --job,
    --task), by the TF_CONFIG environment variable of Kubeflow's TFJob, Vertex AI or SageMaker (its chief is worker
    0; an evaluator task exits at once), or by a SLURM job step (the first num_ps tasks are parameter servers).
    Its port is open on every interface of its host (the other nodes must reach it): run the cluster on a network
    that it alone uses, or firewall the ports to the cluster's hosts (docs/distributed.md, "Security"). A worker
    runs in a child process, started again when a parameter server's loss ends its session (`cluster_node`)."""
    from btgym_aac.distributed.cluster import address_port, check_own_port
    from btgym_aac.distributed.cluster_node import run_node_worker
    from btgym_aac.distributed.network_namespace import NetworkIsolationError, open_ports_warning
    from btgym_aac.distributed.scheduler_cluster import EVALUATOR
    from btgym_aac.distributed.task_process import run_task

    configs = _configs_from_args(args)
    cluster_spec, job, task = _cluster_role(args, configs['cluster_config'])
    if job == EVALUATOR:
        print('btgym-aac cluster-node: an evaluator task has no part in training; exiting (evaluate the run with '
              '`btgym-aac evaluate LOG_DIR`)')
        return 0
    if not 0 <= task < len(cluster_spec[job]):
        raise ValueError('task {} is not in the cluster spec ({} {} tasks)'.format(task, len(cluster_spec[job]), job))
    check_own_port(cluster_spec[job][task])
    launcher = make_launcher(configs, cluster_spec=cluster_spec, show_progress=False, purge_previous=0,
                              shared_log_dir=True)
    isolation = launcher.cluster_config['network_isolation']
    reason = 'a cluster-node\'s task must be reachable from the cluster\'s other nodes'
    if isolation == 'require':
        raise NetworkIsolationError('network isolation is required, but {}: a private network namespace cannot '
                                    'hold it'.format(reason))
    if isolation == 'auto':
        launcher.log.warning(open_ports_warning([address_port(cluster_spec[job][task])], reason))
    status = 0
    try:
        if job == 'ps':
            stopped = run_task(launcher.task_config(job, task))
        else:
            stopped, status = run_node_worker(launcher.task_config(job, task), launcher.max_restarts, launcher.log)
    except KeyboardInterrupt:
        stopped = True
    if stopped:
        print('\n{} {} stopped by Ctrl-C or SIGTERM'.format(job, task), file=sys.stderr)
        return 130
    return status


def _export(args):
    """Copies the latest checkpoint of a run's log dir to DEST (usable as `initial_ckpt_dir`)."""
    from btgym_aac.distributed.checkpoints import export_checkpoint

    source = os.path.join(args.log_dir, args.ckpt_subdir)
    path = export_checkpoint(source, args.dest)
    print('exported {}'.format(path))
    return 0


def _evaluate(args):
    """Evaluates a run's latest checkpoint against buy-and-hold and random baselines on the same episodes; writes
    report.json and PNG plots to --out (default LOG_DIR/evaluation) and prints the mean metrics."""
    from btgym_aac.evaluation import evaluate
    from btgym_aac.evaluation.report import format_table

    from btgym_aac.env.engine import EngineError

    try:
        report = evaluate(args.log_dir, data=args.data, episodes=args.episodes, out=args.out, seed=args.seed,
                          allow_untrusted=args.allow_untrusted_config)
    except EngineError as error:
        print('btgym-aac evaluate: {}'.format(error), file=sys.stderr)
        return 2
    print('checkpoint {} (global step {}), {} {} episodes from seed {}'.format(
        report['checkpoint'], report['global_step'], report['episodes'], report['episode_type'], report['seed']))
    print(format_table(report))
    print('report and plots: {}'.format(report['out']))
    return 0


def _walk_forward(args):
    """Walk-forward test: cuts the data's time span into FOLDS+1 blocks; fold k trains on blocks 0..k only (from
    scratch, or continuing fold k-1 with --continue) and evaluates the policy, buy-and-hold and a random policy on
    block k+1. Writes OUT/walk_forward.json and plots; run it again to continue a stopped walk-forward."""
    from btgym_aac.walk_forward import walk_forward

    configs = _configs_from_args(args)
    try:
        report = walk_forward(configs, args.data, args.folds, train_steps=args.train_steps,
                              test_episodes=args.test_episodes, out=args.out,
                              continue_training=args.continue_training, seed=args.seed or 0)
    except KeyboardInterrupt as interrupt:
        words, status = _stop_by(interrupt)
        print('\nwalk-forward {}: run the same command again to continue it'.format(words), file=sys.stderr)
        return status
    except RuntimeError as exc:
        print('walk-forward failed: {}'.format(exc), file=sys.stderr)
        return 1
    for fold in report['folds']:
        print('fold {fold}: train {train[first_bar]} .. {train[last_bar]}, test {test[first_bar]} .. {test[last_bar]}, '
              '{steps} steps, policy {policy:+.3f} %, buy-and-hold {hold:+.3f} % per episode'.format(
                  fold=fold['fold'], train=fold['train_window'], test=fold['test_window'], steps=fold['global_step'],
                  policy=fold['agents']['policy']['mean']['return_pct'],
                  hold=fold['agents']['buy_and_hold']['mean']['return_pct']))
    print('\n'.join(report['summary']['lines']))
    print('report and plots: {}'.format(os.path.abspath(args.out)))
    return 0


def _demo(args):
    """Runs one random-action episode on the built-in sine data and writes its renderings as PNG files."""
    import matplotlib.image

    from btgym_aac.env import BTgymEnv
    from btgym_aac.evaluation.report import check_output_folder
    from btgym_aac.strategy import DevStrat_4_11

    check_output_folder(os.path.abspath(args.out))
    os.makedirs(args.out, exist_ok=True)
    env = BTgymEnv(strategy=DevStrat_4_11, render_modes=['human', 'episode', 'external', 'internal'],
                   random_seed=args.seed)
    env.action_space.seed(args.seed)
    try:
        observation, info = env.reset()
        steps, total_reward, terminated = 0, 0.0, False
        while not terminated:
            observation, reward, terminated, _, info = env.step(env.action_space.sample())
            steps += 1
            total_reward += reward
        last_frame = {mode: env.render(mode) for mode in ('human', 'external', 'internal')}
        stat = env.get_stat()
        last_frame['episode'] = env.render('episode')
    finally:
        env.close()
    written = []
    for mode, image in last_frame.items():
        path = os.path.join(args.out, '{}.png'.format(mode))
        matplotlib.image.imsave(path, image)
        written.append(path)
    print('episode: {} agent steps, {} bars, total reward {:+.3f}, final broker value {:.2f}, runtime {}'.format(
        steps, stat['length'], total_reward, info['broker_value'], stat['runtime']))
    print('renderings written: {}'.format(', '.join(written)))
    return 0


def _seed(text):
    """argparse type of --seed: a whole number >= 0."""
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise argparse.ArgumentTypeError('must be a whole number >= 0, got {!r}'.format(text))
    return seed


def _add_run_flags(parser, cluster_spec_given=False):
    """Flags of `train` and `cluster-node` (whose cluster spec fixes the workers and ports: no --workers, --port)."""
    parser.add_argument('config', nargs='?', help='Python file defining env_config, cluster_config, '
                        'policy_config, trainer_config (and optionally launcher_config)')
    parser.add_argument('--algo', choices=('a3c', 'unreal', 'ppo'), help='trainer (default a3c)')
    if not cluster_spec_given:
        parser.add_argument('--workers', type=int, help='number of workers (default 2)')
    parser.add_argument('--envs-per-worker', type=int, help='environments per worker (default 1)')
    parser.add_argument('--max-steps', type=int, help='env steps to train (default {})'.format(DEFAULT_MAX_STEPS))
    parser.add_argument('--log-dir', help='logs and checkpoints (default {})'.format(DEFAULT_LOG_DIR))
    parser.add_argument('--data', nargs='+', metavar='CSV', help='train on these OHLC CSV files')
    parser.add_argument('--assets', nargs='*', metavar='NAME=CSV',
                        help='trade several assets, one OHLC CSV file each, with one discrete action per asset '
                        '(MultiDiscreteEnv, MultiAssetStrategy); without entries: the built-in cointegrated pair '
                        'X, Y')
    parser.add_argument('--portfolio', action='store_true',
                        help='with --assets: trade target portfolio weights (PortfolioEnv) instead')
    parser.add_argument('--seed', type=_seed, help='root random seed')
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


def _add_untrusted_flag(parser, why):
    """The --allow-untrusted-config flag of a command that unpickles a run's configs (`why` says when)."""
    parser.add_argument('--allow-untrusted-config', action='store_true',
                        help='{}; unpickling runs code, so it is refused when another user owns the file or the log '
                        'dir, or could write them: this flag reads it anyway (only for runs of users you '
                        'trust)'.format(why))


def _add_command(commands, name, **kwargs):
    """A subcommand parser that takes no abbreviated flags (`--port` must not be read as `--portfolio`)."""
    return commands.add_parser(name, allow_abbrev=False, **kwargs)


def build_parser():
    """Returns the argparse parser of the `btgym-aac` command."""
    parser = argparse.ArgumentParser(prog='btgym-aac', description=__doc__)
    commands = parser.add_subparsers(dest='command', required=True)

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
    _add_untrusted_flag(train, 'a resumed log dir\'s run_config.pkl is read to compare its data with this run\'s')
    train.set_defaults(run=_train)

    evaluate = _add_command(commands, 'evaluate', help='evaluate a trained run against baselines',
                                   description=_evaluate.__doc__)
    evaluate.add_argument('log_dir', metavar='LOG_DIR', help='log dir of a btgym-aac train run')
    evaluate.add_argument('--data', nargs='+', metavar='CSV', help='evaluate on these OHLC CSV files')
    evaluate.add_argument('--episodes', type=int, default=5, help='episodes per agent (default: 5)')
    evaluate.add_argument('--out', help='folder for report.json and the plots (default: LOG_DIR/evaluation)')
    evaluate.add_argument('--seed', type=_seed, default=0, help='seed of the first episode (default: 0)')
    _add_untrusted_flag(evaluate, 'the run\'s configs are unpickled from LOG_DIR/run_config.pkl')
    evaluate.set_defaults(run=_evaluate)

    node = _add_command(commands, 'cluster-node', help='run one task of a multi-host cluster',
                               description=_cluster_node.__doc__)
    _add_run_flags(node, cluster_spec_given=True)
    node.add_argument('--cluster', metavar='SPEC.json',
                      help='JSON {"ps": ["host:port", ...], "worker": ["host:port", ...]} (default: TF_CONFIG, '
                      'else the SLURM job step)')
    node.add_argument('--job', choices=('ps', 'worker'), help='this node\'s job (default: from TF_CONFIG or SLURM)')
    node.add_argument('--task', type=int, help='this node\'s task index (default: from TF_CONFIG or SLURM)')
    node.set_defaults(run=_cluster_node)

    export = _add_command(commands, 'export', help='copy the latest checkpoint of a run', description=_export.__doc__)
    export.add_argument('log_dir', metavar='LOG_DIR')
    export.add_argument('dest', metavar='DEST')
    export.add_argument('--ckpt-subdir', default='current_train_checkpoint')
    export.set_defaults(run=_export)

    walk = _add_command(commands, 'walk-forward', help='train and test fold by fold along time',
                               description=_walk_forward.__doc__)
    walk.add_argument('config', nargs='?', help='Python file defining the config dicts (default: the reference '
                      'configuration)')
    walk.add_argument('--algo', choices=('a3c', 'unreal', 'ppo'), help='trainer (default a3c)')
    walk.add_argument('--data', nargs='+', metavar='CSV', required=True, help='OHLC CSV files to walk through')
    walk.add_argument('--folds', type=int, required=True, help='K: K+1 blocks, K train/test folds')
    walk.add_argument('--train-steps', type=int, help='env steps per fold (default: the config\'s max_env_steps)')
    walk.add_argument('--test-episodes', type=int, default=5, help='test episodes per block (default: 5)')
    walk.add_argument('--continue', dest='continue_training', action='store_true',
                      help='fold k starts from fold k-1\'s checkpoint instead of from scratch')
    walk.add_argument('--out', default='runs/walk_forward', help='output folder (default: runs/walk_forward)')
    walk.add_argument('--workers', type=int, help='number of workers (default 2)')
    walk.add_argument('--seed', type=_seed, help='root random seed (default 0)')
    walk.add_argument('--network-isolation', choices=('auto', 'require', 'off'),
                      help='as for train (default auto)')
    walk.set_defaults(run=_walk_forward)

    demo = _add_command(commands, 'demo', help='run one episode on the built-in data and save its renderings',
                               description=_demo.__doc__)
    demo.add_argument('--out', default='out/demo', help='folder for the PNG files (default: out/demo)')
    demo.add_argument('--seed', type=_seed, default=0, help='random seed (default: 0)')
    demo.set_defaults(run=_demo)
    return parser


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


if __name__ == '__main__':
    sys.exit(main())
