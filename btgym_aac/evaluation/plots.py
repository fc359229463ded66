"""PNG plots of evaluation episodes (matplotlib `Figure` with the Agg canvas; pyplot is never used)."""
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

FILL_MARKERS = {'buy': ('^', 'tab:green'), 'sell': ('v', 'tab:red'), 'close': ('X', 'black')}
FIGURE_SIZE = (11, 4.5)
DPI = 100


def new_axes():
    """A figure of the evaluation plots' size, with one axes."""
    figure = Figure(figsize=FIGURE_SIZE, dpi=DPI)
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot(1, 1, 1)


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
    """Broker value per bar of every agent of one episode; the first agent's fills are marked.

    Args:
        path: PNG file to write.
        records: dict agent name -> EpisodeRecord of the same episode (first one: the evaluated policy).
        title: figure title.

    Returns:
        `path`.
    """
    figure, axes = new_axes()
    for index, (name, record) in enumerate(records.items()):
        axes.plot(record.bar_times, record.bar_values, label=name, linewidth=1.6 if index == 0 else 0.9,
                  zorder=3 if index == 0 else 2)
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
