"""`evaluate`: a trained run's policy and the baselines on the same seeded episodes, with a report and plots."""
import collections.abc
import functools
import os

from btgym_aac.evaluation.baselines import BUY_AND_HOLD, baseline_agents
from btgym_aac.evaluation.episodes import (TEST, episode_sample_type, make_evaluation_env, play_episode,
                                           reset_options, tile_windows)
from btgym_aac.evaluation.loading import load_policy, read_run_config
from btgym_aac.evaluation.oracle_agent import oracle_agent
from btgym_aac.evaluation.plots import plot_contents, write_plots
from btgym_aac.evaluation.report import (build_report, check_output_folder, cost_record, episode_steps,
                                         fraction_of_oracle, write_report)
from btgym_aac.evaluation.tearsheet import TEARSHEET_FILE, write_evaluation_tearsheet
from btgym_aac.progress import Progress

POLICY, ORACLE = 'policy', 'oracle'


def _checkpoint_step(path):
    suffix = path.rsplit('-', 1)[-1]
    return int(suffix) if suffix.isdigit() else None


def evaluate(log_dir, data=None, episodes=5, out=None, seed=0, allow_untrusted=False, windows=None, costs=None,
             plots=True, show_progress=False, tearsheet=False, tile=False, checkpoint=None, oracle=None):
    """Evaluates a run's latest checkpoint (or `checkpoint`) against buy-and-hold and a random policy.

    Single-asset (BTgymEnv) and multi-asset runs (MultiDiscreteEnv, PortfolioEnv) are evaluated; the baselines are
    those of `baselines.baseline_agents` (for several assets: equal-weight buy-and-hold, which a PortfolioEnv never
    rebalances). The policy acts deterministically (most probable action, or the weights `softmax(logits)` of a
    continuous action space; NoisyNet layers with their mean weights). Episode
    `i` of every agent is reset with seed `seed + i`, which restarts the env's sample sequence, so all agents
    play the same data windows (checked by the first bar time of each episode). Episodes come from
    the dataset's test interval when it has one (`target_period`), else from its train interval; the report's
    `episode_type` says which. Metric definitions are in the report's `definitions` (portfolio-wide: the broker
    value and all fills), for multi-asset runs also per asset in `asset_definitions`; `plot_contents` says what each
    plot shows.

    Args:
        log_dir: log dir of a Launcher run (run_config.pkl and checkpoints).
        data: None (the run's data); CSV path(s) replacing a single-asset run's data; for a multi-asset run, a dict
            asset -> CSV path(s) naming the run's assets in its order (`episodes.make_evaluation_env`).
        episodes: number of episodes per agent.
        out: output folder (default `<log_dir>/evaluation`); gets report.json, `equity_episode_<i>.png`,
            `actions_episode_<i>.png` and, for multi-asset runs, `asset_<asset>_episode_<i>.png`.
        seed: first episode seed; the random baseline uses it too.
        allow_untrusted: unpickle the run's run_config.pkl even when another user owns it or its log dir, or
            could write them (unpickling runs code).
        windows: [first_row, stop_row) pairs of the data's rows (see `episodes.tile_windows`) played in order as
            test episodes, one each, instead of `episodes` seeded windows (whose count is then ignored).
        costs: env cost settings replacing the run's (`spread`, `slippage`, `slippage_fixed`, `commission_scheme`,
            `commission`; see `env.costs`), e.g. to see what a spread does to a policy trained without one; the
            report's `costs` holds the costs charged and where each came from (`report.cost_record`).
        plots: write the PNG plots of every episode (False: report.json alone, its `plots` empty).
        show_progress: show the episodes played and the current one's steps on stderr (`play_with_baselines`).
        tearsheet: also write `<out>/tearsheet.html`, the evaluation's page (`tearsheet.write_evaluation_tearsheet`).
        tile: play consecutive test episodes covering every bar of `data` after the first warm-up
            (`covering_windows`) instead of `episodes` seeded ones; the report's `tiling` says how many windows
            and which bars no episode played. Needs `data` (the run's own data holds its training bars).
        checkpoint: None (the run's latest), or a checkpoint of the run: a checkpoint folder or a path prefix
            (`<log_dir>/kept_checkpoints/model_parameters-<step>` of a run trained with
            `keep_checkpoint_every_steps`).
        oracle: None (where the bars come from a known-edge market of `btgym_aac.data.markets`, its oracle:
            `oracle_agent`), or a callable env -> agent that plays the oracle's part on the evaluation env (an agent
            with `play_episode`'s interface, e.g. an `OracleAgent` over a causal rule of a market this package did
            not make); the report then has an 'oracle' agent and `fraction_of_oracle`.

    Returns:
        the report dict (also written to `<out>/report.json`; its `policy_steps` hold the policy's episodes step
        by step, `report.episode_steps`, and its `warnings` one when the policy never placed an order).

    Raises:
        FileNotFoundError: missing log dir, run_config.pkl, checkpoint or data file.
        ValueError: bad `episodes`, a run that did not train on a BTgymEnv, `data` that does not fit the run (files
            for a multi-asset run, assets other than the run's), or an `out` that is a file.
        UntrustedFileError (a PermissionError): run_config.pkl or the log dir is another user's or writable by
            others.
    """
    _check_episode_count(episodes, windows)
    if tile and (windows is not None or not data):
        raise ValueError('tile plays consecutive windows of the data given as `data` (held-out bars): give data, '
                         'and no windows')
    log_dir = os.path.abspath(log_dir)
    out = os.path.abspath(out or os.path.join(log_dir, 'evaluation'))
    check_output_folder(out)
    run_config = read_run_config(log_dir, allow_untrusted)
    env = make_evaluation_env(run_config, data, costs)
    try:
        charged = env.cost_settings()
        tiling = None
        if tile:
            windows, overlap = covering_windows(env, seed)
        sample_type, plan = _episode_plan(env, episodes, windows)
        policy, records = _play_agents(env, log_dir, checkpoint, plan, seed, allow_untrusted, show_progress, oracle)
        if tile:
            tiling = tiling_record(env, records[POLICY], overlap)
    finally:
        env.close()
    report = build_report(records, dict(_run_description(log_dir, policy, data, sample_type, seed),
                                        preset=run_config.get('preset'), costs=cost_record(charged, costs)))
    if ORACLE in records:
        report['fraction_of_oracle'] = fraction_of_oracle(report['agents'])
    if tiling is not None:
        report['tiling'] = tiling
    report['warnings'] = never_trades_warnings(records[POLICY])
    report['policy_steps'] = [episode_steps(record) for record in records[POLICY]]
    _write_outputs(report, out, records, policy, plots)
    if tearsheet:
        write_evaluation_tearsheet(os.path.join(out, TEARSHEET_FILE), report, records, run_config)
    return report


def covering_windows(env, seed):
    """Consecutive windows covering every bar of the env's data after the first warm-up.

    The dataset's windows (`episodes.tile_windows`, its episode length and sampling rules) overlap by the bars
    before a window's first decision: an episode plays the `skip_frame` bars before its first decision and stops
    `skip_frame` bars before its window's end, so each episode plays on from the bar after the previous one's last.
    The overlap is measured on the first window, played once by buy-and-hold before the agents play.

    Args:
        env: the evaluation env (its dataset reset).
        seed: the seed of that first play.

    Returns:
        (list of [first_row, stop_row) pairs, the overlap in bars).

    Raises:
        ValueError: the data holds no episode window.
    """
    dataset = env.dataset
    tiles = tile_windows(dataset)
    if not tiles:
        raise ValueError('the data holds no episode window of the run\'s episode length ({} bars) under its '
                         'sampling rules'.format(getattr(dataset, 'master_data', dataset).sample_num_records))
    probe = baseline_agents(env, seed)[BUY_AND_HOLD]
    first_decision = play_episode(env, probe, seed, reset_options(TEST, tiles[0])).step_times[0]
    overlap = int(_data_index(env).get_loc(first_decision)) - tiles[0][0]
    return tile_windows(dataset, overlap=overlap), overlap


def tiling_record(env, records, overlap):
    """The report's `tiling`: {'windows', 'overlap_bars', 'bars' (from the first bar played to the data's end),
    'bars_skipped' (of those, bars no episode played: where the dataset's rules refuse a window start, where an
    episode ended early, and the tail shorter than an episode)}."""
    index = _data_index(env)
    played = {time for record in records for time in record.bar_times}
    bars = len(index) - int(index.get_loc(records[0].bar_times[0]))
    return {'windows': len(records), 'overlap_bars': overlap, 'bars': bars, 'bars_skipped': bars - len(played)}


def _data_index(env):
    """The bar times of the env's data (its master line's for several data lines)."""
    return getattr(env.dataset, 'master_data', env.dataset).data.index


def never_trades_warnings(policy_records):
    """The report's `warnings`: one when the policy placed no order in any episode."""
    if any(record.trade_log.get('fills') for record in policy_records):
        return []
    return ['the policy placed no order in any of its {} episodes: its returns are the cash\'s, and its metrics say '
            'nothing of how it trades'.format(len(policy_records))]


def _check_episode_count(episodes, windows):
    """ValueError unless `episodes` is a positive whole number (when no `windows` are given) and `windows`, when
    given, holds at least one window."""
    if windows is None and (isinstance(episodes, bool) or int(episodes) != episodes or episodes < 1):
        raise ValueError('episodes must be a positive integer, got {!r}'.format(episodes))
    if windows is not None and not windows:
        raise ValueError('windows is empty: give at least one [first_row, stop_row) pair')


def _episode_plan(env, episodes, windows):
    """The episodes every agent plays.

    Args:
        env: the evaluation env.
        episodes: number of seeded episodes, from the env's test interval where it has one, else its train
            interval; ignored when `windows` are given.
        windows: None, or [first_row, stop_row) pairs played in order as test episodes.

    Returns:
        (the sample type: TEST, or the train one for seeded episodes of an env without a test interval; the
        reset options of each episode).
    """
    sample_type = episode_sample_type(env) if windows is None else TEST
    plan = [reset_options(sample_type) for _ in range(int(episodes))] if windows is None else \
        [reset_options(TEST, window) for window in windows]
    return sample_type, plan


def _play_agents(env, log_dir, checkpoint, plan, seed, allow_untrusted, show_progress, oracle):
    """Plays every episode of `plan` with the run's policy (from `checkpoint`, None: the latest) and the baselines
    (see `play_with_baselines`).

    Returns:
        (the loaded policy, {agent name: [episode record, ...]}).
    """
    with load_policy(log_dir, checkpoint=checkpoint, env=env, allow_untrusted=allow_untrusted) as policy:
        records = play_with_baselines(env, policy, plan, seed, show_progress, oracle)
    return policy, records


def play_with_baselines(env, policy, plan, seed, show_progress=False, oracle=None):
    """Plays every episode of `plan` with `policy`, buy-and-hold, the random policy and an oracle: where the bars
    come from a known-edge market, its own (`oracle_agent`), or the one `oracle` makes; episode `i` is reset with
    seed `seed + i` for every agent.

    Args:
        env: the evaluation env (`episodes.make_evaluation_env`).
        policy: an agent with `play_episode`'s interface (`LoadedPolicy`, or any other).
        plan: reset options of every episode (`episodes.reset_options`).
        seed: first episode seed; the random baseline's seed too.
        show_progress: show the episodes played, the speed, the time left and the current episode's steps on
            stderr (`btgym_aac.progress.Progress`).
        oracle: None, or a callable env -> the agent playing the oracle's part (see `evaluate`).

    Returns:
        {agent name: [episode record, ...]}, the policy first.
    """
    agents = dict({POLICY: policy}, **baseline_agents(env, seed))
    oracle = oracle_agent(env) if oracle is None else oracle(env)
    if oracle is not None:
        agents[ORACLE] = oracle
    records = {name: [] for name in agents}
    with Progress('episode', len(plan) * len(agents), enabled=show_progress) as progress:
        for name, agent in agents.items():
            for index, options in enumerate(plan):
                played = sum(map(len, records.values()))
                episode = '{} episode {} of {}'.format(name, index + 1, len(plan))
                records[name].append(play_episode(env, agent, seed + index, options,
                                                  functools.partial(_show_step, progress, played, episode)))
                progress.update(played + 1, episode + ' done')
    return records


def _show_step(progress, played, episode, steps):
    """Shows `played` episodes done and `steps` steps of the current one (`episode` names it) on `progress`."""
    progress.update(played, '{}: step {}'.format(episode, steps))


def _run_description(log_dir, policy, data, sample_type, seed):
    """The report's entries naming what was evaluated: the run, its checkpoint, the data, the episodes' interval and
    the first seed."""
    return {
        'log_dir': log_dir,
        'checkpoint': policy.checkpoint,
        'global_step': _checkpoint_step(policy.checkpoint),
        'data': 'run data' if not data else data_files(data),
        'episode_type': 'test' if sample_type == TEST or data else 'train',
        'seed': seed,
    }


def data_files(data):
    """The report's `data`: the list of files, or for several assets a dict asset -> list of files."""
    if isinstance(data, collections.abc.Mapping):
        return {asset: data_files(files) for asset, files in data.items()}
    return [data] if isinstance(data, str) else list(data)


def _write_outputs(report, out, records, policy, plots):
    """Writes the plots (where `plots`) and report.json to the folder `out`, adding the folder, the plot files and
    what each plot shows to `report`."""
    os.makedirs(out, exist_ok=True)
    report['out'] = out
    report['plots'] = write_plots(out, records, policy) if plots else []
    report['plot_contents'] = plot_contents(policy.ac_space, bool(records[POLICY][0].bar_positions))
    write_report(report, out)
