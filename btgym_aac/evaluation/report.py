"""The evaluation report: per-episode and mean metrics of every agent as a JSON-ready dict, and a text table."""
import json
import os

import numpy as np

from btgym_aac.evaluation.metrics import ASSET_METRIC_NAMES, METRIC_NAMES
from btgym_aac.paths import file_in_the_way

REPORT_FILE = 'report.json'
WINDOW_KEYS = ('first_bar_time', 'last_bar_time', 'window_first_bar_time', 'window_last_bar_time', 'end_reason')
DEFINITIONS = {
    'total_reward': 'sum of the env rewards of the episode',
    'start_value': 'broker value at the first bar (before any order)',
    'final_value': 'broker value at the last bar (the env closes positions before an episode ends)',
    'return_pct': '100 * (final_value - start_value) / start_value',
    'orders': 'filled orders (backtrader order notifications)',
    'trades': 'closed trades (backtrader trade notifications: a position opened and brought back to zero)',
    'win_rate': 'closed trades with a positive result after commissions / closed trades; 0 without trades',
    'max_drawdown_pct': 'largest fall of the per-bar broker value from its running peak, in percent of the peak',
    'sharpe': 'mean / standard deviation (ddof 1) of the per-step returns of the broker value; per agent step '
              '(skip_frame bars), not annualised; 0 when the returns are constant',
    'steps': 'agent steps',
    'commission': 'commission paid over the episode (money)',
    'spread_cost': 'spread paid over the episode (money): half the spread per unit filled',
    'slippage_cost': 'slippage paid over the episode (money): how far slippage moved the fills\' prices, per unit',
    'mean': 'mean over the episodes',
    'costs': "the costs every agent's fills were charged: spread (price units; 'data': each bar's own from the "
             'data), slippage (a fraction of the price), slippage_fixed (price units), commission per fill in its '
             "commission_scheme ('percent': a fraction of the traded value, 'per_unit': money per unit); `from` "
             "says for each whether it is the run's setting or one of evaluate's cost flags",
}
COST_SETTINGS = ('spread', 'slippage', 'slippage_fixed', 'commission', 'commission_scheme')
RUN_SETTINGS, EVALUATE_FLAGS = 'run settings', 'evaluate flags'
COSTS_PAID = ('commission', 'spread_cost', 'slippage_cost')
"""The metrics whose sum the table shows as the costs paid."""
ASSET_DEFINITIONS = {
    'fills': 'filled orders of the asset',
    'trades': 'closed trades of the asset',
    'realized_pnl': "sum of the results after commissions (pnlcomm) of the asset's closed trades",
    'time_in_market': 'fraction of the bars played with a non-zero position in the asset',
    'mean_abs_position': "mean over the bars played of the absolute size of the asset's position, in units",
}
TABLE_COLUMNS = (('total_reward', 'reward', '{:+.3f}'), ('final_value', 'final value', '{:.2f}'),
                 ('return_pct', 'return %', '{:+.3f}'), ('trades', 'trades', '{:.1f}'),
                 ('win_rate', 'win rate', '{:.2f}'), ('max_drawdown_pct', 'max DD %', '{:.3f}'),
                 ('sharpe', 'sharpe', '{:+.3f}'))
ASSET_TABLE_COLUMNS = (('fills', 'fills', '{:.1f}'), ('trades', 'trades', '{:.1f}'),
                       ('realized_pnl', 'realized pnl', '{:+.3f}'), ('time_in_market', 'in market', '{:.3f}'),
                       ('mean_abs_position', 'mean |pos|', '{:.1f}'))


def check_output_folder(path):
    """Raises ValueError naming `path` when it, or the nearest existing folder it would be made in, is a file."""
    blocking = file_in_the_way(path)
    if blocking is not None:
        raise ValueError('output folder {}: {} is a file, not a folder'.format(path, blocking))


def _json_value(value):
    if hasattr(value, 'isoformat'):
        return value.isoformat()
    if isinstance(value, np.generic):
        return value.item()
    return value


def check_same_windows(records):
    """Checks that every agent played the same data windows.

    Args:
        records: dict agent name -> list of EpisodeRecord (same length).

    Raises:
        RuntimeError: an episode's seed or first bar time differs between agents.
    """
    names = list(records)
    for index, episodes in enumerate(zip(*records.values())):
        starts = [(record.seed, record.bar_times[0]) for record in episodes]
        if any(start != starts[0] for start in starts):
            raise RuntimeError('episode {} was not replayed on the same window by all agents: {}'.format(
                index, dict(zip(names, starts))))


def _summary(values_per_episode, names, extra=()):
    per_episode = {name: [_json_value(values[name]) for values in values_per_episode] for name in names}
    mean = {name: float(np.mean(per_episode[name])) for name in names}
    per_episode.update(extra)
    return {'per_episode': per_episode, 'mean': mean}


def agent_summary(episodes):
    """Per-episode lists and means of one agent's metrics; per asset too for multi-asset envs.

    Args:
        episodes: list of EpisodeRecord.

    Returns:
        {'per_episode': {metric or window key: [one value per episode]}, 'mean': {metric: float}}, with
        'assets': {asset: {'per_episode': {asset metric: [...]}, 'mean': {asset metric: float}}} when the episodes
        recorded per-asset positions.
    """
    windows = [record.window() for record in episodes]
    summary = _summary([record.metrics() for record in episodes], METRIC_NAMES,
                       {key: [_json_value(w[key]) for w in windows] for key in WINDOW_KEYS})
    per_asset = [record.asset_metrics() for record in episodes]
    if per_asset[0]:
        summary['assets'] = {asset: _summary([metrics[asset] for metrics in per_asset], ASSET_METRIC_NAMES)
                             for asset in per_asset[0]}
    return summary


def build_report(records, info):
    """The report dict (JSON-ready).

    Args:
        records: dict agent name -> list of EpisodeRecord, all on the same windows.
        info: run facts merged at the top level (log_dir, checkpoint, global_step, data, episode_type, seed...).

    Returns:
        dict with the `info` keys, `episodes`, `windows` (seed, first and last bar time of every episode),
        `agents` ({name: agent_summary}) and `definitions`; for multi-asset envs also `assets` (the traded assets)
        and `asset_definitions`.
    """
    check_same_windows(records)
    first_agent = next(iter(records.values()))
    windows = [{key: _json_value(value) for key, value in record.window().items() if key != 'end_reason'}
               for record in first_agent]
    report = dict(info)
    report.update(episodes=len(first_agent), windows=windows,
                  agents={name: agent_summary(episodes) for name, episodes in records.items()},
                  definitions=dict(DEFINITIONS))
    if first_agent[0].bar_positions:
        report.update(assets=list(first_agent[0].bar_positions), asset_definitions=dict(ASSET_DEFINITIONS))
    return report


def cost_record(charged, given):
    """The report's `costs`.

    Args:
        charged: the costs of the evaluation env (`EnvComponents.cost_settings`).
        given: the cost settings the evaluation replaced the run's with (`evaluate`'s cost flags), or None.

    Returns:
        dict of the `COST_SETTINGS` as numbers (the spread 'data' where each bar's own), and `from`: setting ->
        `EVALUATE_FLAGS` where it was given, else `RUN_SETTINGS`.
    """
    record = {name: charged[name] for name in COST_SETTINGS}
    record['from'] = {name: EVALUATE_FLAGS if name in (given or {}) else RUN_SETTINGS for name in COST_SETTINGS}
    return record


def costs_line(costs):
    """A report's `costs` (see `cost_record`) in one line, grouped by where they came from."""
    groups = {}
    for name in COST_SETTINGS:
        value = costs[name]
        groups.setdefault(costs['from'][name], []).append('{} {}'.format(
            name, value if isinstance(value, str) else '{:g}'.format(value)))
    return 'costs: ' + '; '.join('{} ({})'.format(', '.join(items), source) for source, items in groups.items())


def fraction_of_oracle(agents, policy='policy', oracle='oracle'):
    """The policy's mean return per episode as a fraction of the oracle's, on the same windows.

    Args:
        agents: the report's `agents` ({name: agent_summary}).
        policy, oracle: the agents' names.

    Returns:
        {'policy_return_pct', 'oracle_return_pct', 'fraction'}; `fraction` is None when the oracle did not gain
        (a fraction of a loss or of nothing says nothing).
    """
    policy_return, oracle_return = (agents[name]['mean']['return_pct'] for name in (policy, oracle))
    return {'policy_return_pct': policy_return, 'oracle_return_pct': oracle_return,
            'fraction': policy_return / oracle_return if oracle_return > 0 else None}


def oracle_line(fraction):
    """The report's `fraction_of_oracle` in words."""
    if fraction['fraction'] is None:
        return 'policy: no fraction of the oracle, which did not gain on these windows ({:+.3f} % per episode)'.format(
            fraction['oracle_return_pct'])
    return 'policy = {:.1f} % of the oracle ({:+.3f} % against {:+.3f} % per episode)'.format(
        100 * fraction['fraction'], fraction['policy_return_pct'], fraction['oracle_return_pct'])


def episode_steps(record):
    """One episode of an agent step by step: its window, and at every decision the bar time, the action sent, the
    action probabilities (PortfolioEnv: the target weights; absent for agents without them) and the broker value
    after the step; the fills (with their prices and costs) and the end reason."""
    steps = [{'time': _json_value(time), 'action': json_ready(action), 'value': float(value)}
             for time, action, value in zip(record.step_times[:-1], record.actions, record.step_values[1:])]
    for step, probabilities in zip(steps, record.probabilities):
        step['probabilities'] = json_ready(probabilities)
    return {'window': {key: _json_value(value) for key, value in record.window().items()}, 'steps': steps,
            'fills': json_ready(record.trade_log.get('fills', [])), 'end_reason': record.trade_log.get('end_reason')}


def json_ready(value):
    """`value` with numpy arrays and scalars, datetimes and nested dicts and lists made JSON-ready."""
    if isinstance(value, dict):
        return {str(key): json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if isinstance(value, np.ndarray):
        return json_ready(value.tolist())
    return _json_value(value)


def write_report(report, out):
    """Writes `report` as `<out>/report.json`; returns the file path."""
    path = os.path.join(out, REPORT_FILE)
    with open(path, 'w') as f:
        json.dump(report, f, indent=2)
    return path


def format_table(report):
    """Text table of every agent's mean metrics, one row per agent, with the mean costs paid (commission, spread and
    slippage) and a line of the costs charged; for multi-asset runs a second table of the mean per-asset metrics,
    one row per agent and asset."""
    width = max(len(name) for name in report['agents']) + 2
    header = 'agent'.ljust(width) + ''.join(title.rjust(13) for _, title, _ in TABLE_COLUMNS) + 'costs paid'.rjust(13)
    lines = [header, '-' * len(header)]
    for name, summary in report['agents'].items():
        cells = ''.join(fmt.format(summary['mean'][key]).rjust(13) for key, _, fmt in TABLE_COLUMNS)
        paid = '{:.2f}'.format(sum(summary['mean'][key] for key in COSTS_PAID)).rjust(13)
        lines.append(name.ljust(width) + cells + paid)
    lines.append(costs_line(report['costs']))
    if report.get('assets'):
        lines.append('')
        lines.extend(_asset_table(report, width))
    return '\n'.join(lines)


def _asset_table(report, width):
    asset_width = max(len(name) for name in ['asset'] + report['assets']) + 2
    header = 'agent'.ljust(width) + 'asset'.ljust(asset_width) + ''.join(
        title.rjust(15) for _, title, _ in ASSET_TABLE_COLUMNS)
    lines = [header, '-' * len(header)]
    for name, summary in report['agents'].items():
        for asset in report['assets']:
            mean = summary['assets'][asset]['mean']
            cells = ''.join(fmt.format(mean[key]).rjust(15) for key, _, fmt in ASSET_TABLE_COLUMNS)
            lines.append(name.ljust(width) + asset.ljust(asset_width) + cells)
    return lines
