"""A trainer's settings as one typed, validated value: `AacConfig`.

`BaseAAC` builds one from the original's keyword arguments (`AacConfig(**settings)`), or takes one (`config=`),
and keeps its `resolve()`d form as `trainer.config`: the learner and the runners read their settings from it. A
bad value raises ValueError naming the setting at construction, rather than failing in a runner thread or
mid-training.
"""
import dataclasses
from typing import Optional, Sequence, Tuple, Union

import numpy as np

from btgym_aac.algorithms.common.math_utils import log_uniform
from btgym_aac.validation import check_number, check_whole_number

Range = Union[float, Sequence[float]]
"""A number, or a [low, high] pair to draw from log-uniformly when the trainer is built."""

LOG_UNIFORM_SETTINGS = ('model_beta', 'opt_learn_rate', 'rp_lambda', 'pc_lambda', 'vr_lambda', 'off_aac_lambda')
"""Settings given as a number or a [low, high] range to draw from log-uniformly, in the order they are drawn."""

WHOLE_NUMBER_SETTINGS = ('rollout_length', 'episode_summary_freq', 'env_render_freq', 'model_summary_freq',
                         'num_epochs', 'num_minibatches', 'pi_prime_update_period', 'episodes_per_trial')


@dataclasses.dataclass(frozen=True)
class AacConfig:
    """Settings of an advantage actor-critic trainer (`BaseAAC` and its subclasses), under the original's names.

    Every field is validated at construction; `resolve()` gives the values a trainer uses.
    """
    model_gamma: float = 0.99
    """Discount of the on-policy returns and advantages, in [0, 1]."""
    model_gae_lambda: float = 1.0
    """GAE lambda, in [0, 1] (1: n-step returns)."""
    model_beta: Range = 0.01
    """Entropy weight."""
    opt_learn_rate: Range = 1e-4
    """Adam's start learn rate."""
    opt_end_learn_rate: Optional[float] = None
    """Learn rate reached after `opt_decay_steps`, linearly; None: constant."""
    opt_max_env_steps: float = 10 ** 7
    """Default learn-rate decay horizon in env steps."""
    opt_decay_steps: Optional[float] = None
    """Learn-rate decay horizon in env steps; None: `opt_max_env_steps`."""
    opt_epsilon: float = 1e-5
    """Adam's epsilon."""
    rollout_length: int = 20
    """Env steps per on-policy rollout."""
    time_flat: bool = False
    """True: one-step backpropagation through time with per-frame stored contexts; False: unroll the rollout."""
    episode_train_test_cycle: Tuple[int, int] = (1, 0)
    """(train episodes, test episodes), repeated by every env's runner."""
    episodes_per_trial: int = 1
    """Episodes per data trial (an RL2 policy keeps its second LSTM's context across a trial's episodes)."""
    episode_summary_freq: int = 2
    """Episodes between a runner's episode summaries."""
    env_render_freq: int = 10
    """Episodes between renderings (chief only)."""
    model_summary_freq: int = 100
    """Train steps between model summaries."""
    test_mode: bool = False
    """True for gymnasium test environments (Atari, CartPole) instead of BTgymEnv."""
    aux_render_modes: Tuple[str, ...] = ()
    """Extra rendering modes summarised as images."""
    replay_memory_size: int = 2000
    """Frames each runner's replay memory holds."""
    replay_rollout_length: Optional[int] = None
    """Longest replayed sequence (None: `rollout_length`); at least `rp_sequence_size` with reward prediction."""
    use_off_policy_aac: bool = False
    """Add the actor-critic loss of a replayed sequence (turns value replay off)."""
    use_reward_prediction: bool = False
    """UNREAL's reward prediction task."""
    use_pixel_control: bool = False
    """UNREAL's pixel control task."""
    use_value_replay: bool = False
    """UNREAL's value replay task."""
    rp_lambda: Range = 1.0
    """Reward prediction loss weight."""
    pc_lambda: Range = 1.0
    """Pixel control loss weight."""
    vr_lambda: Range = 1.0
    """Value replay loss weight."""
    off_aac_lambda: Range = 1.0
    """Off-policy actor-critic loss weight."""
    gamma_pc: float = 0.9
    """Discount of the pixel-control n-step Q targets, in [0, 1]."""
    rp_reward_threshold: float = 0.1
    """|reward| above this counts as non-zero for reward prediction and priority replay."""
    rp_sequence_size: int = 3
    """Reward prediction sample length in frames."""
    clip_epsilon: float = 0.1
    """PPO's clip range (annealed with the learn rate)."""
    num_epochs: int = 1
    """Passes over a train step's batch; the local policy is synced after every update."""
    num_minibatches: int = 1
    """Updates per pass: the on-policy frames shuffled and split into this many minibatches (`time_flat` only, not
    with replay)."""
    normalize_advantages: bool = False
    """Scale the advantages of every update's batch to mean 0 and standard deviation 1."""
    behaviour_logits: bool = False
    """PPO's probability ratio against the logits the acting policy gave (stored with every frame) instead of the
    target policy pi'; no pi' is built."""
    target_kl: Optional[float] = None
    """PPO: a train step's updates stop after the first whose minibatch had drifted more than 1.5 x this from the old
    policy, as the mean `KL(pi_old || pi)` over its frames before that update (summed over per-asset heads); None:
    every epoch runs. Needs an old policy (pi' or `behaviour_logits`)."""
    pi_prime_update_period: int = 1
    """Train steps between copies of the local policy to the target policy pi'."""
    batch_acting: bool = True
    """With several envs, step them in lockstep in one runner thread that acts for all in one policy call."""
    acting_replica: Optional[bool] = None
    """Runners act through an `ActingReplica` in its own session; None: only in a distributed worker."""
    _use_global_network: bool = True
    """Build the global copy of the policy (and the train op)."""
    _use_target_policy: bool = False
    """Build the local target policy pi'."""
    _use_local_memory: bool = False
    """The runners keep no replay memory (a subclass keeps its own)."""
    _resolved: bool = dataclasses.field(default=False, repr=False, compare=False)
    """Whether `resolve()` made this config (its ranges drawn)."""

    def __post_init__(self):
        for name in LOG_UNIFORM_SETTINGS:
            check_log_uniform_range(name, getattr(self, name))
        for name in ('model_gamma', 'model_gae_lambda', 'gamma_pc'):
            check_number(name, getattr(self, name), high=1)
        check_number('opt_max_env_steps', self.opt_max_env_steps, low_open=True)
        if self.opt_decay_steps is not None:
            check_number('opt_decay_steps', self.opt_decay_steps, low_open=True)
        if self.opt_end_learn_rate is not None:
            check_number('opt_end_learn_rate', self.opt_end_learn_rate)
        for name in WHOLE_NUMBER_SETTINGS:
            object.__setattr__(self, name, check_whole_number(name, getattr(self, name)))
        object.__setattr__(self, 'episode_train_test_cycle', check_train_test_cycle(self.episode_train_test_cycle))
        object.__setattr__(self, 'aux_render_modes', tuple(self.aux_render_modes or ()))
        if self.target_kl is not None:
            check_target_kl(self.target_kl, self._use_target_policy or self.behaviour_logits)
        if self.num_minibatches > 1:
            check_minibatches(self.num_minibatches, self.time_flat, self.use_memory)
        if self.use_memory:
            check_replay(self.replay_memory_size, self._replay_rollout_length(), self.rp_sequence_size,
                         self.use_reward_prediction)

    def _replay_rollout_length(self):
        return self.rollout_length if self.replay_rollout_length is None else self.replay_rollout_length

    @property
    def use_any_aux_tasks(self):
        """Whether any UNREAL auxiliary task is on."""
        return self.use_value_replay or self.use_pixel_control or self.use_reward_prediction

    @property
    def use_memory(self):
        """Whether the runners keep replay memories."""
        return (self.use_any_aux_tasks or self.use_off_policy_aac) and not self._use_local_memory

    @property
    def use_target_policy(self):
        """Whether the trainer builds a target policy pi' (not when the stored `behaviour_logits` replace it)."""
        return self._use_target_policy and not self.behaviour_logits

    @property
    def use_global_network(self):
        """Whether the trainer builds the global policy and a train op."""
        return self._use_global_network

    def resolve(self):
        """The values a trainer uses: the log-uniform settings drawn (numpy's global random state, in the order of
        `LOG_UNIFORM_SETTINGS`), `opt_decay_steps`, `opt_end_learn_rate` and `replay_rollout_length` given their
        defaults, value replay off with the off-policy actor-critic loss.

        Returns:
            AacConfig (itself when already resolved).
        """
        if self._resolved:
            return self
        values = {name: log_uniform(getattr(self, name), 1) for name in LOG_UNIFORM_SETTINGS}
        values.update(
            opt_decay_steps=self.opt_max_env_steps if self.opt_decay_steps is None else self.opt_decay_steps,
            opt_end_learn_rate=values['opt_learn_rate'] if self.opt_end_learn_rate is None
            else self.opt_end_learn_rate,
            replay_rollout_length=self._replay_rollout_length(),
            use_value_replay=self.use_value_replay and not self.use_off_policy_aac,
            _resolved=True)
        return dataclasses.replace(self, **values)


SETTING_NAMES = frozenset(field.name for field in dataclasses.fields(AacConfig) if field.name != '_resolved')
"""The keyword arguments of `BaseAAC` that are settings."""


def check_log_uniform_range(name, value):
    """Returns `value` if it is a number >= 0 or a [low, high] sequence of them (for `math_utils.log_uniform`).

    Raises:
        ValueError: naming the setting and the value.
    """
    try:
        bounds = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        bounds = np.empty(0)
    if isinstance(value, (bool, str)) or bounds.size == 0 or not np.all(np.isfinite(bounds)) or np.any(bounds < 0):
        raise ValueError('{} must be a finite number >= 0 or a [low, high] pair of them for a log-uniform draw, '
                         'got {!r}'.format(name, value))
    return value


def check_replay(memory_size, rollout_length, rp_sequence_size, reward_prediction):
    """Raises ValueError naming the replay setting that the runners' memories could not be built or sampled with.

    Args:
        memory_size: `replay_memory_size`, frames per memory.
        rollout_length: `replay_rollout_length` (`rollout_length` when not given), longest replayed sequence.
        rp_sequence_size: reward-prediction sample length in frames.
        reward_prediction: whether reward prediction samples the memory.
    """
    check_whole_number('replay_memory_size', memory_size)
    check_whole_number('replay_rollout_length', rollout_length)
    if rollout_length > memory_size:
        raise ValueError('replay_rollout_length {} (rollout_length when not given) is longer than replay_memory_size '
                         '{}: the memory cannot hold a sequence that long'.format(rollout_length, memory_size))
    if reward_prediction:
        check_whole_number('rp_sequence_size', rp_sequence_size)
        if rollout_length < rp_sequence_size:
            raise ValueError('replay_rollout_length {} is shorter than rp_sequence_size {}: the memory cannot '
                             'return reward-prediction samples that long'.format(rollout_length, rp_sequence_size))


def check_target_kl(target_kl, has_old_policy):
    """Raises ValueError when `target_kl` is not a number > 0, or the trainer has no old policy to measure the
    drift from (`has_old_policy` False: no pi' and no `behaviour_logits`)."""
    check_number('target_kl', target_kl, low_open=True)
    if not has_old_policy:
        raise ValueError('target_kl {} needs an old policy to measure the drift from: a trainer with a target policy '
                         "(PPO) or behaviour_logits=True".format(target_kl))


def check_minibatches(num_minibatches, time_flat, use_memory):
    """Raises ValueError when `num_minibatches` > 1 cannot split a batch: its rows are frames only with `time_flat`
    (each frame carries its own RNN context), and replayed batches are not split."""
    if not time_flat:
        raise ValueError('num_minibatches {} needs time_flat=True: only then is every frame a batch row with its own '
                         'RNN context'.format(num_minibatches))
    if use_memory:
        raise ValueError('num_minibatches {} splits the on-policy batch only; it cannot be combined with replay '
                         '(use_off_policy_aac or an auxiliary task)'.format(num_minibatches))


def check_train_test_cycle(cycle):
    """Returns `episode_train_test_cycle` as an (n_train, n_test) tuple of ints >= 0, not both zero.

    Raises:
        ValueError: naming the setting and the value.
    """
    cycle = tuple(int(n) for n in cycle)
    if len(cycle) != 2 or min(cycle) < 0 or sum(cycle) == 0:
        raise ValueError('episode_train_test_cycle must be (n_train >= 0, n_test >= 0), not both zero; '
                         'got {!r}'.format(cycle))
    return cycle


def configured(config, settings):
    """The resolved config of a trainer: `config` with `settings` replacing its fields.

    Args:
        config: AacConfig or None (`AacConfig()`).
        settings: dict of AacConfig field name -> value.

    Returns:
        AacConfig, resolved (see `AacConfig.resolve`).

    Raises:
        TypeError: `config` is not an AacConfig.
        ValueError: a setting is out of its range, or settings are given with a config resolved already (its
            ranges were drawn: give the config from before `resolve()`).
    """
    if config is None:
        return AacConfig(**settings).resolve()
    if not isinstance(config, AacConfig):
        raise TypeError('config must be an AacConfig, got {}'.format(type(config).__name__))
    if settings and config._resolved:
        raise ValueError('settings {} cannot replace fields of a resolved AacConfig (its ranges are drawn); give the '
                         'config from before resolve()'.format(sorted(settings)))
    return (dataclasses.replace(config, **settings) if settings else config).resolve()


def fixed_kwargs(cls_name, kwargs, fixed):
    """`kwargs` with the settings subclass `cls_name` fixes; raises TypeError when `kwargs` sets one of them."""
    clash = sorted(set(kwargs) & set(fixed))
    if clash:
        raise TypeError('{} fixes {}; do not pass them (use BaseAAC or Unreal to set them)'.format(cls_name, clash))
    return dict(kwargs, **fixed)
