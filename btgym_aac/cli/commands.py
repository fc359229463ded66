"""Handlers of the `btgym-aac` subcommands: train, evaluate, walk-forward, cluster-node, export, demo."""
import json
import os
import sys
import time

from btgym_aac.cli.config_files import _configs_from_args, cost_flags, data_argument
from btgym_aac.distributed.tasks import start_forkserver_early
from btgym_aac.distributed.launcher import make_launcher
from btgym_aac.evaluation.tearsheet import TEARSHEET_FILE


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
    from btgym_aac.distributed.supervision import StopRequested

    return ('stopped by SIGTERM', 143) if isinstance(interrupt, StopRequested) else ('interrupted', 130)


def run_resumable(name, run):
    """Runs a command that a second run continues (walk-forward, sweep): `run()`'s result and exit status 0, or
    None and the status after a message: 130 / 143 when Ctrl-C / SIGTERM stopped it, 1 when it failed.

    Args:
        name: the command's name in the messages.
        run: callable doing the work.
    """
    try:
        return run(), 0
    except KeyboardInterrupt as interrupt:
        words, status = _stop_by(interrupt)
        print('\n{} {}: run the same command again to continue it'.format(name, words), file=sys.stderr)
        return None, status
    except RuntimeError as exc:
        print('{} failed: {}'.format(name, exc), file=sys.stderr)
        return None, 1


def _train(args):
    """Trains with the launcher: the --preset configuration, or CONFIG.py's dicts over it, with flag overrides (the
    tasks' forkserver starts first, so that its imports overlap with the config file's)."""
    start_forkserver_early()
    configs = _configs_from_args(args)
    purge = 2 if args.fresh else 0
    launcher = make_launcher(configs, purge_previous=purge, resume_from=args.resume_from)
    reached = launcher.already_trained()
    if reached is not None:
        print('the run is at step {} already, at or past --max-steps {}: nothing to train (a larger --max-steps '
              'trains on)'.format(reached, launcher.max_env_steps))
        return 0
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
    from btgym_aac.distributed.cluster import check_cluster_spec, role_from_slurm, role_from_tf_config

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
    runs in a child process, started again when a parameter server's loss ends its session
    (`supervision.run_node_worker`)."""
    from btgym_aac.distributed.cluster import EVALUATOR, address_port, check_own_port
    from btgym_aac.distributed.network_namespace import NetworkIsolationError, open_ports_warning
    from btgym_aac.distributed.supervision import run_node_worker
    from btgym_aac.distributed.worker import run_task

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
            stopped, status = run_node_worker(launcher.task_config(job, task), launcher.restart_budget, launcher.log)
    except KeyboardInterrupt:
        stopped = True
    if stopped:
        print('\n{} {} stopped by Ctrl-C or SIGTERM'.format(job, task), file=sys.stderr)
        return 130
    return status


def _export(args):
    """Writes the policy artifact of a run's latest checkpoint to DEST: the checkpoint (usable as
    `initial_ckpt_dir`), the acting graph as a TensorFlow SavedModel and as ONNX, and manifest.json
    (docs/deploying.md). With --checkpoint-only, copies the checkpoint alone (a log dir without run_config.pkl)."""
    if args.checkpoint_only:
        from btgym_aac.distributed.checkpoints import export_checkpoint

        path = export_checkpoint(os.path.join(args.log_dir, args.ckpt_subdir or 'current_train_checkpoint'),
                                 args.dest)
    else:
        from btgym_aac.deploy.export import export_artifact

        try:
            path = export_artifact(args.log_dir, args.dest, ckpt_subdir=args.ckpt_subdir,
                                   allow_untrusted=args.allow_untrusted_config)
        except ImportError as error:  # (onnx beside a TensorFlow that pins an older ml_dtypes)
            print('btgym-aac export: {}'.format(error), file=sys.stderr)
            return 1
    print('exported {}'.format(path))
    return 0


def _evaluate(args):
    """Evaluates a run's latest checkpoint (or --checkpoint) against buy-and-hold and random baselines on the same
    episodes; writes report.json, PNG plots and tearsheet.html (one HTML page of it all) to --out (default
    LOG_DIR/evaluation) and prints the mean metrics."""
    from btgym_aac.evaluation import evaluate
    from btgym_aac.evaluation.report import format_table, oracle_line

    from btgym_aac.env.engine import EngineError

    try:
        if args.tile and args.episodes is not None:
            raise ValueError('--tile plays every window of the data: drop --episodes')
        if args.tile and not (args.data or args.assets):
            raise ValueError('--tile plays every window of held-out data: give it with --data or --assets (the '
                             'run\'s own data holds its training bars)')
        report = evaluate(args.log_dir, data=data_argument(args), episodes=args.episodes or 5, out=args.out,
                          seed=args.seed, allow_untrusted=args.allow_untrusted_config, costs=cost_flags(args),
                          plots=not args.no_episode_plots, show_progress=True, tearsheet=not args.no_tearsheet,
                          tile=args.tile, checkpoint=args.checkpoint)
    except EngineError as error:
        print('btgym-aac evaluate: {}'.format(error), file=sys.stderr)
        return 2
    print('checkpoint {} (global step {}), {} {} episodes from seed {}'.format(
        report['checkpoint'], report['global_step'], report['episodes'], report['episode_type'], report['seed']))
    if 'tiling' in report:
        tiling = report['tiling']
        print('tiled: {windows} consecutive windows overlapping by {overlap_bars} bars; {bars_skipped} of the '
              '{bars} bars from the first one played in no episode'.format(**tiling))
    for warning in report['warnings']:
        print('btgym-aac evaluate: warning: {}'.format(warning), file=sys.stderr)
    print(format_table(report))
    if 'fraction_of_oracle' in report:
        print(oracle_line(report['fraction_of_oracle']))
    print('report{}: {}'.format('' if args.no_episode_plots else ' and plots', report['out']))
    if not args.no_tearsheet:
        print('tearsheet: {}'.format(os.path.join(report['out'], TEARSHEET_FILE)))
    return 0


def _walk_forward(args):
    """Walk-forward test: cuts the data's time span into FOLDS+1 blocks; fold k trains on blocks 0..k only, less
    their last --embargo (from scratch, or continuing fold k-1 with --continue) and evaluates the policy,
    buy-and-hold and a random policy on block k+1. Writes OUT/walk_forward.json and plots; run it again to continue
    a stopped walk-forward. Writes OUT/tearsheet.html, one HTML page of the results."""
    from btgym_aac.evaluation.report import costs_line
    from btgym_aac.walk_forward import walk_forward
    from btgym_aac.walk_forward.tearsheet import write_walk_forward_tearsheet

    configs = _configs_from_args(args)
    report, status = run_resumable('walk-forward', lambda: walk_forward(
        configs, data_argument(args), args.folds, train_steps=args.train_steps, test_episodes=args.test_episodes,
        out=args.out, continue_training=args.continue_training, seed=args.seed or 0, embargo=args.embargo,
        episode_plots=not args.no_episode_plots, show_progress=True))
    if report is None:
        return status
    for fold in report['folds']:
        print('fold {fold}: train {train[first_bar]} .. {train[last_bar]}, test {test[first_bar]} .. {test[last_bar]}, '
              '{steps} steps, policy {policy:+.3f} %, buy-and-hold {hold:+.3f} % per episode'.format(
                  fold=fold['fold'], train=fold['train_window'], test=fold['test_window'], steps=fold['global_step'],
                  policy=fold['agents']['policy']['mean']['return_pct'],
                  hold=fold['agents']['buy_and_hold']['mean']['return_pct']))
    if report['costs']:
        print(costs_line(report['costs']))
    print('\n'.join(report['summary']['lines']))
    if not args.no_tearsheet:
        print('tearsheet: {}'.format(write_walk_forward_tearsheet(
            os.path.join(os.path.abspath(args.out), TEARSHEET_FILE), report, configs)))
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
