"""`btgym-aac trade` left running: a run killed at any moment (SIGKILL, mid-write) and started again takes the
decisions of an uninterrupted one; a folder continued with the next file of bars trades every new bar, skipping by
time those it processed; the journal holds every fill and the end of every run; the policy's recurrent state is
reset as training episodes reset it; each kind of stop has its exit status."""
import os
import random
import subprocess
import sys
import time
from datetime import datetime

import numpy as np
import pytest
from test_deploy_trade import (BUY, SilentAfter, end_records, evaluated_episode, price_path, read_journal,
                               read_lines, read_state, scripted, without_timing)

from btgym_aac.data import write_histdata_csv
from btgym_aac.data.parsing import read_ohlcv
from btgym_aac.deploy import trading
from btgym_aac.deploy.manifest import read_manifest
from btgym_aac.deploy.runtime import load_artifact
from btgym_aac.deploy.trader import STOPS, ResumeError, episode_decisions
from btgym_aac.deploy.trading import state_reset_rule, trade

pytestmark = pytest.mark.xdist_group('deploy')  # one xdist worker builds the reference artifact (conftest)

SINE_REPLAY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'examples', 'data',
                           'sine_replay.csv')
HALF = 720


@pytest.fixture(scope='module')
def sine_day():
    """The 1,440 minute bars of the README's replay file (the reference artifact trades them)."""
    return read_ohlcv(SINE_REPLAY)


def replay(frame, path):
    write_histdata_csv(frame, str(path))
    return 'replay:{}:max'.format(path)


def decisions_without_fills(folder):
    return [{key: value for key, value in entry.items() if key != 'fills'}
            for entry in without_timing(read_journal(folder))]


def journaled_fills(folder):
    """Every fill of the journal's lines (decisions and ends), in order."""
    return [fill for entry in read_lines(folder) for fill in entry.get('fills', ())]


@pytest.fixture(scope='module')
def straight_run(reference_artifact, sine_day, tmp_path_factory):
    """(result, folder) of an uninterrupted run of the reference artifact over the whole replay file."""
    folder = tmp_path_factory.mktemp('straight')
    return trade(reference_artifact[1], replay(sine_day, folder / 'day.csv'), str(folder / 'run')), folder / 'run'


def assert_as_straight(folder, straight_run):
    result, straight = straight_run
    assert decisions_without_fills(folder) == decisions_without_fills(straight)
    assert journaled_fills(folder) == journaled_fills(straight) and journaled_fills(straight)
    assert end_records(folder)[-1]['broker_value'] == read_state(folder)['broker_value'] == result['broker_value']


def test_the_second_half_of_a_day_continues_the_first_bar_for_bar(reference_artifact, sine_day, straight_run,
                                                                  tmp_path):
    folder = str(tmp_path / 'run')
    first = trade(reference_artifact[1], replay(sine_day[:HALF], tmp_path / 'first.csv'), folder)
    second = trade(reference_artifact[1], replay(sine_day[HALF:], tmp_path / 'second.csv'), folder)
    assert (first['bars'], second['bars'], second['skipped'], second['gap']) == (HALF, HALF, 0, None)
    assert (first['exit_code'], second['exit_code']) == (0, 0)
    assert second['decisions'] == straight_run[0]['decisions'] > first['decisions'] > 0
    assert_as_straight(folder, straight_run)
    assert [end['bars'] for end in end_records(folder)] == [HALF, HALF]


def test_an_overlapping_file_is_traded_from_its_first_new_bar(reference_artifact, sine_day, straight_run, tmp_path):
    folder = str(tmp_path / 'run')
    trade(reference_artifact[1], replay(sine_day[:HALF], tmp_path / 'first.csv'), folder)
    overlapping = trade(reference_artifact[1], replay(sine_day[HALF - 100:], tmp_path / 'second.csv'), folder)
    assert (overlapping['bars'], overlapping['skipped'], overlapping['gap']) == (HALF, 100, None)
    assert_as_straight(folder, straight_run)


def test_a_file_from_the_past_trades_nothing_and_a_gap_is_reported(reference_artifact, sine_day, tmp_path):
    folder = str(tmp_path / 'run')
    first = trade(reference_artifact[1], replay(sine_day[:HALF], tmp_path / 'first.csv'), folder)
    journal = read_journal(folder)
    past = trade(reference_artifact[1], replay(sine_day[:300], tmp_path / 'past.csv'), folder)
    assert (past['bars'], past['skipped'], past['journaled'], past['exit_code']) == (0, 300, 0, 0)
    assert past['decisions'] == first['decisions'] and read_journal(folder) == journal
    later = trade(reference_artifact[1], replay(sine_day[HALF + 50:], tmp_path / 'later.csv'), folder)
    assert later['gap'] == (sine_day.index[HALF - 1].to_pydatetime(), sine_day.index[HALF + 50].to_pydatetime())
    assert later['bars'] == HALF - 50 and later['journaled'] > 0


def test_lines_cut_short_by_a_crash_are_dropped_and_the_run_continues(reference_artifact, sine_day, straight_run,
                                                                      tmp_path):
    """A kill during the writes of the last decision: its journal line and the last bars line are cut in half."""
    folder = tmp_path / 'run'
    trade(reference_artifact[1], replay(sine_day[:HALF], tmp_path / 'first.csv'), str(folder))
    for name, keep in (('journal.jsonl', 2), ('bars.jsonl', 1)):  # the journal ends with its end record
        lines = (folder / name).read_text().split('\n')[:-1]
        cut = lines[-keep]
        (folder / name).write_text('\n'.join(lines[:-keep]) + '\n' + cut[:len(cut) // 2])
    trade(reference_artifact[1], replay(sine_day, tmp_path / 'day.csv'), str(folder))
    assert_as_straight(str(folder), straight_run)


def test_a_run_killed_at_random_moments_takes_the_decisions_of_an_uninterrupted_one(reference_artifact, sine_day,
                                                                                    straight_run, tmp_path):
    """SIGKILL after a random number of journal lines and a random few milliseconds more (during the decisions,
    the writes or the replay of the bars), six times, then a run to the end."""
    rng = random.Random(61)
    spec = replay(sine_day, tmp_path / 'day.csv')
    folder = tmp_path / 'run'
    journal = folder / 'journal.jsonl'
    decisions = straight_run[0]['decisions']
    command = [sys.executable, '-m', 'btgym_aac.cli', 'trade', reference_artifact[1], '--feed', spec, '--out',
               str(folder)]
    kills = 0
    for target in sorted(rng.sample(range(2, decisions), 6)):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline and \
                (not journal.exists() or journal.read_bytes().count(b'\n') < target):
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.02))
        if process.poll() is None:
            process.kill()
            kills += 1
        process.communicate(timeout=60)
    assert kills >= 5, 'most kills land while the run trades'
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert len(end_records(folder)) <= 7 - kills  # a killed run journals no end
    assert_as_straight(str(folder), straight_run)


def test_a_drawdown_stop_is_closed_again_when_the_folder_continues(reference_artifact, tmp_path, monkeypatch):
    scripted(monkeypatch, [BUY])
    path = price_path(np.concatenate([np.linspace(1.10, 1.00, 900), 1.0 + 1e-4 * np.sin(np.arange(300) / 20.0)]))
    folder = str(tmp_path / 'run')
    stopped = trade(reference_artifact[1], replay(path[:900], tmp_path / 'falling.csv'), folder, max_drawdown=1.0)
    assert (stopped['stop'], stopped['exit_code'], stopped['positions']) == ('max drawdown', 4, {'default_asset': 0.0})
    closes = [line for line in read_lines(folder) if line.get('record') == 'close']
    assert closes and closes[0]['reason'].startswith('max drawdown')
    scripted(monkeypatch, [BUY])  # the same decisions taken again
    continued = trade(reference_artifact[1], replay(path[900:], tmp_path / 'flat.csv'), folder, max_drawdown=1.0)
    assert (continued['bars'], continued['exit_code']) == (300, 0)
    assert continued['decisions'] > stopped['decisions']
    lines = (tmp_path / 'run' / 'journal.jsonl').read_text().split('\n')
    (tmp_path / 'run' / 'journal.jsonl').write_text('\n'.join(line for line in lines if '"close"' not in line))
    scripted(monkeypatch, [BUY])
    with pytest.raises(ResumeError, match='leaves the broker with positions'):
        trade(reference_artifact[1], replay(path[900:], tmp_path / 'flat.csv'), folder, max_drawdown=1.0)


def test_the_strategys_end_rule_exits_5_and_finishes_the_folder(reference_artifact, tmp_path, monkeypatch):
    scripted(monkeypatch, [BUY])
    falling = price_path(np.linspace(1.10, 0.90, 900))
    folder = str(tmp_path / 'run')
    result = trade(reference_artifact[1], replay(falling, tmp_path / 'falling.csv'), folder)
    assert (result['stop'], result['exit_code'], result['ended']) == ('strategy end', 5, 'DRAWDOWN CALL')
    assert end_records(folder)[-1]['episode_ended'] and not any(end_records(folder)[-1]['positions'].values())
    with pytest.raises(ValueError, match='its strategy ended .DRAWDOWN CALL.*new folder'):
        trade(reference_artifact[1], replay(falling, tmp_path / 'falling.csv'), folder)
    assert STOPS == {'end of data': 0, 'feed failed': 1, 'refused': 2, 'signal': 3, 'max drawdown': 4,
                     'strategy end': 5, 'silent feed': 6}


def test_a_silent_feed_ends_the_run_with_its_own_exit_status_when_asked(reference_artifact, tmp_path, monkeypatch):
    scripted(monkeypatch, [BUY])
    flat = price_path(1.1 + 1e-4 * np.sin(np.arange(700) / 20.0))
    path = replay(flat, tmp_path / 'flat.csv').split(':')[1]
    result = trade(reference_artifact[1], SilentAfter(path, index=400, silence=30.0), str(tmp_path / 'run'),
                   max_bar_delay=1.0, stop_on_silence=True)
    assert (result['stop'], result['exit_code'], result['bars']) == ('silent feed', 6, 400)
    [end] = end_records(tmp_path / 'run')
    assert end['ended'] == 'the feed of default_asset is silent' and end['positions']['default_asset'] > 0
    with pytest.raises(ValueError, match='stop_on_silence needs max_bar_delay'):
        trade(reference_artifact[1], path, str(tmp_path / 'other'), stop_on_silence=True)


class RecordingPolicy:
    """The artifact's policy, recording the recurrent state it acts from."""

    def __init__(self, policy, states):
        self.policy, self.states = policy, states

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def act(self, observation, deterministic=True):
        self.states.append(np.concatenate([value.ravel() for value in self.policy.state]))
        return self.policy.act(observation, deterministic)


def recording(monkeypatch):
    states = []
    monkeypatch.setattr(trading, 'load_artifact', lambda path, backend: RecordingPolicy(load_artifact(path, backend),
                                                                                         states))
    return states


def first_decision_bar(frame, folder):
    return frame.index.get_loc(read_journal(folder)[0]['bar_time'])


def test_an_episode_of_decisions_is_what_evaluate_takes(reference_artifact, monkeypatch):
    record, frames = evaluated_episode(reference_artifact[0], seed=3, monkeypatch=monkeypatch)
    skip_frame = read_manifest(reference_artifact[1])['skip_frame']
    warmup = frames['data'].index.get_loc(record.step_times[0]) - skip_frame + 1
    assert episode_decisions(len(frames['data']), warmup, skip_frame) == len(record.actions) > 10


def test_the_recurrent_state_starts_afresh_every_training_episode_of_decisions(reference_artifact, sine_day, tmp_path,
                                                                                monkeypatch):
    states = recording(monkeypatch)
    manifest = read_manifest(reference_artifact[1])
    episode_bars = manifest['episode']['bars']
    assert state_reset_rule(manifest, None, None) == ('episode', episode_bars)
    trade(reference_artifact[1], replay(sine_day, tmp_path / 'day.csv'), str(tmp_path / 'run'))
    skip_frame = manifest['skip_frame']
    warmup = first_decision_bar(sine_day, tmp_path / 'run') - skip_frame + 1
    every = episode_decisions(episode_bars, warmup, skip_frame)
    journal = read_journal(tmp_path / 'run')
    assert len(journal) > 2 * every
    assert [index for index, entry in enumerate(journal) if entry['state_reset']] == list(
        range(every, len(journal), every))
    assert [index for index, state in enumerate(states) if not state.any()] == list(range(0, len(journal), every))


def test_the_recurrent_state_can_start_afresh_every_day_or_n_decisions(reference_artifact, tmp_path, monkeypatch):
    states = recording(monkeypatch)
    two_days = price_path(1.1 + 1e-3 * np.sin(np.arange(1000) / 20.0), start=datetime(2018, 1, 1, 14, 0))
    trade(reference_artifact[1], replay(two_days, tmp_path / 'bars.csv'), str(tmp_path / 'day'), reset_state='day')
    journal = read_journal(tmp_path / 'day')
    new_day = [index for index, entry in enumerate(journal) if entry['bar_time'] >= '2018-01-02'][0]
    assert [index for index, entry in enumerate(journal) if entry['state_reset']] == [new_day]
    assert not states[new_day].any() and states[new_day - 1].any() and states[new_day + 1].any()
    del states[:]
    trade(reference_artifact[1], replay(two_days, tmp_path / 'bars.csv'), str(tmp_path / 'seven'), reset_state=7)
    assert [index for index, state in enumerate(states) if not state.any()] == list(range(0, len(states), 7))


class Warnings:
    def __init__(self):
        self.messages = []

    def warning(self, message, *args):
        self.messages.append(message.format(*args))


def test_an_artifact_without_its_episode_length_is_never_reset_unless_told(reference_artifact):
    manifest = dict(read_manifest(reference_artifact[1]), episode=None)
    log = Warnings()
    assert state_reset_rule(manifest, None, log) == ('never', None)
    assert 'never reset' in log.messages[0]
    assert state_reset_rule(manifest, 'day', log) == ('day', None)
    with pytest.raises(ValueError, match='does not record the length of its training episodes'):
        state_reset_rule(manifest, 'episode', log)
    with pytest.raises(ValueError, match='whole number of decisions'):
        trade(reference_artifact[1], 'replay:{}'.format(SINE_REPLAY), 'unused', reset_state=0)


def test_the_end_record_and_state_after_a_replay_that_ends(straight_run):
    result, folder = straight_run
    [end] = end_records(folder)
    state = read_state(folder)
    assert (end['stop'], end['exit_code'], end['episode_ended']) == ('end of data', 0, False)
    assert end['decisions'] == state['decisions'] == result['decisions'] == len(read_journal(folder))
    assert end['positions'] == state['positions'] == result['positions']
    assert end['bar_time'] == '2017-02-01T23:59:00' > read_journal(folder)[-1]['bar_time']
    assert (state['ended'], state['exit_code']) == (end['ended'], 0)
