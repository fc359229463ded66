"""The tearsheet of a walk-forward (`evaluation.tearsheet`'s page): every fold's test episodes chained in time
order, their returns with bootstrap intervals, the folds, the costs, the trades and the settings."""
import pandas as pd

from btgym_aac.evaluation.tearsheet import (BUY_AND_HOLD, COST_METRICS, POLICY, Section, agent_label,
                                            config_settings, cost_settings_html, cumulative_return_chart,
                                            drawdown_section, interval_note, interval_rows, money, paragraph,
                                            percent, policy_class_name, settings_table, table, write_page)
from btgym_aac.walk_forward.summary import out_of_sample_returns


def episode_returns(folds):
    """Every agent's return (a fraction) per test episode, at the episode's last bar, after a return of 0 at fold
    0's first test bar; an agent whose episode ended before another's has return 0 at the other's end.

    Args:
        folds: fold records (see `runner`), in fold order.

    Returns:
        DataFrame, agents as columns, indexed by time.
    """
    start = pd.Timestamp(folds[0]['test_window']['first_bar'])
    columns = {}
    for name in folds[0]['agents']:
        times = [pd.Timestamp(time) for fold in folds for time in fold['agents'][name]['last_bar_time']]
        returns = [value / 100 for fold in folds for value in fold['agents'][name]['return_pct']]
        columns[name] = pd.Series([0.0] + returns, index=pd.DatetimeIndex([start] + times))
    return pd.DataFrame(columns).fillna(0.0)


def _returns_section(report):
    """Every test episode's return per agent (the policy's window), the means with their intervals and the
    walk-forward's verdict."""
    folds = report['folds']
    names = list(folds[0]['agents'])
    rows = [[fold['fold'], number, fold['agents'][POLICY]['first_bar_time'][number],
             fold['agents'][POLICY]['last_bar_time'][number]] +
            [percent(fold['agents'][name]['return_pct'][number]) for name in names]
            for fold in folds for number in range(len(fold['agents'][POLICY]['return_pct']))]
    returns = out_of_sample_returns(folds)
    seed = report['settings']['seed']
    interval_header, interval_body = interval_rows(returns, seed)
    return (table(['fold', 'episode', 'first bar', 'last bar'] + [agent_label(name) for name in names], rows) +
            table(interval_header, interval_body) + paragraph(interval_note(len(returns[POLICY]), seed)) +
            ''.join(paragraph(line) for line in report['summary']['lines']))


def _folds_section(folds):
    """Per fold: its training and test bars, global step, test episodes and every agent's mean return."""
    rows = [[fold['fold'], '{} .. {}'.format(fold['train_window']['first_bar'], fold['train_window']['last_bar']),
             '{} .. {}'.format(fold['test_window']['first_bar'], fold['test_window']['last_bar']),
             fold['global_step'], fold['episodes']] +
            [percent(fold['agents'][name]['mean']['return_pct']) for name in fold['agents']]
            for fold in folds]
    return table(['fold', 'training bars', 'test bars', 'global step', 'test episodes'] +
                 ['{} mean'.format(agent_label(name)) for name in folds[0]['agents']], rows)


def _charged_html(costs):
    """The costs a fold's evaluation charged, or a line saying its record (of an earlier version) has none."""
    if costs is None:
        return paragraph('The costs charged are not recorded (a fold written by an earlier version).')
    return cost_settings_html(costs)


def _costs_section(folds):
    """The costs charged (one table where every fold's are the same) and the mean costs paid per episode."""
    charged = [fold.get('costs') for fold in folds]
    if all(costs == charged[0] for costs in charged):
        settings = _charged_html(charged[0])
    else:
        settings = ''.join(paragraph('Fold {}:'.format(fold['fold'])) + _charged_html(costs)
                           for fold, costs in zip(folds, charged))
    rows = [[fold['fold'], agent_label(name)] +
            [money(summary['mean'][key]) if key in summary['mean'] else 'not recorded' for key, _ in COST_METRICS]
            for fold in folds for name, summary in fold['agents'].items()]
    return settings + table(['fold', 'paid per episode (mean)'] + [title for _, title in COST_METRICS], rows)


def _trades_section(folds):
    """Per fold and agent: the mean filled orders, closed trades and win rate per test episode."""
    rows = [[fold['fold'], agent_label(name), '{:.1f}'.format(summary['mean']['orders']),
             '{:.1f}'.format(summary['mean']['trades']), '{:.2f}'.format(summary['mean']['win_rate'])]
            for fold in folds for name, summary in fold['agents'].items()]
    return table(['fold', 'per episode (mean)', 'filled orders', 'closed trades', 'win rate'], rows)


def write_walk_forward_tearsheet(path, report, configs):
    """Writes the tearsheet of a walk-forward.

    Args:
        path: the HTML file to write.
        report: `walk_forward`'s report dict.
        configs: the config dicts the folds trained with.

    Returns:
        path.
    """
    folds = report['folds']
    policy = policy_class_name(configs['policy_config']['class_ref'])
    returns = episode_returns(folds)
    order = [POLICY] + [name for name in returns if name not in (POLICY, BUY_AND_HOLD)] + [BUY_AND_HOLD]
    episodes = sum(len(fold['agents'][POLICY]['return_pct']) for fold in folds)
    others = ', '.join(agent_label(name) for name in order[:-1])
    sections = [
        Section('Cumulative return', cumulative_return_chart(
            returns[order], title='Out-of-sample return of {} against buy-and-hold'.format(others)) + paragraph(
            'The curves chain the {} test episodes of the {} folds in time order: each episode starts from the start '
            'cash, so a curve compounds the episode returns. The folds record one return per episode: a curve has a '
            "point at each episode's last bar, joined by straight lines.".format(episodes, len(folds)))),
        Section('Drawdown', drawdown_section(returns, POLICY, BUY_AND_HOLD) + paragraph(
            'Per test episode over the chained episodes (a drawdown within an episode does not show here).')),
        Section('Returns per test episode', _returns_section(report)),
        Section('Folds', _folds_section(folds)),
        Section('Costs', _costs_section(folds)),
        Section('Trades', _trades_section(folds)),
        Section('Settings', settings_table(report['settings']) +
                settings_table(config_settings(configs))),
    ]
    warnings = [] if any(fold['agents'][POLICY]['mean']['orders'] for fold in folds) else [
        'The policy placed no order in any test episode: its return is that of holding the start cash.']
    subtitle = 'Walk-forward of {} folds, {} test episodes from {} to {}, {} env steps of training per fold.'.format(
        len(folds), episodes, folds[0]['test_window']['first_bar'], folds[-1]['test_window']['last_bar'],
        report['settings']['train_steps'])
    return write_page(path, 'btgym-aac tearsheet: {} walk-forward'.format(policy),
                      '{}: walk-forward, out of sample'.format(policy), subtitle, sections, warnings)
