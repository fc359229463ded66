"""The summary of `known_edge.py`: per market and trainer, the fraction of the oracle with its bootstrap interval,
the learning curve, the cost of reaching half the oracle, the twin's excess over buy-and-hold; the table and the
plots."""
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


def excess_over_buy_and_hold(runs):
    """The policy's return minus buy-and-hold's at the last stage, per episode pooled over the seeds: mean and
    bootstrap interval (`bootstrap_mean_interval`), and whether the interval includes zero."""
    last = min(len(run['stages']) for run in runs) - 1
    excess = np.subtract(pooled_returns(runs, last, 'policy'), pooled_returns(runs, last, 'buy_and_hold'))
    mean, low, high = bootstrap_mean_interval(excess)
    return {'mean_pct': mean, 'ci_low_pct': low, 'ci_high_pct': high, 'includes_zero': bool(low <= 0 <= high)}


def summarize(runs):
    """One row per market and trainer (in run order): on the edge market the last stage's fraction of the
    oracle, the learning curve and the env steps and CPU seconds of the first stage at half the oracle or more
    (None if none), the excess over buy-and-hold; on the twin (where run) its excess over buy-and-hold."""
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
        rows.append(row)
    return rows


def _number(value, form):
    return '-' if value is None else form.format(value)


def _interval(entry, keys, form):
    mean, low, high = (entry.get(key) for key in keys)
    return '-' if mean is None else '{} [{}, {}]'.format(*(form.format(value) for value in (mean, low, high)))


def table_lines(rows):
    """The summary as text lines."""
    form = '{:<10}{:<9}{:>24}{:>14}{:>14}{:>30}{:>32}'
    header = form.format(
        'market', 'trainer', 'fraction of oracle', 'steps to 1/2', 'CPU s to 1/2', 'edge: policy - B&H %',
        'twin: policy - B&H % (0 in?)')
    lines = [header]
    for row in rows:
        fraction = _interval(row.get('fraction_of_oracle', {}), ('fraction', 'ci_low', 'ci_high'), '{:.2f}')
        keys = ('mean_pct', 'ci_low_pct', 'ci_high_pct')
        edge = _interval(row.get('excess_over_buy_and_hold', {}), keys, '{:+.3f}')
        twin_entry = row.get('twin_excess_over_buy_and_hold', {})
        twin = _interval(twin_entry, keys, '{:+.3f}')
        if twin_entry:
            twin += ' yes' if twin_entry['includes_zero'] else ' no'
        lines.append(form.format(
            row['market'], row['trainer'], fraction, _number(row.get('env_steps_to_half'), '{:.0f}'),
            _number(row.get('cpu_seconds_to_half'), '{:.0f}'), edge, twin))
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
