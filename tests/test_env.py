"""BTgymEnv: gymnasium contract, episodes, step timing, broker accounting, rendering, threads and bad input."""
import re
import threading
from datetime import timedelta

import backtrader as bt
import matplotlib.colors
import matplotlib.style
import numpy as np
import pandas as pd
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

from btgym_aac import BTgymDataset, BTgymEnv
from btgym_aac.data import make_random_walk_data, make_sine_data, write_histdata_csv
from btgym_aac.env.rendering import BTgymRendering
from btgym_aac.strategy import DevStrat_4_11
from btgym_aac.strategy.observers import DrawDown

HOLD, BUY, SELL, CLOSE = range(4)
QUIET = dict(render_enabled=False)
WARMUP_4_11 = 286  # DevStrat_4_11 bars before the first step


def run_random_episode(env, seed=0):
    """Plays one episode with seeded random actions; returns the list of (obs, reward, terminated, info)."""
    env.action_space.seed(seed)
    observation, info = env.reset(seed=seed)
    steps = [(observation, 0.0, False, info)]
    terminated = False
    while not terminated:
        observation, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert truncated is False and np.isfinite(reward)
        steps.append((observation, reward, terminated, info))
    return steps


def colour_pixels(image, colour, alpha=1.0, tolerance=10):
    """How many pixels of RGB(A) uint8 `image` are within `tolerance` in every channel of matplotlib colour `colour`
    drawn with `alpha` on white."""
    target = np.round((alpha * np.array(matplotlib.colors.to_rgb(colour)) + 1.0 - alpha) * 255)
    return int((np.abs(image[..., :3].astype(int) - target).max(axis=-1) <= tolerance).sum())


def assert_line_picture(image, shape=(262, 450), style='seaborn-v0_8'):
    """A uint8 RGB plot of four lines (OHLC, or an observation's four columns) of `shape` (by default 6 x 3.5 in at
    75 dpi) in matplotlib style `style`: the last line, drawn on top, in the style's fourth colour, and the first
    three colours at least in the legend."""
    assert image.dtype == np.uint8 and image.shape == (*shape, 3)
    colours = matplotlib.style.library[style]['axes.prop_cycle'].by_key()['color'][:4]
    assert colour_pixels(image, colours[3]) > 100
    assert min(colour_pixels(image, colour) for colour in colours[:3]) > 10


def assert_heat_map(image, shape, cmap='PRGn'):
    """A uint8 RGB heat map of `shape` whose cells reach both ends of colour map `cmap` (its colour bar alone has
    but a few pixels of each)."""
    assert image.dtype == np.uint8 and image.shape == (*shape, 3)
    assert min(colour_pixels(image, matplotlib.colormaps[cmap](end)) for end in (0.0, 1.0)) > 100


def assert_episode_picture(image, shape=(600, 900)):
    """A uint8 RGB picture of backtrader's plot of a finished episode of `shape` (by default 12 x 8 in at 75 dpi),
    with its buy and sell markers (lime and red)."""
    assert image.dtype == np.uint8 and image.shape == (*shape, 3)
    assert min(colour_pixels(image, colour) for colour in ('lime', 'red')) > 100


def test_check_env_default():
    env = BTgymEnv()
    check_env(env, skip_render_check=True)
    env.close()


def test_check_env_devstrat_4_11():
    env = BTgymEnv(strategy=DevStrat_4_11, **QUIET)
    check_env(env, skip_render_check=True)
    env.close()


def test_default_env_random_episode_on_synthetic_data():
    env = BTgymEnv(**QUIET)
    steps = run_random_episode(env)
    assert len(steps) > 100
    for observation, reward, _, info in steps:
        assert observation in env.observation_space
        assert np.isfinite(reward) and abs(reward) <= env.strategy_params['reward_scale']
        assert set(info) >= {'step', 'time', 'action', 'broker_message', 'broker_cash', 'broker_value',
                             'drawdown', 'max_drawdown', 'bars'}
    assert steps[-1][2] is True
    env.close()


def test_devstrat_episode_on_histdata_file(tmp_path):
    path = tmp_path / 'DAT_ASCII_TEST_M1.csv'
    write_histdata_csv(make_random_walk_data(num_bars=6000, seed=3), str(path))
    env = BTgymEnv(filename=str(path), strategy=DevStrat_4_11, reward_scale=7, **QUIET)
    steps = run_random_episode(env, seed=1)
    shapes = {key: space.shape for key, space in env.observation_space.spaces.items() if key != 'metadata'}
    assert shapes == {'external': (30, 1, 5), 'internal': (20, 1, 6)}
    for observation, reward, _, _ in steps:
        assert observation in env.observation_space
        assert np.isfinite(reward) and abs(reward) <= 7
    assert steps[-1][2] is True
    env.close()


def test_step_timing_skip_frame_bars_between_responses():
    env = BTgymEnv(strategy=DevStrat_4_11, **QUIET)
    steps = run_random_episode(env)
    first_info = steps[0][3]
    assert len(first_info['bars']) == 11  # the decision bar itself plus skip_frame bars
    for (_, _, _, before), (_, _, terminated, after) in zip(steps[:-1], steps[1:]):
        if not terminated:
            assert after['step'] - before['step'] == 10
            assert len(after['bars']) == 10
            assert after['time'] - before['time'] == timedelta(minutes=10)
            assert [bar['step'] for bar in after['bars']] == list(range(before['step'] + 1, after['step'] + 1))
    env.close()


class _ScriptedOrders(bt.Strategy):
    """Independent reference: places the same market orders at given bar times."""
    params = dict(orders=None, stake=10)

    def __init__(self):
        self.values = {}

    def next(self):
        now = self.data.datetime.datetime()
        kind = self.p.orders.get(now)
        if kind == BUY:
            self.buy(size=self.p.stake)
        elif kind == SELL:
            self.sell(size=self.p.stake)
        elif kind == CLOSE:
            self.close()
        self.values[now] = self.broker.get_value()


def test_broker_value_equals_plain_backtrader_with_same_orders():
    env = BTgymEnv(strategy=DevStrat_4_11, start_cash=100.0, broker_commission=0.001, fixed_stake=10, **QUIET)
    script = [BUY, HOLD, HOLD, CLOSE, SELL, HOLD, HOLD, HOLD, CLOSE, BUY, BUY, HOLD, CLOSE]
    observation, info = env.reset(seed=5)
    orders, bars = {}, []
    for action in script:
        orders[info['time'] + timedelta(minutes=1)] = action  # executed on the bar after the decision
        observation, reward, terminated, _, info = env.step(action)
        assert not terminated
        bars.extend(info['bars'])
    episode = env._trial.data  # the episode data of BTgymDataset is its whole trial window
    env.close()

    cerebro = bt.Cerebro()
    cerebro.broker.setcash(100.0)
    cerebro.broker.setcommission(commission=0.001)
    cerebro.adddata(bt.feeds.PandasDirectData(dataname=episode, timeframe=bt.TimeFrame.Minutes, datetime=0,
                                              open=1, high=2, low=3, close=4, volume=5, openinterest=-1))
    cerebro.addstrategy(_ScriptedOrders, orders=orders)
    reference = cerebro.run()[0].values
    assert len(bars) == 10 * len(script)
    trades = [bar for bar in bars if abs(bar['broker_value'] - 100.0) > 1e-9]
    assert trades, 'the script must move the broker value'
    for bar in bars:
        assert bar['broker_value'] == pytest.approx(reference[bar['time']], abs=1e-9)


def test_train_and_test_episodes_stay_in_their_intervals():
    data = make_sine_data(num_bars=8000)
    dataset = BTgymDataset(dataframe=data, episode_duration={'days': 0, 'hours': 23, 'minutes': 0},
                           target_period={'days': 2, 'hours': 0, 'minutes': 0})
    env = BTgymEnv(dataset=dataset, strategy=DevStrat_4_11, random_seed=2, **QUIET)
    split = data.index[-1] - timedelta(days=2)
    for sample_type in (0, 1, 0, 1):
        config = {'sample_type': sample_type}
        observation, info = env.reset(options={'episode_config': config, 'trial_config': config})
        assert int(observation['metadata']['type']) == sample_type
        window = env._trial.data.index
        if sample_type == 0:
            assert window[-1] <= split
        else:
            assert window[0] > split
        terminated, seen = False, [bar['time'] for bar in info['bars']]
        while not terminated:
            _, _, terminated, _, info = env.step(HOLD)
            seen.extend(bar['time'] for bar in info['bars'])
        assert all((t <= split) if sample_type == 0 else (t > split) for t in seen)
    env.close()


def test_reset_keyword_configs_like_the_original():
    env = BTgymEnv(strategy=DevStrat_4_11, **QUIET)
    observation, _ = env.reset(episode_config={'get_new': True, 'sample_type': 0},
                               trial_config={'get_new': True, 'sample_type': 0, 'b_alpha': 1, 'b_beta': 1})
    assert observation in env.observation_space
    with pytest.raises(ValueError, match='unknown reset options'):
        env.reset(options={'episode_cfg': {}})
    with pytest.raises(ValueError, match=r"unknown trial_config key\(s\) \['sampl_type'\]"):
        env.reset(options={'trial_config': {'sampl_type': 1}})
    env.close()


def test_seeded_resets_repeat_the_same_episodes():
    env = BTgymEnv(strategy=DevStrat_4_11, **QUIET)
    first = run_random_episode(env, seed=11)
    second = run_random_episode(env, seed=11)
    assert len(first) == len(second)
    for (obs_a, r_a, _, info_a), (obs_b, r_b, _, info_b) in zip(first, second):
        np.testing.assert_array_equal(obs_a['external'], obs_b['external'])
        assert r_a == r_b and info_a['broker_value'] == info_b['broker_value']
    env.close()


def test_get_stat_and_initial_action():
    env = BTgymEnv(strategy=DevStrat_4_11, **QUIET)
    steps = run_random_episode(env)
    stat = env.get_stat()
    assert stat['episode'] == 0 and stat['runtime'] > timedelta(0)
    last = steps[-1][3]
    # 'length' counts bars: DevStrat_4_11's 286 warm-up bars, then one per step; END OF DATA leaves skip_frame unused
    assert last['broker_message'] == '-' and last['step'] == len(env._trial.data) - WARMUP_4_11 - 10
    assert stat['length'] == env._trial.data.index.get_loc(last['time']) + 1 == last['step'] + WARMUP_4_11
    assert env.get_initial_action() == {'default_asset': 0}
    assert env.get_initial_portfolio_action() == {'default_asset': 'hold'}
    env.close()


def test_get_stat_finishes_a_running_episode():
    env = BTgymEnv(strategy=DevStrat_4_11, **QUIET)
    env.reset(seed=0)
    for _ in range(3):
        _, _, _, _, info = env.step(HOLD)
    stat = env.get_stat()
    assert len(env._trial.data) == 1435 and info['step'] == 10 + 3 * 10
    assert stat['length'] == env._trial.data.index.get_loc(info['time']) + 1 == info['step'] + WARMUP_4_11
    with pytest.raises(RuntimeError, match='call reset'):
        env.step(HOLD)
    env.close()


def test_renderings_are_pictures_of_the_last_step_and_episode():
    """Each mode draws a picture of its figure size at 75 dpi, the same one when asked twice and another one after
    another episode: the OHLC lines ('human'), heat maps of the observation ('external', 'internal') and backtrader's
    plot of the episode ('episode')."""
    env = BTgymEnv(strategy=DevStrat_4_11, render_modes=['human', 'episode', 'external', 'internal'])
    modes = ('human', 'external', 'internal', 'episode')
    pictures = []
    for seed in (0, 1):
        run_random_episode(env, seed=seed)
        pictures.append({mode: env.render(mode) for mode in modes})
        for mode, image in pictures[-1].items():
            np.testing.assert_array_equal(env.render(mode), image)
        assert_line_picture(pictures[-1]['human'])
        assert_heat_map(pictures[-1]['external'], (262, 525))
        assert_heat_map(pictures[-1]['internal'], (262, 525))
        assert_episode_picture(pictures[-1]['episode'])
    assert [np.array_equal(pictures[0][mode], pictures[1][mode]) for mode in modes] == [False] * 4
    with pytest.raises(ValueError, match='render mode'):
        env.render('metadata_plot')
    env.close()


def test_an_episode_not_recorded_runs_without_observers_and_trades_the_same():
    """`record_episode=False` drops the rendering observers of the episodes reset starts, nothing else: the same
    seed gives the same observations, rewards and broker values, and its 'episode' picture says it was not
    recorded while the 'human' picture still works."""
    env = BTgymEnv(strategy=DevStrat_4_11, render_modes=['human', 'episode'])
    recorded = run_random_episode(env, seed=3)
    env.get_stat()
    recorded_observers = {type(observer) for observer in env._finished_strategy.getobservers()}
    recorded_picture = env.render('episode')
    env.record_episode = False
    plain = run_random_episode(env, seed=3)
    env.get_stat()
    plain_observers = {type(observer) for observer in env._finished_strategy.getobservers()}
    assert len(plain) == len(recorded)
    for (obs_a, reward_a, _, info_a), (obs_b, reward_b, _, info_b) in zip(recorded, plain):
        np.testing.assert_array_equal(obs_a['external'], obs_b['external'])
        assert reward_a == reward_b and info_a['broker_value'] == info_b['broker_value']
        assert [bar['max_drawdown'] for bar in info_a['bars']] == [bar['max_drawdown'] for bar in info_b['bars']]
    assert {DrawDown, bt.observers.Broker, bt.observers.BuySell, bt.observers.Trades} <= recorded_observers
    assert plain_observers == set()
    not_recorded = env.render('episode')
    assert not_recorded.shape != recorded_picture.shape or np.abs(
        not_recorded.astype(int) - recorded_picture).mean() > 1
    np.testing.assert_array_equal(not_recorded, env.renderer.render_message(
        'episode {} was not recorded (record_episode was False at its reset)'.format(env._episode_number)))
    assert_line_picture(env.render('human'))
    env.record_episode = True
    run_random_episode(env, seed=3)
    np.testing.assert_array_equal(env.render('episode'), recorded_picture)
    env.close()


def test_drawdown_observer_gives_backtraders_values(monkeypatch):
    """The drawdown the strategy keeps itself (episodes without observers) and `strategy.observers.DrawDown` (drawn
    episodes) give backtrader's `DrawDown` observer values: the per-bar drawdown and max drawdown of random-action
    episodes (trades, losses, recoveries) equal those of backtrader's, as read by the strategy, and so do the
    observations."""
    from btgym_aac.env import engine

    def bars(seed, recorded):
        env = BTgymEnv(strategy=DevStrat_4_11, drawdown_call=50)
        env.record_episode = recorded
        steps = [run_random_episode(env, seed=episode_seed) for episode_seed in (seed, seed + 1)]
        lines = env._finished_strategy.stats.drawdown
        reads = [line[ago] for line in (lines.drawdown, lines.maxdrawdown) for ago in (0, -1, -5)]
        env.close()
        return steps, reads

    ours, our_reads = bars(5, recorded=False)
    drawn, drawn_reads = bars(5, recorded=True)
    monkeypatch.setattr(engine, 'DrawDown', bt.observers.DrawDown)
    reference, reference_reads = bars(5, recorded=True)
    assert our_reads == drawn_reads == reference_reads
    drawdowns = []
    for our_episode, reference_episode in zip(ours, reference):
        assert len(our_episode) == len(reference_episode)
        for (obs_a, _, _, info_a), (obs_b, _, _, info_b) in zip(our_episode, reference_episode):
            for name in ('drawdown', 'max_drawdown'):
                assert [bar[name] for bar in info_a['bars']] == [bar[name] for bar in info_b['bars']]
            drawdowns += [bar['drawdown'] for bar in info_a['bars']]
            np.testing.assert_array_equal(obs_a['internal'], obs_b['internal'])
    assert max(drawdowns) > 0.1 and min(drawdowns) == 0.0


def test_each_env_renders_with_its_own_settings_and_its_own_last_step():
    """Renderer settings and the last rendered images belong to each env, not to a class shared by every env of a
    process."""
    small = BTgymEnv(strategy=DevStrat_4_11, render_modes=['human'], render_dpi=40)
    large = BTgymEnv(strategy=DevStrat_4_11, render_modes=['human'])
    try:
        small.reset(seed=0)
        large.reset(seed=1)
        image = small.render('human')
        for _ in range(3):
            large.step(HOLD)
        np.testing.assert_array_equal(small.render('human'), image)
        assert large.render('human').shape[0] > image.shape[0]
        assert small.renderer.render_dpi == 40 and large.renderer.render_dpi == BTgymRendering.defaults['render_dpi']
        assert BTgymRendering.defaults['render_dpi'] != 40
    finally:
        small.close()
        large.close()


def test_render_before_first_episode_and_disabled_rendering():
    env = BTgymEnv(strategy=DevStrat_4_11)
    no_episode_yet = env.renderer.render_message('no finished episode to render yet')
    np.testing.assert_array_equal(env.render('episode'), no_episode_yet)
    env.close()
    quiet = BTgymEnv(strategy=DevStrat_4_11, **QUIET)
    quiet.reset(seed=0)
    with pytest.raises(RuntimeError, match='rendering is disabled'):
        quiet.render('human')
    quiet.close()


def _episode_values(seed, results, key):
    env = BTgymEnv(strategy=DevStrat_4_11, **QUIET)
    results[key] = [info['broker_value'] for _, _, _, info in run_random_episode(env, seed=seed)]
    env.close()


def test_envs_in_several_threads_match_sequential_runs():
    sequential, threaded = {}, {}
    for seed in (1, 2, 3):
        _episode_values(seed, sequential, seed)
    threads = [threading.Thread(target=_episode_values, args=(seed, threaded, seed)) for seed in (1, 2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert threaded == sequential


def test_envs_interleaved_in_one_thread():
    env_a, env_b = BTgymEnv(strategy=DevStrat_4_11, **QUIET), BTgymEnv(**QUIET)
    env_a.reset(seed=1)
    env_b.reset(seed=1)
    for _ in range(20):
        obs_a, *_ = env_a.step(BUY)
        obs_b, *_ = env_b.step(SELL)
        assert obs_a in env_a.observation_space and obs_b in env_b.observation_space
    env_a.close()
    env_b.close()


def test_step_from_another_thread_is_refused_clearly():
    env = BTgymEnv(strategy=DevStrat_4_11, **QUIET)
    env.reset(seed=0)
    errors = []

    def step_elsewhere():
        try:
            env.step(HOLD)
        except RuntimeError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=step_elsewhere)
    thread.start()
    thread.join(timeout=30)
    assert errors and 'thread that called reset' in errors[0]
    env.close()


def test_close_is_idempotent_and_env_can_reset_again():
    env = BTgymEnv(**QUIET)
    env.reset(seed=0)
    env.close()
    env.close()
    with pytest.raises(RuntimeError, match='call reset'):
        env.step(HOLD)
    observation, _ = env.reset(seed=0)
    assert observation in env.observation_space
    env.close()


# ----------------------------------------------------------------------------------------------- bad input


def test_action_outside_action_space():
    env = BTgymEnv(**QUIET)
    env.reset(seed=0)
    for bad in (4, -1, {'default_asset': 7}, {'other_asset': 1}, 'buy', [1, 2]):
        with pytest.raises(ValueError, match='action'):
            env.step(bad)
    env.close()


def test_stepping_a_finished_episode():
    env = BTgymEnv(**QUIET)
    run_random_episode(env)
    with pytest.raises(RuntimeError, match='terminated; call reset'):
        env.step(HOLD)
    env.close()


def test_step_before_reset():
    env = BTgymEnv(**QUIET)
    with pytest.raises(RuntimeError, match='call reset'):
        env.step(HOLD)


def test_unknown_argument_is_named():
    with pytest.raises(TypeError, match='drawdown_cal'):
        BTgymEnv(drawdown_cal=3)


@pytest.mark.parametrize('kwargs, message', [
    (dict(skip_frame=0), 'skip_frame must be a whole number of bars >= 1, got 0'),
    (dict(skip_frame=2.5), 'skip_frame must be a whole number of bars >= 1, got 2.5'),
    (dict(start_cash=-5), 'start_cash must be a finite number > 0, got -5'),
    (dict(start_cash='lots'), "start_cash must be a finite number > 0, got 'lots'"),
    (dict(episode_duration='1 day'), 'episode_duration must be a dict like {"days": 1, "hours": 0} or a timedelta, '
                                     "got '1 day'"),
], ids=['skip-zero', 'skip-float', 'cash', 'cash-type', 'duration-type'])
def test_bad_skip_frame_start_cash_or_duration_is_named(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=re.escape(message)):
        BTgymEnv(**kwargs)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match='no_such_file.csv'):
        BTgymEnv(filename=str(tmp_path / 'no_such_file.csv'))


def test_empty_file(tmp_path):
    path = tmp_path / 'empty.csv'
    path.write_text('')
    with pytest.raises(ValueError, match='empty'):
        BTgymEnv(filename=str(path))


def test_unparsable_dates(tmp_path):
    path = tmp_path / 'bad_dates.csv'
    path.write_text('20170102 000000;1.1;1.2;1.0;1.1;0\nyesterday;1.1;1.2;1.0;1.1;0\n')
    with pytest.raises(ValueError, match='yesterday'):
        BTgymEnv(filename=str(path))


def test_missing_columns(tmp_path):
    path = tmp_path / 'no_close.csv'
    path.write_text('datetime,open,high,low\n2017-01-02 00:00,1.1,1.2,1.0\n')
    with pytest.raises(ValueError, match='close'):
        BTgymEnv(filename=str(path))


def test_nan_bars(tmp_path):
    frame = make_sine_data(num_bars=3000)
    frame.iloc[1234, frame.columns.get_loc('close')] = np.nan
    with pytest.raises(ValueError, match=str(frame.index[1234])):
        BTgymEnv(dataframe=frame)


def test_data_too_short_for_one_episode():
    with pytest.raises(ValueError, match='too short|not enough|fewer'):
        BTgymEnv(dataframe=make_sine_data(num_bars=600))


class _FillLog(bt.Analyzer):
    """Records every completed order as (bar time, executed size, price, commission)."""

    def start(self):
        self.rets['fills'] = []

    def notify_order(self, order):
        if order.status == order.Completed:
            executed = order.executed
            self.rets['fills'].append((self.strategy.data.datetime.datetime(), executed.size, executed.price,
                                       executed.comm))


def test_custom_engine_runs_as_configured():
    engine = bt.Cerebro()
    engine.addstrategy(DevStrat_4_11, start_cash=2000, commission=0.0001, leverage=10.0, order_size=2000,
                       drawdown_call=10, target_call=10, reward_scale=7)
    steps = run_random_episode(BTgymEnv(engine=engine, render_enabled=False), seed=4)
    assert steps[0][3]['broker_value'] == pytest.approx(2000.0)
    assert all(abs(reward) <= 7 for _, reward, _, _ in steps)

    engine.addanalyzer(_FillLog, _name='fill_log')
    env = BTgymEnv(engine=engine, render_enabled=False)
    _, info = env.reset(seed=4)
    fill_time = info['time'] + timedelta(minutes=2)  # submitted on the next bar, filled at the one after
    _, _, _, _, info = env.step(BUY)
    after_fill = next(bar for bar in info['bars'] if bar['time'] == fill_time)
    env.step(HOLD)
    fills = env.get_stat()['fill_log']['fills']
    price = env._trial.data['open'].loc[fill_time]
    env.close()
    assert len(fills) == 1
    (time, size, fill_price, commission), = fills
    assert (time, size) == (fill_time, 2000) and fill_price == pytest.approx(price, abs=1e-12)
    assert commission == pytest.approx(0.0001 * 2000 * price, rel=1e-9)
    # leverage 10: a tenth of the position's price is taken from the cash, plus the commission
    assert after_fill['broker_cash'] == pytest.approx(2000.0 - 2000 * price / 10.0 - commission, rel=1e-12)


def test_dataframe_with_hourly_bars():
    index = pd.date_range('2016-01-04', periods=4000, freq='1h')
    frame = make_random_walk_data(num_bars=4000, seed=8)
    frame.index = index
    env = BTgymEnv(dataframe=frame, episode_duration={'days': 40, 'hours': 0, 'minutes': 0}, skip_frame=5, **QUIET)
    steps = run_random_episode(env)
    assert steps[1][3]['time'] - steps[0][3]['time'] == timedelta(hours=5)
    env.close()


class StatRecordingStrategy(DevStrat_4_11):
    """Records the statistics params each episode's strategy gets."""
    seen = []

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen.append((self.p.dataset_stat, self.p.trial_stat, self.p.episode_stat, len(self.data.close.array)))


class StateDroppingStrategy(DevStrat_4_11):
    def get_state(self):
        state = super().get_state()
        return {key: value for key, value in state.items() if key != 'internal'}


def test_strategy_gets_dataset_trial_and_episode_statistics():
    """The strategy params carry pandas `describe()` of the dataset, the trial and the episode."""
    frame = make_random_walk_data(num_bars=6000, seed=1)
    StatRecordingStrategy.seen.clear()
    env = BTgymEnv(dataframe=frame, strategy=StatRecordingStrategy, **QUIET)
    for _ in range(2):
        env.reset()
        trial = env._trial.data
    env.close()
    assert len(StatRecordingStrategy.seen) == 2
    dataset_stat, trial_stat, episode_stat, bars = StatRecordingStrategy.seen[-1]
    pd.testing.assert_frame_equal(dataset_stat, frame.describe())
    pd.testing.assert_frame_equal(trial_stat, trial.describe())
    assert episode_stat.loc['count', 'close'] == bars == len(trial)
    assert episode_stat.loc['max', 'high'] == pytest.approx(trial['high'].max())


def test_episode_too_short_for_the_warmup_names_the_bars_needed():
    """DevStrat_4_11 warms up 286 bars; with skip_frame 10 an episode needs 286 + 2 * 10 + 1 bars for one step."""
    short = BTgymEnv(strategy=DevStrat_4_11, episode_duration={'minutes': 306}, **QUIET)
    with pytest.raises(RuntimeError, match='an episode of 306 bars is too short for DevStrat_4_11: its warm-up of '
                                           '286 bars and skip_frame 10 need at least 307 bars'):
        short.reset()
    shortest = BTgymEnv(strategy=DevStrat_4_11, episode_duration={'minutes': 307}, **QUIET)
    shortest.reset()
    _, _, terminated, _, _ = shortest.step(HOLD)
    assert terminated


def test_state_shape_that_does_not_fit_the_strategy_is_named():
    state_shape = dict(DevStrat_4_11.params.state_shape)
    state_shape['internal'] = spaces.Box(-2, 2, (30, 1, 6), np.float32)
    env = BTgymEnv(strategy=DevStrat_4_11, state_shape=state_shape, **QUIET)
    with pytest.raises(ValueError, match=r"observation\['internal'\] has shape \(20, 1, 6\) but the state_shape "
                                         r"space says \(30, 1, 6\)"):
        env.reset()
    with pytest.raises(ValueError, match=r"the strategy gives no observation\['internal'\]"):
        BTgymEnv(strategy=StateDroppingStrategy, **QUIET).reset()


def test_asset_names_must_be_data_line_names():
    with pytest.raises(ValueError, match=r"asset_names \['EURUSD'\] are not among the data line names "
                                         r"\['default_asset'\]"):
        BTgymEnv(asset_names=['EURUSD'], **QUIET)
    env = BTgymEnv(asset_names=['EURUSD'], data_names=['EURUSD'], **QUIET)
    env.reset()
    assert env.step(BUY)[4]['broker_message'] != ''
    env.close()


def test_reset_data_switches_the_data_source(tmp_path):
    first = write_histdata_csv(make_random_walk_data(num_bars=3000, seed=1), str(tmp_path / 'a.csv'))
    second_frame = make_random_walk_data(num_bars=3000, seed=2, start='2018-06-04 00:00')
    second = write_histdata_csv(second_frame, str(tmp_path / 'b.csv'))
    StatRecordingStrategy.seen.clear()
    env = BTgymEnv(filename=first, strategy=StatRecordingStrategy, episode_duration={'hours': 8}, **QUIET)
    _, info = env.reset()
    assert info['time'].year == 2017
    env.step(HOLD)
    env.reset_data(data_filename=second)
    with pytest.raises(RuntimeError, match='call reset'):
        env.step(HOLD)
    _, info = env.reset()
    assert info['time'].year == 2018
    pd.testing.assert_frame_equal(StatRecordingStrategy.seen[-1][0], second_frame.describe())
    env.close()


def test_bar_infos_are_built_when_read_and_equal_the_eager_ones():
    """A step's `bars` are built from per-bar records the first time each is read; they equal the dicts of a
    strategy whose own `get_info` (here the base one, called through a subclass) the engine calls on every bar."""
    from btgym_aac.strategy.base import BarInfos

    class EagerInfo(DevStrat_4_11):
        def get_info(self):
            return dict(super().get_info(), eager=True)

    def steps(strategy):
        env = BTgymEnv(strategy=strategy, **QUIET)
        run = run_random_episode(env, seed=4)
        env.close()
        return run

    lazy, eager = steps(DevStrat_4_11), steps(EagerInfo)
    assert len(lazy) == len(eager) > 10
    for (_, _, _, lazy_info), (_, _, _, eager_info) in zip(lazy, eager):
        bars = lazy_info['bars']
        assert isinstance(bars, BarInfos) and isinstance(eager_info['bars'], list)
        assert bars._infos[:-1] == [None] * (len(bars) - 1) or len(bars) == 1
        expected = [{key: value for key, value in info.items() if key != 'eager'} for info in eager_info['bars']]
        assert bars == expected and list(bars[1:]) == expected[1:]
        assert bars[0] is bars[0] and all(info['eager'] for info in eager_info['bars'])
        assert {key: value for key, value in lazy_info.items() if key != 'bars'} == expected[-1]
    with pytest.raises(IndexError):
        lazy[-1][3]['bars'][len(lazy[-1][3]['bars'])]


@pytest.mark.parametrize('trade_history', [False, True])
def test_trade_history_is_kept_only_when_asked(trade_history):
    """Backtrader's trade history (`trade.history`) is off unless `trade_history=True`; the trades are the same."""
    kwargs = dict(QUIET, trade_history=True) if trade_history else QUIET
    env = BTgymEnv(strategy=DevStrat_4_11, **kwargs)
    run_random_episode(env, seed=2)
    env.get_stat()
    trades = [trade for by_data in env._finished_strategy._trades.values() for by_id in by_data.values()
              for trade in by_id]
    env.close()
    assert len(trades) > 3
    assert all(bool(trade.history) == trade_history for trade in trades)
    if trade_history:
        assert all(trade.history[-1].status.status == trade.status for trade in trades)
