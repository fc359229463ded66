"""Tearsheets: one self-contained HTML page of a policy's results against its baselines.

The page of an evaluation (`write_evaluation_tearsheet`) is written here; those of a walk-forward
(`walk_forward.tearsheet`) and of a `trade` journal (`deploy.tearsheet`) are made of the same parts: QuantStats'
charts of the cumulative return against buy-and-hold and of the drawdown (matplotlib PNGs embedded in the page),
and tables of the returns per episode with bootstrap intervals, the costs, the trades and the settings. The page
loads nothing from elsewhere: no script, style sheet, font or image outside the file.
"""
import base64
import dataclasses
import datetime
import functools
import html
import io
import os

import numpy as np
import pandas as pd

from btgym_aac.class_refs import class_name
from btgym_aac.evaluation.metrics import CONFIDENCE, RESAMPLES, bootstrap_mean_interval

TEARSHEET_FILE = 'tearsheet.html'
POLICY, BUY_AND_HOLD = 'policy', 'buy_and_hold'
MAX_ROWS = 100
"""Trades or fills listed in a page's table; the rest are counted."""
CHART_SIZE, CHART_DPI = (11, 4.6), 96
CHART_FONT = 'DejaVu Sans'
"""The charts' font: matplotlib ships it (QuantStats asks for Arial, which few Linux hosts have)."""
COST_METRICS = (('commission', 'commission'), ('spread_cost', 'spread'), ('slippage_cost', 'slippage'))
"""Per-episode metrics of the costs paid (money), with their column titles."""
STYLE = '''
body { font-family: "DejaVu Sans", Verdana, sans-serif; color: #222; margin: 24px auto; max-width: 1120px;
       padding: 0 16px; }
h1 { font-size: 26px; margin: 0 0 6px 0; }
h2 { font-size: 19px; margin: 28px 0 8px 0; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
p { margin: 6px 0; line-height: 1.4; }
.subtitle { color: #555; }
.warning { color: #a00; font-weight: bold; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 3px 10px; text-align: right; vertical-align: top; }
th { background: #f3f3f3; }
th:first-child, td:first-child { text-align: left; }
table.settings th, table.settings td { text-align: left; }
table.settings td { word-break: break-word; max-width: 820px; font-family: monospace; }
img { max-width: 100%; }
footer { color: #777; font-size: 12px; margin-top: 28px; }
'''


@dataclasses.dataclass
class Section:
    """One titled part of a page: its title and its HTML."""
    title: str
    body: str


def agent_label(name):
    """An agent's name as the pages show it ('buy_and_hold' -> 'buy-and-hold'; other names as they are)."""
    return 'buy-and-hold' if name == BUY_AND_HOLD else name


def policy_class_name(class_ref):
    """The class name of a config's `class_ref` (a class or ClassRef), else its text."""
    named = class_name(class_ref)
    return named[1] if named else str(class_ref)


def paragraph(words, css_class=None):
    """An HTML paragraph of plain `words`."""
    return '<p{}>{}</p>'.format(' class="{}"'.format(css_class) if css_class else '', html.escape(words))


def table(header, rows, css_class=None):
    """An HTML table of plain-text cells.

    Args:
        header: column titles.
        rows: lists of cells (formatted as text with `str`).
        css_class: the table's class attribute, or None.
    """
    head = ''.join('<th>{}</th>'.format(html.escape(str(cell))) for cell in header)
    body = ''.join('<tr>{}</tr>'.format(''.join('<td>{}</td>'.format(html.escape(str(cell))) for cell in row))
                   for row in rows)
    return '<table{}><tr>{}</tr>{}</table>'.format(' class="{}"'.format(css_class) if css_class else '', head, body)


def percent(value):
    """A percentage as the pages write it: '+1.234 %'."""
    return '{:+.3f} %'.format(value)


def money(value):
    """An amount of money as the pages write it: '12.35'."""
    return '{:.2f}'.format(value)


def setting_text(value):
    """A setting as a line of text: classes by their import path, arrays as lists, a DataFrame by its size and
    time span, containers with their items so written, strings as they are, other values as `repr` writes them."""
    named = class_name(value)
    if named:
        return '{}.{}'.format(*named)
    if isinstance(value, str):
        return value
    if isinstance(value, pd.DataFrame):
        return 'DataFrame of {} rows, {} .. {}'.format(len(value), value.index[0], value.index[-1]) if len(value) \
            else 'empty DataFrame'
    if isinstance(value, np.ndarray):
        return setting_text(value.tolist())
    if isinstance(value, dict):
        return '{' + ', '.join('{}: {}'.format(key, setting_text(item)) for key, item in value.items()) + '}'
    if isinstance(value, (list, tuple)):
        return '[' + ', '.join(setting_text(item) for item in value) + ']'
    return repr(value)


def settings_table(settings):
    """A two-column table of setting name -> value (`setting_text`)."""
    return table(('setting', 'value'), [(name, setting_text(value)) for name, value in settings.items()],
                 'settings')


def config_settings(configs):
    """The run's config dicts as flat settings: `<config>.class_ref` and `<config>.kwargs.<name>` per config dict,
    other entries under their names.

    Args:
        configs: dict config name -> config dict or value (`read_run_config`'s or `default_configs`' shape).
    """
    flat = {}
    for name, config in configs.items():
        if not isinstance(config, dict):
            flat[name] = config
            continue
        for key, value in config.items():
            if key == 'kwargs' and isinstance(value, dict):
                flat.update(('{}.kwargs.{}'.format(name, kwarg), item) for kwarg, item in value.items())
            else:
                flat['{}.{}'.format(name, key)] = value
    return flat


COLOUR_CODES = 'bgrcmyk'
"""matplotlib's one-letter colour codes, which seaborn's import redefines."""


@functools.cache
def _quantstats():
    """(QuantStats, the matplotlib settings of its charts). Its import sets seaborn's style for the whole
    process, and seaborn's colours for matplotlib's one-letter colour codes ('r', 'g', ...); here it is imported
    with matplotlib's settings and colour codes put back afterwards, and the charts are drawn with the settings it
    set (their font made one that matplotlib ships)."""
    import matplotlib
    from matplotlib.colors import colorConverter

    codes = {code: colorConverter.colors[code] for code in COLOUR_CODES}
    with matplotlib.rc_context():
        before = dict(matplotlib.rcParams)
        import quantstats
        style = {key: value for key, value in matplotlib.rcParams.items() if before.get(key) != value}
    for code, colour in codes.items():  # (item by item: the mapping clears matplotlib's colour cache on each)
        colorConverter.colors[code] = colour
    style['font.family'] = CHART_FONT
    return quantstats, style


def _embedded_png(figure, title):
    """An <img> holding `figure` as a PNG, its title replaced by `title` and its y axis in percent."""
    from matplotlib.ticker import PercentFormatter

    figure.suptitle(title, y=0.96, fontweight='bold', fontsize=14)
    figure.axes[0].yaxis.set_major_formatter(PercentFormatter(1.0))
    buffer = io.BytesIO()
    figure.savefig(buffer, format='png', dpi=CHART_DPI, bbox_inches='tight')
    return '<img alt="{}" src="data:image/png;base64,{}">'.format(
        html.escape(title), base64.b64encode(buffer.getvalue()).decode('ascii'))


def cumulative_return_chart(returns, benchmark=BUY_AND_HOLD, title='Cumulative return'):
    """QuantStats' chart of the compounded returns of every column of `returns`, the `benchmark` column first.

    Args:
        returns: DataFrame of returns per period (fractions), columns named by agent, on one DatetimeIndex.
        benchmark: the column drawn as QuantStats' benchmark.
        title: the chart's title.

    Returns:
        HTML <img>.
    """
    import matplotlib

    quantstats, style = _quantstats()
    labelled = returns.rename(columns=agent_label)
    others = [agent_label(name) for name in returns if name != benchmark]
    with matplotlib.rc_context(style):
        figure = quantstats.plots.returns(labelled[others], labelled[agent_label(benchmark)], show=False,
                                          fontname=CHART_FONT, figsize=CHART_SIZE, subtitle=False, ylabel='',
                                          prepare_returns=False)
        return _embedded_png(figure, title)


def drawdown_chart(returns, title):
    """QuantStats' underwater chart: the compounded value's fall from its running peak, and its average.

    Args:
        returns: Series of returns per period (fractions).
        title: the chart's title.

    Returns:
        HTML <img>.
    """
    import matplotlib

    quantstats, style = _quantstats()
    with matplotlib.rc_context(style):
        figure = quantstats.plots.drawdown(returns, show=False, fontname=CHART_FONT, figsize=CHART_SIZE,
                                           subtitle=False, ylabel='')
        return _embedded_png(figure, title)


def drawdown_pct(returns):
    """Largest fall, in percent, of each column's compounded value (1 before the first return) from its running
    peak."""
    values = pd.concat([pd.DataFrame([np.ones(returns.shape[1])], columns=returns.columns),
                        (1 + returns).cumprod()], ignore_index=True)
    return (100 * (1 - values / values.cummax())).max()


def drawdown_section(returns, name, other):
    """The underwater chart of column `name` of `returns`, and a line of the largest drawdowns of `name` and
    `other`."""
    largest = drawdown_pct(returns[[name, other]])
    return drawdown_chart(returns[name], 'Drawdown of the {} from its running peak'.format(agent_label(name))) + \
        paragraph('Largest drawdown: {} {:.3f} %, {} {:.3f} %.'.format(agent_label(name), largest[name],
                                                                      agent_label(other), largest[other]))


def interval_rows(returns, seed, unit='episode'):
    """Table rows of the mean return per `unit` of every agent, and of the policy minus buy-and-hold, each with a
    percentile bootstrap interval.

    Args:
        returns: dict agent -> returns in percent, one per `unit`, the same units in the same order.
        seed: seed of the bootstrap.
        unit: what one return covers, in the rows' words.

    Returns:
        (header, rows): columns 'mean return per <unit>', mean, interval low, interval high.
    """
    series = {agent_label(name): values for name, values in returns.items()}
    if POLICY in returns and BUY_AND_HOLD in returns:
        series['policy minus buy-and-hold'] = list(np.subtract(returns[POLICY], returns[BUY_AND_HOLD]))
    rows = []
    for name, values in series.items():
        mean, low, high = bootstrap_mean_interval(values, seed=seed)
        bounds = (percent(low), percent(high)) if len(values) > 1 else ('-', '-')
        rows.append((name, percent(mean)) + bounds)
    confidence = '{:.0f} %'.format(100 * CONFIDENCE)
    return ('mean return per {}'.format(unit), 'mean', confidence + ' low', confidence + ' high'), rows


def interval_note(count, seed, unit='episode'):
    """How the intervals of `interval_rows` were made, in words."""
    if count < 2:
        return 'One {} only: no interval (a bootstrap needs at least two).'.format(unit)
    return ('Intervals: percentile bootstrap of the mean over the {} {}s ({} resamples, seed {}); they say how much '
            'the mean depends on which {}s happened to be played, not how the policy will do.'.format(
                count, unit, RESAMPLES, seed, unit))


def capped_table(header, rows, what):
    """A table of the first `MAX_ROWS` rows, and a line counting them all where there are more."""
    more = '' if len(rows) <= MAX_ROWS else paragraph('The first {} of {} {}.'.format(MAX_ROWS, len(rows), what))
    return table(header, rows[:MAX_ROWS]) + more


def cost_settings_html(costs):
    """A table of the costs charged, as a report records them (`report.cost_record`: setting -> value, and
    `from`: setting -> where it came from)."""
    rows = [(name, setting_text(value), costs['from'][name]) for name, value in costs.items() if name != 'from']
    return table(('cost setting', 'value', 'from'), rows)


def write_page(path, title, heading, subtitle, sections, warnings=()):
    """Writes a tearsheet page.

    Args:
        path: the HTML file.
        title: the page's <title>.
        heading: its <h1> (names the policy).
        subtitle: a line under the heading.
        sections: `Section`s, in order.
        warnings: lines shown in red under the subtitle.

    Returns:
        path.
    """
    from btgym_aac import __version__

    quantstats, _ = _quantstats()
    parts = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
             '<title>{}</title><style>{}</style></head><body>'.format(html.escape(title), STYLE),
             '<header><h1>{}</h1>{}{}</header>'.format(html.escape(heading), paragraph(subtitle, 'subtitle'),
                                                       ''.join(paragraph(line, 'warning') for line in warnings))]
    parts += ['<section><h2>{}</h2>{}</section>'.format(html.escape(section.title), section.body)
              for section in sections]
    parts.append('<footer>{}</footer></body></html>'.format(html.escape(
        'Written by btgym-aac {} on {} UTC; charts by QuantStats {}.'.format(
            __version__, datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M'),
            quantstats.__version__))))
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join(parts))
    return path


# ---------------------------------------------------------------------------------------------- an evaluation


def chained_step_returns(records):
    """Every agent's returns per agent step over all episodes, the episodes in time order, each starting from its
    start cash.

    An episode's first entry (its reset) has return 0: the curve compounds the episodes' returns and never compares
    one episode's start with the one before's end. Where an episode starts before the previous one ended (seeded
    windows are drawn independently and may overlap), its times are moved to start one step after that end.
    An agent whose episode ended earlier than another's has return 0 until the next episode.

    Args:
        records: dict agent -> list of EpisodeRecord, the same windows in the same order for every agent.

    Returns:
        (DataFrame of returns, agents as columns, indexed by step time; list of lines naming the moved episodes).
    """
    first = next(iter(records.values()))
    columns = {name: [] for name in records}
    moved, end = [], None
    for number in sorted(range(len(first)), key=lambda index: first[index].step_times[0]):
        episodes = {name: agent_records[number] for name, agent_records in records.items()}
        start = pd.Timestamp(first[number].step_times[0])
        shift = pd.Timedelta(0)
        if end is not None and start <= end:
            shift = end - start + (pd.Timestamp(first[number].step_times[1]) - start)
            moved.append('episode {} (from {}) overlaps the one before it in time: drawn {} later'.format(
                number, start, shift.to_pytimedelta()))
        for name, record in episodes.items():
            values = np.asarray(record.step_values, dtype=np.float64)
            columns[name].append(pd.Series(np.concatenate([[0.0], values[1:] / values[:-1] - 1.0]),
                                           index=pd.DatetimeIndex(record.step_times) + shift))
        end = max(pd.Timestamp(record.step_times[-1]) for record in episodes.values()) + shift
    frame = pd.DataFrame({name: pd.concat(parts) for name, parts in columns.items()})
    return frame.fillna(0.0), moved


def _evaluation_returns_section(report):
    """The table of every episode's return per agent, and the means with their intervals."""
    agents = report['agents']
    first = next(iter(agents.values()))['per_episode']
    header = ['episode', 'seed', 'first bar', 'last bar', 'policy end'] + [agent_label(name) for name in agents]
    rows = [[number, window['seed'], first['first_bar_time'][number], first['last_bar_time'][number],
             agents[POLICY]['per_episode']['end_reason'][number] or '-'] +
            [percent(agents[name]['per_episode']['return_pct'][number]) for name in agents]
            for number, window in enumerate(report['windows'])]
    returns = {name: summary['per_episode']['return_pct'] for name, summary in agents.items()}
    interval_header, interval_body = interval_rows(returns, report['seed'])
    return (table(header, rows) + table(interval_header, interval_body) +
            paragraph(interval_note(report['episodes'], report['seed'])))


def _evaluation_costs_section(report):
    """The costs charged, and what every agent's fills paid over all episodes and per episode."""
    agents = report['agents']
    rows = [[agent_label(name)] + [money(sum(summary['per_episode'][key])) for key, _ in COST_METRICS] +
            [money(sum(sum(summary['per_episode'][key]) for key, _ in COST_METRICS) / report['episodes'])]
            for name, summary in agents.items()]
    return cost_settings_html(report['costs']) + table(
        ['paid over all episodes'] + [title for _, title in COST_METRICS] + ['all, per episode'], rows)


def _evaluation_trades_section(records):
    """Every agent's fills, closed trades and win rate over all episodes, and the policy's closed trades."""
    rows = []
    for name, episodes in records.items():
        trades = [trade for record in episodes for trade in record.trade_log['trades']]
        wins = sum(trade['pnlcomm'] > 0 for trade in trades)
        rows.append([agent_label(name), sum(len(record.trade_log['fills']) for record in episodes), len(trades),
                     '{:.2f}'.format(wins / len(trades)) if trades else '-'])
    trades = [[number, trade['asset'], str(trade['open_time']), str(trade['close_time']), money(trade['pnl']),
               money(trade['pnlcomm'])]
              for number, record in enumerate(records[POLICY]) for trade in record.trade_log['trades']]
    return (table(['over all episodes', 'filled orders', 'closed trades', 'win rate'], rows) +
            paragraph("The policy's closed trades (result in money, before and after commission):") +
            capped_table(['episode', 'asset', 'opened', 'closed', 'result', 'after commission'], trades,
                         'closed trades'))


def write_evaluation_tearsheet(path, report, records, run_config):
    """Writes the tearsheet of an evaluation.

    Args:
        path: the HTML file to write.
        report: `evaluate`'s report dict.
        records: dict agent -> list of EpisodeRecord, the episodes the report was built from.
        run_config: the evaluated run's configs (`loading.read_run_config`).

    Returns:
        path.
    """
    policy = policy_class_name(run_config['policy_config']['class_ref'])
    returns, moved = chained_step_returns(records)
    order = [POLICY] + [name for name in returns if name not in (POLICY, BUY_AND_HOLD)] + [BUY_AND_HOLD]
    chart_note = paragraph(
        'The curves chain the {} episodes in time order, per agent step: each episode starts from the start cash, so '
        'a curve compounds the episode returns; between episodes it stays flat.{}'.format(
            report['episodes'], ' Moved in time: ' + '; '.join(moved) + '.' if moved else ''))
    facts = {key: report[key] for key in ('log_dir', 'checkpoint', 'global_step', 'data', 'episode_type',
                                          'episodes', 'seed')}
    others = ', '.join(agent_label(name) for name in order[:-1])
    sections = [
        Section('Cumulative return', cumulative_return_chart(
            returns[order], title='Cumulative return of {} against buy-and-hold'.format(others)) + chart_note),
        Section('Drawdown', drawdown_section(returns, POLICY, BUY_AND_HOLD) + paragraph(
            "Per agent step over the chained episodes; the report's max_drawdown_pct is per bar and per episode.")),
        Section('Returns per episode', _evaluation_returns_section(report)),
        Section('Costs', _evaluation_costs_section(report)),
        Section('Trades', _evaluation_trades_section(records)),
        Section('Settings', settings_table(facts) + settings_table(config_settings(run_config))),
    ]
    warnings = [] if any(record.trade_log['fills'] for record in records[POLICY]) else [
        'The policy placed no order in any episode: its return is that of holding the start cash.']
    data = _data_label(report['data'])
    subtitle = 'Evaluation of run {}, checkpoint {} (global step {}): {} {} episodes on {}, seed {}.'.format(
        report['log_dir'], os.path.basename(report['checkpoint']), report['global_step'], report['episodes'],
        report['episode_type'], data, report['seed'])
    return write_page(path, 'btgym-aac tearsheet: {} evaluation'.format(policy),
                      '{}: evaluation against its baselines'.format(policy), subtitle, sections, warnings)


def _data_label(data):
    """The report's `data` in words: 'run data', the files, or per asset its files."""
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        return '; '.join('{}: {}'.format(asset, ', '.join(files)) for asset, files in data.items())
    return ', '.join(data)
