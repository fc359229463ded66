"""Time-ordered data domains: BTgymSequentialDataDomain (trials in time order, sliding or expanding) and
BTgymCausalDataDomain / BTgymCausalTrial (sampling against a monotone global time, no look-ahead)."""
import logbook
import numpy as np
import pandas as pd
import pytest

import btgym_aac
from btgym_aac.algorithms import A3C, train_in_process
from btgym_aac.algorithms.policy import AacStackedRL2Policy
from btgym_aac.data import (BTgymCausalDataDomain, BTgymCausalTrial, BTgymSequentialDataDomain, DataError,
                            make_random_walk_data, make_sine_data)
from btgym_aac.strategy import BTgymBaseStrategy, DevStrat_4_11

NUM_BARS = 6000
TRIAL = dict(sample_duration={'hours': 10}, time_gap={'hours': 0}, test_period={'hours': 2})
EPISODE = dict(sample_duration={'hours': 1}, time_gap={'hours': 0})
S_TR, R_TE, R_TR, N_EP = 600, 120, 480, 60  # rows of 1-minute bars: trial, trial test part, trial train part, episode


def bars(num_bars=NUM_BARS, seed=0):
    return make_random_walk_data(num_bars=num_bars, seed=seed)


def seconds(frame):
    """POSIX seconds of a frame's bar times (naive, as UTC), by pandas Timestamp arithmetic."""
    return np.array([(stamp - pd.Timestamp('1970-01-01')).total_seconds() for stamp in frame.index])


def sequential(data=None, expanding=False, **kwargs):
    domain = BTgymSequentialDataDomain(trial_params=dict(TRIAL, expanding=expanding), episode_params=dict(EPISODE),
                                       dataframe=bars() if data is None else data, **kwargs)
    domain.seed(0)
    return domain


def causal(data=None, expanding=False, **kwargs):
    domain = BTgymCausalDataDomain(trial_params=dict(TRIAL, expanding=expanding), episode_params=dict(EPISODE),
                                   dataframe=bars() if data is None else data, **kwargs)
    domain.seed(0)
    domain.reset()
    return domain


# ------------------------------------------------------------------------------------------------ sequential

def test_sliding_trials_advance_by_the_test_period_and_their_test_parts_partition_the_data():
    data = bars()
    domain = sequential(data)
    domain.reset()
    num_trials = int((NUM_BARS - R_TR) / R_TE)  # the original's cardinality
    assert domain.total_samples == num_trials == 46 and domain.sample_stride == R_TE
    test_rows = []
    for k in range(num_trials):
        trial = domain.sample()
        assert (trial.metadata['first_row'], trial.metadata['last_row']) == (k * R_TE, k * R_TE + S_TR)
        assert trial.metadata['sample_num'] == k and trial.metadata['type'] == 0
        np.testing.assert_array_equal(trial.data.to_numpy(), data.iloc[k * R_TE:k * R_TE + S_TR].to_numpy())
        trial.reset()
        assert trial.train_interval == [0, R_TR] and trial.test_interval == [R_TR, S_TR]
        test_rows.extend(range(k * R_TE + trial.test_interval[0], k * R_TE + trial.test_interval[1]))
        episode = trial.sample(sample_type=1)
        assert episode.metadata['parent_sample_num'] == k
        assert episode.data.index[0] >= data.index[k * R_TE + R_TR]
    np.testing.assert_array_equal(test_rows, np.arange(R_TR, R_TR + num_trials * R_TE))
    assert domain.sample_num == num_trials  # the last trial (the original's IndexError) was made


def test_expanding_trials_grow_from_row_0_and_keep_the_sliding_test_parts():
    data = bars()
    domain = sequential(data, expanding=True)
    domain.reset()
    for k in range(12):
        trial = domain.sample()
        stop = k * R_TE + S_TR
        assert (trial.metadata['first_row'], trial.metadata['last_row']) == (0, stop)
        np.testing.assert_array_equal(trial.data.index.values, data.index.values[:stop])
        trial.reset()
        assert trial.test_interval == [stop - R_TE, stop]
        for _ in range(5):
            assert trial.sample(sample_type=0).data.index[-1] < data.index[stop - R_TE]


def test_sweep_resumes_in_proportion_to_global_step_and_rejects_bad_settings():
    domain = sequential()
    domain.reset(global_step=30, total_steps=100)
    assert domain.sample_num == int(46 * 30 / 100) == 13
    assert domain.sample().metadata['first_row'] == 13 * R_TE
    domain.reset()
    assert domain.sample().metadata['first_row'] == 0
    with pytest.raises(ValueError, match='global_step'):
        domain.reset(global_step=100, total_steps=100)
    no_stride = BTgymSequentialDataDomain(trial_params=dict(TRIAL, test_period=None), episode_params=dict(EPISODE),
                                          dataframe=bars())
    with pytest.raises(ValueError, match='test_period'):
        no_stride.reset()
    no_train = BTgymSequentialDataDomain(trial_params=dict(TRIAL, test_period={'hours': 10}),
                                         episode_params=dict(EPISODE), dataframe=bars())
    with pytest.raises(ValueError, match='sample_duration'):
        no_train.reset()


def test_sweep_wraps_to_trial_0_with_a_notice():
    domain = sequential(bars(S_TR + 2 * R_TE), log_level=logbook.NOTICE)
    domain.reset()
    assert domain.total_samples == 3
    with logbook.TestHandler(level=logbook.NOTICE) as handler:
        rows = [domain.sample().metadata['first_row'] for _ in range(3)]
        assert not any('starts again' in record.message for record in handler.records)
        wrapped = domain.sample()
    assert rows == [0, R_TE, 2 * R_TE]
    assert wrapped.metadata['first_row'] == 0 and wrapped.metadata['sample_num'] == 0
    assert domain.sweep_num == 1 and domain.sample_num == 1
    notices = [record for record in handler.records if 'starts again at trial 0' in record.message]
    assert len(notices) == 1 and notices[0].level == logbook.NOTICE


def test_get_new_false_reuses_and_start_00_moves_trials_to_their_day_start():
    domain = sequential()
    domain.reset()
    first = domain.sample()
    assert domain.sample(get_new=False) is first and domain.sample().metadata['sample_num'] == 1
    daily = BTgymSequentialDataDomain(
        trial_params=dict(sample_duration={'hours': 30}, time_gap={'hours': 0}, test_period={'hours': 20},
                          start_00=True),
        episode_params=dict(EPISODE), dataframe=bars())
    daily.reset()
    # trial starts k * 1200 rows (k * 20 h) moved back to 00:00 of their day: 0, 0 (20:00), 1440 (day 1, 16:00)
    assert [daily.sample().metadata['first_row'] for _ in range(3)] == [0, 0, 1440]


@pytest.mark.parametrize('step, p0, max_steps, expected', [
    (0, 0.2, 10, 0.2), (5, 0.2, 10, 0.6), (10, 0.2, 10, 1.0), (11, 0.2, 10, 1.0), (3, 0.2, 0, 0.2), (2, 0.5, 8, 0.625),
])
def test_lin_decay(step, p0, max_steps, expected):
    assert BTgymSequentialDataDomain._lin_decay(step, p0, max_steps) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize('step, p0, max_steps, gamma, expected', [
    (0, 0.2, 10, 3.5, 0.2),  # exp(0) * (0.2 - 1) + 1
    (5, 0.5, 10, 2.0, 0.91311303),  # 1 - 0.5 * exp(1.5**2 - 4) = 1 - 0.5 * 0.17377394
    (10, 0.2, 10, 3.5, 0.99997346),  # 1 - 0.8 * exp(1 - 2**3.5) = 1 - 0.8 * exp(-10.313708)
    (12, 0.2, 10, 3.5, 1.0), (4, 0.3, -1, 3.5, 0.3),
])
def test_exp_decay(step, p0, max_steps, gamma, expected):
    assert BTgymSequentialDataDomain._exp_decay(step, p0, max_steps, gamma) == pytest.approx(expected, abs=1e-8)


# ---------------------------------------------------------------------------------------------------- causal

def assert_no_look_ahead(trial, global_time, num_episodes=4):
    """Source trials and every train episode end before `global_time`; target test episodes start at the first
    trial bar at or after it; source test episodes come from the trial's test part."""
    trial.reset()
    assert isinstance(trial, BTgymCausalTrial)
    trial_times = seconds(trial.data)
    if trial.metadata['type'] == 0:
        assert trial_times[-1] < global_time
    else:
        train_part, test_part = trial.get_intervals()
        assert train_part == [0, test_part[0]] and test_part[1] == len(trial.data)
        assert trial_times[train_part[1] - 1] < global_time <= trial_times[test_part[0]]
    for _ in range(num_episodes):
        train = trial.sample(sample_type=0)
        assert seconds(train.data)[-1] < global_time and len(train.data) == N_EP
        test = trial.sample(sample_type=1)
        if trial.metadata['type'] == 0:
            assert test.data.index[0] >= trial.data.index[R_TR] and seconds(test.data)[-1] < global_time
        else:
            assert seconds(test.data)[0] == trial_times[np.searchsorted(trial_times, global_time)] >= global_time
            assert len(test.data) == N_EP


@pytest.mark.parametrize('expanding', [False, True])
def test_every_sample_respects_the_global_time_over_many_moves(expanding):
    data = bars()
    domain = causal(data, expanding=expanding)
    bar_times = seconds(data)
    assert domain.get_global_index() == S_TR and domain.global_timestamp == bar_times[S_TR]
    rng = np.random.default_rng(1)
    previous = domain.global_timestamp
    for step in range(40):
        offset = rng.uniform(-3600, 3 * 3600)  # some moves backwards (ignored), some between bars
        timestamp = min(previous + offset, bar_times[NUM_BARS - N_EP])
        sample_type = int(rng.integers(2))
        trial = domain.sample(sample_type=sample_type, timestamp=timestamp)
        now = domain.global_timestamp
        assert now == max(previous, timestamp) and now >= previous
        row = domain.get_global_index()
        assert bar_times[row] >= now > bar_times[row - 1]
        assert trial.metadata['sample_num'] == step and trial.metadata['type'] == sample_type
        if sample_type == 1:
            assert (trial.metadata['first_row'], trial.metadata['last_row']) == (row - (S_TR - N_EP), row + N_EP)
        elif not expanding:
            assert (trial.metadata['first_row'], trial.metadata['last_row']) == (row - S_TR, row)
        assert_no_look_ahead(trial, now, num_episodes=2)
        previous = now


def test_expanding_source_starts_spread_before_global_time_sliding_ones_end_at_it():
    sliding, expanding = causal(), causal(expanding=True)
    timestamp = seconds(sliding.data)[4000]
    starts = []
    for _ in range(200):
        assert sliding.sample(timestamp=timestamp).metadata['first_row'] == 4000 - S_TR
        trial = expanding.sample(timestamp=timestamp)
        assert trial.metadata['last_row'] - trial.metadata['first_row'] == S_TR
        starts.append(trial.metadata['first_row'])
    starts = np.array(starts)
    assert starts.min() >= 0 and starts.max() <= 4000 - S_TR
    assert starts.min() < 0.25 * (4000 - S_TR) and starts.max() > 0.75 * (4000 - S_TR)
    late = np.array([expanding.sample(b_alpha=5.0, b_beta=1.0).metadata['first_row'] for _ in range(200)])
    assert late.mean() > starts.mean() + 500


def test_frozen_split_pins_the_global_time():
    data = make_sine_data(num_bars=NUM_BARS)
    domain = causal(data, frozen_time_split=dict(year=2017, month=1, day=2, hour=3, minute=30, second=30))
    split = seconds(data)[1650]  # 2017-01-02 03:30, the last bar at or before the split
    assert domain.global_timestamp == split and domain.get_global_index() == 1650
    later = seconds(data)[3000]
    domain.set_global_timestamp(later)
    for sample_type in (0, 1, 0, 1):
        trial = domain.sample(sample_type=sample_type, timestamp=later)
        assert domain.global_timestamp == split
        assert_no_look_ahead(trial, split)
    trial.reset()
    assert trial.sample(sample_type=1, timestamp=later).data.index[0] == data.index[1650]
    with pytest.raises(DataError, match='frozen_time_split'):
        causal(data, frozen_time_split=dict(year=2017, month=1, day=1, hour=5))


def test_target_test_episodes_are_left_aligned_at_global_time():
    """5-minute bars and 63-minute episodes: 12-bar episodes in a 13-bar test part. With a missing bar right after
    the global row, the window starting there misses time; the left-aligned episode takes the next window, while
    the uniform draw (which can only give the first row of a part one bar longer than an episode) finds none."""
    data = make_random_walk_data(num_bars=3000, freq='5min', seed=2)
    data = data.drop(data.index[1001])
    domain = BTgymCausalDataDomain(trial_params=dict(sample_duration={'hours': 10}, time_gap={'hours': 0}),
                                   episode_params=dict(sample_duration={'minutes': 63}, time_gap={'hours': 0}),
                                   dataframe=data)
    domain.reset(timestamp=seconds(data)[1000])
    trial = domain.sample(sample_type=1)
    trial.reset()
    assert trial.get_intervals() == ([0, 107], [107, 120])
    episode = trial.sample(sample_type=1)
    assert episode.data.index[0] == data.index[1001] and len(episode.data) == 12
    with pytest.raises(RuntimeError, match='no acceptable'):
        trial.sample(sample_type=1, align_left=False)


def test_global_time_never_moves_backwards():
    domain = causal()
    bar_times = seconds(domain.data)
    domain.set_global_timestamp(bar_times[2000])
    for timestamp in (bar_times[1500], bar_times[10], None, bar_times[1999] + 30):
        domain.set_global_timestamp(timestamp)
        assert domain.global_timestamp == bar_times[2000]
    domain.sample(timestamp=bar_times[100])
    assert domain.get_global_index() == 2000
    domain.set_global_timestamp(pd.Timestamp(domain.data.index[2500]))
    assert domain.get_global_index() == 2500
    domain.reset(timestamp=bar_times[700])
    assert domain.get_global_index() == 700


def test_end_of_data_is_a_data_error():
    domain = causal()
    bar_times = seconds(domain.data)
    domain.set_global_timestamp(bar_times[NUM_BARS - N_EP])  # the last global time with a target episode after it
    trial = domain.sample(sample_type=1)
    assert trial.metadata['last_row'] == NUM_BARS
    trial.reset()
    assert trial.sample(sample_type=1).data.index[-1] == domain.data.index[-1]
    with pytest.raises(DataError, match='too few rows'):
        trial.sample(sample_type=1, timestamp=bar_times[NUM_BARS - N_EP + 1])
    with pytest.raises(DataError, match='too few rows'):
        domain.sample(sample_type=0, timestamp=bar_times[NUM_BARS - N_EP + 1])
    assert domain.get_global_index() == NUM_BARS - N_EP


def test_trials_are_numbered_and_settings_are_checked():
    trial_params, episode_params = dict(TRIAL, start_00=True), dict(EPISODE)
    domain = BTgymCausalDataDomain(trial_params=trial_params, episode_params=episode_params, dataframe=bars(),
                                   target_period={'days': 3})
    assert trial_params['start_00'] is True and 'test_period' in trial_params  # the caller's dicts are untouched
    assert domain.start_00 is False
    domain.reset()
    numbers = [domain.sample(sample_type=k % 2).metadata['sample_num'] for k in range(4)]
    assert numbers == [0, 1, 2, 3]
    trial = domain.sample(sample_type=1)
    trial.reset()
    assert trial.sample(sample_type=0).metadata['parent_sample_num'] == 4
    assert domain.sample(sample_type=1, get_new=False) is trial
    assert domain.sample(sample_type=0, get_new=False).metadata['type'] == 0
    with pytest.raises(ValueError, match='source'):
        domain.sample(sample_type=1, interval=[0, 600])
    with pytest.raises(ValueError, match='before global time'):
        domain.sample(sample_type=0, interval=[0, domain.get_global_index() + 1], force_interval=True)
    short = BTgymCausalDataDomain(trial_params=dict(TRIAL, sample_duration={'hours': 1, 'minutes': 30}),
                                  episode_params=dict(EPISODE), dataframe=bars())
    with pytest.raises(DataError, match='two episodes'):
        short.reset()
    with pytest.raises(DataError, match='too few'):
        BTgymCausalDataDomain(trial_params=dict(TRIAL), episode_params=dict(EPISODE), dataframe=bars(640)).reset()


# ------------------------------------------------------------------------------------------------ through the env

def bar_seconds(info):
    return [pd.Timestamp(bar['time']).timestamp() for bar in info['bars']]


def play(env, trial_config, episode_config):
    """Resets with the sample configs and holds to the end; returns the POSIX times of every bar seen."""
    _, info = env.reset(options={'trial_config': trial_config, 'episode_config': episode_config})
    seen, done = bar_seconds(info), False
    while not done:
        _, _, done, _, info = env.step(0)
        seen.extend(bar_seconds(info))
    return seen


def test_sequential_domain_through_the_env():
    domain = sequential()
    domain.reset()
    env = btgym_aac.BTgymEnv(dataset=domain, strategy=BTgymBaseStrategy, render_enabled=False, skip_frame=10)
    try:
        for k in range(4):
            sample_type = k % 2
            seen = play(env, {'get_new': True}, {'sample_type': sample_type})
            assert env._trial.metadata['first_row'] == k * R_TE
            split = seconds(domain.data)[k * R_TE + R_TR]
            assert len(seen) > 10
            assert all(t >= split for t in seen) if sample_type else all(t < split for t in seen)
    finally:
        env.close()


def test_causal_domain_through_the_env_never_shows_train_bars_past_global_time():
    domain = causal()
    bar_times = seconds(domain.data)
    env = btgym_aac.BTgymEnv(dataset=domain, strategy=BTgymBaseStrategy, render_enabled=False, skip_frame=10)
    try:
        now = bar_times[S_TR]
        for k in range(3):
            for _ in range(2):
                seen = play(env, {'sample_type': 0, 'timestamp': now}, {'sample_type': k % 2})
                assert env._trial.metadata['type'] == 0 and max(seen) < domain.global_timestamp
            seen = play(env, {'sample_type': 1, 'timestamp': now}, {'sample_type': 1})
            assert env._trial.metadata['type'] == 1 and min(seen) >= domain.global_timestamp
            seen_train = play(env, {'get_new': False}, {'sample_type': 0})
            assert max(seen_train) < domain.global_timestamp
            now = max(seen)  # the evaluated test bars are known now
            assert domain.global_timestamp < now
    finally:
        env.close()


# ------------------------------------------------------------------------------------------------- training

class RecordingSequentialDomain(BTgymSequentialDataDomain):
    """Sequential domain that records the first row of every trial it hands out."""

    def sample(self, **kwargs):
        trial = super().sample(**kwargs)
        self.trial_rows.append(trial.metadata['first_row'])
        return trial


def test_a3c_training_walks_the_sequential_trials_in_time_order():
    trial_params = dict(sample_duration={'hours': 20}, time_gap={'hours': 0}, test_period={'hours': 8})
    episode_params = dict(sample_duration={'hours': 8}, time_gap={'hours': 0})
    domain = RecordingSequentialDomain(trial_params=trial_params, episode_params=episode_params,
                                       dataframe=make_sine_data(num_bars=1200 + 480 * 30))
    domain.trial_rows = []
    domain.reset()
    result = train_in_process(
        env_config={'class_ref': btgym_aac.BTgymEnv,
                    'kwargs': dict(dataset=domain, strategy=DevStrat_4_11, render_enabled=False)},
        policy_config={'class_ref': AacStackedRL2Policy,
                       'kwargs': dict(lstm_layers=(16, 16), lstm_2_init_period=3, conv_2d_num_filters=(8, 8, 8, 8))},
        trainer_config={'class_ref': A3C, 'kwargs': dict(rollout_length=10, time_flat=True)},
        max_env_steps=200, random_seed=0)
    rows = domain.trial_rows  # train part of a trial: its first 720 rows (20 h less the 8 h test part)
    assert result['global_step'] >= 200 and result['episodes'] >= 3
    assert len(rows) >= result['episodes'] and rows == [k * 480 for k in range(len(rows))]
    assert domain.sample_num == len(rows)
    index = domain.data.index
    for k, episode in enumerate(result['train_episodes']):  # one env, one trial per episode: episode k in trial k
        if 'start_time' in episode:  # the bar time of the episode's first observation
            assert index[k * 480] <= pd.Timestamp(episode['start_time']) < index[k * 480 + 720]
        else:  # the episode's first row inside its trial
            assert episode['first_row'] + 480 <= 720
