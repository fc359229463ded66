"""Speed of the data layer on a large file: parsing a HistData CSV and sampling episodes from the parsed frame.

Writes a random-walk series of `--rows` one-minute bars as a HistData `;` file, then times `read_ohlcv` on it
(`--repeats` times) and the draw of one train or test episode (a trial sampled, reset and an episode sampled from
it, alternating the two sample types, `--episodes` draws). Reports the median and the spread of each, and the rows
parsed per second. Writes `data_speed.json` to --out.

Usage: python benchmarks/data_speed.py [--rows 90000] [--repeats 5] [--episodes 50] [--out DIR]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from btgym_aac import BTgymDataset
from btgym_aac.data.parsing import read_ohlcv
from btgym_aac.data.synthetic import make_random_walk_data, write_histdata_csv


def time_parsing(path, repeats):
    """Seconds of each `read_ohlcv(path)` call."""
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        read_ohlcv(path)
        seconds.append(time.perf_counter() - started)
    return seconds


def time_sampling(frame, episodes):
    """Seconds of each episode draw, train and test draws in turn."""
    dataset = BTgymDataset(dataframe=frame, target_period={'days': 5})
    dataset.reset()
    seconds = []
    for draw in range(episodes):
        sample_type = draw % 2
        started = time.perf_counter()
        trial = dataset.sample(sample_type=sample_type)
        trial.reset()
        trial.sample(sample_type=sample_type)
        seconds.append(time.perf_counter() - started)
    return seconds


def summary(seconds):
    return {'median_s': statistics.median(seconds), 'min_s': min(seconds), 'max_s': max(seconds),
            'count': len(seconds)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rows', type=int, default=90000)
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--episodes', type=int, default=50)
    parser.add_argument('--out', default='benchmarks/results')
    args = parser.parse_args(argv)
    if args.rows < 10000 or args.repeats < 1 or args.episodes < 2:
        parser.error('--rows must be at least 10000 (five days of bars), --repeats at least 1, --episodes at least 2')
    frame = make_random_walk_data(num_bars=args.rows, freq='1min', start='2017-01-02 00:00', seed=0)
    with tempfile.TemporaryDirectory() as folder:
        path = write_histdata_csv(frame, os.path.join(folder, 'bars.csv'))
        parsing = summary(time_parsing(str(path), args.repeats))
    parsing['rows_per_s'] = args.rows / parsing['median_s']
    result = {'rows': args.rows, 'parsing': parsing, 'episode_draw': summary(time_sampling(frame, args.episodes)),
              'load_average': os.getloadavg()}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'data_speed.json'), 'w') as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == '__main__':
    sys.exit(main())
