"""Evaluation episodes: the run's environment rebuilt for evaluation, seeded episode windows, windows laid end to end
over a dataset (for out-of-sample runs that cover a whole stretch of data), and one played episode recorded step by
step."""
import collections.abc
import dataclasses
import os

import numpy as np

from btgym_aac.class_refs import resolved
from btgym_aac.data.sampling import missing_time
from btgym_aac.distributed.run_config import DATA_SOURCE_KWARGS
from btgym_aac.env import BTgymEnv, MultiDiscreteEnv
from btgym_aac.evaluation.baselines import KEEP_POSITIONS
from btgym_aac.evaluation.loading import make_env
from btgym_aac.evaluation.metrics import asset_metrics, episode_metrics
from btgym_aac.evaluation.trade_log import TRADE_LOG_NAME, TradeLog

TRAIN, TEST = 0, 1


def make_evaluation_env(run_config, data=None, costs=None):
    """The run's BTgymEnv without rendering, with a `TradeLog` analyzer, optionally on other CSV files.

    Args:
        run_config: saved configs (see `loading.read_run_config`).
        data: None (the run's data); for a single-asset run a CSV path or a list of CSV paths replacing its data
            source (`dataset`, `dataframe` or `filename`; the env's other dataset kwargs such as `episode_duration`
            and `target_period` are kept, settings held inside a `dataset` object are not); for a multi-asset run
            (MultiDiscreteEnv, PortfolioEnv) a dict asset -> CSV path(s) naming the run's assets in its order,
            replacing every asset's data in its dataset (whose settings are kept), aligned on common bar times as
            training aligns them.
        costs: dict of env cost settings replacing the run's (see `env.costs`), or None.

    Returns:
        BTgymEnv.

    Raises:
        ValueError: the run did not train on a BTgymEnv (test-mode gymnasium runs have no broker to evaluate), or
            `data` does not fit the run: files for a multi-asset run, assets for a single-asset run, or assets
            other than the run's (naming both sets).
        FileNotFoundError: a data file does not exist or is a folder.
    """
    env_class = resolved(run_config['env_config']['class_ref'])
    if run_config.get('test_mode') or not issubclass(env_class, BTgymEnv):
        raise ValueError('evaluation needs a run trained on a BTgymEnv; this run used {} (test_mode={})'.format(
            env_class.__name__, bool(run_config.get('test_mode'))))
    several = issubclass(env_class, MultiDiscreteEnv)
    if data and several != isinstance(data, collections.abc.Mapping):
        raise ValueError('this run trades several assets ({}): give their files with --assets NAME=CSV (a dict '
                         'asset -> files)'.format(env_class.__name__) if several else
                         'this run trades one asset: give its files with --data, not --assets')
    overrides = dict(costs or {})
    if data and several:
        run_config = with_asset_files(run_config, data)
    elif data:
        files = checked_files([data] if isinstance(data, str) else list(data))
        kwargs = run_config['env_config'].get('kwargs', {})
        run_config = dict(run_config, env_config=dict(run_config['env_config'], kwargs={
            key: value for key, value in kwargs.items() if key not in DATA_SOURCE_KWARGS}))
        overrides['filename'] = files if len(files) > 1 else files[0]
    env = make_env(run_config, **overrides)
    env.engine.addanalyzer(TradeLog, _name=TRADE_LOG_NAME)
    return env


def checked_files(files):
    """`files`, after checking that each is a file (FileNotFoundError naming the folders or missing ones)."""
    folders = [path for path in files if os.path.isdir(path)]
    if folders:
        raise FileNotFoundError('data path(s) are folders, not CSV files: {}'.format(', '.join(folders)))
    missing = [path for path in files if not os.path.isfile(path)]
    if missing:
        raise FileNotFoundError('data file(s) not found: {}'.format(', '.join(missing)))
    return files


def with_asset_files(run_config, assets):
    """The run config of a multi-asset run with its dataset reading `assets` (dict asset -> CSV path or list of
    paths, concatenated in time) instead of its own data: a copy of the dataset, loaded and aligned.

    Raises:
        ValueError: `assets` does not name the run's assets in its order (naming both). FileNotFoundError: a file.
    """
    kwargs = run_config['env_config'].get('kwargs', {})
    dataset = kwargs.get('dataset')
    names = list(getattr(dataset, 'data_names', None) or kwargs.get('asset_names') or ())
    if list(assets) != names:
        raise ValueError('--assets must name the run\'s assets in its order: {} (given: {})'.format(
            ' '.join(names), ' '.join(assets)))
    files = {name: checked_files([paths] if isinstance(paths, str) else list(paths)) for name, paths in assets.items()}
    dataset = dataset.with_data({name: paths if len(paths) > 1 else paths[0] for name, paths in files.items()})
    return dict(run_config, env_config=dict(run_config['env_config'], kwargs=dict(kwargs, dataset=dataset)))


def episode_sample_type(env):
    """TEST (1) when the env's dataset (for a `BTgymMultiData`, its master stream) has a test interval, else
    TRAIN (0)."""
    dataset = getattr(env.dataset, 'master_data', env.dataset)
    start, stop = getattr(dataset, 'test_interval', (0, 0))
    return TEST if stop > start else TRAIN


def reset_options(sample_type, interval=None):
    """`env.reset` options asking for a new episode (and trial) of `sample_type`, on the data rows `interval`
    ([first, stop), a `BTgymDataset` trial being one episode) when it is given."""
    config = {'get_new': True, 'sample_type': sample_type}
    trial_config = dict(config, force_interval=True, interval=list(interval)) if interval is not None else config
    return {'episode_config': dict(config), 'trial_config': dict(trial_config)}


def tile_windows(dataset, max_windows=None, overlap=0):
    """Consecutive episode windows of `dataset`'s bars, in time order.

    From the first bar on, a window of the dataset's episode length (`sample_num_records` rows) is taken where it
    starts on one of the dataset's `start_weekdays` and misses at most `time_gap` of time (the dataset's own
    sampling rules; `start_00` is not applied); the next one starts `overlap` rows before its end. Where a window
    is refused, the start moves on by one bar.

    Args:
        dataset: a reset `BTgymDataset` (or any data object with `data`, `sample_num_records`, `start_weekdays`,
            `max_time_gap` and `bar_delta`), or a `BTgymMultiData` of them (its master line's windows, which are the
            same rows in every line).
        max_windows: keep at most this many, spread evenly over the tiles (None: all).
        overlap: rows a window shares with the one before it (an episode's warm-up: see `covering_windows`).

    Returns:
        list of [first_row, stop_row) pairs.

    Raises:
        ValueError: `overlap` is not in [0, episode length).
    """
    dataset = getattr(dataset, 'master_data', dataset)
    index, length = dataset.data.index, dataset.sample_num_records
    if not 0 <= overlap < length:
        raise ValueError('windows of {} bars cannot overlap by {} bars'.format(length, overlap))
    weekdays = set(dataset.start_weekdays)
    tiles, first = [], 0
    while first + length <= len(index):
        stop = first + length
        if index[first].weekday() in weekdays and \
                missing_time(index, first, stop, length, dataset.bar_delta) <= dataset.max_time_gap:
            tiles.append([first, stop])
            first = stop - overlap
        else:
            first += 1
    if max_windows is not None and len(tiles) > max_windows:
        chosen = np.unique(np.linspace(0, len(tiles) - 1, int(max_windows)).round().astype(int))
        tiles = [tiles[position] for position in chosen]
    return tiles


@dataclasses.dataclass
class EpisodeRecord:
    """One played episode.

    Attributes:
        seed: the `env.reset` seed that chose its data window.
        bar_times, bar_values: time and broker value of every bar played.
        step_times, step_values: time and broker value at the reset and after every agent step.
        actions, rewards: action (as sent to the env, or `KEEP_POSITIONS`) and reward of every agent step.
        probabilities: the agent's action probabilities (PortfolioEnv: target weights) at every step (empty for
            agents without them).
        trade_log: `TradeLog` analysis (fills, closed trades, end reason).
        bar_positions: multi-asset envs: dict asset -> position size at every bar (the bar infos' `positions`);
            {} for single-asset envs.
        bar_prices: dict asset -> close price at every bar, for the assets of `bar_positions`.
        window: (first, last) bar time of the episode's data window, its warm-up included (`env.episode_window`).
    """
    seed: int
    bar_times: list
    bar_values: list
    step_times: list
    step_values: list
    actions: list
    rewards: list
    probabilities: list
    trade_log: dict
    bar_positions: dict = dataclasses.field(default_factory=dict)
    bar_prices: dict = dataclasses.field(default_factory=dict)
    window_bounds: tuple = (None, None)

    def metrics(self):
        """Per-episode metrics (see `metrics.episode_metrics`)."""
        return episode_metrics(self.rewards, self.bar_values, self.step_values, self.trade_log)

    def asset_metrics(self):
        """dict asset -> per-asset metrics (see `metrics.asset_metrics`); {} for single-asset envs."""
        return {asset: asset_metrics(asset, self.trade_log, positions)
                for asset, positions in self.bar_positions.items()}

    def window(self):
        """{'seed', 'first_bar_time', 'last_bar_time', 'window_first_bar_time', 'window_last_bar_time',
        'end_reason'} of the episode: the first and last bar played, and the data window that can be cut from the
        data again (the warm-up's bars included)."""
        return {'seed': self.seed, 'first_bar_time': self.bar_times[0], 'last_bar_time': self.bar_times[-1],
                'window_first_bar_time': self.window_bounds[0], 'window_last_bar_time': self.window_bounds[1],
                'end_reason': self.trade_log['end_reason']}


def _bar_prices(dataset, bar_times, assets):
    """dict asset -> close at `bar_times`, from the dataset's data line of the asset (a `BTgymMultiData`'s
    `frames`) or its only one (`data`)."""
    frames = getattr(dataset, 'frames', None) or {asset: dataset.data for asset in assets}
    return {asset: [float(price) for price in frames[asset]['close'].loc[bar_times]] for asset in assets}


def play_episode(env, agent, seed, options, on_step=None):
    """Plays one episode with `agent` on the window chosen by `env.reset(seed=seed, options=options)`.

    Resetting with a seed restarts the env's sample sequence, so the same seed and options replay the same data
    window for every agent.

    Args:
        env: env from `make_evaluation_env`.
        agent: object with `reset(observation)`, `act(observation) -> action` (an env action, or
            `KEEP_POSITIONS` for `PortfolioEnv.keep_positions`), `observe(reward)` and optionally
            `last_probabilities` (see `LoadedPolicy`) and `observe_info(info)` (given the info of the reset and
            of every step).
        seed: episode seed.
        options: `reset_options(...)`.
        on_step: None, or a callable given the number of agent steps taken after every step (a progress display).

    Returns:
        EpisodeRecord.
    """
    observation, info = env.reset(seed=seed, options=options)
    agent.reset(observation)
    observe_info = getattr(agent, 'observe_info', None)
    if observe_info is not None:
        observe_info(info)
    record = EpisodeRecord(seed=seed, bar_times=[], bar_values=[],
                           step_times=[info['time']], step_values=[info['broker_value']], actions=[], rewards=[],
                           probabilities=[], trade_log={}, window_bounds=tuple(env.episode_window))
    bars = list(info['bars'])
    done = False
    while not done:
        action = agent.act(observation)
        probabilities = getattr(agent, 'last_probabilities', None)
        if probabilities is not None:
            record.probabilities.append(probabilities)
        step = env.keep_positions() if isinstance(action, str) and action == KEEP_POSITIONS else env.step(action)
        observation, reward, terminated, truncated, info = step
        agent.observe(reward)
        if observe_info is not None:
            observe_info(info)
        done = terminated or truncated
        bars.extend(info['bars'])
        record.actions.append(action)
        record.rewards.append(float(reward))
        record.step_times.append(info['time'])
        record.step_values.append(info['broker_value'])
        if on_step is not None:
            on_step(len(record.actions))
    record.bar_times = [bar['time'] for bar in bars]
    record.bar_values = [bar['broker_value'] for bar in bars]
    if 'positions' in bars[0]:
        assets = sorted(bars[0]['positions'])
        record.bar_positions = {asset: [float(bar['positions'][asset]) for bar in bars] for asset in assets}
        record.bar_prices = _bar_prices(env.dataset, record.bar_times, assets)
    record.trade_log = env.get_stat()[TRADE_LOG_NAME]
    return record
