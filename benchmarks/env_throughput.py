"""Agent steps per second of BTgymEnv against a lean backtrader loop and a bare backtrader run of the same
episodes, and the cost of rendering as shipped.

All runs use DevStrat_4_11's kind of work (skip_frame 10) on the built-in sine data, random actions, and the same
episode windows. The env runs twice: with rendering off (`render_enabled=False`), and with rendering as shipped:
rendering enabled and episodes recorded as a trainer's runner records them (`record_episode` true for every
`--render-freq`-th episode, the episodes it draws; no picture is drawn here). Two plain backtrader runs:

- lean: `LeanStrategy`, written apart from the package's strategies, does the per-bar work an observation needs
  and nothing else (five SMAs, ten broker numbers every bar, the gradients and tanh every 10th bar, a random
  hold/buy/sell/close order every 10th bar; same cash, commission, leverage and order size);
- bare: the package's strategy in a Cerebro per episode, actions picked in-line by the engine's step analyzer,
  without the environment or gymnasium layer.

Ratios (medians over rounds that rotate which run goes first): env / lean, with rendering off and as shipped
(target >= 0.85: the env's overhead over the work itself), env / bare (its layer over the strategy) and shipped /
off (the cost of rendering).

Usage:
    python benchmarks/env_throughput.py [--episodes 20] [--render-freq 10] [--rounds 6] [--out benchmarks/results]
"""
import argparse
import json
import os
import platform
import time

import backtrader as bt
import numpy as np

from btgym_aac.data import BTgymDataset, make_sine_data
from btgym_aac.env import BTgymEnv
from btgym_aac.env.engine import STOP, prepare_cerebro, run_episode
from btgym_aac.strategy import DevStrat_4_11

EPISODE_DURATION = {'days': 1, 'hours': 23, 'minutes': 40}
ENGINE = dict(start_cash=100.0, broker_commission=0.001, fixed_stake=10)


def _dataset(seed):
    dataset = BTgymDataset(dataframe=make_sine_data(num_bars=30000), episode_duration=EPISODE_DURATION)
    dataset.seed(seed)
    return dataset


def run_env(num_episodes, seed, render_freq=None):
    """Steps BTgymEnv with random actions; every observation (reset's included) counts as an agent step.

    Args:
        num_episodes: episodes to run.
        seed: seed of the episode windows and actions.
        render_freq: None: rendering off; else rendering enabled and every `render_freq`-th episode recorded.

    Returns:
        (agent steps, seconds, list of episode first rows).
    """
    env = BTgymEnv(dataset=_dataset(seed), strategy=DevStrat_4_11, skip_frame=10,
                   render_enabled=render_freq is not None, **ENGINE)
    env.action_space.seed(seed)
    steps, starts = 0, []
    start = time.perf_counter()
    for episode in range(num_episodes):
        if render_freq is not None:
            env.record_episode = episode % render_freq == 0
        observation, _ = env.reset()
        starts.append(int(observation['metadata']['first_row']))
        steps += 1
        terminated = False
        while not terminated:
            _, _, terminated, _, _ = env.step(env.action_space.sample())
            steps += 1
    seconds = time.perf_counter() - start
    env.close()
    return steps, seconds, starts


def _bare_cerebro():
    cerebro = bt.Cerebro()
    cerebro.addstrategy(DevStrat_4_11, skip_frame=10,
                        initial_action={'default_asset': 0},
                        initial_portfolio_action={'default_asset': 'hold'})
    cerebro.broker.setcash(ENGINE['start_cash'])
    cerebro.broker.setcommission(commission=ENGINE['broker_commission'])
    cerebro.addsizer(bt.sizers.SizerFix, stake=ENGINE['fixed_stake'])
    return cerebro


def _episodes(num_episodes, seed):
    """The episodes the env samples with this seed (dataset objects with `data` and `to_btfeed()`)."""
    dataset = _dataset(seed)
    dataset.reset()
    episodes = []
    for _ in range(num_episodes):
        trial = dataset.sample()
        trial.reset()
        episodes.append(trial.sample())
    return episodes


def run_bare(num_episodes, seed):
    """Runs the same episode windows in plain backtrader with in-line random actions.

    Returns:
        (agent steps, seconds).
    """
    episodes = _episodes(num_episodes, seed)
    rng = np.random.default_rng(seed)
    actions = DevStrat_4_11.portfolio_actions
    steps = [0]

    def decide(response):
        if response is not None:
            steps[0] += 1
            if response.done:
                return STOP
        return {'default_asset': actions[rng.integers(len(actions))]}

    start = time.perf_counter()
    for episode in episodes:
        feeds = episode.to_btfeed()
        for feed in feeds.values():
            feed.numrecords = len(episode.data)
        cerebro = prepare_cerebro(_bare_cerebro(), feeds, {'metadata': episode.metadata}, decide)
        run_episode(cerebro)
    seconds = time.perf_counter() - start
    return steps[0], seconds


LEAN_SMA_PERIODS = (16, 32, 64, 128, 256)
LEAN_WINDOW = 30
LEAN_STAT_WINDOW = 20
LEAN_STATISTICS = 10


class LeanStrategy(bt.Strategy):
    """The per-bar work an observation needs and nothing else, written apart from the package's strategies.

    Every bar: ten broker numbers written into a preallocated array (value, cash, exposure, drawdown, position
    sign, bars in position, realized and unrealized pnl, their running min and max). Every `skip` bars after the
    warm-up: a [30, 5] window of five SMAs of the close, its gradient across the SMAs squashed by tanh, the
    gradient of the last 20 rows of the statistics squashed likewise, and a random hold/buy/sell/close market
    order of `stake` units.
    """
    params = dict(skip=10, stake=10, seed=0)

    def __init__(self):
        self.averages = [bt.indicators.SimpleMovingAverage(self.data.close, period=period)
                         for period in LEAN_SMA_PERIODS]
        self.scale = np.linspace(3e3, 1e3, len(LEAN_SMA_PERIODS))
        self.statistics = np.zeros((self.data.buflen() + 1, LEAN_STATISTICS))
        self.rng = np.random.default_rng(self.p.seed)
        self.bar = 0
        self.peak = self.entry_value = self.broker.startingcash
        self.low = self.high = 0.0
        self.bars_in_position = 0
        self.realized = 0.0
        self.decisions = 0

    def notify_trade(self, trade):
        if trade.isclosed:
            self.realized += trade.pnlcomm

    def _record_statistics(self):
        broker = self.broker
        value, cash, size = broker.getvalue(), broker.getcash(), self.position.size
        self.peak = max(self.peak, value)
        if size:
            self.bars_in_position += 1
        else:
            self.bars_in_position = 0
            self.entry_value = value
        unrealized = value - self.entry_value
        self.low, self.high = min(self.low, unrealized), max(self.high, unrealized)
        self.statistics[self.bar] = (value, cash, size / 100.0, (self.peak - value) / self.peak, np.sign(size),
                                     self.bars_in_position, self.realized, unrealized, self.low, self.high)
        self.realized = 0.0
        self.bar += 1

    def prenext(self):
        self._record_statistics()

    def next(self):
        self._record_statistics()
        if self.bar % self.p.skip:
            return
        window = np.stack([np.asarray(sma.get(size=LEAN_WINDOW)) for sma in self.averages], axis=-1)
        np.tanh(np.gradient(window, axis=-1) * self.scale)
        np.tanh(np.gradient(self.statistics[self.bar - LEAN_STAT_WINDOW:self.bar], axis=-1))
        self.decisions += 1
        choice = self.rng.integers(4)
        if choice == 1:
            self.buy(size=self.p.stake)
        elif choice == 2:
            self.sell(size=self.p.stake)
        elif choice == 3 and self.position.size:
            self.close()


def run_lean(num_episodes, seed):
    """Runs the same episode windows through `LeanStrategy` in plain backtrader: same cash, commission, leverage
    and order size as the env, one agent step per decision.

    Returns:
        (agent steps, seconds).
    """
    frames = [episode.data for episode in _episodes(num_episodes, seed)]
    steps = 0
    start = time.perf_counter()
    for frame in frames:
        cerebro = bt.Cerebro(stdstats=False)
        cerebro.adddata(bt.feeds.PandasDirectData(dataname=frame, timeframe=bt.TimeFrame.Minutes, datetime=0,
                                                  open=1, high=2, low=3, close=4, volume=5, openinterest=-1))
        cerebro.addstrategy(LeanStrategy, seed=seed)
        cerebro.broker.setcash(ENGINE['start_cash'])
        cerebro.broker.setcommission(commission=ENGINE['broker_commission'], leverage=1.0)
        strategy = cerebro.run(preload=True, runonce=True)[0]
        steps += strategy.decisions
    return steps, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--episodes', type=int, default=20,
                        help='episodes per run; a multiple of --render-freq records the share a trainer does')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--render-freq', type=int, default=10,
                        help='episodes between recorded ones in the rendering-as-shipped run (env_render_freq)')
    parser.add_argument('--rounds', type=int, default=6,
                        help='rounds of one run of each kind, rotating which goes first')
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()

    runs = {
        'env': lambda: run_env(args.episodes, args.seed)[:2],
        'env_rendering_as_shipped': lambda: run_env(args.episodes, args.seed, args.render_freq)[:2],
        'bare': lambda: run_bare(args.episodes, args.seed),
        'lean': lambda: run_lean(args.episodes, args.seed),
    }
    names = list(runs)
    rates, steps = {name: [] for name in names}, {}
    for round_number in range(args.rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            steps[name], seconds = runs[name]()
            rates[name].append(steps[name] / seconds)
    bare_ratios = [env / bare for env, bare in zip(rates['env'], rates['bare'])]
    lean_ratios = [env / lean for env, lean in zip(rates['env'], rates['lean'])]
    shipped_lean_ratios = [env / lean for env, lean in zip(rates['env_rendering_as_shipped'], rates['lean'])]
    render_ratios = [shipped / off for shipped, off in zip(rates['env_rendering_as_shipped'], rates['env'])]
    result = {
        'benchmark': 'env_throughput',
        'strategy': 'DevStrat_4_11',
        'skip_frame': 10,
        'data': 'make_sine_data(num_bars=30000)',
        'episode_duration': EPISODE_DURATION,
        'episodes_per_round': args.episodes,
        'rounds': args.rounds,
        'render_freq': args.render_freq,
        'env_agent_steps_per_round': steps['env'],
        'bare_agent_steps_per_round': steps['bare'],
        'lean_agent_steps_per_round': steps['lean'],
        'env_steps_per_s': float(np.median(rates['env'])),
        'env_rendering_as_shipped_steps_per_s': float(np.median(rates['env_rendering_as_shipped'])),
        'bare_steps_per_s': float(np.median(rates['bare'])),
        'lean_steps_per_s': float(np.median(rates['lean'])),
        'ratio_env_to_lean': float(np.median(lean_ratios)),
        'ratio_rendering_as_shipped_to_lean': float(np.median(shipped_lean_ratios)),
        'ratio_env_to_bare': float(np.median(bare_ratios)),
        'ratio_rendering_as_shipped_to_off': float(np.median(render_ratios)),
        'ratio_all_rounds': bare_ratios,
        'ratio_lean_all_rounds': lean_ratios,
        'ratio_rendering_as_shipped_to_lean_all_rounds': shipped_lean_ratios,
        'ratio_rendering_all_rounds': render_ratios,
        'steps_per_s_all_rounds': rates,
        'target_ratio': 0.8,
        'target_ratio_to_lean': 0.85,
        'target_ratio_rendering': 0.9,
        'machine': {'python': platform.python_version(), 'processor': platform.processor() or platform.machine(),
                    'cpus': os.cpu_count()},
    }
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, 'env_throughput.json')
    with open(path, 'w') as f:
        json.dump(result, f, indent=2)
    print('{:<36}{:>12}'.format('run', 'steps/s'))
    print('{:<36}{:>12.1f}'.format('BTgymEnv, rendering off', result['env_steps_per_s']))
    print('{:<36}{:>12.1f}'.format('BTgymEnv, rendering as shipped', result['env_rendering_as_shipped_steps_per_s']))
    print('{:<36}{:>12.1f}'.format('bare backtrader', result['bare_steps_per_s']))
    print('{:<36}{:>12.1f}'.format('lean backtrader loop', result['lean_steps_per_s']))
    print('{:<36}{:>12.3f}'.format('ratio env / lean (target >= 0.85)', result['ratio_env_to_lean']))
    print('{:<36}{:>12.3f}'.format('ratio shipped / lean', result['ratio_rendering_as_shipped_to_lean']))
    print('{:<36}{:>12.3f}'.format('ratio env / bare (target >= 0.8)', result['ratio_env_to_bare']))
    print('{:<36}{:>12.3f}'.format('ratio shipped / off (target >= 0.9)', result['ratio_rendering_as_shipped_to_off']))
    print('written: {}'.format(path))


if __name__ == '__main__':
    main()
