"""Parity of `evaluate` and `trade`: a run's policy played by the evaluation on one data window, and its policy
artifact trading the same bars replayed from a file, compared decision by decision (`btgym-aac parity`)."""
import json
import os

import numpy as np

from btgym_aac.data import write_histdata_csv
from btgym_aac.deploy.journal import TradingFolder
from btgym_aac.deploy.trading import trade
from btgym_aac.evaluation.evaluator import data_files
from btgym_aac.evaluation.episodes import TEST, make_evaluation_env, play_episode, reset_options, tile_windows
from btgym_aac.evaluation.loading import load_policy, read_run_config
from btgym_aac.evaluation.report import json_ready, check_output_folder

PARITY_FILE = 'parity.json'
TOLERANCE = 1e-5
"""Largest difference of two action probabilities (or target weights) counted as equal: the artifact's ONNX graph
and the run's TensorFlow graph compute them in float32 each."""
SHOWN = 10
"""Differences listed per kind in the report (all are counted)."""


def check_parity(log_dir, artifact, data, out, window=0, backend='onnx', allow_untrusted=False):
    """Plays window `window` of `data` with the run's policy as `evaluate` does, replays the window's bars (its
    warm-up included) to the artifact in a paper `trade` run, and compares them.

    Args:
        log_dir: the run's log dir.
        artifact: its policy artifact (`btgym-aac export`).
        data: CSV path(s) of the bars; for a multi-asset run, a dict asset -> CSV path(s) (see `evaluate`).
        out: a new folder: the replayed bars (`<line>.csv`), the trade run (`trade/`) and `parity.json`.
        window: index of the window among the data's consecutive episode windows (`episodes.tile_windows`).
        backend: the artifact's backend ('onnx' or 'tf').
        allow_untrusted: see `evaluation.evaluate`.

    Returns:
        the report (also written to `<out>/parity.json`): the window, the decisions, fills and final value of each
        side, `differences` (see `compare`) and `parity` (True when there is none).

    Raises:
        ValueError: `out` exists and is not empty, or the data holds no window `window`.
    """
    check_output_folder(out)
    if os.path.isdir(out) and os.listdir(out):
        raise ValueError('parity output folder {} is not empty: give a new one'.format(out))
    record, frames = _evaluated_window(log_dir, data, window, allow_untrusted)
    os.makedirs(out, exist_ok=True)
    specs = {line: 'replay:{}:max'.format(write_histdata_csv(frame, os.path.join(out, '{}.csv'.format(line))))
             for line, frame in frames.items()}
    trade_dir = os.path.join(out, 'trade')
    result = trade(artifact, specs if len(specs) > 1 else next(iter(specs.values())), trade_dir, backend=backend,
                   close_at_end=True)
    journal = TradingFolder(trade_dir).read_journal()
    differences = compare(record, journal, result)
    report = {
        'log_dir': os.path.abspath(log_dir), 'artifact': os.path.abspath(artifact), 'backend': backend,
        'data': data_files(data), 'window_index': window,
        'window': json_ready(record.window()),
        'evaluate': {'decisions': len(record.actions), 'fills': len(record.trade_log['fills']),
                     'final_value': float(record.step_values[-1])},
        'trade': {'decisions': len(journal), 'fills': len(result['fills']),
                  'final_value': float(result['broker_value'])},
        'differences': differences,
        'parity': not any(entry['count'] for entry in differences.values()),
    }
    with open(os.path.join(out, PARITY_FILE), 'w') as f:
        json.dump(report, f, indent=2)
    return report


def _evaluated_window(log_dir, data, window, allow_untrusted):
    """(EpisodeRecord of the run's policy on window `window` of `data`, {data line: its bars with the warm-up})."""
    run_config = read_run_config(log_dir, allow_untrusted)
    env = make_evaluation_env(run_config, data)
    try:
        windows = tile_windows(env.dataset)
        if not 0 <= window < len(windows):
            raise ValueError('the data holds {} episode windows: --window must be from 0 to {}, got {}'.format(
                len(windows), len(windows) - 1, window))
        with load_policy(log_dir, env=env, allow_untrusted=allow_untrusted) as policy:
            record = play_episode(env, policy, 0, reset_options(TEST, windows[window]))
        first, last = record.window_bounds
        lines = env.dataset.data if isinstance(env.dataset.data, dict) else {'data': env.dataset}
        frames = {line: dataset.data.loc[first:last] for line, dataset in lines.items()}
    finally:
        env.close()
    return record, frames


def compare(record, journal, result):
    """The differences between an evaluated episode and a trade run of the same bars.

    Args:
        record: the evaluation's EpisodeRecord.
        journal: the trade run's journal entries (one per decision).
        result: `trade`'s result (its `fills` and `broker_value`).

    Returns:
        {kind: {'count', 'shown': the first `SHOWN` differences}} for the kinds 'decision_times', 'actions',
        'probabilities' (beyond `TOLERANCE`), 'fills' and 'final_value'.
    """
    evaluated_times = [time.isoformat() for time in record.step_times[:-1]]
    traded_times = [entry['bar_time'] for entry in journal]
    pairs = list(zip(journal, record.actions, record.probabilities or [None] * len(record.actions)))
    kinds = {
        'decision_times': _listed_differences(evaluated_times, traded_times),
        'actions': [{'decision': index, 'evaluate': json_ready(action), 'trade': entry['action']}
                    for index, (entry, action, _) in enumerate(pairs)
                    if not _same_values(json_ready(action), entry['action'])],
        'probabilities': [{'decision': index, 'largest_difference': gap}
                          for index, (entry, _, probabilities) in enumerate(pairs) if probabilities is not None
                          for gap in [_largest_gap(probabilities, entry.get('probabilities'))] if gap > TOLERANCE],
        'fills': _listed_differences(json_ready(record.trade_log['fills']), json_ready(result['fills'])),
        'final_value': [] if abs(record.step_values[-1] - result['broker_value']) <= TOLERANCE else [
            {'evaluate': float(record.step_values[-1]), 'trade': float(result['broker_value'])}],
    }
    return {kind: {'count': len(listed), 'shown': listed[:SHOWN]} for kind, listed in kinds.items()}


def _listed_differences(evaluated, traded):
    """The positions where two lists differ, with both values (a missing one is None)."""
    length = max(len(evaluated), len(traded))
    evaluated, traded = (values + [None] * (length - len(values)) for values in (evaluated, traded))
    return [{'index': index, 'evaluate': one, 'trade': other}
            for index, (one, other) in enumerate(zip(evaluated, traded)) if one != other]


def _same_values(one, other):
    """Whether two JSON-ready actions are equal (numbers within `TOLERANCE`)."""
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(_same_values(one[key], other[key]) for key in one)
    try:
        return bool(np.allclose(np.asarray(one, dtype=float), np.asarray(other, dtype=float), atol=TOLERANCE, rtol=0))
    except (TypeError, ValueError):
        return one == other


def _largest_gap(evaluated, traded):
    """Largest absolute difference of two probability (or weight) vectors; inf when the trade side has none."""
    if traded is None:
        return float('inf')
    traded = list(traded.values()) if isinstance(traded, dict) else traded
    evaluated = np.asarray(json_ready(evaluated), dtype=float).ravel()
    traded = np.asarray(traded, dtype=float).ravel()
    return float(np.max(np.abs(evaluated - traded))) if evaluated.shape == traded.shape else float('inf')
