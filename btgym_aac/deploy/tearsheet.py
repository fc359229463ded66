"""The tearsheet of a `trade` run (`evaluation.tearsheet`'s page), from its folder's journal and bars and its
artifact's manifest: the broker value at every decision against the traded prices, the returns per day with
bootstrap intervals, the costs, the fills and the settings. It reads a run that is still going as far as it got.
"""
import os

import numpy as np
import pandas as pd

from btgym_aac.deploy.journal import BARS_FILE, CLOSE_RECORD, END_RECORD, JOURNAL_FILE, TradingFolder
from btgym_aac.deploy.manifest import read_manifest
from btgym_aac.evaluation.tearsheet import (COST_METRICS, POLICY, Section, capped_table, cumulative_return_chart,
                                            drawdown_section, interval_note, interval_rows, money, paragraph,
                                            percent, settings_table, table, write_page)

PRICE = 'price'
"""The column of the traded lines' close prices (the page's benchmark)."""


def read_trade_run(folder, artifact):
    """(journal entries, groups of bars, saved state, manifest) of the `trade` run in `folder`, checked to be one
    of the artifact `artifact`.

    Raises:
        FileNotFoundError: `folder` is no folder or holds no journal.
        ValueError: the journal holds no decision, the folder no bars, or the run traded another artifact (the
            checksums of its files differ from those the run saved); ArtifactError (a ValueError): `artifact` is no
            policy artifact.
    """
    if not os.path.isdir(folder):
        raise FileNotFoundError('trade folder {} does not exist'.format(folder))
    if not os.path.isfile(os.path.join(folder, JOURNAL_FILE)):
        raise FileNotFoundError('{} holds no {}: is it the --out folder of a `btgym-aac trade` run?'.format(
            folder, JOURNAL_FILE))
    manifest = read_manifest(artifact)
    run = TradingFolder(folder)
    journal, state = run.read_journal(), run.read_state()
    if state is not None and state.get('artifact_files') != manifest['files']:
        raise ValueError('{} holds a trade run of another artifact than {} (the checksums of its files differ): give '
                         'the artifact the run traded with'.format(folder, artifact))
    if not journal:
        raise ValueError('the journal of {} holds no decision yet'.format(folder))
    bars = run.read_bars()
    if not bars:
        raise ValueError('{} holds no {}: the bars of its decisions are missing'.format(folder, BARS_FILE))
    return journal, bars, state, manifest


def decision_returns(journal, bars):
    """The returns from one decision to the next of the broker value and of the traded lines' prices.

    Args:
        journal: the journal's entries (each with `bar_time` and `broker_value`).
        bars: the groups of bars processed (dicts data line -> Bar).

    Returns:
        DataFrame indexed by the decisions' bar times: `policy` (the broker value's return; 0 at the first decision)
        and `price` (the mean over the lines of their close's return; 0 at the first decision).
    """
    times = pd.DatetimeIndex([entry['bar_time'] for entry in journal])
    values = np.array([entry['broker_value'] for entry in journal], dtype=np.float64)
    closes = pd.DataFrame({line: pd.Series([group[line].close for group in bars],
                                           index=pd.DatetimeIndex([group[line].time for group in bars]))
                           for line in bars[0]})
    prices = closes.reindex(times)
    return pd.DataFrame({POLICY: np.concatenate([[0.0], values[1:] / values[:-1] - 1.0]),
                         PRICE: (prices / prices.shift(1) - 1.0).fillna(0.0).mean(axis=1).to_numpy()}, index=times)


def daily_returns(journal):
    """Rows (day, decisions, value at the start, value at the end, return %) of every calendar day of the journal's
    bar times: a day starts at the previous day's last value (the first day: at its first decision's)."""
    frame = pd.DataFrame({'value': [entry['broker_value'] for entry in journal]},
                         index=pd.DatetimeIndex([entry['bar_time'] for entry in journal]))
    rows, start = [], frame['value'].iloc[0]
    for day, values in frame.groupby(frame.index.date)['value']:
        end = values.iloc[-1]
        rows.append((str(day), len(values), start, end, 100.0 * (end / start - 1.0)))
        start = end
    return rows


def _returns_section(journal):
    """The returns per day (`daily_returns`) and their mean with its interval."""
    days = daily_returns(journal)
    header, rows = interval_rows({POLICY: [row[4] for row in days]}, seed=0, unit='day')
    return (table(['day', 'decisions', 'value at start', 'value at end', 'return'],
                  [(day, count, money(start), money(end), percent(change)) for day, count, start, end, change in days])
            + table(header, rows) + paragraph(interval_note(len(days), 0, unit='day')))


def _costs_section(lines, manifest):
    """The broker's cost settings and what the journal's fills paid."""
    fills = [fill for entry in lines for fill in entry.get('fills', ())]
    paid = [money(sum(fill.get(key, 0.0) for fill in fills)) for key, _ in COST_METRICS]
    return (paragraph("The broker's settings, from the artifact:") + settings_table(manifest['broker']) +
            table(['paid over the run'] + [title for _, title in COST_METRICS], [['policy'] + paid]))


def _trades_section(lines):
    """The fills (paper mode) with the positions, cash and value at the journal's last line (a decision, or the
    end of a run); in shadow mode, a line."""
    if lines[0]['mode'] == 'shadow':
        return paragraph("Shadow mode: no order was placed; the journal holds each decision's intended order.")
    fills = [[fill['time'], fill['asset'], fill['side'], '{:g}'.format(fill['size']), '{:.6g}'.format(fill['price']),
              '{:.4f}'.format(fill['commission']), '{:.4f}'.format(fill.get('spread_cost', 0.0)),
              '{:.4f}'.format(fill.get('slippage_cost', 0.0)), fill.get('order', '')]
             for entry in lines for fill in entry.get('fills', ())]
    last = [entry for entry in lines if entry.get('record') != CLOSE_RECORD][-1]
    when = 'at the last decision' if 'record' not in last else 'at the end ({}, exit status {})'.format(
        last['ended'], last['exit_code'])
    positions = ', '.join('{} {:g}'.format(asset, size) for asset, size in last['positions'].items())
    return (paragraph('{} fills; {}: positions {}, cash {}, value {}.'.format(
        len(fills), when, positions, money(last['cash']), money(last['broker_value']))) +
        capped_table(['time', 'asset', 'side', 'size', 'price', 'commission', 'spread', 'slippage', 'order'], fills,
                     'fills'))


def write_trade_tearsheet(path, folder, artifact):
    """Writes the tearsheet of the `trade` run in `folder`.

    Args:
        path: the HTML file to write.
        folder: the run's folder (`trade`'s `out`).
        artifact: the policy artifact the run traded with (its manifest names the policy and the broker).

    Returns:
        path.

    Raises:
        as `read_trade_run`.
    """
    journal, bars, state, manifest = read_trade_run(folder, artifact)
    entries = TradingFolder(folder).read_lines()
    ends = [entry for entry in entries if entry.get('record') == END_RECORD]
    policy = manifest['policy']['class'].rpartition(':')[2]
    lines = list(bars[0])
    returns = decision_returns(journal, bars)
    label = 'price of {}'.format(lines[0]) if len(lines) == 1 else 'mean price change of {}'.format(', '.join(lines))
    chart = returns.rename(columns={PRICE: label})
    mode = journal[0]['mode']
    run_settings = {'folder': os.path.abspath(folder), 'mode': mode, 'data lines': lines,
                    'decisions': len(journal), 'first decision': journal[0]['bar_time'],
                    'last decision': journal[-1]['bar_time'], 'state saved at': (state or {}).get('saved_at'),
                    'runs ended': ['{} (exit status {})'.format(end['ended'], end['exit_code']) for end in ends]}
    artifact_settings = {'artifact': os.path.abspath(artifact), 'policy': manifest['policy']['class'],
                         'policy kwargs': manifest['policy']['kwargs'], 'checkpoint': manifest['checkpoint'],
                         'global step': manifest['global_step'], 'exported': manifest['created'],
                         'package': manifest['package'], 'env': manifest['env']['class'],
                         'strategy': manifest['strategy']['class'], 'strategy kwargs': manifest['strategy']['kwargs'],
                         'skip_frame': manifest['skip_frame'], 'training data': manifest['data']}
    sections = [
        Section('Cumulative return', cumulative_return_chart(
            chart, benchmark=label, title='Broker value at each decision against the {}'.format(label)) + paragraph(
            'The broker value journaled at each decision (before the orders of that decision fill), from the first '
            "decision on; the benchmark is the traded lines' close at the same bars, not a traded baseline: no "
            'commission, spread or leverage.')),
        Section('Drawdown', drawdown_section(chart, POLICY, label)),
        Section('Returns per day', _returns_section(journal)),
        Section('Costs', _costs_section(entries, manifest)),
        Section('Trades', _trades_section(entries)),
        Section('Settings', settings_table(run_settings) + settings_table(artifact_settings)),
    ]
    warnings = [] if mode == 'shadow' or any(entry.get('fills') for entry in entries) else [
        'No order of the policy was filled: the value is that of holding the start cash.']
    subtitle = '{} trading journal of {}: {} decisions from {} to {} on {}; artifact {} (global step {}).'.format(
        mode.capitalize(), os.path.abspath(folder), len(journal), journal[0]['bar_time'], journal[-1]['bar_time'],
        ', '.join(lines), os.path.abspath(artifact), manifest['global_step'])
    return write_page(path, 'btgym-aac tearsheet: {} trade journal'.format(policy),
                      '{}: {} trading'.format(policy, mode), subtitle, sections, warnings)
