"""The summary of `known_edge.py`: per market and trainer, the fraction of the oracle with its bootstrap interval,
the learning curve, the cost of reaching half the oracle, the twin's excess over buy-and-hold and the policy's own
return there; the table and the plots."""
import numpy as np

from btgym_aac.walk_forward.summary import bootstrap_mean_interval, fraction_of_oracle

HALF = 0.5


def pooled_returns(runs, stage_index, agent):
    """`agent`'s per-episode returns (%) at stage `stage_index` of every run, seeds and episodes pooled."""
    return [value for run in runs for value in run['stages'][stage_index]['returns_pct'][agent]]


def learning_curve(runs):
    """Per stage: env steps and training CPU seconds (means over the seeds) and the policy's fraction of the
    oracle on the pooled episodes with its bootstrap interval (`fraction_of_oracle`)."""
    curve = []
    for index in range(min(len(run['stages']) for run in runs)):
        cpu = [run['stages'][index]['cpu_seconds'] for run in runs]
        point = {'env_steps': float(np.mean([run['stages'][index]['env_steps'] for run in runs])),
                 'cpu_seconds': None if None in cpu else float(np.mean(cpu))}
        point.update(fraction_of_oracle(pooled_returns(runs, index, 'policy'), pooled_returns(runs, index, 'oracle')))
        curve.append(point)
    return curve


def _mean_interval(values):
    """Mean and bootstrap interval (`bootstrap_mean_interval`) of per-episode values, and whether it includes 0."""
    mean, low, high = bootstrap_mean_interval(values)
    return {'mean_pct': mean, 'ci_low_pct': low, 'ci_high_pct': high, 'includes_zero': bool(low <= 0 <= high)}


def excess_over_buy_and_hold(runs):
    """The policy's return minus buy-and-hold's at the last stage, per episode pooled over the seeds (see
    `_mean_interval`)."""
    last = min(len(run['stages']) for run in runs) - 1
    return _mean_interval(np.subtract(pooled_returns(runs, last, 'policy'), pooled_returns(runs, last, 'buy_and_hold')))


def policy_return(runs):
    """The policy's own return at the last stage, per episode pooled over the seeds (see `_mean_interval`), and
    whether it finds nothing: no return above zero told from chance (the interval reaches down to zero or
    below). On a twin this is the check that cannot be fooled by buy-and-hold losing on a drifting test stretch."""
    last = min(len(run['stages']) for run in runs) - 1
    entry = _mean_interval(pooled_returns(runs, last, 'policy'))
    entry['finds_nothing'] = bool(entry['ci_low_pct'] <= 0)
    return entry


def summarize(runs):
    """One row per market and trainer (in run order): on the edge market the last stage's fraction of the
    oracle, the learning curve and the env steps and CPU seconds of the first stage at half the oracle or more
    (None if none), the excess over buy-and-hold; on the twin (where run) its excess over buy-and-hold and the
    policy's own return."""
    rows = []
    for market, trainer in dict.fromkeys((run['market'], run['trainer']) for run in runs):
        group = [run for run in runs if (run['market'], run['trainer']) == (market, trainer)]
        edge, twin = ([run for run in group if run['edge'] is flag] for flag in (True, False))
        row = {'market': market, 'trainer': trainer, 'seeds': sorted({run['seed'] for run in group})}
        if edge:
            curve = learning_curve(edge)
            half = next((point for point in curve if point['fraction'] is not None and point['fraction'] >= HALF),
                        None)
            row.update(fraction_of_oracle=curve[-1], learning_curve=curve,
                       env_steps_to_half=half and half['env_steps'], cpu_seconds_to_half=half and half['cpu_seconds'],
                       excess_over_buy_and_hold=excess_over_buy_and_hold(edge),
                       episodes=len(pooled_returns(edge, len(curve) - 1, 'policy')))
        if twin:
            row['twin_excess_over_buy_and_hold'] = excess_over_buy_and_hold(twin)
            row['twin_policy_return'] = policy_return(twin)
        rows.append(row)
    return rows


def _interval(entry, keys, form):
    mean, low, high = (entry.get(key) for key in keys)
    return '-' if mean is None else '{} [{}, {}]'.format(*(form.format(value) for value in (mean, low, high)))


def table_lines(rows):
    """The summary as the lines of a markdown table (the one in docs/learning.md)."""
    keys = ('mean_pct', 'ci_low_pct', 'ci_high_pct')
    lines = ['| market | trainer | seeds | fraction of the oracle [95 % interval] | env steps / CPU s to half | '
             'edge: policy - B&H % | twin: policy - B&H % (zero in?) | twin: policy return % (nothing found?) |',
             '|---|---|---|---|---|---|---|---|']
    for row in rows:
        fraction = _interval(row.get('fraction_of_oracle', {}), ('fraction', 'ci_low', 'ci_high'), '{:.2f}')
        to_half = '-' if row.get('env_steps_to_half') is None else '{:,.0f} / {:.0f}'.format(
            row['env_steps_to_half'], row['cpu_seconds_to_half'])
        edge = _interval(row.get('excess_over_buy_and_hold', {}), keys, '{:+.2f}')
        twin_excess, twin_return = row.get('twin_excess_over_buy_and_hold'), row.get('twin_policy_return')
        twin_columns = ['-', '-']
        if twin_excess:
            twin_columns = ['{} {}'.format(_interval(twin_excess, keys, '{:+.2f}'),
                                           'yes' if twin_excess['includes_zero'] else 'no'),
                            '{} {}'.format(_interval(twin_return, keys, '{:+.3f}'),
                                           'yes' if twin_return['finds_nothing'] else 'no')]
        lines.append('| {} |'.format(' | '.join([row['market'], row['trainer'], str(len(row['seeds'])), fraction,
                                                  to_half, edge] + twin_columns)))
    return lines


def plot(rows, axis, label, path):
    """The fraction of the oracle (pooled over seeds and episodes, with its bootstrap interval shaded) against
    `axis` ('env_steps' or 'cpu_seconds') of the learning curves: one panel per market, one line per trainer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    markets = list(dict.fromkeys(row['market'] for row in rows if 'learning_curve' in row))
    trainers = list(dict.fromkeys(row['trainer'] for row in rows))
    fig = Figure(figsize=(5.5 * max(len(markets), 1), 4.2), dpi=80)
    for index, market in enumerate(markets, start=1):
        ax = fig.add_subplot(1, len(markets), index)
        for row in (row for row in rows if row['market'] == market and 'learning_curve' in row):
            points = [p for p in row['learning_curve'] if p['fraction'] is not None and p[axis] is not None]
            x = [p[axis] for p in points]
            color = 'C{}'.format(trainers.index(row['trainer']))
            ax.plot(x, [p['fraction'] for p in points], marker='o', color=color, label=row['trainer'])
            ax.fill_between(x, [p['ci_low'] for p in points], [p['ci_high'] for p in points], color=color,
                            alpha=0.15)
        for level, style in ((0.0, '-'), (HALF, ':'), (1.0, '--')):
            ax.axhline(level, color='grey', linestyle=style, linewidth=0.8)
        ax.set_title(market)
        ax.set_xlabel(label)
        ax.set_ylabel('policy return / oracle return (test file)')
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    FigureCanvasAgg(fig).print_png(path)
