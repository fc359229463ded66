"""GuidedStrategy_0_0: DevStrat_4_12 observations plus the expert's advised actions; ExpertObserver plots them."""
import backtrader as bt
import numpy as np
from gymnasium import spaces

from btgym_aac.research.gps.oracle import Oracle
from btgym_aac.strategy.gen4 import DevStrat_4_12

EXPERT_KEY = 'expert'
"""Observation key of the expert action distribution [A]."""


class GuidedStrategy_0_0(DevStrat_4_12):
    """DevStrat_4_12 whose observations carry an `expert` state [A]: the `Oracle`'s advised action distribution
    for the current environment step, fitted on the whole rest of the episode (deliberate look-ahead).

    At the first decision bar (`nextstart`) the Oracle fits the episode's raw bars after the warm-up, merged by
    `skip_frame`; observation k (0 for the reset observation) sends row k, which summarises the `skip_frame`
    bars ending at the observation's bar.

    Params (beyond DevStrat_4_12's): `expert_config`, the `Oracle` keyword arguments other than `action_space`
    (the strategy's action indices).
    """
    params = dict(
        state_shape=dict(DevStrat_4_12.params.state_shape, **{
            EXPERT_KEY: spaces.Box(low=0, high=10, shape=(len(DevStrat_4_12.portfolio_actions),), dtype=np.float32),
        }),
        expert_config=dict(time_threshold=5, pips_threshold=5, pips_scale=1e-4, kernel_size=5, kernel_stddev=1),
    )

    @classmethod
    def check_params(cls, params):
        """DevStrat_4_12 checks, and the expert must fit the discrete actions and the `expert` state.

        Args:
            params: dict of all the strategy's params.
        """
        super().check_params(params)
        cls._make_expert(params)
        expert_space = params['state_shape'].get(EXPERT_KEY)
        wanted = (len(params['portfolio_actions']),)
        if expert_space is None or expert_space.shape != wanted:
            raise ValueError('{}: state_shape needs an `{}` space of shape {} (one value per portfolio action), got '
                             '{}'.format(cls.__name__, EXPERT_KEY, wanted, expert_space))

    @classmethod
    def _make_expert(cls, params):
        """The Oracle of `params`: action indices of `portfolio_actions`, settings of `expert_config`.

        Raises:
            ValueError: continuous actions (`portfolio_actions` None) or bad `expert_config` settings.
        """
        if not params['portfolio_actions']:
            raise ValueError('{} needs discrete portfolio_actions, got {!r}'.format(
                cls.__name__, params['portfolio_actions']))
        try:
            return Oracle(action_space=np.arange(len(params['portfolio_actions'])), **params['expert_config'])
        except TypeError as error:
            raise ValueError('expert_config {!r} does not fit Oracle: {}'.format(params['expert_config'], error)) \
                from error

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.expert = self._make_expert(self.p._getkwargs())
        self.expert_actions = None
        self.current_expert_action = None

    def nextstart(self):
        """First decision bar: runs it as the base does, then fits the expert on the bars after it."""
        super().nextstart()
        frame = self.datas[0].p.dataname
        if not hasattr(frame, 'to_numpy'):
            raise TypeError('{} reads the episode from a pandas feed (PandasDirectData); the feed holds {!r}'.format(
                type(self).__name__, type(frame)))
        self.expert_actions = self.expert.fit(frame.to_numpy()[self.inner_embedding:],
                                              resampling_factor=self.p.skip_frame)

    def get_expert_state(self):
        """Expert advice of the current environment step.

        Returns:
            float array [A], also kept as `current_expert_action`.
        """
        self.current_expert_action = self.expert_actions[self.env_iteration]
        return self.current_expert_action


class ExpertObserver(bt.observer.Observer):
    """Plots the argmax of the owner's `current_expert_action` on every bar: `hold` 0, `buy` 1, `sell` -1,
    `close` 0, the other lines left NaN; nothing before the first observation."""
    lines = ('buy', 'sell', 'hold', 'close')
    plotinfo = dict(plot=True, subplot=True, plotname='Expert Actions', plotymargin=.8)
    plotlines = dict(
        buy=dict(marker='^', markersize=4.0, color='cyan', fillstyle='full'),
        sell=dict(marker='v', markersize=4.0, color='magenta', fillstyle='full'),
        hold=dict(marker='.', markersize=1.0, color='gray', fillstyle='full'),
        close=dict(marker='o', markersize=4.0, color='blue', fillstyle='full'),
    )
    marks = (('hold', 0.0), ('buy', 1.0), ('sell', -1.0), ('close', 0.0))
    """(line, value) per action index."""

    def next(self):
        advice = self._owner.current_expert_action
        if advice is None:
            return
        line, value = self.marks[int(np.argmax(advice))]
        getattr(self.lines, line)[0] = value
