"""Progress of the long commands: train's line (no estimate before the count moves, the speed of a resumed run, one
line every `progress_seconds` in a non-terminal), a train whose run is at --max-steps already, evaluate's, trade's
and walk-forward's progress, and `btgym_aac.progress` itself (the line, the cadence, the bar on a terminal).

Time is a fake clock (`time.time` and `time.monotonic` replaced while a test reads them): nothing sleeps and no
assertion depends on how fast the machine is."""
import io
import json
import os
import re
import time

import pytest
from saved_runs import reference_configs, write_saved_run
from small_runs import small_configs, three_days_csv

from btgym_aac.cli import main as cli_main
from btgym_aac.distributed.launcher import Launcher
from btgym_aac.distributed.log_dir import LOCK_FILE
from btgym_aac.walk_forward import runner as walk_forward_runner

MAX_STEPS = 80000
SINE_REPLAY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'examples', 'data',
                           'sine_replay.csv')


class Clock:
    """A clock that moves only when told (`now += seconds`)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    """The fake clock, read by `time.time()` and `time.monotonic()` calls for the rest of the test."""
    fake = Clock()
    monkeypatch.setattr(time, 'time', fake)
    monkeypatch.setattr(time, 'monotonic', fake)
    return fake


@pytest.fixture
def launcher(tmp_path):
    """A launcher of MAX_STEPS env steps whose tasks are never started (its progress reports are set by hand)."""
    return Launcher(cluster_config={'log_dir': str(tmp_path / 'run'), 'network_isolation': 'off'},
                    max_env_steps=MAX_STEPS)


def report(step, start_step, episodes=0, rewards=()):
    """A worker's progress report (see `worker.Worker._report`)."""
    return {'task': 0, 'step': step, 'start_step': start_step, 'episodes': episodes, 'recent_rewards': list(rewards),
            'finished': False}


# ------------------------------------------------------------------------------------------------------------ train

def test_train_progress_at_step_zero_says_there_is_no_estimate_yet(launcher, clock, capsys):
    start = clock()
    launcher.progress = {0: report(0, 0)}
    launcher._print_progress(start)
    assert capsys.readouterr().out == 'env steps 0/80000 (0 %) | time left: no estimate yet | episodes 0 | mean ' \
                                      'reward -\n'


def test_a_resumed_runs_speed_counts_only_the_steps_this_command_trained(launcher, clock, capsys):
    """The run resumes at step 60000: its first report (20 s after the start) starts the speed's clock; 30 s later
    it is at 63000: 100 env steps/s, 17000 steps left."""
    start = clock()
    clock.now += 20
    launcher.progress = {0: report(60000, 60000)}
    launcher._print_progress(start)
    clock.now += 30
    launcher.progress = {0: report(63000, 60000, episodes=2, rewards=(0.25, 0.75))}
    launcher._print_progress(start)
    assert capsys.readouterr().out.splitlines() == [
        'env steps 60000/80000 (75 %) | time left: no estimate yet | episodes 0 | mean reward -',
        'env steps 63000/80000 (79 %) | 100.0 env steps/s | time left 02:50 | episodes 2 | mean reward +0.500']


def test_a_non_terminal_gets_a_progress_line_every_progress_seconds_and_one_at_the_end(launcher, clock, capsys):
    """The supervision asks for a line at every poll (0.5 s); 100 s of training give the lines of 0, 30, 60 and 90 s,
    and the last one (the default `progress_seconds` is 30)."""
    start = clock()
    for poll in range(200):
        launcher.progress = {0: report(100 * poll, 0)}
        launcher._print_progress(start)
        clock.now += 0.5
    launcher._print_progress(start, final=True)
    steps = [int(re.match(r'env steps (\d+)/80000 ', line).group(1)) for line in capsys.readouterr().out.splitlines()]
    assert steps == [0, 6000, 12000, 18000, 19900]


def test_progress_seconds_is_a_train_flag_and_must_be_positive(tmp_path, capsys):
    from btgym_aac.cli import build_parser
    from btgym_aac.cli.config_files import _configs_from_args

    args = build_parser().parse_args(['train', '--progress-seconds', '5'])
    assert _configs_from_args(args)['launcher_config']['progress_seconds'] == 5
    with pytest.raises(ValueError, match='progress_seconds must be a positive number of seconds, got 0'):
        Launcher(cluster_config={'log_dir': str(tmp_path / 'run'), 'network_isolation': 'off'}, progress_seconds=0)


@pytest.mark.parametrize('max_steps', [100, 60])
def test_train_at_or_past_max_steps_says_so_and_starts_no_cluster(tmp_path, capsys, monkeypatch, max_steps):
    configs = reference_configs()
    run = write_saved_run(tmp_path / 'run', configs['env_config'], configs['policy_config'],
                          configs['trainer_config'], step=100)
    before = sorted(os.listdir(run))

    def no_task(*_):
        pytest.fail('a task of the cluster was started')

    monkeypatch.setattr(Launcher, '_start', no_task)
    assert cli_main(['train', '--log-dir', run, '--workers', '1', '--max-steps', str(max_steps),
                     '--network-isolation', 'off']) == 0
    assert 'the run is at step 100 already, at or past --max-steps {}: nothing to train'.format(
        max_steps) in capsys.readouterr().out
    assert sorted(name for name in os.listdir(run) if name != LOCK_FILE) == before  # (no data published for tasks)


# --------------------------------------------------------------------------------------------- evaluate, trade

@pytest.mark.xdist_group('deploy')  # the reference artifact (conftest) is built once per xdist worker of the group
def test_evaluate_shows_the_episodes_played_and_the_steps_of_the_current_one(reference_artifact, tmp_path, capsys):
    log_dir, _ = reference_artifact
    assert cli_main(['evaluate', log_dir, '--episodes', '2', '--no-episode-plots', '--no-tearsheet', '--out',
                     str(tmp_path)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith('episodes ')]
    assert lines and lines[0] == 'episodes 0/6 (0 %) | time left: no estimate yet | policy episode 1 of 2: step 1'
    assert re.fullmatch(r'episodes 6/6 \(100 %\) \| ([\d.]+ episodes/s|[\d.]+ s per episode) \| time left 00:00 \| '
                        r'random episode 2 of 2 done', lines[-1]), lines


@pytest.mark.xdist_group('deploy')
def test_trade_shows_the_bars_decisions_and_value(reference_artifact, tmp_path, capsys):
    _, artifact = reference_artifact
    assert cli_main(['trade', artifact, '--feed', 'replay:{}:max'.format(SINE_REPLAY), '--out',
                     str(tmp_path / 'paper')]) == 0
    result = capsys.readouterr()
    decisions, value = re.search(r'^(\d+) decisions .* value ([\d.]+);', result.out).groups()
    lines = [line for line in result.err.splitlines() if line.startswith('bars ')]
    assert lines and lines[0] == 'bars 1/1440 (0 %) | time left: no estimate yet | decisions 0, bar 2017-02-01 ' \
                                 '00:00:00, value 2000.00'
    last = re.fullmatch(r'bars (\d+)/1440 \(\d+ %\) \| [\d.]+ bars/s \| time left [\d:]+ \| decisions (\d+), bar '
                        r'2017-02-01 23:[\d:]+, value ([\d.]+)', lines[-1])
    assert last and int(last.group(1)) > 1400 and last.groups()[1:] == (decisions, value), lines


# ----------------------------------------------------------------------------------------------------- walk-forward

def test_walk_forward_says_which_fold_starts_with_the_time_left_over_the_folds_it_trains(tmp_path, clock, capsys,
                                                                                       monkeypatch):
    """Three folds, fold 0 done by an earlier call (read back at once, not timed): folds 1 and 2 take 600 s each."""
    data = three_days_csv(tmp_path)
    out = tmp_path / 'wf'
    (out / 'fold_0').mkdir(parents=True)
    (out / 'fold_0' / 'fold.json').write_text(json.dumps({'fold': 0}))

    def fold_taking_600_s(number, *_):
        if number:
            clock.now += 600
        return {'fold': number}

    class EveryFoldDone(Exception):
        """Ends the walk-forward before its summary of the hand-made folds."""

    def stop_after_the_last(records):
        if len(records) == 3:
            raise EveryFoldDone()

    monkeypatch.setattr(walk_forward_runner, '_run_fold', fold_taking_600_s)
    with pytest.raises(EveryFoldDone):
        walk_forward_runner.walk_forward(small_configs(), data, folds=3, train_steps=100, test_episodes=1,
                                         out=str(out), on_fold=stop_after_the_last, show_progress=True)
    assert capsys.readouterr().err.splitlines() == [
        'folds 1/3 (33 %) | time left: no estimate yet | starting fold 1',
        'folds 2/3 (67 %) | 10:00 per fold | time left 10:00 | starting fold 2']


# ------------------------------------------------------------------------------------------------- the display

def test_the_line_names_the_count_the_speed_and_the_time_left():
    from btgym_aac.progress import progress_line, speed

    assert speed((60000, 10.0), (61000, 20.0)) == 100.0
    assert speed((60000, 10.0), (60000, 20.0)) is None and speed((0, 10.0), (5, 10.0)) is None
    assert progress_line('env step', 61000, 80000, 100.0, 'episodes 4') == \
        'env steps 61000/80000 (76 %) | 100.0 env steps/s | time left 03:10 | episodes 4'
    assert progress_line('episode', 2, 10, 0.25) == 'episodes 2/10 (20 %) | 4.0 s per episode | time left 00:32'
    assert progress_line('fold', 1, 3, 1 / 4000) == 'folds 1/3 (33 %) | 1:06:40 per fold | time left 2:13:20'
    assert progress_line('bar', 120, None, None, 'decisions 12') == 'bars 120 | decisions 12'
    assert progress_line('bar', 120, None, 2.0) == 'bars 120 | 2.0 bars/s'
    assert progress_line('fold', 3, 3, None) == 'folds 3/3 (100 %) | time left 00:00'


def test_a_plain_display_writes_at_the_first_update_every_interval_and_at_the_close():
    from btgym_aac.progress import Progress

    clock, stream = Clock(), io.StringIO()
    with Progress('bar', None, stream=stream, line_seconds=10, clock=clock) as progress:
        for count in range(25):
            progress.update(count)
            clock.now += 1
    assert stream.getvalue().splitlines() == ['bars 0', 'bars 10 | 1.0 bars/s', 'bars 20 | 1.0 bars/s',
                                              'bars 24 | 1.0 bars/s']
    quiet = io.StringIO()
    with Progress('bar', 10, stream=quiet, enabled=False) as progress:
        progress.update(5)
    assert quiet.getvalue() == ''


def test_a_count_that_arrives_in_batches_keeps_a_steady_speed():
    """Training's reports come every 2 s and the display is asked every 0.5 s: the speed is taken at the time the
    count was reached, so it does not sag between reports."""
    from btgym_aac.progress import Progress

    clock, stream = Clock(), io.StringIO()
    progress = Progress('env step', 1000, stream=stream, line_seconds=0, clock=clock)
    for count in (0, 0, 0, 0, 200, 200, 200, 200, 400):
        progress.update(count)
        clock.now += 0.5
    speeds = [re.search(r'\| ([\d.]+) env steps/s', line) for line in stream.getvalue().splitlines()]
    assert [match and match.group(1) for match in speeds] == [None] * 4 + ['100.0'] * 5


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_a_tqdm_bar_is_redrawn_in_place_and_left_on_its_line(monkeypatch):
    from btgym_aac.progress import Progress

    monkeypatch.setenv('COLUMNS', '120')  # the terminal's width
    clock, stream = Clock(), Terminal()
    with Progress('env step', 100, stream=stream, clock=clock) as progress:
        for count in range(0, 101, 10):
            progress.update(count, 'episodes {}'.format(count // 10))
            clock.now += 0.25  # a redraw every other update
    text = stream.getvalue()
    assert text.endswith('\n') and '\n' not in text[:-1]
    drawn = [part for part in text[:-1].split('\r') if part.strip()]
    assert [re.search(r'env steps (\d+)/100', part).group(1) for part in drawn] == ['0', '20', '40', '60', '80',
                                                                                    '100', '100']
    assert re.fullmatch(r'\|#{10}\| env steps 100/100 \(100 %\) \| 40\.0 env steps/s \| time left 00:00 \| '
                        r'episodes 10 *', drawn[-1]), drawn[-1]
