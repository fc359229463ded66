"""The PNG plots of an evaluation: which files `evaluate` writes for each episode and what they show, and the plots
themselves (matplotlib `Figure` with the Agg canvas; pyplot is never used): every agent's equity, the policy's
action probabilities, and for multi-asset envs each asset's price, fills and position, the per-asset action
probabilities (MultiDiscreteEnv) or the target weights (PortfolioEnv)."""
import os
import re

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from btgym_aac.evaluation.baselines import BUY_AND_HOLD

FILL_MARKERS = {'buy': ('^', 'tab:green'), 'sell': ('v', 'tab:red'), 'close': ('X', 'black')}
FIGURE_SIZE = (11, 4.5)
DPI = 100
PANEL_HEIGHT = 2.6
PLOT_CONTENTS = {
    'equity_episode_<i>.png': 'broker value per bar of every agent in episode i; the policy\'s fills marked',
    'actions_episode_<i>.png': 'the policy\'s action probabilities at every step of episode i (stacked), with the '
                               'chosen action',
}
ASSET_PLOT_CONTENTS = {
    'asset_<asset>_episode_<i>.png': 'the asset\'s close price per bar in episode i with the policy\'s fills of the '
                                     'asset marked at their price, and the policy\'s position in the asset below',
}
MULTI_DISCRETE_PLOT_CONTENTS = {
    'actions_episode_<i>.png': 'the policy\'s probabilities of every base action of each asset (marginals of its '
                               'joint action distribution) at every step of episode i, one panel per asset, with the '
                               'asset\'s chosen action',
}
PORTFOLIO_PLOT_CONTENTS = {
    'actions_episode_<i>.png': 'the policy\'s target weights (assets and cash, as sent; the env normalises them '
                               'to sum 1) at every step of episode i, stacked',
}


def new_axes():
    """A figure of the evaluation plots' size, with one axes."""
    figure = Figure(figsize=FIGURE_SIZE, dpi=DPI)
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot(1, 1, 1)


def new_panels(rows):
    """A figure of the evaluation plots' width with `rows` axes above each other sharing the x axis.

    Returns:
        (figure, list of axes).
    """
    figure = Figure(figsize=(FIGURE_SIZE[0], PANEL_HEIGHT * rows + 1.0), dpi=DPI)
    FigureCanvasAgg(figure)
    first = figure.add_subplot(rows, 1, 1)
    return figure, [first] + [figure.add_subplot(rows, 1, row, sharex=first) for row in range(2, rows + 1)]


def save_figure(figure, path):
    """Lays out `figure` (dates on the x axis) and writes it to `path`; returns `path`."""
    figure.autofmt_xdate()
    figure.tight_layout()
    figure.savefig(path)
    return path


def fill_kind(fill):
    """'close' for a fill that leaves no position, else the fill's side ('buy' / 'sell')."""
    return 'close' if fill['position'] == 0 else fill['side']


def plot_equity(path, records, title):
    """Broker value per bar of every agent of one episode; the first agent's fills are marked, and each asset's
    buy-and-hold (`baselines.asset_buy_and_hold`) is a dashed line under the others, which are drawn each under the
    ones before it.

    Args:
        path: PNG file to write.
        records: dict agent name -> EpisodeRecord of the same episode (first one: the evaluated policy).
        title: figure title.

    Returns:
        `path`.
    """
    figure, axes = new_axes()
    for index, (name, record) in enumerate(records.items()):
        one_asset = name.startswith(BUY_AND_HOLD + '_')
        axes.plot(record.bar_times, record.bar_values, label=name, linewidth=1.6 if index == 0 else 0.9,
                  zorder=3 if index == 0 else 1 if one_asset else 2 - 0.1 * index,
                  linestyle='--' if one_asset else '-')
    main = next(iter(records.values()))
    value_at = dict(zip(main.bar_times, main.bar_values))
    for kind, (marker, color) in FILL_MARKERS.items():
        fills = [fill for fill in main.trade_log['fills'] if fill_kind(fill) == kind and fill['time'] in value_at]
        if fills:
            axes.scatter([fill['time'] for fill in fills], [value_at[fill['time']] for fill in fills], marker=marker,
                         color=color, s=60, zorder=4, label='{} fill'.format(kind))
    axes.set_title(title)
    axes.set_ylabel('broker value')
    axes.grid(alpha=0.3)
    axes.legend(loc='best', fontsize='small')
    return save_figure(figure, path)


def plot_action_probabilities(path, record, action_names, title):
    """The policy's action probabilities at every step of one episode, stacked, with the chosen actions.

    Args:
        path: PNG file to write.
        record: EpisodeRecord with `probabilities`.
        action_names: names of the action indices.
        title: figure title.

    Returns:
        `path`.

    Raises:
        ValueError: the record holds no probabilities.
    """
    if not record.probabilities:
        raise ValueError('plot_action_probabilities: the episode record holds no action probabilities')
    probabilities = np.asarray(record.probabilities, dtype=np.float64)
    times = record.step_times[:len(probabilities)]
    figure, axes = new_axes()
    axes.stackplot(times, probabilities.T, labels=list(action_names), alpha=0.85)
    chosen = np.asarray(record.actions[:len(probabilities)])
    axes.scatter(times, (chosen + 0.5) / probabilities.shape[1], marker='|', color='black', s=80,
                 label='chosen action (height: index)')
    axes.set_ylim(0.0, 1.0)
    axes.set_title(title)
    axes.set_ylabel('probability')
    axes.legend(loc='upper left', fontsize='small', ncol=len(action_names) + 1)
    return save_figure(figure, path)


def plot_asset(path, record, asset, title):
    """One asset over one episode: its close price with the episode's fills of the asset marked at their time and
    price, and its position size below.

    Args:
        path: PNG file to write.
        record: EpisodeRecord with `bar_prices` and `bar_positions` of `asset`.
        asset: the asset.
        title: figure title.

    Returns:
        `path`.
    """
    figure, (price_axes, position_axes) = new_panels(2)
    price_axes.plot(record.bar_times, record.bar_prices[asset], color='tab:blue', linewidth=1.0, label='close')
    fills = [fill for fill in record.trade_log['fills'] if fill['asset'] == asset]
    for kind, (marker, color) in FILL_MARKERS.items():
        marked = [fill for fill in fills if fill_kind(fill) == kind]
        if marked:
            price_axes.scatter([fill['time'] for fill in marked], [fill['price'] for fill in marked], marker=marker,
                               color=color, s=60, zorder=4, label='{} fill'.format(kind))
    price_axes.set_title(title)
    price_axes.set_ylabel('{} price'.format(asset))
    price_axes.grid(alpha=0.3)
    price_axes.legend(loc='best', fontsize='small')
    position_axes.step(record.bar_times, record.bar_positions[asset], where='post', color='tab:purple')
    position_axes.axhline(0.0, color='black', linewidth=0.6)
    position_axes.set_ylabel('position (units)')
    position_axes.grid(alpha=0.3)
    return save_figure(figure, path)


def marginal_probabilities(probabilities, ac_space):
    """Per-asset probabilities of the base actions from joint action probabilities (or the per-asset ones).

    Args:
        probabilities: [steps, joint actions] probabilities, indexed as `ac_space.lookup_table`; with the
            per-asset encoding [steps, assets * base actions].
        ac_space: discrete ActionDictSpace.

    Returns:
        dict asset -> [steps, base actions] array.
    """
    probabilities = np.asarray(probabilities, dtype=np.float64)
    if ac_space.action_groups > 1:
        return dict(zip(ac_space.assets, np.split(probabilities, ac_space.action_groups, axis=-1)))
    vectors = np.array([ac_space.lookup_table[category] for category in range(ac_space.cardinality)])
    base = np.eye(len(ac_space.base_actions))
    return {asset: probabilities @ base[vectors[:, column]] for column, asset in enumerate(ac_space.assets)}


def plot_asset_action_probabilities(path, record, ac_space, title):
    """The policy's per-asset action probabilities (marginals of its joint distribution) at every step of one
    episode, one stacked panel per asset, with the asset's chosen action.

    Args:
        path: PNG file to write.
        record: EpisodeRecord with `probabilities` (joint) and dict `actions`.
        ac_space: the discrete multi-asset ActionDictSpace.
        title: figure title.

    Returns:
        `path`.

    Raises:
        ValueError: the record holds no probabilities.
    """
    if not record.probabilities:
        raise ValueError('plot_asset_action_probabilities: the episode record holds no action probabilities')
    marginals = marginal_probabilities(record.probabilities, ac_space)
    times = record.step_times[:len(record.probabilities)]
    figure, panels = new_panels(len(ac_space.assets))
    depth = len(ac_space.base_actions)
    for axes, asset in zip(panels, ac_space.assets):
        axes.stackplot(times, marginals[asset].T, labels=list(ac_space.base_actions), alpha=0.85)
        chosen = np.array([action[asset] for action in record.actions[:len(times)]])
        axes.scatter(times, (chosen + 0.5) / depth, marker='|', color='black', s=80,
                     label='chosen action (height: index)')
        axes.set_ylim(0.0, 1.0)
        axes.set_ylabel('{}: probability'.format(asset))
        axes.legend(loc='upper left', fontsize='small', ncol=depth + 1)
    panels[0].set_title(title)
    return save_figure(figure, path)


def plot_weights(path, record, keys, title):
    """The policy's target weights (as sent, before the env's normalisation) at every step of one episode, stacked.

    Args:
        path: PNG file to write.
        record: EpisodeRecord whose `probabilities` are the weights of every step.
        keys: the weight keys, in the order of the weights.
        title: figure title.

    Returns:
        `path`.

    Raises:
        ValueError: the record holds no weights.
    """
    if not record.probabilities:
        raise ValueError('plot_weights: the episode record holds no weights')
    weights = np.asarray(record.probabilities, dtype=np.float64)
    times = record.step_times[:len(weights)]
    figure, (axes,) = new_panels(1)
    axes.stackplot(times, weights.T, labels=list(keys), alpha=0.85)
    axes.set_ylim(0.0, max(1.0, float(weights.sum(axis=1).max())))
    axes.set_title(title)
    axes.set_ylabel('target weight')
    axes.legend(loc='upper left', fontsize='small', ncol=len(keys))
    return save_figure(figure, path)


def _file_part(name):
    return re.sub(r'[^A-Za-z0-9_.-]', '_', name)


def plot_contents(ac_space, per_asset):
    """{file name pattern: what the plot shows} of the plots `evaluate` writes.

    Args:
        ac_space: the run's action space.
        per_asset: whether the episodes recorded per-asset positions (multi-asset envs).
    """
    contents = dict(PLOT_CONTENTS)
    if per_asset:
        contents.update(ASSET_PLOT_CONTENTS)
    if not ac_space.is_discrete:
        contents.update(PORTFOLIO_PLOT_CONTENTS)
    elif len(ac_space.assets) > 1:
        contents.update(MULTI_DISCRETE_PLOT_CONTENTS)
    return contents


def _action_plot(path, record, policy, title):
    space = policy.ac_space
    if not space.is_discrete:
        return plot_weights(path, record, policy.action_names, title + ': policy target weights')
    if len(space.assets) > 1:
        return plot_asset_action_probabilities(path, record, space, title + ': policy action probabilities per asset')
    return plot_action_probabilities(path, record, policy.action_names, title + ': policy action probabilities')


def write_plots(out, records, policy):
    """Writes the plots of every episode to `out`: the equity of every agent, the policy's actions and, for
    multi-asset envs, one plot per asset (see `plot_contents`).

    Args:
        out: existing folder.
        records: dict agent name -> list of EpisodeRecord, the policy's first.
        policy: the evaluated `LoadedPolicy` (its action space and action names).

    Returns:
        list of the file names written.
    """
    paths = []
    for index, policy_record in enumerate(next(iter(records.values()))):
        episode = {name: episodes[index] for name, episodes in records.items()}
        title = 'episode {} (seed {})'.format(index, policy_record.seed)
        paths.append(plot_equity(os.path.join(out, 'equity_episode_{}.png'.format(index)), episode,
                                 title + ': broker value'))
        paths.append(_action_plot(os.path.join(out, 'actions_episode_{}.png'.format(index)), policy_record, policy,
                                  title))
        for asset in policy_record.bar_positions:
            paths.append(plot_asset(os.path.join(out, 'asset_{}_episode_{}.png'.format(_file_part(asset), index)),
                                    policy_record, asset, '{}: policy on {}'.format(title, asset)))
    return [os.path.basename(path) for path in paths]
