"""`btgym-aac parity`: evaluate and a replayed trade of a policy artifact on the same bars, compared decision by
decision."""
import json
from datetime import datetime

import pytest

from btgym_aac.cli import main as cli_main
from btgym_aac.data import make_sine_data, write_histdata_csv
from btgym_aac.deploy.parity import compare
from btgym_aac.evaluation.episodes import EpisodeRecord

pytestmark = pytest.mark.xdist_group('deploy')  # one xdist worker builds the reference artifact (conftest)


@pytest.fixture(scope='module')
def bars_file(tmp_path_factory):
    """A day of sine bars from a Monday: three windows of the saved reference run's 8-hour episodes."""
    path = str(tmp_path_factory.mktemp('parity') / 'bars.csv')
    return write_histdata_csv(make_sine_data(num_bars=1440, noise=2e-5, seed=5, start='2018-03-05'), path)


def test_an_artifact_trades_as_its_run_is_evaluated(reference_artifact, bars_file, tmp_path, capsys):
    log_dir, artifact = reference_artifact
    out = tmp_path / 'parity'
    assert cli_main(['parity', log_dir, artifact, '--data', bars_file, '--out', str(out)]) == 0
    printed = capsys.readouterr().out
    assert 'parity: yes' in printed
    with open(out / 'parity.json') as f:
        report = json.load(f)
    assert report['parity'] and all(entry['count'] == 0 for entry in report['differences'].values())
    assert report['evaluate'] == report['trade'] and report['trade']['decisions'] > 10 and report['trade']['fills']
    assert report['window']['window_first_bar_time'] == '2018-03-05T00:00:00'
    assert (out / 'trade' / 'journal.jsonl').is_file() and (out / 'data.csv').is_file()
    assert cli_main(['parity', log_dir, artifact, '--data', bars_file, '--out', str(out)]) == 2  # not a new folder
    assert 'is not empty' in capsys.readouterr().err
    assert cli_main(['parity', log_dir, artifact, '--data', bars_file, '--out', str(tmp_path / 'far'),
                     '--window', '3']) == 2
    assert 'the data holds 3 episode windows: --window must be from 0 to 2, got 3' in capsys.readouterr().err


def test_every_kind_of_difference_is_counted_and_shown():
    times = ['2018-03-05T00:{:02d}:00'.format(minute) for minute in range(4)]
    record = EpisodeRecord(seed=0, bar_times=[], bar_values=[], step_times=[datetime.fromisoformat(t) for t in times],
                           step_values=[100.0, 100.0, 101.0, 102.0], actions=[1, 0, 3], rewards=[0, 0, 0],
                           probabilities=[[0.1, 0.7, 0.1, 0.1]] * 3,
                           trade_log={'fills': [{'time': times[1], 'side': 'buy', 'size': 1.0, 'price': 1.1}]})
    journal = [{'bar_time': times[0], 'action': 1, 'probabilities': {'hold': 0.1, 'buy': 0.7, 'sell': 0.1,
                                                                      'close': 0.1}},
               {'bar_time': times[1], 'action': 2, 'probabilities': {'hold': 0.1, 'buy': 0.6, 'sell': 0.2,
                                                                      'close': 0.1}},
               {'bar_time': '2018-03-05T00:09:00', 'action': 3, 'probabilities': {'hold': 0.1, 'buy': 0.7,
                                                                                   'sell': 0.1, 'close': 0.1}}]
    same = compare(record, journal[:1] + [dict(journal[1], action=0, probabilities=journal[0]['probabilities']),
                                         dict(journal[2], bar_time=times[2])],
                   {'fills': record.trade_log['fills'], 'broker_value': 102.0})
    assert all(entry['count'] == 0 for entry in same.values())
    differences = compare(record, journal, {'fills': [], 'broker_value': 101.5})
    assert {kind: entry['count'] for kind, entry in differences.items()} == {
        'decision_times': 1, 'actions': 1, 'probabilities': 1, 'fills': 1, 'final_value': 1}
    assert differences['actions']['shown'] == [{'decision': 1, 'evaluate': 0, 'trade': 2}]
    assert differences['probabilities']['shown'][0]['largest_difference'] == pytest.approx(0.1)
    assert differences['decision_times']['shown'] == [
        {'index': 2, 'evaluate': times[2], 'trade': '2018-03-05T00:09:00'}]
    assert differences['final_value']['shown'] == [{'evaluate': 102.0, 'trade': 101.5}]
