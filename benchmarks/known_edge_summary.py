"""The summary of `known_edge.py`: per market and trainer, the time to skill (the env steps and training CPU seconds
to reach 50 % and 80 % of the oracle), the fraction of the oracle at fixed budgets of env steps with its bootstrap
interval, the learning curve (the policy acting deterministically, and sampling its actions), the twin's excess over
buy-and-hold and the policy's own return there; on mean reversion, whose oracle knows more than an episode shows,
what a rule within a policy's reach takes of it; the table and the plots."""
import json
import os

import numpy as np

from btgym_aac.evaluation.metrics import CONFIDENCE, RESAMPLES
from btgym_aac.walk_forward.summary import bootstrap_mean_interval, fraction_of_oracle

THRESHOLDS = (0.5, 0.8)
"""Fractions of the oracle whose time to reach is reported."""
REACHABLE_RULE = 'reachable_rule'
"""The agent name, in a stage's returns, of the rule within a policy's reach (`known_edge_runs.reachable_rule_returns`),
on markets that have one."""
BUDGET_SLACK = 0.01
"""A stage counts as at a budget of env steps within this fraction of it: a staged run stops at whole rollouts."""


def reached(env_steps, budget):
    """Whether `env_steps` are at `budget` or past it, within `BUDGET_SLACK` below."""
    return env_steps >= (1 - BUDGET_SLACK) * budget


def within(env_steps, budget):
    """Whether `env_steps` are at `budget` or before it, within `BUDGET_SLACK` above."""
    return env_steps <= (1 + BUDGET_SLACK) * budget


def pooled_returns(runs, stage_index, agent):
    """`agent`'s per-episode returns (%) at stage `stage_index` of every run, seeds and episodes pooled."""
    return [value for run in runs for value in run['stages'][stage_index]['returns_pct'][agent]]


def pooled_sampled_returns(runs, stage_index):
    """The sampling policy's per-episode returns (%) at stage `stage_index` of every run that recorded them."""
    return [value for run in runs for value in run['stages'][stage_index].get('sampled_returns_pct') or []]


def learning_curve(runs):
    """Per stage: env steps and training CPU seconds (means over the seeds) and the policy's fraction of the
    oracle on the pooled episodes with its bootstrap interval (`fraction_of_oracle`), and `sampled`: the same for
    the policy sampling its actions (None where the runs did not record it)."""
    curve = []
    for index in range(min(len(run['stages']) for run in runs)):
        cpu = [run['stages'][index]['cpu_seconds'] for run in runs]
        point = {'env_steps': float(np.mean([run['stages'][index]['env_steps'] for run in runs])),
                 'cpu_seconds': None if None in cpu else float(np.mean(cpu))}
        oracle = pooled_returns(runs, index, 'oracle')
        point.update(fraction_of_oracle(pooled_returns(runs, index, 'policy'), oracle))
        sampled = pooled_sampled_returns(runs, index)
        point['sampled'] = fraction_of_oracle(sampled, oracle) if len(sampled) == len(oracle) else None
        curve.append(point)
    return curve


def late_fraction(runs, from_env_steps):
    """The policy's fraction of the oracle over every stage at `from_env_steps` or later (within 1 % below), seeds,
    stages and episodes pooled, with its bootstrap interval: steadier than one stage's (`fraction_of_oracle`), and
    None where no stage is that late."""
    late = [index for index in range(min(len(run['stages']) for run in runs))
            if reached(np.mean([run['stages'][index]['env_steps'] for run in runs]), from_env_steps)]
    if not late:
        return None
    policy = [value for index in late for value in pooled_returns(runs, index, 'policy')]
    oracle = [value for index in late for value in pooled_returns(runs, index, 'oracle')]
    return dict(fraction_of_oracle(policy, oracle), stages=len(late))


def _late_episode_means(run, from_env_steps):
    """A run's policy return per test episode, averaged over its stages at `from_env_steps` or later (within 1 %
    below), and the oracle's per episode; (None, None) where no stage is that late."""
    late = [stage for stage in run['stages'] if reached(stage['env_steps'], from_env_steps)]
    if not late:
        return None, None
    policy = np.mean([stage['returns_pct']['policy'] for stage in late], axis=0)
    return policy, np.asarray(late[0]['returns_pct']['oracle'], dtype=np.float64)


def paired_late_difference(reference_runs, variant_runs, from_env_steps, confidence=CONFIDENCE,
                           resamples=RESAMPLES, seed=0):
    """How much more of the oracle a variant takes than a reference on the same test episodes, from
    `from_env_steps` on, with a paired bootstrap interval.

    Runs are paired by market seed (the same test file and windows, so the same oracle returns). Per seed and test
    episode, each side's policy return is averaged over its late stages; the difference is (sum of the variant's
    minus sum of the reference's) over the sum of the oracle's: `fraction_of_oracle` of the per-episode gains, whose
    bootstrap resamples (seed, episode) pairs, both sides together. What the two have in common (a hard seed, a
    quiet window) cancels, which the two intervals of `late_fraction` side by side do not show.

    Args:
        reference_runs, variant_runs: runs of one market, the same seeds.
        from_env_steps: as in `late_fraction`.
        confidence, resamples, seed: as in `fraction_of_oracle`.

    Returns:
        {'difference', 'ci_low', 'ci_high', 'episodes'}; None where a side has no stage that late; the three
        numbers None where the oracle's mean return is not positive.

    Raises:
        ValueError: the two sides' seeds differ, or a seed's oracle returns differ (not the same test episodes).
    """
    by_seed = {run['seed']: run for run in variant_runs}
    if sorted(by_seed) != sorted(run['seed'] for run in reference_runs):
        raise ValueError('paired runs need the same seeds: {} and {}'.format(
            sorted(run['seed'] for run in reference_runs), sorted(by_seed)))
    reference, variant, oracle = [], [], []
    for run in reference_runs:
        reference_policy, reference_oracle = _late_episode_means(run, from_env_steps)
        variant_policy, variant_oracle = _late_episode_means(by_seed[run['seed']], from_env_steps)
        if reference_policy is None or variant_policy is None:
            return None
        if reference_oracle.shape != variant_oracle.shape or not np.allclose(reference_oracle, variant_oracle):
            raise ValueError('seed {}: the oracle\'s returns differ, so the test episodes are not the same'.format(
                run['seed']))
        reference.extend(reference_policy)
        variant.extend(variant_policy)
        oracle.extend(reference_oracle)
    gain = fraction_of_oracle(np.asarray(variant) - np.asarray(reference), oracle, confidence, resamples, seed)
    return {'difference': gain['fraction'], 'ci_low': gain['ci_low'], 'ci_high': gain['ci_high'],
            'episodes': len(oracle)}


def time_to(curve, threshold):
    """The first point of `curve` whose fraction of the oracle is `threshold` or more, or None."""
    return next((point for point in curve if point['fraction'] is not None and point['fraction'] >= threshold), None)


def at_budget(curve, env_steps):
    """The fraction of the oracle (with its interval) of the first point of `curve` at `env_steps` or more (its
    env steps within 1 % below count: a staged run stops at whole rollouts), or None where the curve ends before."""
    point = next((point for point in curve if reached(point['env_steps'], env_steps)), None)
    return None if point is None else {key: point[key] for key in ('env_steps', 'fraction', 'ci_low', 'ci_high')}


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


def reachable_rule(runs):
    """At the last stage, seeds and episodes pooled: the fraction of the oracle that the rule within a policy's reach
    takes (`of_the_oracle`) and the policy's return as a fraction of the rule's (`policy_of_the_rule`), each as
    `fraction_of_oracle` gives it; None unless every run has the rule's returns."""
    last = min(len(run['stages']) for run in runs) - 1
    if not all(REACHABLE_RULE in run['stages'][last]['returns_pct'] for run in runs):
        return None
    rule = pooled_returns(runs, last, REACHABLE_RULE)
    return {'of_the_oracle': fraction_of_oracle(rule, pooled_returns(runs, last, 'oracle')),
            'policy_of_the_rule': fraction_of_oracle(pooled_returns(runs, last, 'policy'), rule)}


def summarize(runs, budgets=()):
    """One row per market and trainer (in run order): on the edge market the last stage's fraction of the
    oracle, the fraction at every env-step budget of `budgets` (`at_budget`), the learning curve, the env steps and
    CPU seconds of the first stage at each of `THRESHOLDS` of the oracle or more (None if none), the excess over
    buy-and-hold, the rule within reach (`reachable_rule`, None where the market has none); on the twin (where run)
    its excess over buy-and-hold and the policy's own return."""
    rows = []
    for market, trainer in dict.fromkeys((run['market'], run['trainer']) for run in runs):
        group = [run for run in runs if (run['market'], run['trainer']) == (market, trainer)]
        edge, twin = ([run for run in group if run['edge'] is flag] for flag in (True, False))
        row = {'market': market, 'trainer': trainer, 'seeds': sorted({run['seed'] for run in group})}
        if edge:
            curve = learning_curve(edge)
            row.update(fraction_of_oracle=curve[-1], learning_curve=curve,
                       at_budgets={str(budget): at_budget(curve, budget) for budget in budgets},
                       time_to=time_to_entries(curve),
                       excess_over_buy_and_hold=excess_over_buy_and_hold(edge),
                       reachable_rule=reachable_rule(edge),
                       episodes=len(pooled_returns(edge, len(curve) - 1, 'policy')))
        if twin:
            row['twin_excess_over_buy_and_hold'] = excess_over_buy_and_hold(twin)
            row['twin_policy_return'] = policy_return(twin)
        rows.append(row)
    return rows


def time_to_entries(curve):
    """{threshold: {'env_steps', 'cpu_seconds'}} of the first points of `curve` at each of `THRESHOLDS` (None
    values where not reached)."""
    return {str(threshold): {'env_steps': point and point['env_steps'], 'cpu_seconds': point and point['cpu_seconds']}
            for threshold in THRESHOLDS for point in [time_to(curve, threshold)]}


def table_reached(row):
    """'env steps / CPU s' to each of `THRESHOLDS` of a summary row, joined by '; '."""
    return '; '.join(_reached(row.get('time_to', {}).get(str(level))) for level in THRESHOLDS)


def _interval(entry, keys, form):
    mean, low, high = (entry.get(key) for key in keys)
    return '-' if mean is None else '{} [{}, {}]'.format(*(form.format(value) for value in (mean, low, high)))


def _reached(entry):
    """'env steps / CPU seconds s' of a `time_to` entry, '-' when not reached."""
    if not entry or entry['env_steps'] is None:
        return '-'
    return '{:,.0f} / {} s'.format(entry['env_steps'], '-' if entry['cpu_seconds'] is None else
                                   '{:.0f}'.format(entry['cpu_seconds']))


def table_lines(rows, budgets=()):
    """The summary as the lines of a markdown table (the one in docs/learning.md): per market and trainer the time
    to 50 % and 80 % of the oracle, the fraction at each budget and at the last stage (deterministic; sampling its
    actions), the rule within reach's fraction of the oracle and the policy's of the rule's, and the excess over
    buy-and-hold on the market and its twin."""
    keys = ('mean_pct', 'ci_low_pct', 'ci_high_pct')
    fraction_keys = ('fraction', 'ci_low', 'ci_high')
    lines = ['| market | trainer | seeds | env steps / CPU s to {} of the oracle | {}fraction at the end [95 % '
             'interval] | '
             'sampling | rule within reach: of the oracle / policy of the rule | edge: policy - B&H % | twin: '
             'policy - B&H % (zero in?) | twin: policy return % (nothing found?) |'.format(
                 ' / '.join('{:.0%}'.format(level) for level in THRESHOLDS),
                 ''.join('fraction at {:,} steps | '.format(budget) for budget in budgets)),
             '|---|---|---|---|' + '---|' * len(budgets) + '---|---|---|---|---|---|']
    for row in rows:
        fraction = _interval(row.get('fraction_of_oracle', {}), fraction_keys, '{:.2f}')
        sampled = _interval((row.get('fraction_of_oracle') or {}).get('sampled') or {}, fraction_keys, '{:.2f}')
        reached = table_reached(row)
        at = [_interval((row.get('at_budgets') or {}).get(str(budget)) or {}, fraction_keys, '{:.2f}')
              for budget in budgets]
        rule = row.get('reachable_rule')
        within_reach = '-' if not rule else ' / '.join(
            _interval(rule[part], fraction_keys, '{:.2f}') for part in ('of_the_oracle', 'policy_of_the_rule'))
        edge = _interval(row.get('excess_over_buy_and_hold', {}), keys, '{:+.2f}')
        twin_excess, twin_return = row.get('twin_excess_over_buy_and_hold'), row.get('twin_policy_return')
        twin_columns = ['-', '-']
        if twin_excess:
            twin_columns = ['{} {}'.format(_interval(twin_excess, keys, '{:+.2f}'),
                                           'yes' if twin_excess['includes_zero'] else 'no'),
                            '{} {}'.format(_interval(twin_return, keys, '{:+.3f}'),
                                           'yes' if twin_return['finds_nothing'] else 'no')]
        lines.append('| {} |'.format(' | '.join([row['market'], row['trainer'], str(len(row['seeds'])), reached] + at +
                                                 [fraction, sampled, within_reach, edge] + twin_columns)))
    return lines


def plot(rows, axis, label, path):
    """The fraction of the oracle (pooled over seeds and episodes, with its bootstrap interval shaded) against
    `axis` ('env_steps' or 'cpu_seconds') of the learning curves: one panel per market, one line per trainer, and
    the rule within reach's fraction where the market has one (that of the panel's first trainer's seeds)."""
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
        for level, style in ((0.0, '-'), (THRESHOLDS[0], ':'), (THRESHOLDS[1], '-.'), (1.0, '--')):
            ax.axhline(level, color='grey', linestyle=style, linewidth=0.8)
        rules = [row['reachable_rule']['of_the_oracle']['fraction'] for row in rows
                 if row['market'] == market and row.get('reachable_rule')]
        if rules and rules[0] is not None:
            ax.axhline(rules[0], color='black', linestyle=(0, (1, 3)), linewidth=1.2, label='rule within reach')
        ax.set_title(market)
        ax.set_xlabel(label)
        ax.set_ylabel('policy return / oracle return (test file)')
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    FigureCanvasAgg(fig).print_png(path)


def write_result(output, folder):
    """Writes a benchmark's `output` (its 'summary' the rows of `summarize`) to `folder` as known_edge.json,
    with the learning curves against env steps and CPU seconds (known_edge_steps.png, known_edge_cpu.png)."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, 'known_edge.json'), 'w') as f:
        json.dump(output, f, indent=1)
    for axis, label, name in (('env_steps', 'env steps', 'known_edge_steps.png'),
                              ('cpu_seconds', 'training CPU seconds', 'known_edge_cpu.png')):
        plot(output['summary'], axis, label, os.path.join(folder, name))
