"""PNG plots of multi-asset evaluation episodes: one asset's price, fills and position; the policy's per-asset action
probabilities (MultiDiscreteEnv) or target weights (PortfolioEnv) over an episode."""
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from btgym_aac.evaluation.plots import DPI, FIGURE_SIZE, FILL_MARKERS, fill_kind, save_figure

PANEL_HEIGHT = 2.6


def new_panels(rows):
    """A figure of the evaluation plots' width with `rows` axes above each other sharing the x axis.

    Returns:
        (figure, list of axes).
    """
    figure = Figure(figsize=(FIGURE_SIZE[0], PANEL_HEIGHT * rows + 1.0), dpi=DPI)
    FigureCanvasAgg(figure)
    first = figure.add_subplot(rows, 1, 1)
    return figure, [first] + [figure.add_subplot(rows, 1, row, sharex=first) for row in range(2, rows + 1)]


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
