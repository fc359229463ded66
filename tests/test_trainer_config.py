"""`AacConfig`: a trainer's settings as one validated dataclass, resolved (ranges drawn, defaults filled in) into
`trainer.config`, which the trainer's original attribute names read."""
import ast
import dataclasses
import inspect

import numpy as np
import pytest

from btgym_aac.algorithms import A3C, PPO, AacConfig, Unreal
from btgym_aac.algorithms.config import LOG_UNIFORM_SETTINGS, SETTING_NAMES, configured
from btgym_aac.algorithms.common.math_utils import log_uniform
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac.compat import tf
from btgym_aac.env import gym_wrappers

POLICY = {'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (8,), 'lstm_layers': (8,)}}


def build(trainer_class, **kwargs):
    """A trainer on CartPole in a graph of its own (its env closed)."""
    env = gym_wrappers.TestModeEnv(env_id='CartPole-v1')
    try:
        with tf.Graph().as_default():
            return trainer_class(env=env, task=0, policy_config=POLICY, test_mode=True, **kwargs)
    finally:
        env.close()


def test_every_field_has_a_docstring():
    tree = ast.parse(inspect.getsource(AacConfig))
    body = tree.body[0].body
    documented = {statement.target.id for statement, following in zip(body, body[1:])
                  if isinstance(statement, ast.AnnAssign) and isinstance(following, ast.Expr)
                  and isinstance(following.value, ast.Constant) and isinstance(following.value.value, str)}
    assert documented == {field.name for field in dataclasses.fields(AacConfig)}


def test_resolve_draws_the_ranges_in_order_and_fills_in_the_defaults():
    config = AacConfig(model_beta=[1e-3, 1e-1], opt_learn_rate=[1e-5, 1e-3], rollout_length=7,
                       use_value_replay=True, use_off_policy_aac=True, replay_memory_size=100)
    np.random.seed(5)
    resolved = config.resolve()
    np.random.seed(5)
    expected = {name: log_uniform(getattr(config, name), 1) for name in LOG_UNIFORM_SETTINGS}
    assert {name: getattr(resolved, name) for name in LOG_UNIFORM_SETTINGS} == expected
    assert 1e-3 <= resolved.model_beta <= 1e-1 and 1e-5 <= resolved.opt_learn_rate <= 1e-3
    assert resolved.opt_end_learn_rate == resolved.opt_learn_rate  # None: constant
    assert resolved.opt_decay_steps == config.opt_max_env_steps == 10 ** 7
    assert resolved.replay_rollout_length == 7
    assert resolved.use_value_replay is False and config.use_value_replay is True  # off with off-policy A3C
    assert resolved.resolve() is resolved


def test_a_trainer_keeps_the_resolved_config_and_reads_its_settings_through_it():
    np.random.seed(0)
    trainer = build(PPO, config=AacConfig(rollout_length=7, model_beta=[0.01, 0.02]), num_epochs=2, random_seed=1)
    np.random.seed(1)
    assert trainer.config == AacConfig(rollout_length=7, model_beta=[0.01, 0.02], num_epochs=2, test_mode=True,
                                       _use_target_policy=True).resolve()
    assert (trainer.rollout_length, trainer.num_epochs, trainer.use_target_policy, trainer.use_memory) == \
        (7, 2, True, False)
    assert 0.01 <= trainer.model_beta <= 0.02
    with pytest.raises(AttributeError, match="'PPO' object has no attribute 'model_alpha'"):
        trainer.model_alpha


def test_settings_beside_a_resolved_config_and_configs_of_another_type_are_refused():
    resolved = AacConfig().resolve()
    with pytest.raises(ValueError, match=r"settings \['rollout_length'\] cannot replace fields of a resolved "
                                         r"AacConfig"):
        configured(resolved, {'rollout_length': 5})
    assert configured(resolved, {}) is resolved
    with pytest.raises(TypeError, match='config must be an AacConfig, got dict'):
        configured({'rollout_length': 5}, {})


def test_a_bad_setting_is_named_whether_given_as_a_kwarg_or_in_a_config():
    with pytest.raises(ValueError, match='rollout_length must be a whole number >= 1, got 0'):
        AacConfig(rollout_length=0)
    with pytest.raises(ValueError, match='model_gamma'):
        build(A3C, model_gamma=1.5)


def test_the_subclasses_show_what_they_fix_and_every_setting_is_a_config_field():
    assert A3C.FIXED_SETTINGS['use_value_replay'] is False and PPO.FIXED_SETTINGS['_use_target_policy'] is True
    assert Unreal.FIXED_SETTINGS == {'name': 'UNREAL'}
    for fixed in (A3C.FIXED_SETTINGS, PPO.FIXED_SETTINGS):
        assert {name for name in fixed if name not in ('name', 'on_policy_loss', 'off_policy_loss')} <= SETTING_NAMES
