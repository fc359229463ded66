"""Does each trainer find an edge where one exists? Markets with a known edge (`btgym_aac.data.markets`, see
docs/learning.md) and their no-edge twins, out of sample, against the oracle.

For every market of `--markets` (mr: mean reversion, regime: regime switching, intraday: intraday pattern; pair:
a cointegrated pair and basket: 4 assets with relative momentum, traded by the env of `train --assets`, a
MultiDiscreteEnv or with `--portfolio` a PortfolioEnv; wandering_mean and drifting_trend: markets made apart from the
package, `outside_markets.py`; these four are not in the defaults), every trainer of `--trainers` and every seed
0 .. `--seeds` - 1, on the edge market and (unless `--no-twins`) on its no-edge twin:

- a train CSV (`--train-bars` bars, generator seed 1000 + 2 seed) and a test CSV of a fresh seed of the same
  process (`--test-bars` bars, seed 1001 + 2 seed, starting 2018-01-01), written by `write_market_csv` (with the
  recipe beside them, so the evaluation has the oracle; a market made apart from the package gets its oracle from
  `outside_markets.oracle_maker`); the twin uses the same seeds;
- the env is the reference configuration's (`run_config.default_configs`) on the train file, with 8-hour
  episodes, a 1-hour time gap and rendering off;
- trainers: `a3c`, `ppo`, `unreal`: the reference configuration of `default_configs(algo)` as shipped, with
  `--workers` workers; `sb3_ppo`: Stable-Baselines3's PPO with its defaults ('MultiInputPolicy') on the env of
  `--sb3-env-preset` (default: the reference's, whatever `--preset`; `tuned` gives it the time of day the tuned
  policy reads) wrapped by `SimpleSpaces`, in this process, torch on `--sb3-torch-threads` intra-op threads
  (default 1, as the TensorFlow sessions of our workers: on 2 busy cores torch's default, one per core, took 1.4
  to 2 times the CPU and wall time of one thread in the smoke runs);
- training runs for `--steps` env steps in `--stages` equal stages (by default 100,000 in stages of 5,000; ours:
  one Launcher run keeping a checkpoint at the end of every stage, `keep_checkpoint_every_steps`, so that a
  stage costs what it costs in a run that goes on; SB3: `learn` in stages, rounded up to its whole rollouts of
  2048 steps), and the policy of every stage's end plays `--eval-episodes` episodes of the test file beside
  buy-and-hold, random and the oracle, on the same windows (episode i seeded i): ours through `evaluate` of the
  kept checkpoint, SB3 through the same episodes (`known_edge_runs.evaluate_sb3`); and the same episodes again
  with the policy sampling its actions (`known_edge_runs.sampled_returns`);
- every stage records the env steps, the training CPU seconds so far (ours: every task process of the cluster,
  as `train_throughput.py` reads them from /proc, at the moment the stage's checkpoint was written; SB3: this
  process's and its children's during model building and `learn`), the wall seconds, and every agent's
  per-episode returns (%); on mean reversion and the pair (discrete orders), whose oracles know a level no episode
  shows, also those of the rule within a policy's reach (the oracle taking the level from the episode's bars so
  far, `known_edge_runs.reachable_rule_returns`).

The summary, per market and trainer, time to skill first: the env steps and CPU seconds of the first stage at 50 % and
at 80 % of the oracle or more (None if none); the fraction of the oracle (the policy's mean return per episode over the
oracle's, seeds and episodes pooled, with a bootstrap interval: `walk_forward.summary.fraction_of_oracle`) at every
env-step budget of `--budgets` (default 40,000 and 100,000) and at the last stage, deterministic and sampling; where the
market has a rule within reach, its fraction of the oracle and the policy's fraction of the rule's return
(`known_edge_summary.reachable_rule`); the learning curve (that fraction at every stage, against mean env steps and mean
CPU seconds), and the policy's return minus buy-and-hold's with its bootstrap interval (`bootstrap_mean_interval`), on
the edge market and on the twin (where it should include zero), and on the twin the policy's own return (whose interval
should reach down to zero: a losing buy-and-hold cannot fool that one). Writes `known_edge.json` (settings, every run's
stages, the summary; rewritten after every run), `known_edge_steps.png` and `known_edge_cpu.png` to `--out`, and prints
the table (as in docs/learning.md). The market files, log dirs and evaluation folders go to `--work-dir` (default: a
temporary folder, removed at the end); with a work dir kept, `known_edge_reevaluate.py` plays every kept checkpoint
again on more test episodes without training again.

The defaults (3 markets, 4 trainers, 5 seeds, twins, 100,000 steps) make 120 runs: days on 2 cores; on a
16-core machine, `--workers 8` and a market or trainer per command. `--preset` names the configuration of this
package's trainers (`run_config.PRESETS`, on the pair and basket with the preset's layer for several assets as
`train --assets` has it, `MULTI_ASSET_LAYERS`; SB3 keeps its defaults). Runs go
seed by seed, so a benchmark stopped early has every market and trainer on its first seeds; `--resume` keeps the
runs of the `known_edge.json` in `--out` (same settings) and makes only the others (adding the rule within reach to
kept runs of mean reversion written before it was recorded). SB3 is an optional dependency of
this benchmark (see `peers.py`). `--spread` trains and evaluates every agent, the oracle included, with a bid/ask
spread (`env.costs`): how much of each edge survives the cost of trading it. `--env-kwargs` and `--trainer-kwargs`
(JSON objects) replace settings of the shipped configuration, and `--config FILE` layers a config file over the
preset as `btgym-aac train --config` does (with `--envs-per-worker`), to measure what a change of the defaults
does. `--market-params` makes the markets with other parameters than the generators' defaults (the oracle knows
them): whether settings chosen on the default markets hold on others.

Usage:
    python benchmarks/known_edge.py [--markets mr regime intraday] [--trainers a3c ppo unreal sb3_ppo]
                                    [--seeds 5] [--first-seed 0] [--steps 100000] [--stages 20] [--workers 2]
                                    [--eval-episodes 50]
                                    [--budgets 40000 100000] [--preset reference] [--config FILE]
                                    [--envs-per-worker K]
                                    [--no-twins] [--sb3-torch-threads 1] [--sb3-env-preset reference]
                                    [--spread 0] [--env-kwargs JSON]
                                    [--trainer-kwargs JSON] [--market-params JSON] [--train-bars 60000]
                                    [--test-bars 100000]
                                    [--out benchmarks/results/known_edge] [--work-dir DIR] [--resume]
"""
import argparse
import json
import os
import platform
import sys
import tempfile
import time

from known_edge_runs import (EVAL_SEED, MARKET_ASSETS, MARKETS, OUR_TRAINERS, SB3_TRAINER, check_market_params,
                             env_overrides, run_one, with_reachable_rule)
from known_edge_summary import summarize, table_lines, write_result

from btgym_aac.class_refs import class_name
from btgym_aac.distributed.run_config import MULTI_ASSET_LAYERS, PRESETS, multi_asset_env_settings

TRAINERS = OUR_TRAINERS + (SB3_TRAINER,)
OUR_TRAINING = 'one Launcher run keeping a checkpoint every stage'
"""How this package's trainers are trained (results of the earlier way, a Launcher run per stage that paid a
cluster start-up every stage, are not resumed with these)."""


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--markets', nargs='+', choices=sorted(MARKETS), default=['mr', 'regime', 'intraday'])
    parser.add_argument('--trainers', nargs='+', choices=TRAINERS, default=list(TRAINERS))
    parser.add_argument('--seeds', type=int, default=5, help='number of seeds (--first-seed .. --first-seed + N - 1)')
    parser.add_argument('--first-seed', type=int, default=0,
                        help='the first run seed: another command, or a later one, can make further seeds')
    parser.add_argument('--steps', type=int, default=100000, help='env steps of training')
    parser.add_argument('--stages', type=int, default=20, help='equal stages, each followed by an evaluation')
    parser.add_argument('--budgets', type=int, nargs='*', default=[40000, 100000],
                        help='env steps at which the summary gives the fraction of the oracle')
    parser.add_argument('--portfolio', action='store_true',
                        help='on the pair market, a PortfolioEnv (target weights) instead of a MultiDiscreteEnv')
    parser.add_argument('--preset', choices=tuple(PRESETS), default='reference',
                        help="the configuration of this package's trainers (run_config.PRESETS)")
    parser.add_argument('--config', help="a config file (as `btgym-aac train --config` takes) over the preset, for "
                                         "this package's trainers")
    parser.add_argument('--workers', type=int, default=2, help="workers of this package's trainers")
    parser.add_argument('--envs-per-worker', type=int, help="envs per worker of this package's trainers (default: "
                                                            "the preset's and config file's)")
    parser.add_argument('--eval-episodes', type=int, default=50,
                        help='test episodes per agent and evaluation (docs/learning.md: 10 were too few)')
    parser.add_argument('--twins', action=argparse.BooleanOptionalAction, default=True,
                        help='also train on every market\'s no-edge twin')
    parser.add_argument('--sb3-torch-threads', type=int, default=1,
                        help="torch's intra-op threads for sb3_ppo (0: torch's default, one per core); 1 as the "
                             "TensorFlow sessions of this package's workers")
    parser.add_argument('--sb3-env-preset', choices=tuple(PRESETS), default='reference',
                        help="the preset whose env (strategy, observation) sb3_ppo trains on; its policy and trainer "
                             "settings are SB3's own")
    parser.add_argument('--spread', type=float, default=0.0,
                        help='bid/ask spread in price units in training and evaluation (the markets trade near 1.1: '
                             '0.0001 is one pip); the oracle pays it too')
    parser.add_argument('--env-kwargs', type=json_dict, default={}, metavar='JSON',
                        help='env kwargs replacing the reference configuration\'s for every agent, e.g. '
                             '\'{"reward_scale": 20}\'')
    parser.add_argument('--trainer-kwargs', type=json_dict, default={}, metavar='JSON',
                        help='trainer kwargs replacing the shipped ones of this package\'s trainers (not SB3\'s), '
                             'e.g. \'{"opt_learn_rate": 0.0003}\'')
    parser.add_argument('--market-params', type=json_dict, default={}, metavar='JSON',
                        help='generator keyword arguments per market, replacing its defaults (the oracle knows them), '
                             'e.g. \'{"mr": {"half_life": 240}}\'')
    parser.add_argument('--train-bars', type=int, default=60000)
    parser.add_argument('--test-bars', type=int, default=100000,
                        help='bars of the test file (100,000: about 200 8-hour windows)')
    parser.add_argument('--out', default='benchmarks/results/known_edge')
    parser.add_argument('--work-dir', help='folder kept for the market files, log dirs and evaluations')
    parser.add_argument('--resume', action='store_true',
                        help='keep the runs of known_edge.json in --out (same settings) and make only the others')
    args = parser.parse_args()
    for name in ('seeds', 'steps', 'stages', 'workers', 'eval_episodes', 'train_bars', 'test_bars',
                 'envs_per_worker'):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error('--{} must be >= 1, got {}'.format(name.replace('_', '-'), getattr(args, name)))
    if args.first_seed < 0:
        parser.error('--first-seed must be >= 0, got {}'.format(args.first_seed))
    if not args.spread >= 0:
        parser.error('--spread must be a number >= 0, got {}'.format(args.spread))
    if args.sb3_torch_threads < 0:
        parser.error('--sb3-torch-threads must be >= 0, got {}'.format(args.sb3_torch_threads))
    try:
        check_market_params(args.market_params, args.markets)
    except ValueError as error:
        parser.error('--market-params: {}'.format(error))
    if args.steps < args.stages:
        parser.error('--steps ({}) must be at least --stages ({})'.format(args.steps, args.stages))
    return args


def json_dict(text):
    """A --*-kwargs value: a JSON object."""
    try:
        value = json.loads(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError('not JSON: {}'.format(error)) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError('a JSON object (dict) is needed, got {!r}'.format(text))
    return value


def import_sb3_first(trainers, torch_threads):
    """Imports torch and SB3 before anything imports TensorFlow (docs/configuration.md) and sets torch's
    intra-op threads (0: torch's default); exits with the install line where SB3 is missing."""
    if SB3_TRAINER not in trainers:
        return
    try:
        import torch
        import stable_baselines3  # noqa: F401
    except ImportError:
        sys.exit("stable-baselines3 is not installed: pip install torch 'stable-baselines3>=2.3' "
                 "(or leave sb3_ppo out of --trainers)")
    if torch_threads:
        torch.set_num_threads(torch_threads)


def run_seeds(args):
    """The run seeds of the command: `--seeds` of them from `--first-seed` on."""
    return list(range(args.first_seed, args.first_seed + args.seeds))


def settings(args):
    """The settings written to the JSON."""
    written = {'markets': args.markets, 'trainers': args.trainers, 'seeds': run_seeds(args),
               'preset': args.preset, 'budgets': args.budgets, 'portfolio': args.portfolio,
               'twins': args.twins, 'steps': args.steps, 'stages': args.stages, 'workers': args.workers,
               'eval_episodes': args.eval_episodes, 'eval_seed': EVAL_SEED, 'train_bars': args.train_bars,
               'test_bars': args.test_bars, 'sb3_torch_threads': args.sb3_torch_threads,
               'env_overrides': env_overrides(args), 'our_training': OUR_TRAINING,
               'env': "default_configs(algo)['env_config'] with the train file and env_overrides"}
    if args.trainer_kwargs:  # absent otherwise, so that --resume reads results written before the option
        written['trainer_overrides'] = args.trainer_kwargs
    if args.config:  # likewise
        with open(args.config) as f:
            written['config_file'] = {'path': args.config, 'text': f.read()}
    if args.envs_per_worker is not None:  # likewise
        written['envs_per_worker'] = args.envs_per_worker
    if args.sb3_env_preset != 'reference':  # likewise
        written['sb3_env_preset'] = args.sb3_env_preset
    if args.market_params:  # likewise
        written['market_params'] = args.market_params
    layers = multi_asset_layers(args)
    if layers:  # likewise
        written['multi_asset_layers'] = layers
    env_settings = multi_asset_envs(args)
    if env_settings:  # likewise
        written['multi_asset_env_settings'] = env_settings
    return written


def multi_asset_layers(args):
    """Trainer -> the preset's layer for several assets (`run_config.MULTI_ASSET_LAYERS`), of the trainers that
    have one, where a market of several assets is run."""
    if args.preset not in MULTI_ASSET_LAYERS or not set(args.markets) & set(MARKET_ASSETS):
        return {}
    layers = {algo: MULTI_ASSET_LAYERS[args.preset](algo) for algo in args.trainers if algo in OUR_TRAINERS}
    return {algo: layer for algo, layer in layers.items() if layer}


def multi_asset_envs(args):
    """Trainer -> the preset's env settings for several assets (`run_config.multi_asset_env_settings`; a class as
    'module.name'), of the trainers that have some, where a market of several assets is run."""
    if not set(args.markets) & set(MARKET_ASSETS):
        return {}
    found = {algo: multi_asset_env_settings(args.preset, algo, args.portfolio) for algo in args.trainers
             if algo in OUR_TRAINERS}
    return {algo: {key: '.'.join(class_name(value)) if class_name(value) else value for key, value in env.items()}
            for algo, env in found.items() if env}


def write_results(args, runs, seconds):
    """Writes known_edge.json and the plots to `args.out`; returns the summary rows."""
    rows = summarize(runs, args.budgets)
    write_result({'benchmark': 'known_edge', 'settings': settings(args), 'summary': rows, 'runs': runs,
                  'wall_seconds': seconds,
                  'machine': {'python': platform.python_version(), 'cpus': os.cpu_count()}}, args.out)
    return rows


def run_line(run):
    """One line on a finished run."""
    last = run['stages'][-1]
    fraction = last['fraction_of_oracle']
    return '{} {} {} seed {}: {} env steps, {} CPU s, {:.0f} s, fraction of oracle {}'.format(
        run['market'], 'edge' if run['edge'] else 'twin', run['trainer'], run['seed'], last['env_steps'],
        '-' if last['cpu_seconds'] is None else '{:.0f}'.format(last['cpu_seconds']), last['wall_seconds'],
        '-' if fraction is None else '{:.2f}'.format(fraction))


def run_key(run):
    """What tells one run from another within the same settings."""
    return run['market'], run['edge'], run['trainer'], run['seed']


def finished_runs(args):
    """The runs of an earlier `known_edge.json` in `args.out` made with the same settings (`--resume`), and the
    wall seconds it took; exits naming the settings that differ. The lists of markets, trainers and seeds may
    differ: runs outside them are kept in the results as well."""
    path = os.path.join(args.out, 'known_edge.json')
    if not args.resume or not os.path.exists(path):
        return [], 0.0
    with open(path) as f:
        earlier = json.load(f)
    ours = json.loads(json.dumps(settings(args)))
    differing = sorted(key for key in ours if key not in ('markets', 'trainers', 'seeds', 'budgets')
                       and earlier['settings'].get(key) != ours[key])
    if differing:
        sys.exit('--resume: {} was written with other settings: {}'.format(path, ', '.join(differing)))
    return earlier['runs'], earlier.get('wall_seconds', 0.0)


def run_all(args, work_dir, start):
    """Every run not finished yet, in order seed, market, trainer, edge then twin (so an interrupted benchmark
    has every market and trainer on its first seeds); the results rewritten after each, their wall seconds those
    of every command that made them."""
    runs, earlier_seconds = finished_runs(args)
    start -= earlier_seconds
    runs = [with_reachable_rule(run, work_dir, args) for run in runs]
    done = {run_key(run) for run in runs}
    for seed in run_seeds(args):
        for market in args.markets:
            for trainer in args.trainers:
                for edge in (True, False) if args.twins else (True,):
                    if (market, edge, trainer, seed) in done:
                        continue
                    runs.append(run_one(market, edge, trainer, seed, work_dir, args))
                    print(run_line(runs[-1]), flush=True)
                    write_results(args, runs, time.time() - start)
    return write_results(args, runs, time.time() - start)


def main():
    args = parse_args()
    import_sb3_first(args.trainers, args.sb3_torch_threads)
    start = time.time()
    if args.work_dir:
        rows = run_all(args, os.path.abspath(args.work_dir), start)
    else:
        with tempfile.TemporaryDirectory(prefix='known_edge_') as work_dir:
            rows = run_all(args, work_dir, start)
    print('\n'.join(table_lines(rows, args.budgets)))
    print('written: {} ({:.0f} s)'.format(os.path.join(args.out, 'known_edge.json'), time.time() - start))


if __name__ == '__main__':
    main()
