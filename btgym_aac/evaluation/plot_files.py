"""The plot files of an evaluation: which PNG files `evaluate` writes for each episode, and what they show."""
import os
import re

from btgym_aac.evaluation.asset_plots import plot_asset, plot_asset_action_probabilities, plot_weights
from btgym_aac.evaluation.plots import plot_action_probabilities, plot_equity

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
