"""A month of bars traded in two halves into one folder, against one run over the whole month: does the second half
continue the first bar for bar?

Replays the first half of the data file (its bars up to the middle of its time span) into a `trade` folder, then the
second half into the same folder, and the whole file into another folder; compares the bars traded, the decisions
(times, actions, probabilities, orders, positions, cash and value after each), every fill and the final value.
Writes `trade_continuation.json` to `--out`.

The artifact is `--artifact`, or an untrained reference run exported into a temporary folder, its strategy's
drawdown and target calls at 50 % so that the month is traded to its end (what is compared is the continuation, not
the policy's skill; with the reference's 10 % the untrained policy's drawdown call ends January 2017's first half).

Usage:
    python benchmarks/trade_continuation.py --data ../shared/data/DAT_ASCII_EURUSD_M1_201701.csv
                                            [--artifact DIR] [--out benchmarks/results]
"""
import argparse
import json
import os
import sys
import tempfile
import time

from btgym_aac.data import write_histdata_csv
from btgym_aac.data.parsing import read_ohlcv
from btgym_aac.deploy.journal import TradingFolder
from btgym_aac.deploy.trading import trade

TIMING = ('received_at', 'latency_ms', 'fills')


def untrained_artifact(folder):
    """An untrained reference run (drawdown and target calls at 50 %) saved and exported under `folder` (with the
    tests' `saved_runs`)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'tests'))
    from saved_runs import reference_configs, write_saved_run

    from btgym_aac.cli import main as cli_main

    configs = reference_configs()
    configs['env_config']['kwargs'].update(drawdown_call=50, target_call=50)
    log_dir = write_saved_run(os.path.join(folder, 'run'), configs['env_config'], configs['policy_config'],
                              configs['trainer_config'], step=100)
    artifact = os.path.join(folder, 'artifact')
    if cli_main(['export', log_dir, artifact]) != 0:
        raise RuntimeError('export of the untrained reference run failed')
    return artifact


def decisions(folder):
    """The journal's decisions without their arrival times and fills (compared on their own)."""
    return [{key: value for key, value in entry.items() if key not in TIMING}
            for entry in TradingFolder(folder).read_journal()]


def fills(folder):
    """Every fill of the journal, decisions and end records alike, in order."""
    return [fill for entry in TradingFolder(folder).read_lines() for fill in entry.get('fills', ())]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--data', required=True, help='a CSV file of bars (a month)')
    parser.add_argument('--artifact', help='a policy artifact (default: an untrained reference run, exported)')
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args()
    bars = read_ohlcv(args.data)
    middle = bars.index[0] + (bars.index[-1] - bars.index[0]) / 2
    with tempfile.TemporaryDirectory(prefix='trade_continuation_') as work:
        artifact = args.artifact or untrained_artifact(os.path.join(work, 'reference'))
        halves = [write_histdata_csv(part, os.path.join(work, name)) for part, name in (
            (bars[bars.index <= middle], 'first.csv'), (bars[bars.index > middle], 'second.csv'))]
        whole = write_histdata_csv(bars, os.path.join(work, 'whole.csv'))
        start = time.time()
        straight = trade(artifact, 'replay:{}:max'.format(whole), os.path.join(work, 'straight'))
        parts = [trade(artifact, 'replay:{}:max'.format(half), os.path.join(work, 'halves')) for half in halves]
        seconds = time.time() - start
        result = {
            'benchmark': 'trade_continuation', 'data': os.path.abspath(args.data), 'bars': len(bars),
            'halves': [{'bars': part['bars'], 'decisions': part['decisions'], 'journaled': part['journaled'],
                        'skipped': part['skipped'], 'gap': part['gap'] and [str(time) for time in part['gap']],
                        'ended': part['ended'], 'exit_code': part['exit_code']} for part in parts],
            'whole': {'bars': straight['bars'], 'decisions': straight['decisions'],
                      'fills': len(straight['fills']), 'final_value': straight['broker_value']},
            'halves_final_value': parts[-1]['broker_value'],
            'same_decisions': decisions(os.path.join(work, 'halves')) == decisions(os.path.join(work, 'straight')),
            'same_fills': fills(os.path.join(work, 'halves')) == fills(os.path.join(work, 'straight')),
            'seconds': seconds,
        }
    result['every_bar_traded'] = sum(part['bars'] for part in result['halves']) == len(bars) == straight['bars']
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, 'trade_continuation.json')
    with open(path, 'w') as f:
        json.dump(result, f, indent=1)
    print(json.dumps({key: result[key] for key in ('bars', 'halves', 'whole', 'halves_final_value', 'same_decisions',
                                                  'same_fills', 'every_bar_traded')}, indent=1))
    print('written: {}'.format(path))


if __name__ == '__main__':
    main()
