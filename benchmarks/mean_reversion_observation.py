"""How much of the mean-reversion oracle's edge is in what the reference observation shows? (docs/learning.md, "One
hundred test episodes")

The oracle of `make_mean_reversion_data` knows the process's mean, log(base). DevStrat_4_11's observation holds
differences of the close's SMAs of 16 to 256 bars, no price level, and an 8-hour episode shows at most its warm-up
bars before the first decision. On `--bars` bars of the market this script measures, in numpy, the mean net log
return per bar (commission per side, a decision every `--horizon` bars: the oracle's own P&L, `oracle_log_returns`)
of:

- the oracle;
- the oracle's rule with the mean replaced by the log of the SMA of the last N closes (N = 64, 128, 256);
- the same rule on the least-squares forecast of the next `--horizon` bars' log return from the four differences
  of adjacent log SMAs (16, 32, 64, 128, 256) and the log close against its SMA(16), fitted on the same bars (in
  sample: an upper bound for a linear reading of those features);

each also as a fraction of the oracle's. Writes `--out` (JSON).

Usage:
    python benchmarks/mean_reversion_observation.py [--bars 400000] [--seed 5] [--commission 1e-4] [--horizon 10]
                                                    [--out benchmarks/results/mean_reversion_observation.json]
"""
import argparse
import json
import os

import numpy as np
import pandas as pd

from btgym_aac.data.markets import make_mean_reversion_data, mean_reversion
from btgym_aac.data.markets.frames import held_sides
from btgym_aac.data.markets.oracles import oracle_for, oracle_log_returns
from btgym_aac.data.markets.spec import MarketSpec

SMA_PERIODS = (16, 32, 64, 128, 256)
"""DevStrat_4_11's SMA periods."""
MEAN_WINDOWS = (64, 128, 256)
WARMUP_BARS = 2 * SMA_PERIODS[-1]
"""Bars left out of every mean return (before every SMA exists)."""


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--bars', type=int, default=400000)
    parser.add_argument('--seed', type=int, default=5)
    parser.add_argument('--commission', type=float, default=1e-4)
    parser.add_argument('--horizon', type=int, default=10)
    parser.add_argument('--out', default='benchmarks/results/mean_reversion_observation.json')
    args = parser.parse_args()
    if args.bars <= 10 * WARMUP_BARS:
        parser.error('--bars must be over {}'.format(10 * WARMUP_BARS))
    return args


def log_smas(closes, periods):
    """{period: log of the SMA of `closes` over `period` bars} (NaN before the first full window)."""
    series = pd.Series(closes)
    return {period: np.log(series.rolling(period).mean().to_numpy()) for period in periods}


def linear_forecast(log_closes, smas, horizon):
    """The least-squares forecast of the next `horizon` bars' log return from the SMA differences and the close
    against its SMA(16), fitted on every bar with a full window and a future (in sample); 0 elsewhere."""
    features = [smas[short] - smas[long] for short, long in zip(SMA_PERIODS, SMA_PERIODS[1:])]
    design = np.column_stack([np.ones(len(log_closes))] + features + [log_closes - smas[SMA_PERIODS[0]]])
    future = np.full(len(log_closes), np.nan)
    future[:-horizon] = log_closes[horizon:] - log_closes[:-horizon]
    fitted = np.all(np.isfinite(design), axis=1) & np.isfinite(future)
    coefficients, *_ = np.linalg.lstsq(design[fitted], future[fitted], rcond=None)
    return np.where(np.all(np.isfinite(design), axis=1), np.nan_to_num(design) @ coefficients, 0.0)


def main():
    args = parse_args()
    frame = make_mean_reversion_data(num_bars=args.bars, seed=args.seed)
    spec = MarketSpec.from_frame(frame)
    closes = frame['close'].to_numpy(dtype=np.float64)
    log_closes = np.log(closes)
    threshold = 2.0 * args.commission

    def mean_net_return(positions):
        return float(oracle_log_returns(frame, positions, args.commission)[WARMUP_BARS:].mean())

    oracle = mean_net_return(oracle_for(spec, args.commission, args.horizon).positions(frame))
    pull = 1.0 - mean_reversion.reversion_per_bar(spec.params['half_life']) ** args.horizon
    smas = log_smas(closes, sorted(set(SMA_PERIODS + MEAN_WINDOWS)))
    rules = {'oracle': oracle}
    for window in MEAN_WINDOWS:
        expected = np.nan_to_num((smas[window] - log_closes) * pull)
        rules['mean from SMA({})'.format(window)] = mean_net_return(held_sides(expected, args.horizon, threshold))
    forecast = linear_forecast(log_closes, smas, args.horizon)
    rules['linear forecast from the observation features'] = mean_net_return(
        held_sides(forecast, args.horizon, threshold))
    result = {'benchmark': 'mean_reversion_observation', 'settings': vars(args), 'market': frame.attrs['market'],
              'mean_net_log_return_per_bar': rules,
              'fraction_of_oracle': {name: value / oracle for name, value in rules.items()}}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(result, f, indent=1, default=str)
    for name, value in rules.items():
        print('{:48s} {:+.3e} per bar, {:.2f} of the oracle'.format(name, value, value / oracle))
    print('written: ' + args.out)


if __name__ == '__main__':
    main()
