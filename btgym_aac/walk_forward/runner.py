"""`walk_forward`: train on the past, test on the next stretch of data, fold by fold along time.

The data's time span is cut into K+1 blocks of equal duration. Fold k (0 ... K-1) trains with the Launcher on
blocks 0 ... k only, less their last `embargo` (from scratch, or from fold k-1's checkpoint with
`continue_training`) and evaluates the trained policy, buy-and-hold and a random policy deterministically on
windows laid end to end over block k+1.
Everything goes under `out`: per fold `fold_<k>/` with `train.csv`, `test.csv`, the run's log dir `run/`, the
evaluation and `fold.json`; at the end `walk_forward.json` and the plots. A fold is done once its `fold.json` is
written, so a walk-forward stopped in fold k continues there: its training resumes from the fold's checkpoint, or,
stopped before the fold saved one, starts again as the fold first started.
"""
import collections.abc
import copy
import json
import os

import pandas as pd

from btgym_aac.distributed.run_config import check_bar_costs, config_digest
from btgym_aac.distributed.checkpoints import STATE_FILE
from btgym_aac.evaluation.evaluator import evaluate
from btgym_aac.paths import write_json
from btgym_aac.progress import Progress
from btgym_aac.validation import check_whole_number, setting_differences
from btgym_aac.walk_forward.blocks import (Block, asset_frames, block_windows, data_market, fold_env_kwargs,
                                           parse_embargo, read_data, split_blocks, train_frames, whole_block,
                                           write_block_file)
from btgym_aac.walk_forward.plots import EQUITY_PLOT, FOLD_PLOT, plot_fold_metrics, plot_stitched_equity
from btgym_aac.walk_forward.summary import summarize

REPORT_FILE = 'walk_forward.json'
SETTINGS_FILE = 'walk_forward_settings.json'
FOLD_FILE = 'fold.json'


def _check_settings(out, settings):
    """Records the walk-forward's settings in `out`, or checks them against those of the one it continues.

    Raises:
        ValueError: `out` holds a walk-forward with other settings.
    """
    path = os.path.join(out, SETTINGS_FILE)
    if os.path.exists(path):
        with open(path) as f:
            previous = json.load(f)
        if 'configs' not in previous:  # a walk-forward of an earlier version: its configs were not recorded
            settings = {key: value for key, value in settings.items() if key != 'configs'}
        changed = setting_differences(previous, settings)
        if changed:
            raise ValueError('{} holds a walk-forward with other settings ({}): continue it with the same ones, or '
                             'give another --out'.format(out, ', '.join(changed)))
    else:
        write_json(settings, path)


def _data_identity(paths):
    """[path, size, modification time] of every data file (per asset for several)."""
    if isinstance(paths, collections.abc.Mapping):
        return {asset: _data_identity(files) for asset, files in paths.items()}
    return [[os.path.abspath(path), os.path.getsize(path), os.path.getmtime(path)] for path in paths]


def _fold_configs(configs, fold_dir, train_file, initial_ckpt_dir, train_steps):
    """The run's configs for one fold: its train file, its log dir, its steps."""
    fold = copy.copy(configs)
    env_config = configs['env_config']
    fold['env_config'] = dict(env_config, kwargs=fold_env_kwargs(env_config.get('kwargs', {}), train_file))
    cluster = dict(configs.get('cluster_config', {}), log_dir=os.path.join(fold_dir, 'run'))
    cluster.pop('initial_ckpt_dir', None)
    if initial_ckpt_dir:
        cluster['initial_ckpt_dir'] = initial_ckpt_dir
    fold['cluster_config'] = cluster
    fold['launcher_config'] = dict(configs.get('launcher_config', {}), max_env_steps=train_steps)
    return fold


def _agents_record(report):
    """Per agent: per-episode returns and window ends, and the mean metrics, from an evaluation report."""
    return {name: {'return_pct': summary['per_episode']['return_pct'],
                   'first_bar_time': summary['per_episode']['first_bar_time'],
                   'last_bar_time': summary['per_episode']['last_bar_time'], 'mean': summary['mean']}
            for name, summary in report['agents'].items()}


def _fold_record_path(out, number):
    """`<out>/fold_<number>/fold.json`: fold `number` is done once it exists."""
    return os.path.join(out, 'fold_{}'.format(number), FOLD_FILE)


def _run_fold(number, blocks, windows, configs, out, train_steps, continue_training, seed, make_launcher,
              market=None, embargo=None, episode_plots=True, show_progress=False):
    """Trains and evaluates fold `number` (with the oracle of `market`, the data's known-edge market, when given;
    training ending `embargo` before the test block; the evaluation's per-episode plots where `episode_plots`, its
    progress where `show_progress`); returns its record (also `<fold dir>/fold.json`)."""
    record_path = _fold_record_path(out, number)
    fold_dir = os.path.dirname(record_path)
    if os.path.exists(record_path):
        with open(record_path) as f:
            return json.load(f)
    os.makedirs(fold_dir, exist_ok=True)
    frames = train_frames(blocks, number, embargo if embargo is not None else pd.Timedelta(0))
    train_file = write_block_file(frames, os.path.join(fold_dir, 'train.csv'))
    test_file = write_block_file([blocks[number + 1].frame], os.path.join(fold_dir, 'test.csv'), market)
    run_dir = os.path.join(fold_dir, 'run')
    subdir = configs.get('cluster_config', {}).get('log_ckpt_subdir', 'current_train_checkpoint').strip('/')
    previous = os.path.join(out, 'fold_{}'.format(number - 1), 'run', subdir) if continue_training and number else None
    # a fold that saved a checkpoint resumes from it (the launcher says why when it cannot); one stopped before its
    # first save starts again from the previous fold's checkpoint (or from scratch)
    resuming = os.path.isfile(os.path.join(run_dir, subdir, STATE_FILE))
    launcher = make_launcher(_fold_configs(configs, fold_dir, train_file, None if resuming else previous, train_steps),
                             purge_previous=0, root_random_seed=seed + number)
    result = launcher.run()
    if not result['completed']:
        raise RuntimeError('fold {}: training stopped at env step {} of {}; run the walk-forward again to continue '
                           'it'.format(number, result['global_step'], train_steps))
    report = evaluate(run_dir, data=test_file if isinstance(test_file, dict) else [test_file],
                      out=os.path.join(fold_dir, 'evaluation'), seed=seed, windows=windows, plots=episode_plots,
                      show_progress=show_progress)
    record = {
        'fold': number,
        'train_window': {'first_bar': frames[0].index[0].isoformat(),
                         'last_bar': next(frame for frame in frames[::-1] if len(frame)).index[-1].isoformat(),
                         'bars': int(sum(len(frame) for frame in frames))},
        'test_window': blocks[number + 1].describe(),
        'global_step': report['global_step'],
        'checkpoint': report['checkpoint'],
        'continued_from': previous,
        'episodes': report['episodes'],
        'costs': report['costs'],
        'agents': _agents_record(report),
    }
    write_json(record, record_path)
    return record


def data_and_steps(data, train_steps, configs):
    """(the data files, checked to exist (`checked_paths`); the env steps per fold: the config's max_env_steps by
    default).

    Raises:
        FileNotFoundError: a data file is missing. ValueError: steps that are not a whole number >= 1.
    """
    from btgym_aac.distributed.run_config import DEFAULT_MAX_STEPS

    if train_steps is None:
        train_steps = configs.get('launcher_config', {}).get('max_env_steps', DEFAULT_MAX_STEPS)
    return checked_paths(data), check_whole_number('train_steps', train_steps, 1)


def checked_paths(data):
    """The data files as a list (for several assets, a dict asset -> list), each checked to exist.

    Raises:
        FileNotFoundError: naming the missing files.
    """
    if isinstance(data, collections.abc.Mapping):
        return {asset: checked_paths(files) for asset, files in data.items()}
    paths = [data] if isinstance(data, (str, os.PathLike)) else list(data)
    missing = [path for path in paths if not os.path.isfile(path)]
    if missing:
        raise FileNotFoundError('data file(s) not found: {}'.format(', '.join(map(str, missing))))
    return paths


def plan_folds(env_kwargs, paths, folds, test_episodes, embargo):
    """(blocks, embargo Timedelta, test windows per fold) of the data files `paths` (a dict asset -> files for
    several assets; see `plan_frame_folds`)."""
    return plan_frame_folds(env_kwargs, read_data(env_kwargs, paths), folds, test_episodes, embargo)


def plan_frame_folds(env_kwargs, frame, folds, test_episodes, embargo):
    """(blocks, embargo Timedelta, test windows per fold) of the bars `frame`, checking that the env's costs fit
    their prices (`run_config.check_bar_costs`) and that fold 0's training data (block 0 less the embargo) and every
    test block hold an episode window."""
    lines = asset_frames(frame) or {None: frame}
    check_bar_costs(env_kwargs, [(float(bars['close'].median()), 'the bars{} from {} to {}'.format(
        '' if asset is None else ' of ' + asset, frame.index[0], frame.index[-1])) for asset, bars in lines.items()])
    blocks = split_blocks(frame, folds)
    gap = parse_embargo(embargo, blocks)
    first = blocks[0]
    block_windows(Block(0, first.start, first.stop - gap, train_frames(blocks, 0, gap)[0]), env_kwargs)
    return blocks, gap, [block_windows(block, env_kwargs, test_episodes) for block in blocks[1:]]


def walk_forward(configs, data, folds, train_steps=None, test_episodes=5, out='runs/walk_forward',
                 continue_training=False, seed=0, embargo=None, on_fold=None, episode_plots=True, show_progress=False):
    """Walk-forward out-of-sample test of a training configuration (see the module docstring).

    Args:
        configs: dict of env_config, cluster_config, policy_config, trainer_config and optionally
            launcher_config, as `run_config.default_configs()` returns (the env's data source is replaced by the
            folds' files; its other dataset settings, e.g. `episode_duration`, apply).
        data: CSV path or list of paths (read with the env config's `parsing_params`); for a multi-asset env
            (MultiDiscreteEnv, PortfolioEnv), a dict asset -> path(s) naming its assets in its order, aligned as
            training aligns them and cut at the same times (`blocks.read_data`).
        folds: K >= 1: K+1 blocks, K folds.
        train_steps: env steps each fold trains (None: `launcher_config['max_env_steps']`, else 20000).
        test_episodes: at most this many test episodes per block (windows spread evenly over the block).
        out: folder for everything the walk-forward writes.
        continue_training: fold k starts from fold k-1's checkpoint instead of from scratch.
        seed: root seed of the folds' training (fold k: seed + k), of the random baseline and of the bootstrap.
        embargo: a gap between every fold's last training bar and its test block ('2h', '90min', a timedelta;
            None: none): the training bars within it are left out.
        on_fold: called with the fold records so far after every fold (a sweep scores and prunes there; what it
            raises ends the walk-forward, the folds done staying done).
        episode_plots: every fold's evaluation writes its per-episode plots (False: its report alone; the
            walk-forward's own plots are written either way).
        show_progress: on stderr, a line as each fold starts (folds done, time per fold and time left, counted
            over the folds this call trains) and at the end, and every fold's evaluation progress (the training's
            is the Launcher's `show_progress`, in the configs' `launcher_config`).

    Returns:
        the report dict (also written to `<out>/walk_forward.json`): `settings`, `folds` (per fold its train and
        test windows, global step, checkpoint, the costs its evaluation charged (`evaluation.report.cost_record`)
        and every agent's per-episode returns and mean metrics), `costs` (the last fold's; None where its record
        predates them), `summary` (see `summary.summarize`) and `plots`.

    Raises:
        ValueError: bad `folds` / `test_episodes` / `train_steps`, a gap longer than a block, a block holding no
            episode window, or `out` holding a walk-forward with other settings; nothing is trained then.
        FileNotFoundError: a data file is missing.
        RuntimeError: a fold's training did not finish.
    """
    from btgym_aac.distributed.launcher import make_launcher

    folds = check_whole_number('folds', folds, 1)
    paths, train_steps = data_and_steps(data, train_steps, configs)
    test_episodes = check_whole_number('test_episodes', test_episodes, 1)
    blocks, gap, windows = plan_folds(configs['env_config'].get('kwargs', {}), paths, folds, test_episodes, embargo)
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    settings = {'data': _data_identity(paths), 'folds': len(blocks) - 1, 'train_steps': train_steps,
                'test_episodes': test_episodes, 'continue_training': bool(continue_training), 'seed': seed,
                'configs': config_digest(configs)}
    if gap:
        settings['embargo'] = str(gap)  # absent without one, as in walk-forwards made before the option
    _check_settings(out, settings)
    market = data_market(paths)
    records = []
    num_folds = len(blocks) - 1
    with Progress('fold', num_folds, line_seconds=0, terminal=False, enabled=show_progress) as progress:
        for number in range(num_folds):
            if not os.path.exists(_fold_record_path(out, number)):  # (a fold done before is read back at once)
                progress.update(number, 'starting fold {}'.format(number))
            records.append(_run_fold(number, blocks, windows[number], configs, out, train_steps, continue_training,
                                     seed, make_launcher, market, gap, episode_plots, show_progress))
            if on_fold is not None:
                on_fold(list(records))
        progress.update(num_folds, 'every fold done')
    report = {'settings': settings, 'folds': records, 'costs': records[-1].get('costs'),
              'summary': summarize(records, seed),
              'plots': [os.path.basename(plot_stitched_equity(os.path.join(out, EQUITY_PLOT), records)),
                        os.path.basename(plot_fold_metrics(os.path.join(out, FOLD_PLOT), records))]}
    write_json(report, os.path.join(out, REPORT_FILE))
    return report


def holdout_test(configs, train_frame, test_frame, out, train_steps, test_episodes=5, seed=0, embargo=None,
                 market=None, episode_plots=True):
    """Trains on `train_frame` (less its last `embargo`) and tests once on `test_frame`, as a walk-forward fold
    does (a sweep's lockbox).

    Args:
        configs: the run's config dicts (see `walk_forward`).
        train_frame, test_frame: OHLCV DataFrames, the test bars after the training bars.
        out: the folder whose `fold_0/` holds the test as a walk-forward's fold (`fold.json`, `train.csv`,
            `test.csv`, `run/`, `evaluation/`); a test done there is read back, not repeated.
        train_steps, test_episodes, seed, episode_plots: as in `walk_forward`.
        embargo: as in `walk_forward` (shorter than the training span).
        market: the bars' known-edge `MarketSpec` (an oracle joins the baselines), or None.

    Returns:
        {'fold': the fold record, 'summary': `summary.summarize` of it}.
    """
    from btgym_aac.distributed.launcher import make_launcher

    blocks = [whole_block(number, frame) for number, frame in enumerate((train_frame, test_frame))]
    gap = parse_embargo(embargo, blocks)
    windows = block_windows(blocks[1], configs['env_config'].get('kwargs', {}), test_episodes)
    record = _run_fold(0, blocks, windows, configs, os.path.abspath(out), train_steps, False, seed, make_launcher,
                       market, gap, episode_plots)
    return {'fold': record, 'summary': summarize([record], seed)}
