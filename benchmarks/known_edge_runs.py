"""One run of `known_edge.py`: the market files, training in stages and an out-of-sample evaluation after each
stage, for this package's trainers (the Launcher, resumed stage by stage) and for Stable-Baselines3's PPO (in
this process).

Imported by the benchmark's main module, which every task process of a Launcher imports again: nothing heavy
(TensorFlow, torch) is imported at the top.
"""
import contextlib
import inspect
import os
import sys
import time

import numpy as np
from known_edge_summary import REACHABLE_RULE
from outside_markets import OUTSIDE_MARKETS, oracle_maker

from btgym_aac.data.markets import (make_basket_market, make_intraday_pattern_data, make_mean_reversion_data,
                                    make_pair_market, make_regime_switching_data, write_market_csv)
from btgym_aac.data.synthetic import write_histdata_csv

PACKAGE_MARKETS = {'mr': make_mean_reversion_data, 'regime': make_regime_switching_data,
                   'intraday': make_intraday_pattern_data, 'pair': make_pair_market, 'basket': make_basket_market}
"""Market name -> generator, of the package's known-edge markets (their files carry their recipe and oracle)."""
MARKETS = dict(PACKAGE_MARKETS, **{name: generator for name, (generator, _) in OUTSIDE_MARKETS.items()})
"""Market name -> generator: the package's and those made apart from it (`outside_markets.py`)."""
MARKET_ASSETS = {'pair': ('X', 'Y'), 'basket': ('A', 'B', 'C', 'D')}
"""The assets of the markets of several assets (traded by a multi-asset env: MultiDiscreteEnv, or PortfolioEnv
with `--portfolio`)."""
DATASET_OVERRIDES = ('episode_duration', 'time_gap')
"""The overrides a multi-asset env takes in its dataset."""
BENCHMARK_OWNED_PARAMS = ('num_bars', 'seed', 'edge', 'start', 'freq', 'names', 'return_states')
"""Generator arguments the benchmark sets itself (bars, seeds, twin, test start, asset names), not `--market-params`."""
OUR_TRAINERS = ('a3c', 'ppo', 'unreal')
SB3_TRAINER = 'sb3_ppo'
TEST_START = '2018-01-01'
ENV_OVERRIDES = {'episode_duration': {'days': 0, 'hours': 8, 'minutes': 0}, 'time_gap': {'hours': 1},
                 'render_enabled': False}
"""Env kwargs replacing the reference configuration's (besides the data file)."""
EVAL_SEED = 0
"""Seed of the first evaluation episode (episode i: EVAL_SEED + i), the same windows after every stage."""


def env_overrides(args):
    """ENV_OVERRIDES with the spread of `--spread` (price units) where given and the `--env-kwargs`."""
    overrides = dict(ENV_OVERRIDES, spread=args.spread) if args.spread else dict(ENV_OVERRIDES)
    overrides.update(args.env_kwargs)
    return overrides


def market_seeds(seed):
    """Generator seeds of the train and test files of run seed `seed` (the twin uses the same ones)."""
    return 1000 + 2 * seed, 1001 + 2 * seed


def check_market_params(market_params, markets):
    """Raises ValueError naming what is wrong unless `market_params` maps markets of `markets` to dicts of their
    generator's keyword arguments (none of the `BENCHMARK_OWNED_PARAMS`)."""
    for market, params in market_params.items():
        if market not in markets:
            raise ValueError('{!r} is not one of the markets run ({})'.format(market, ', '.join(markets)))
        if not isinstance(params, dict):
            raise ValueError('{}: a dict of generator arguments is needed, got {!r}'.format(market, params))
        accepted = set(inspect.signature(MARKETS[market]).parameters) - set(BENCHMARK_OWNED_PARAMS)
        unknown = sorted(set(params) - accepted)
        if unknown:
            raise ValueError('{}: {} not among the arguments it takes ({})'.format(
                market, ', '.join(unknown), ', '.join(sorted(accepted))))


def write_markets(market, edge, seed, folder, train_bars, test_bars, params=None):
    """Writes (once) the train data and the test data (a fresh seed of the same process, starting at TEST_START)
    of `market` (the no-edge twin where `edge` is False) for run seed `seed`, its generator given `params` (keyword
    arguments, e.g. {'half_life': 240}; None: its defaults): one CSV, or for several assets one CSV per asset
    (`train_<asset>.csv`; the files of a market made apart from the package carry no recipe); returns (train, test):
    paths, or dicts asset -> path."""
    os.makedirs(folder, exist_ok=True)
    written = []
    for name, bars, generator_seed, start in zip(('train', 'test'), (train_bars, test_bars), market_seeds(seed),
                                                  (None, TEST_START)):
        def make():
            extra = dict(params or {}, **({'start': start} if start else {}))
            return MARKETS[market](num_bars=bars, seed=generator_seed, edge=edge, **extra)

        if market in MARKET_ASSETS:
            paths = {asset: os.path.join(folder, '{}_{}.csv'.format(name, asset)) for asset in MARKET_ASSETS[market]}
            if not all(os.path.exists(path) for path in paths.values()):
                frames = make()
                for asset, path in paths.items():
                    write_market_csv(frames[asset], path)
        else:
            paths = os.path.join(folder, name + '.csv')
            if not os.path.exists(paths):
                (write_histdata_csv if market in OUTSIDE_MARKETS else write_market_csv)(make(), paths)
        written.append(paths)
    return tuple(written)


def market_oracle(market, params=None):
    """The `evaluate(oracle=...)` of `market` made with generator arguments `params`: None for the package's
    markets (their files name their oracle), `outside_markets.oracle_maker`'s for the others."""
    return oracle_maker(market, params) if market in OUTSIDE_MARKETS else None


def evaluation_data(data):
    """`evaluate`'s data of a test file (a list of it), or of several assets' (the dict asset -> file)."""
    return data if isinstance(data, dict) else [data]


def reference_configs(algo, train_data, overrides, preset='reference', portfolio=False, config_file=None):
    """`default_configs(algo, preset=preset)`, with the dicts of `config_file` over them as `btgym-aac train
    --config` puts them (`run_config.merge_configs`), with the train file and `overrides` (ENV_OVERRIDES and the
    costs asked for) in the env kwargs; for several assets (`train_data` a dict asset -> file) the preset's
    settings for them (`default_configs(multi_asset=True)`) and the env of `train --assets`
    (`multi_asset_env_config`, a PortfolioEnv with `portfolio`, with the preset's settings for the trainer), its
    dataset taking the `DATASET_OVERRIDES`."""
    from btgym_aac.cli.config_files import load_config_file
    from btgym_aac.distributed.run_config import default_configs, merge_configs, multi_asset_env_config, trainer_algo

    configs = default_configs(algo, preset=preset, multi_asset=isinstance(train_data, dict))
    if config_file:
        configs = merge_configs(configs, load_config_file(config_file))
    if not isinstance(train_data, dict):
        configs['env_config']['kwargs'].update(overrides, filename=train_data)
        return configs
    dataset = {key: value for key, value in overrides.items() if key in DATASET_OVERRIDES}
    configs['env_config'] = multi_asset_env_config(train_data, portfolio=portfolio, preset=preset,
                                                   algo=trainer_algo(configs['trainer_config']), **dataset)
    configs['env_config']['kwargs'].update({key: value for key, value in overrides.items() if key not in dataset})
    return configs


def stage_record(stage, env_steps, cpu_seconds, wall_seconds, report, sampled_returns, rule_returns=None):
    """One stage: its env steps, training CPU and wall seconds so far, every agent's per-episode returns (%) on the
    test file with the policy's fraction of the oracle (None when the oracle did not gain), and the same for the
    policy sampling its actions (`sampled_returns`, the same episodes); the returns of the rule within a policy's
    reach, where the market has one (`rule_returns`, `reachable_rule_returns`), as those of agent REACHABLE_RULE."""
    from btgym_aac.evaluation.report import fraction_of_oracle

    returns = {name: agent['per_episode']['return_pct'] for name, agent in report['agents'].items()}
    if rule_returns is not None:
        returns[REACHABLE_RULE] = rule_returns
    oracle = float(np.mean(returns['oracle']))
    return {'stage': stage, 'env_steps': int(env_steps), 'cpu_seconds': cpu_seconds, 'wall_seconds': wall_seconds,
            'returns_pct': returns, 'fraction_of_oracle': fraction_of_oracle(report['agents'])['fraction'],
            'sampled_returns_pct': sampled_returns,
            'sampled_fraction_of_oracle': float(np.mean(sampled_returns)) / oracle if oracle > 0 else None}


class SampledAgent:
    """An agent acting by sampling its policy's actions (`act(observation, deterministic=False)`)."""

    def __init__(self, agent):
        self.agent = agent

    def reset(self, observation=None):
        self.agent.reset(observation)

    def observe(self, reward):
        self.agent.observe(reward)

    def act(self, observation):
        return self.agent.act(observation, deterministic=False)


@contextlib.contextmanager
def kept_random_states():
    """Restores, on leaving, the random states policies draw sampled actions from: numpy's global one (this
    package's policies, `spaces.sample_categories`) and, where SB3 has loaded it, torch's, so that seeding them for
    an evaluation leaves the draws of SB3's training in this process as they were."""
    torch = sys.modules.get('torch')
    numpy_state, torch_state = np.random.get_state(), torch.get_rng_state() if torch is not None else None
    try:
        yield
    finally:
        np.random.set_state(numpy_state)
        if torch is not None:
            torch.set_rng_state(torch_state)


def seed_action_sampling(seed):
    """Seeds numpy's global random state and, where loaded, torch's (see `kept_random_states`)."""
    np.random.seed(seed)
    torch = sys.modules.get('torch')
    if torch is not None:
        torch.manual_seed(seed)


def episode_returns(env, agent, episodes, before_episode=None):
    """The per-episode returns (%) of `agent` on the evaluation's episodes (episode i seeded EVAL_SEED + i, as
    `evaluate` seeds them), `before_episode(seed)` called ahead of each where given."""
    from btgym_aac.evaluation.episodes import episode_sample_type, play_episode, reset_options
    from btgym_aac.evaluation.metrics import return_pct

    options = reset_options(episode_sample_type(env))
    returns = []
    for seed in range(EVAL_SEED, EVAL_SEED + episodes):
        if before_episode is not None:
            before_episode(seed)
        record = play_episode(env, agent, seed, options)
        returns.append(return_pct(record.bar_values[0], record.bar_values[-1]))
    return returns


def sampled_returns(env, agent, episodes):
    """The per-episode returns (%) of `agent` sampling its actions on the evaluation's episodes (`episode_returns`),
    its action draws seeded by the episode's seed, so a checkpoint played again draws the same actions; the random
    states are restored afterwards (`kept_random_states`)."""
    with kept_random_states():
        return episode_returns(env, SampledAgent(agent), episodes, seed_action_sampling)


def reachable_rule_returns(run_configs, test_data, episodes):
    """The per-episode returns (%) of the rule within a policy's reach on a market whose oracle knows a level that an
    episode does not show, played on the evaluation's episodes (`episode_returns`) of the env of `run_configs` (a
    dict with its 'env_config') on `test_data`: on mean reversion the oracle with the mean log close of the
    episode's bars so far in place of the true mean (`policy_against_oracle.EstimatedMeanOracle`; docs/learning.md,
    "What mean reversion's oracle knows"), on a pair traded by discrete orders the oracle with the spread less its
    mean over the episode's bars so far in place of the spread less its known mean (`oracle_variants.
    EpisodeSpreadOracle`; docs/multi-asset.md, "What the pair's oracle knows"). None on every other market: their
    oracles know what the training file shows.

    Args:
        run_configs: the run's configs, or a dict of its 'env_config' alone.
        test_data: a test file, or a dict asset -> file.
        episodes: episodes to play.

    Returns:
        list of floats, or None.
    """
    from oracle_variants import episode_spread_oracle
    from policy_against_oracle import EstimatedMeanOracle

    from btgym_aac.data.markets import MeanReversionOracle
    from btgym_aac.evaluation.episodes import make_evaluation_env
    from btgym_aac.evaluation.oracle_agent import oracle_agent

    env = make_evaluation_env(run_configs, evaluation_data(test_data))
    try:
        if isinstance(test_data, dict):
            rule = episode_spread_oracle(env)
        else:
            oracle = oracle_agent(env)
            rule = None
            if oracle is not None and isinstance(oracle.oracle, MeanReversionOracle):
                rule = EstimatedMeanOracle(oracle.oracle, env.dataset.data, env.portfolio_actions, env)
        return None if rule is None else episode_returns(env, rule, episodes)
    finally:
        env.close()


def evaluate_sampled(log_dir, checkpoint, test_data, episodes):
    """`sampled_returns` of a run's policy (from `checkpoint`) on `test_data`."""
    from btgym_aac.evaluation.episodes import make_evaluation_env
    from btgym_aac.evaluation.loading import load_policy, read_run_config

    env = make_evaluation_env(read_run_config(log_dir), evaluation_data(test_data))
    try:
        with load_policy(log_dir, checkpoint=checkpoint, env=env) as policy:
            return sampled_returns(env, policy, episodes)
    finally:
        env.close()


class ClusterCpu:
    """CPU seconds (user + system) of every task process (parameter servers and workers) of the Launcher it
    watches, as `train_throughput.py` reads them (`process_cpu_seconds` from /proc at every progress poll,
    `after_each_drain`), with the time of each reading; a process counts with its last reading, so what it spent
    after its last poll (under the Launcher's 0.5 s poll interval, its final save included) is missed. None
    without /proc."""

    def __init__(self):
        self.finished, self.current, self.samples = 0.0, {}, []

    def watch(self, launcher):
        """Reads `launcher`'s task processes at each of its polls."""
        from train_throughput import after_each_drain, process_cpu_seconds

        def read():
            seconds = process_cpu_seconds(launcher)
            if seconds is None:
                return
            for name, value in seconds.items():
                if value < self.current.get(name, 0.0):  # a restarted process: bank the ended one's time
                    self.finished += self.current[name]
                self.current[name] = value
            self.samples.append((time.time(), self.finished + sum(self.current.values())))

        after_each_drain(launcher, read)

    def at(self, moment):
        """The CPU seconds at time `moment`, interpolated between the readings around it (the last reading after
        the last one, 0 before the first); None without readings."""
        if not self.samples:
            return None
        times, seconds = zip(*self.samples)
        return float(np.interp(moment, times, seconds, left=0.0))


def kept_checkpoints(log_dir):
    """[(global step, path prefix, time written)] of a run's kept checkpoints, by step."""
    from btgym_aac.distributed.checkpoints import KEPT_CHECKPOINT_DIR, checkpoints_on_disk

    kept = checkpoints_on_disk(os.path.join(log_dir, KEPT_CHECKPOINT_DIR))
    return [(step, prefix, os.path.getmtime(prefix + '.index')) for step, prefix in sorted(kept.items())]


def train_ours(algo, train_csv, test_csv, folder, steps, stages, workers, seed, episodes, overrides,
               trainer_overrides=None, preset='reference', portfolio=False, config_file=None, envs=None, oracle=None):
    """Trains `default_configs(algo, preset=preset)` with `config_file` over it (`reference_configs`; `workers`
    workers, `envs` envs per worker unless None) on `train_csv` for `steps` env steps in one Launcher run that
    keeps a checkpoint every steps / stages env steps (`keep_checkpoint_every_steps`), then evaluates every kept
    checkpoint on `test_csv` with `evaluate` (policy, buy-and-hold, random, oracle) and with the policy sampling
    its actions; a stage's env steps are its checkpoint's global step, its CPU and wall seconds those of the run
    when the checkpoint was written; `oracle` as `evaluate` takes it (`market_oracle`). Returns the stage
    records."""
    from btgym_aac.distributed.launcher import make_launcher

    configs = reference_configs(algo, train_csv, overrides, preset, portfolio, config_file)
    configs['trainer_config']['kwargs'].update(trainer_overrides or {})
    log_dir = os.path.join(folder, 'run')
    configs['cluster_config'].update(num_workers=workers, log_dir=log_dir)
    if envs is not None:
        configs['cluster_config']['num_envs'] = envs
    launcher = make_launcher(configs, max_env_steps=steps, root_random_seed=1000 * seed, purge_previous=2,
                             keep_checkpoint_every_steps=steps // stages, show_progress=False)
    cpu = ClusterCpu()
    cpu.watch(launcher)
    start = time.time()
    launcher.run()
    rule = reachable_rule_returns(configs, test_csv, episodes)
    records = []
    for stage, (step, checkpoint, written) in enumerate(kept_checkpoints(log_dir), 1):
        report, sampled = evaluate_checkpoint(log_dir, checkpoint, test_csv, episodes,
                                              os.path.join(folder, 'evaluation_{}'.format(stage)), oracle)
        records.append(stage_record(stage, step, cpu.at(written), written - start, report, sampled, rule))
    return records


def evaluate_checkpoint(log_dir, checkpoint, test_data, episodes, out, oracle=None):
    """A kept checkpoint of a run played on `episodes` episodes of `test_data` (episode i seeded EVAL_SEED + i):
    `evaluate`'s report (policy, buy-and-hold, random, oracle: the market's own, or `oracle`'s; written to `out`)
    and the policy's `sampled_returns` on the same episodes."""
    from btgym_aac.evaluation import evaluate

    report = evaluate(log_dir, data=evaluation_data(test_data), episodes=episodes, checkpoint=checkpoint, out=out,
                      seed=EVAL_SEED, plots=False, oracle=oracle)
    return report, evaluate_sampled(log_dir, checkpoint, test_data, episodes)


def process_cpu_seconds():
    """CPU seconds of this process (all threads) and of its ended children."""
    times = os.times()
    return time.process_time() + times.children_user + times.children_system


def train_sb3(train_csv, test_csv, steps, stages, seed, episodes, overrides, portfolio=False, env_preset='reference',
              oracle=None):
    """Trains SB3's PPO (its defaults, 'MultiInputPolicy') on the env of `env_preset` on `train_csv`, wrapped by
    `SimpleSpaces`, in `stages` `learn` calls up to steps * k / stages env steps (SB3 rounds each up to whole
    rollouts of its `n_steps`), and evaluates it after each stage as `evaluate` would (`evaluate_sb3`); its
    training CPU is this process's (and its children's) during env and model construction and `learn`."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import Logger

    from btgym_aac.env.wrappers import SimpleSpaces

    env_config = reference_configs('ppo', train_csv, overrides, env_preset, portfolio=portfolio)['env_config']
    cpu_start, wall_start = process_cpu_seconds(), time.time()
    env = SimpleSpaces(env_config['class_ref'](**env_config['kwargs']))
    model = PPO('MultiInputPolicy', env, seed=seed, verbose=0)
    model.set_logger(Logger(folder=None, output_formats=[]))  # SB3's default logger makes a folder in /tmp
    cpu, wall = process_cpu_seconds() - cpu_start, time.time() - wall_start
    rule = reachable_rule_returns({'env_config': env_config}, test_csv, episodes)
    records = []
    try:
        for stage in range(1, stages + 1):
            cpu_start, wall_start = process_cpu_seconds(), time.time()
            target = steps * stage // stages
            if model.num_timesteps < target:
                model.learn(target - model.num_timesteps, reset_num_timesteps=False)
            cpu, wall = cpu + process_cpu_seconds() - cpu_start, wall + time.time() - wall_start
            report, sampled = evaluate_sb3(model, env_config, test_csv, episodes, EVAL_SEED, oracle)
            records.append(stage_record(stage, model.num_timesteps, cpu, wall, report, sampled, rule))
    finally:
        env.close()
    return records


class Sb3Agent:
    """An SB3 model as an evaluation agent (`play_episode`'s interface): its action (deterministic unless told
    otherwise) on the `SimpleSpaces` view of the env's observation."""

    def __init__(self, model, wrapper):
        self.model, self.wrapper = model, wrapper

    def reset(self, observation=None):
        """The model keeps no state between steps."""

    def observe(self, reward):
        """The model does not learn while evaluated."""

    def act(self, observation, deterministic=True):
        action, _ = self.model.predict(self.wrapper.observation(observation), deterministic=deterministic)
        return self.wrapper.env_action(action)


def evaluate_sb3(model, env_config, test_csv, episodes, seed, oracle=None):
    """`evaluate`'s episodes for an SB3 model: the env (`make_evaluation_env`: no rendering, the TradeLog
    analyzer) on `test_csv`, `episodes` episodes of its sample type, played by the model and the baselines as
    `evaluate` plays them (`play_with_baselines`, the oracle included: the market's own, or `oracle`'s); returns
    `build_report`'s report and the model's `sampled_returns`."""
    from btgym_aac.env.wrappers import SimpleSpaces
    from btgym_aac.evaluation.episodes import episode_sample_type, make_evaluation_env, reset_options
    from btgym_aac.evaluation.evaluator import play_with_baselines
    from btgym_aac.evaluation.oracle_agent import oracle_agent
    from btgym_aac.evaluation.report import build_report

    env = make_evaluation_env({'env_config': env_config}, evaluation_data(test_csv))
    try:
        oracle_played = (oracle or oracle_agent)(env)
        if oracle_played is None:
            raise RuntimeError('{} carries no market recipe: no oracle to measure against'.format(test_csv))
        plan = [reset_options(episode_sample_type(env)) for _ in range(episodes)]
        agent = Sb3Agent(model, SimpleSpaces(env))
        records = play_with_baselines(env, agent, plan, seed, oracle=lambda _: oracle_played)
        sampled = sampled_returns(env, agent, episodes)
    finally:
        env.close()
    return build_report(records, {'data': evaluation_data(test_csv), 'seed': seed}), sampled


def data_folder(work_dir, market, edge, seed):
    """Where a run's market files go in the work dir."""
    return os.path.join(work_dir, 'data', '{}_{}_seed_{}'.format(market, 'edge' if edge else 'twin', seed))


def run_folder(work_dir, market, edge, trainer, seed):
    """Where a run of this package's trainers keeps its log dir (`run`) and evaluations in the work dir."""
    return os.path.join(work_dir, 'runs', '{}_{}_{}_seed_{}'.format(market, 'edge' if edge else 'twin', trainer, seed))


def recorded_run_env(run, folder, args):
    """(configs, test data) of a recorded run: its market's files written again in the work dir `folder`, and the
    configs of the env it was evaluated on (`args`: the preset and config file of this package's trainers, SB3's
    env preset, the env overrides, the bars and market parameters).

    Returns:
        (dict with the run's 'env_config' and trainer configs, a test file or a dict asset -> file).
    """
    train_data, test_data = write_markets(run['market'], run['edge'], run['seed'],
                                          data_folder(folder, run['market'], run['edge'], run['seed']),
                                          args.train_bars, args.test_bars, args.market_params.get(run['market']))
    sb3 = run['trainer'] == SB3_TRAINER
    configs = reference_configs('ppo' if sb3 else run['trainer'], train_data, env_overrides(args),
                                args.sb3_env_preset if sb3 else args.preset, args.portfolio,
                                None if sb3 else args.config)
    return configs, test_data


def with_reachable_rule(run, folder, args):
    """A kept run (`--resume`) of results written before the rule within reach was recorded, with the rule's
    returns (`reachable_rule_returns`) in every stage where its market has one, played on the env of the run's
    configuration (`recorded_run_env`). Runs that have them, twins and markets without a rule come back as they
    are."""
    if not run['edge'] or all(REACHABLE_RULE in stage['returns_pct'] for stage in run['stages']):
        return run
    configs, test_data = recorded_run_env(run, folder, args)
    rule = reachable_rule_returns(configs, test_data, len(run['stages'][0]['returns_pct']['oracle']))
    if rule is None:
        return run
    return dict(run, stages=[dict(stage, returns_pct=dict(stage['returns_pct'], **{REACHABLE_RULE: rule}))
                             for stage in run['stages']])


def run_one(market, edge, trainer, seed, folder, args):
    """Writes the market files and trains and evaluates `trainer` on them; returns the run's record."""
    train_csv, test_csv = write_markets(market, edge, seed, data_folder(folder, market, edge, seed), args.train_bars,
                                        args.test_bars, args.market_params.get(market))
    overrides = env_overrides(args)
    oracle = market_oracle(market, args.market_params.get(market))
    if trainer == SB3_TRAINER:
        stages = train_sb3(train_csv, test_csv, args.steps, args.stages, seed, args.eval_episodes, overrides,
                           args.portfolio, args.sb3_env_preset, oracle)
    else:
        stages = train_ours(trainer, train_csv, test_csv, run_folder(folder, market, edge, trainer, seed), args.steps,
                            args.stages, args.workers, seed, args.eval_episodes, overrides, args.trainer_kwargs,
                            args.preset, args.portfolio, args.config, args.envs_per_worker, oracle)
    train_seed, test_seed = market_seeds(seed)
    return {'market': market, 'edge': edge, 'trainer': trainer, 'seed': seed, 'train_market_seed': train_seed,
            'test_market_seed': test_seed, 'stages': stages}
