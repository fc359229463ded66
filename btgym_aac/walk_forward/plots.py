"""PNG plots of a walk-forward: the stitched out-of-sample equity curves and per-fold metric bars."""
import numpy as np
import pandas as pd

from btgym_aac.evaluation.plots import new_axes, save_figure

EQUITY_PLOT = 'equity_out_of_sample.png'
FOLD_PLOT = 'fold_metrics.png'
FOLD_METRICS = (('return_pct', 'mean return per episode, %'), ('sharpe', 'mean Sharpe ratio per step'))


def plot_stitched_equity(path, folds, title='out-of-sample equity, test episodes chained in time order (1 = start)'):
    """Every agent's equity over all test episodes, chained in time order: 1 at the first test bar, multiplied by
    (1 + episode return) at each episode's last bar; dotted lines mark the test blocks' starts.

    Args:
        path: PNG file to write.
        folds: fold records with `test_window` and `agents` {name: {'return_pct', 'last_bar_time'}}.
        title: the plot's title.
    """
    figure, axes = new_axes()
    for name in folds[0]['agents']:
        ends = [pd.Timestamp(time) for fold in folds for time in fold['agents'][name]['last_bar_time']]
        returns = np.array([value for fold in folds for value in fold['agents'][name]['return_pct']])
        start = pd.Timestamp(folds[0]['test_window']['first_bar'])
        axes.step([start] + ends, np.concatenate([[1.0], np.cumprod(1 + returns / 100)]), where='post',
                  label=name.replace('_', '-'))
    for fold in folds:
        axes.axvline(pd.Timestamp(fold['test_window']['first_bar']), color='grey', linestyle=':', linewidth=1)
    axes.set_title(title)
    axes.set_ylabel('equity')
    axes.legend(loc='best')
    return save_figure(figure, path)


def plot_fold_metrics(path, folds):
    """Grouped bars of every agent's mean return and Sharpe ratio per fold.

    Args:
        path: PNG file to write.
        folds: fold records with `fold` and `agents` {name: {'mean': {metric: value}}}.
    """
    figure, _ = new_axes()
    figure.clear()
    names = list(folds[0]['agents'])
    positions = np.arange(len(folds))
    width = 0.8 / len(names)
    for plot_number, (metric, title) in enumerate(FOLD_METRICS, start=1):
        axes = figure.add_subplot(1, len(FOLD_METRICS), plot_number)
        for offset, name in enumerate(names):
            values = [fold['agents'][name]['mean'][metric] for fold in folds]
            axes.bar(positions + offset * width, values, width, label=name.replace('_', '-'))
        axes.axhline(0, color='black', linewidth=0.8)
        axes.set_xticks(positions + width * (len(names) - 1) / 2)
        axes.set_xticklabels(['fold {}'.format(fold['fold']) for fold in folds])
        axes.set_title(title)
    axes.legend(loc='best')
    figure.tight_layout()
    figure.savefig(path)
    return path
