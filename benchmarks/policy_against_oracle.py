"""Where does a trained policy fall short of the oracle? Its decisions tabulated against the oracle's signal, and
what the oracle keeps when it trades as the policy might (docs/learning.md, "A shorter discount").

A single-asset run's policy (acting deterministically) and its test file's oracle (`oracle_agent`, or
`outside_markets.oracle_maker`'s for `--outside-market NAME`) play the same `--episodes` windows (episode i seeded i).
Every decision of the policy is filed by the oracle's expected return at that bar (bins of `SIGNAL_EDGES`, log
return over the oracle's horizon) and the side of the position held before it; the table gives the share of each
action and the mean position per bin. Variants of the oracle play the same windows: turning around one order at a
time instead of closing first (`no_close`), and its position capped at 1, 2 and 4 orders (`cap_N`), each with its
fraction of the oracle's mean return per episode; the oracle's earnings come from the size it builds. On mean
reversion two more variants take the mean from the bars instead of knowing it: the mean log close of the episode's
bars so far, its warm-up included (`episode_mean`, all a policy seeing only the episode could know of it), and of
the last `POLICY_WINDOW` bars (`mean_of_256`, the longest moving average of DevStrat_4_12).

Writes `--out` (JSON) and prints the tables.

Usage:
    python benchmarks/policy_against_oracle.py --log-dir RUN --data TEST.csv [--episodes 40] [--checkpoint PATH]
                                               [--outside-market NAME] [--out policy_against_oracle.json]
"""
import argparse
import os
import platform

import numpy as np
from outside_markets import OUTSIDE_MARKETS, oracle_maker

from btgym_aac.data.markets import MeanReversionOracle
from btgym_aac.evaluation.episodes import episode_sample_type, make_evaluation_env, play_episode, reset_options
from btgym_aac.evaluation.loading import load_policy, read_run_config
from btgym_aac.evaluation.metrics import return_pct
from btgym_aac.evaluation.oracle_agent import OracleAgent, oracle_agent
from btgym_aac.paths import write_json

SIGNAL_EDGES = (-np.inf, -4e-4, -2e-4, 2e-4, 4e-4, np.inf)
"""Bins of the oracle's expected log return at a decision."""
CAPS = (1, 2, 4)
"""Position caps (in orders) of the capped oracles."""
POLICY_WINDOW = 256
"""Bars of the `mean_of_256` variant's mean."""


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--log-dir', required=True, help='log dir of a single-asset run')
    parser.add_argument('--data', required=True, help='test CSV of a known-edge market')
    parser.add_argument('--episodes', type=int, default=40)
    parser.add_argument('--checkpoint', help='a checkpoint of the run (default: its latest)')
    parser.add_argument('--outside-market', choices=sorted(OUTSIDE_MARKETS),
                        help='the data is of this market of outside_markets.py (its rule)')
    parser.add_argument('--out', default='policy_against_oracle.json')
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error('--episodes must be >= 1, got {}'.format(args.episodes))
    return args


class NoCloseOracle(OracleAgent):
    """The oracle turning around one order at a time: where it would close, one order on the signal's side."""

    def act(self, observation):
        action = super().act(observation)
        if action != self.actions['close']:
            return action
        return self.actions['buy'] if self.expected_now() > 0 else self.actions['sell']


class CappedOracle(OracleAgent):
    """The oracle holding at most `cap` orders of `order_size` units."""

    def __init__(self, oracle, bars, action_names, cap, order_size):
        super().__init__(oracle, bars, action_names)
        self.limit, self.size = cap * order_size, 0.0

    def observe_info(self, info):
        super().observe_info(info)
        self.size = info['position']

    def act(self, observation):
        action = super().act(observation)
        adding = action in (self.actions['buy'], self.actions['sell']) and self.side != 0
        return self.actions['hold'] if adding and abs(self.size) >= self.limit else action


class EstimatedMeanOracle(OracleAgent):
    """Mean reversion's oracle with the mean estimated from the bars: the mean log close of the last `window` bars,
    or with `window=None` of the episode's bars up to now (its warm-up included), in place of the true log(base).

    Args:
        oracle, bars, action_names: as `OracleAgent`'s (`oracle` a `MeanReversionOracle`).
        env: the env played (its `episode_window`).
        window: bars of the mean, or None.
    """

    def __init__(self, oracle, bars, action_names, env, window=None):
        super().__init__(oracle, bars, action_names)
        self.env, self.window = env, window
        self.log_closes = np.log(bars['close'].to_numpy(dtype=np.float64))

    def expected_now(self):
        now = self.now()
        first = self.times.searchsorted(self.env.episode_window[0]) if self.window is None else now + 1 - self.window
        return (self.log_closes[max(first, 0):now + 1].mean() - self.log_closes[now]) * self.oracle.pull


class DecisionRecorder:
    """Plays `policy` and files every decision with the oracle's signal and the position held before it."""

    def __init__(self, policy, clock):
        self.policy, self.clock, self.rows, self.position = policy, clock, [], 0.0

    def reset(self, observation=None):
        self.policy.reset(observation)
        self.clock.reset(observation)

    def observe_info(self, info):
        self.clock.observe_info(info)
        self.position = info['position']

    def act(self, observation):
        action = self.policy.act(observation)
        self.rows.append((self.clock.expected_now(), self.position, int(action)))
        return action

    def observe(self, reward):
        self.policy.observe(reward)


def decision_table(rows, action_names):
    """[{signal bin (None: unbounded), position side, decisions, share of each action, mean position}] of the filed
    decisions."""
    signals, positions, actions = (np.array(column, dtype=np.float64) for column in zip(*rows))
    table = []
    for low, high in zip(SIGNAL_EDGES[:-1], SIGNAL_EDGES[1:]):
        for side, name in ((-1, 'short'), (0, 'flat'), (1, 'long')):
            chosen = (signals > low) & (signals <= high) & (np.sign(positions) == side)
            if not chosen.any():
                continue
            shares = np.bincount(actions[chosen].astype(int), minlength=len(action_names)) / chosen.sum()
            bounds = [float(edge) if np.isfinite(edge) else None for edge in (low, high)]
            table.append({'signal': bounds, 'position': name, 'decisions': int(chosen.sum()),
                          'actions': dict(zip(action_names, shares.round(3).tolist())),
                          'mean_position': float(positions[chosen].mean())})
    return table


def mean_return(env, agent, episodes, options):
    """Mean return per episode (%) of `agent` over episodes seeded 0 .. episodes - 1."""
    records = [play_episode(env, agent, seed, options) for seed in range(episodes)]
    return float(np.mean([return_pct(record.bar_values[0], record.bar_values[-1]) for record in records]))


def main(argv=None):
    args = parse_args(argv)
    env = make_evaluation_env(read_run_config(args.log_dir), args.data)
    try:
        oracle = oracle_maker(args.outside_market)(env) if args.outside_market else oracle_agent(env)
        if oracle is None:
            raise SystemExit('{}: no oracle for this run on it (it needs a run of discrete orders and a file of a '
                             'known-edge market, or --outside-market NAME)'.format(args.data))
        options = reset_options(episode_sample_type(env))
        bars, names = env.dataset.data, env.portfolio_actions
        order_size = float(env.strategy_params['order_size'])
        agents = {'oracle': oracle, 'no_close': NoCloseOracle(oracle.oracle, bars, names)}
        agents.update({'cap_{}'.format(cap): CappedOracle(oracle.oracle, bars, names, cap, order_size)
                       for cap in CAPS})
        if isinstance(oracle.oracle, MeanReversionOracle):
            agents['episode_mean'] = EstimatedMeanOracle(oracle.oracle, bars, names, env)
            agents['mean_of_{}'.format(POLICY_WINDOW)] = EstimatedMeanOracle(oracle.oracle, bars, names, env,
                                                                             POLICY_WINDOW)
        returns = {name: mean_return(env, agent, args.episodes, options) for name, agent in agents.items()}
        with load_policy(args.log_dir, checkpoint=args.checkpoint, env=env) as policy:
            recorder = DecisionRecorder(policy, OracleAgent(oracle.oracle, bars, names))
            returns['policy'] = mean_return(env, recorder, args.episodes, options)
    finally:
        env.close()
    fractions = {name: value / returns['oracle'] if returns['oracle'] > 0 else None for name, value in returns.items()}
    result = {'benchmark': 'policy_against_oracle', 'log_dir': os.path.abspath(args.log_dir), 'data': args.data,
              'episodes': args.episodes, 'mean_return_pct': returns, 'fraction_of_oracle': fractions,
              'decisions': decision_table(recorder.rows, list(names)), 'machine': platform.node()}
    write_json(result, args.out)
    for name, value in returns.items():
        print('{:10s} {:+.3f} % per episode, {} of the oracle'.format(
            name, value, 'n/a' if fractions[name] is None else '{:.2f}'.format(fractions[name])))
    for row in result['decisions']:
        print('signal {:>16s} {:5s} {:4d} decisions  {}  mean position {:+.0f}'.format(
            str(row['signal']), row['position'], row['decisions'], row['actions'], row['mean_position']))


if __name__ == '__main__':
    main()
