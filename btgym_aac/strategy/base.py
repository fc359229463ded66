"""BTgymBaseStrategy: the backtrader strategy that turns market and broker data into observations and rewards.

The environment engine drives it: on every bar the strategy updates its broker statistics and executes the
pending action; every `skip_frame` bars the engine asks it for `get_state()`, `get_reward()`, `get_info()` and
`_get_done()` and hands the agent's next action back through `self.action`.

Beside the strategy: the `metadata` observation (its space, `metadata_space`, and its values for one episode), and
the per-bar info dicts of a step, kept as small records while the episode runs and made into dicts when read
(`BarInfos`): training reads the latest bar's info of a step and seldom the others, so most are never built.
"""
from collections.abc import Sequence
from datetime import timezone

import backtrader as bt
import numpy as np
from gymnasium import spaces

from btgym_aac.spaces import DictSpace
from btgym_aac.strategy.broker_statistics import BrokerStatistics
from btgym_aac.strategy.observers import DrawdownLines
from btgym_aac.strategy.orders import ORDER_PARAMS, BracketOrders, OrderExecution, bracket_part, check_order_params
from btgym_aac.strategy.sizers import check_order_size, order_sizes
from btgym_aac.validation import check_number

SKIP_ACTION_KEY = '_skip_this'
_COUNTER_HIGH = 10 ** 10


def datetime_space():
    """The `datetime` observation space: the bar's [month / 12, day / 31, weekday / 6, hour / 24, minute / 60]
    (`BTgymBaseStrategy.get_datetime_state`).

    Returns:
        float32 Box [1, 5] in [0, 1].
    """
    return spaces.Box(low=0, high=1, shape=(1, 5), dtype=np.float32)


def metadata_space():
    """Episode metadata observation space.

    Integer fields are int64 boxes (the counters' bound 1e10 does not fit uint32, and the data layer produces
    int64 values); `timestamp` is the bar's POSIX time, float64.

    Returns:
        DictSpace with keys first_row, sample_num, timestamp, trial_num, trial_type, type.
    """
    return DictSpace({
        'type': spaces.Box(low=0, high=1, shape=(), dtype=np.int64),
        'trial_num': spaces.Box(low=0, high=_COUNTER_HIGH, shape=(), dtype=np.int64),
        'trial_type': spaces.Box(low=0, high=1, shape=(), dtype=np.int64),
        'sample_num': spaces.Box(low=0, high=_COUNTER_HIGH, shape=(), dtype=np.int64),
        'first_row': spaces.Box(low=0, high=_COUNTER_HIGH, shape=(), dtype=np.int64),
        'timestamp': spaces.Box(low=0, high=np.finfo(np.float64).max, shape=(), dtype=np.float64),
    })


def episode_metadata(meta):
    """Metadata values of an episode, from the episode sample's `metadata` dict (missing fields are 0).

    Args:
        meta: dict with optional type, parent_sample_num, parent_sample_type, sample_num, first_row.

    Returns:
        dict of `metadata_space()`'s keys -> numpy scalars; `timestamp` is 0 until the strategy sets it per bar.
    """
    return {
        'type': np.array(int(meta.get('type') or 0), dtype=np.int64),
        'trial_num': np.array(int(meta.get('parent_sample_num') or 0), dtype=np.int64),
        'trial_type': np.array(int(meta.get('parent_sample_type') or 0), dtype=np.int64),
        'sample_num': np.array(int(meta.get('sample_num') or 0), dtype=np.int64),
        'first_row': np.array(int(meta.get('first_row') or 0), dtype=np.int64),
        'timestamp': np.array(0.0, dtype=np.float64),
    }


def bar_info(record, tz):
    """The info dict of one bar.

    Args:
        record: tuple (step, datetime number, action, broker message, cash, value, (drawdown, max drawdown), position)
            from `BTgymBaseStrategy.bar_record`; position is a size or a dict asset -> size.
        tz: the time zone of the data's datetime line (None for naive times).

    Returns:
        dict with step, time, action, broker_message, broker_cash, broker_value, drawdown, max_drawdown and
        positions (a dict of sizes) or position (one size).
    """
    step, time, action, message, cash, value, (drawdown, max_drawdown), position = record
    info = {
        'step': step,
        'time': bt.num2date(time, tz=tz, naive=True),
        'action': dict(action),
        'broker_message': message,
        'broker_cash': cash,
        'broker_value': value,
        'drawdown': drawdown,
        'max_drawdown': max_drawdown,
    }
    if isinstance(position, dict):
        info['positions'] = dict(position)
    else:
        info['position'] = position
    return info


class BarInfos(Sequence):
    """The info dicts of the bars of one step, in order; each is built by `bar_info` the first time it is read.

    Args:
        records: list of `bar_info` records.
        tz: the time zone of the data's datetime line.
    """

    def __init__(self, records, tz):
        self._records = records
        self._tz = tz
        self._infos = [None] * len(records)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[position] for position in range(len(self))[index]]
        position = range(len(self._records))[index]
        info = self._infos[position]
        if info is None:
            info = self._infos[position] = bar_info(self._records[position], self._tz)
        return info

    def __len__(self):
        return len(self._records)

    def __eq__(self, other):
        if isinstance(other, (BarInfos, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self):
        return 'BarInfos({!r})'.format(list(self))


class BTgymBaseStrategy(bt.Strategy, BrokerStatistics, OrderExecution, BracketOrders):
    """Base trading strategy: broker statistics, normalisations, potential-based reward and episode end rules.

    Each key `k` of the `state_shape` param needs a method `get_<k>_state()`; `get_state()` returns the dict of
    all of them. Subclasses add indicators in `set_datalines()` and observation keys by adding state methods.

    Class attributes: `time_dim` (observation window), `skip_frame`, `avg_period` (length of the broker statistic
    windows in observations), `warmup_period` (bars before the first decision; defaults to the larger of
    `time_dim` and `avg_period`, so every window is full), `gamma`, `reward_scale`, `portfolio_actions`.

    Broker statistics are kept for max(avg_period, 2 * skip_frame) bars: the reward needs two skip_frame
    windows, so a shorter `avg_period` still gives finite rewards. The statistics come from the
    `broker_statistics.BrokerStatistics` mixin, the orders of the actions from `orders.OrderExecution` and
    `orders.BracketOrders`.

    Params (backtrader `params`, set with `cerebro.addstrategy(cls, **kwargs)` or as env kwargs):
        state_shape: dict of gymnasium spaces, one per observation key (default: `raw` OHLC window and metadata).
        cash_name, asset_names: broker cash and data line names.
        start_cash, commission, leverage: broker settings applied when given (commission >= 0, leverage > 0).
        gamma: discount of the potential-based shaping term, in [0, 1].
        reward_scale: reward multiplier (> 0); rewards are clipped to [-reward_scale, reward_scale].
        drawdown_call: episode ends when max drawdown reaches this many percent (> 0).
        target_call: episode ends when the portfolio gains more than this many percent (> 0).
        portfolio_actions: discrete action names ('hold' first) or None for continuous target-percent actions.
        skip_frame: bars between two agent decisions.
        order_size: dict asset -> stake, a scalar, or None to take the stake of the cerebro's fixed sizer (> 0).
        stop_loss, take_profit, distance_unit, pip_size, atr_period, trailing_stop, sizer: orders as actions
            (brackets, trailing stops, sizers; all off by default), see `orders.BracketOrders`.
        metadata, dataset_stat, episode_stat, trial_stat, trial_metadata: set by the engine per episode.
        initial_action, initial_portfolio_action: set by the environment.
    """
    time_dim = 4
    skip_frame = 1
    avg_period = time_dim
    warmup_period = None
    gamma = 0.99
    reward_scale = 1.0
    portfolio_actions = ('hold', 'buy', 'sell', 'close')

    params = dict(
        state_shape={
            'raw': spaces.Box(low=0, high=0, shape=(time_dim, 4), dtype=np.float64),
            'metadata': metadata_space(),
        },
        cash_name='default_cash',
        asset_names=['default_asset'],
        start_cash=None,
        commission=None,
        leverage=1.0,
        gamma=gamma,
        reward_scale=reward_scale,
        drawdown_call=10,
        target_call=10,
        dataset_stat=None,
        episode_stat=None,
        trial_stat=None,
        trial_metadata=None,
        metadata={},
        portfolio_actions=portfolio_actions,
        skip_frame=skip_frame,
        order_size=None,
        initial_action=None,
        initial_portfolio_action=None,
        **ORDER_PARAMS,
    )

    def __init__(self, **kwargs):
        params = self.p._getkwargs()
        self.check_params(params)
        if 'raw' in self.p.state_shape:
            self.time_dim = self.p.state_shape['raw'].shape[0]
        self.skip_frame = self.p.skip_frame
        self._init_episode_progress()
        self.log = getattr(self.env, '_log', None)
        self._set_broker(params)
        self._set_warmup()
        self.metadata = episode_metadata(self.p.metadata)
        self.state = {'raw': None, 'metadata': self.metadata}
        self.can_broadcast = bool(self.metadata['type'] and self.metadata['trial_type'])
        self._init_broker_statistics()
        self.set_datalines()
        self._state_getters = [
            (key, self._required_method('get_{}_state'.format(key))) for key in self.p.state_shape
        ]
        self._set_action_mode()

    def _init_episode_progress(self):
        """Step counters, end-of-episode flags, the pending action and the broker messages of a new episode."""
        self.iteration = 0
        self.env_iteration = 0
        self.inner_embedding = 1
        self.is_done = False
        self.is_done_enabled = False
        self.steps_till_is_done = 2
        self.done_message = ''
        self.action = self.action_to_repeat = self.last_action = self.p.initial_portfolio_action
        self.action_repeated = 0
        self.reward = 0.0
        self.order = None
        self.order_failed = 0
        self.broker_message = '_'
        self.final_message = '_'
        self.raw_state = None
        self.time_stamp = 0

    def _set_broker(self, params):
        """Applies the `start_cash` and `commission` params to the broker; sets `start_cash`, the `target_value`
        of the target call and the `order_size` per asset."""
        if self.p.start_cash is not None:
            self.broker.setcash(self.p.start_cash)
        if self.p.commission is not None:
            apply_commission = getattr(self.broker, 'apply_commission', None)  # a CostBroker keeps its scheme
            if apply_commission is not None:
                apply_commission(self.p.commission, leverage=self.p.leverage)
            else:
                self.broker.setcommission(commission=self.p.commission, leverage=self.p.leverage)
        self.start_cash = self.broker.startingcash
        self.target_value = self.start_cash * (1.0 + self.p.target_call / 100.0)
        self.order_size = self.order_sizes(params, self.env.sizers)

    def _set_warmup(self):
        """Sets `warmup_bars`, the bars before the first decision (`warmup_period`, by default the larger of `time_dim`
        and `avg_period`): backtrader calls `prenext()` on them and `next()` from then on.

        Raises:
            ValueError: the episode is too short for one decision after the warm-up.
        """
        self.warmup_bars = self.warmup_period or max(self.time_dim, self.avg_period)
        self._check_episode_length(self.warmup_bars)

    def _periodset(self):
        """Backtrader's minimum periods (from the indicators) raised to the warm-up on the first data line: the
        warm-up a moving average of `warmup_bars` bars over that line would set, without computing one."""
        super()._periodset()
        self._minperiods[0] = max(self._minperiods[0], self.warmup_bars)
        self._minperiod = max(self._minperiod, self.warmup_bars)

    @classmethod
    def check_params(cls, params):
        """Raises ValueError naming the first param no episode can run with (the env calls this at construction,
        before any episode).

        Args:
            params: dict of all the strategy's params (defaults updated with the given ones).
        """
        if params['commission'] is not None:
            check_number('commission', params['commission'])
        check_number('leverage', params['leverage'], low_open=True)
        check_number('gamma', params['gamma'], high=1)
        check_number('reward_scale', params['reward_scale'], low_open=True)
        check_number('drawdown_call', params['drawdown_call'], low_open=True)
        check_number('target_call', params['target_call'], low_open=True)
        check_order_size(params['order_size'], params['asset_names'])
        check_order_params(params)

    @classmethod
    def state_shape_for(cls, data_names, asset_names):
        """Hook for strategies whose observations depend on the data lines (one stream per line, say): the
        `state_shape` for these lines, which the env uses when `state_shape` is not given.

        Args:
            data_names: tuple of the dataset's data line names.
            asset_names: tuple of the traded assets.

        Returns:
            dict of spaces, or None to keep the `state_shape` param (this class: None).
        """
        return None

    order_sizes = staticmethod(order_sizes)
    """Order size per asset (see `sizers.order_sizes`; the env calls it at construction to check the engine's
    sizer)."""

    def _required_method(self, name):
        method = getattr(self, name, None)
        if method is None:
            raise NotImplementedError('{} needs a method `{}()`'.format(type(self).__name__, name))
        return method

    def set_datalines(self):
        """Hook for custom indicators and data lines; called once at the end of `__init__`."""

    def _start(self):
        """The `sizer` param's sizer (replacing the engine's), backtrader's start, then `stats.drawdown` from the
        strategy's own drawdown where the episode runs without the `DrawDown` observer (the env adds it to the
        episodes it draws)."""
        self._set_sizer()
        super()._start()
        if not hasattr(self.stats, 'drawdown'):
            self.stats.drawdown = DrawdownLines(self.drawdown_tracker)

    def _stop(self):
        """Ends the drawdown's bar lag (see `DrawdownTracker`), then backtrader's stop."""
        self.drawdown_tracker.finish()
        super()._stop()

    def _check_episode_length(self, warmup):
        """Raises ValueError when the episode cannot give one decision: the first observation comes
        `skip_frame` bars after the `warmup` bars, and the episode must not end at it."""
        needed = warmup + 2 * self.p.skip_frame + 1
        if self.data.numrecords < needed:
            raise ValueError(
                'an episode of {} bars is too short for {}: its warm-up of {} bars and skip_frame {} need at least '
                '{} bars for one step; lengthen episode_duration'.format(
                    self.data.numrecords, type(self).__name__, warmup, self.p.skip_frame, needed))

    # ----------------------------------------------------------------------------------------------- per bar

    def prenext(self):
        self.update_broker_stat()

    def nextstart(self):
        self.inner_embedding = len(self.data)
        self.next()

    def next(self):
        self.update_broker_stat()
        if SKIP_ACTION_KEY in self.action:
            if self.action_repeated < self.num_action_repeats:
                self.next_process_fn(self.action_to_repeat)
                self.action_repeated += 1
        else:
            self.next_process_fn(self.action)
            self.action_repeated = 0
            self.action_to_repeat = self.action

    def notify_trade(self, trade):
        if trade.isclosed:
            self.trade_just_closed = True
            self.trade_result += trade.pnlcomm
            self.realized_broker_value = self.broker.get_value()

    def notify_order(self, order):
        if order.status in (order.Submitted, order.Accepted):
            return
        part = bracket_part(order)
        if order.status == order.Completed:
            side = 'BUY' if order.isbuy() else 'SELL'
            self.broker_message = '{}{} executed, price: {:.5f}, size: {}'.format(
                '{} {} '.format(order.data._name, part) if part else '', side, order.executed.price,
                order.executed.size)
        elif part and (order.status == order.Canceled or part != 'entry' and order.status == order.Rejected):
            # no failure: cancelled by the agent, by the sibling's fill, or (children) with an entry that failed
            self.broker_message = '{}{} {} cancelled'.format(
                '' if self.broker_message in ('-', '_') else self.broker_message + '; ', order.data._name, part)
        elif order.status in (order.Canceled, order.Margin, order.Rejected):
            self.broker_message = 'ORDER FAILED with status: {}'.format(order.getstatusname())
            self.order_failed += 1
        self.order = None

    # ---------------------------------------------------------------------------------------------- state

    @staticmethod
    def _window(line, size):
        """Copy of the last `size` values of a backtrader line as a float64 array."""
        return np.array(line.get(size=size), dtype=np.float64)

    @staticmethod
    def _windows(lines, size):
        """The last `size` values of several backtrader lines side by side.

        Args:
            lines: sequence of lines (data lines, indicators).
            size: window length.

        Returns:
            float64 array [size, len(lines)].
        """
        x = np.empty((size, len(lines)))
        for column, line in enumerate(lines):
            x[:, column] = line.get(size=size)
        return x

    def get_raw_state(self):
        """Last `time_dim` bars of open, high, low, close.

        Returns:
            float64 array [time_dim, 4]; also kept as `self.raw_state` for the 'human' rendering.
        """
        data = self.data
        self.raw_state = self._windows((data.open, data.high, data.low, data.close), self.time_dim)
        return self.raw_state

    def get_internal_state(self):
        """All broker statistics over the last `avg_period` bars.

        Returns:
            array [avg_period, 1, number of statistics].
        """
        return self.broker_window(self.broker_datalines)[:, None, :]

    def get_datetime_state(self):
        """The current bar's time (`datetime_space`), for a strategy whose `state_shape` has `datetime`.

        Returns:
            array [1, 5]: [month / 12, day / 31, weekday / 6, hour / 24, minute / 60].
        """
        now = self._get_time()
        return np.array([[now.month / 12, now.day / 31, now.weekday() / 6, now.hour / 24, now.minute / 60]])

    def get_metadata_state(self):
        """Copy of the episode metadata with `timestamp` set to the current bar's POSIX time."""
        self.metadata['timestamp'] = np.array(self._get_timestamp(), dtype=np.float64)
        return dict(self.metadata)

    def get_state(self):
        """Observation dict: one entry per `state_shape` key, from the `get_<key>_state()` methods."""
        self.state = {key: getter() for key, getter in self._state_getters}
        return self.state

    def _get_time(self):
        return self.data.datetime.datetime()

    def _get_timestamp(self):
        return bt.num2date(self.data.datetime[0]).replace(tzinfo=timezone.utc).timestamp()

    # --------------------------------------------------------------------------------------------- reward

    def get_reward(self):
        """Potential-based shaped reward plus realised trade results, clipped to +-reward_scale.

        With S = skip_frame, U the unrealized-pnl window and d the current position duration:
        F = gamma * mean(U over the last min(d, S) bars) - mean(U over the S bars before that, 0 if d < S),
        R = sum of realized pnl over the last S bars; reward = clip(10 * (F + R) * reward_scale).

        Returns:
            float.
        """
        skip = self.p.skip_frame
        unrealized = np.asarray(self.broker_stat['unrealized_pnl'])
        duration = self.broker_stat['pos_duration'][-1]
        if duration == 0:
            shaping = 0.0
        else:
            potential_now = unrealized[-min(duration, skip):].mean()
            if duration < skip:
                potential_before = 0.0
            elif duration < 2 * skip:
                potential_before = unrealized[-(skip + duration):-skip].mean()
            else:
                potential_before = unrealized[-2 * skip:-skip].mean()
            shaping = self.p.gamma * potential_now - potential_before
        realized = float(np.sum(list(self.broker_stat['realized_pnl'])[-skip:]))
        scale = self.p.reward_scale
        self.reward = float(min(max((10.0 * shaping + 10.0 * realized) * scale, -scale), scale))
        return self.reward

    # ----------------------------------------------------------------------------------------------- info

    def get_info(self):
        """Per-bar information dict (a subclass may override it; the engine then calls it on every bar).

        Returns:
            dict with step, time, action, broker_message, broker_cash, broker_value, drawdown, max_drawdown; with
            per-asset statistics (several assets) also positions (dict asset -> position size), else position
            (the size of the position in the strategy's data).
        """
        return bar_info(self.bar_record(), self.data.datetime._tz)

    def bar_record(self):
        """What `get_info()` reads on this bar, as a `bar_info` record (built into the dict later)."""
        return (self.iteration, self.data.datetime[0], self.action, self.broker_message, self.broker.get_cash(),
                self.broker.get_value(), self.drawdown_tracker.seen(),
                self._sizes if self.asset_stat else self.position.size)

    def bar_infos_recorder(self):
        """How the engine keeps the infos of the bars of a step.

        Returns:
            (record, collect): `record()` is called on every bar, `collect(records)` makes the step's sequence of
            info dicts from what it returned: `bar_record` and lazily built `BarInfos` where `get_info` is this
            class's, else `get_info` and the list of its dicts.
        """
        if type(self).get_info is BTgymBaseStrategy.get_info:
            time_zone = self.data.datetime._tz
            return self.bar_record, lambda records: BarInfos(records, time_zone)
        return self.get_info, list

    # ----------------------------------------------------------------------------------------------- done

    def get_done(self):
        """User termination hook.

        Returns:
            tuple (is_done: bool, message: str).
        """
        return False, '-'

    def _fired_done_rule(self):
        """Returns the message of the first end-of-episode rule that fires now, or None."""
        if self.iteration >= (self.data.numrecords - self.inner_embedding - self.p.skip_frame
                              - self.steps_till_is_done):
            return 'END OF DATA'
        if self.drawdown_tracker.seen()[1] >= self.p.drawdown_call:
            return 'DRAWDOWN CALL'
        if self.broker.get_value() > self.target_value:
            return 'TARGET REACHED'
        is_done, message = self.get_done()
        return message if is_done else None

    def _get_done(self):
        """Checks the end-of-episode rules; the episode ends two bars after a rule fires, positions closed.

        Rules, in order: end of data, drawdown call, target reached, user `get_done()`.

        Returns:
            bool is_done.
        """
        if self.is_done_enabled:
            self.steps_till_is_done -= 1
            self._close_positions()
            if self.steps_till_is_done <= 0:
                self.is_done = True
            return self.is_done
        message = self._fired_done_rule()
        if message is not None:
            self.is_done_enabled = True
            self.done_message = self.final_message = message
            self.broker_message = '{} {}'.format(self.broker_message, message)
            self._close_positions()
        return self.is_done
