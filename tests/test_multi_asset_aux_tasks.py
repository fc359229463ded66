"""UNREAL's auxiliary tasks on the multi-asset envs (MultiDiscreteEnv, PortfolioEnv): value replay and reward
prediction train with the policy's default kwargs; pixel control, which needs a single image-like `external`
observation, is refused when asked for."""
import re

import numpy as np
import pytest

from btgym_aac.algorithms.aac import Unreal
from btgym_aac.algorithms.policy import AacStackedRL2Policy
from btgym_aac.compat import tf
from btgym_aac.data import make_cointegrated_pair
from btgym_aac.distributed.run_config import multi_asset_env_config
from test_trainers import Session
from trainer_helpers import scalar_events, tagged

pytestmark = pytest.mark.xdist_group('multi_asset_aux_tasks')  # one xdist worker builds the module's fixtures

ENV_KINDS = pytest.mark.parametrize('portfolio', [False, True], ids=['multi-discrete', 'portfolio'])
POLICY_KWARGS = {'lstm_layers': (16, 16)}
"""The policy's `pixel_control` left at its default: it follows the auxiliary tasks only where `external` is one
image-like array, so here the policy builds no pixel-control head."""


def multi_asset_env(portfolio):
    config = multi_asset_env_config(make_cointegrated_pair(num_bars=3000, seed=1), portfolio=portfolio)
    return config['class_ref'](**dict(config['kwargs'], render_enabled=False))


@pytest.fixture(scope='module', params=[False, True], ids=['multi-discrete', 'portfolio'])
def aux_train_step(request, tmp_path_factory):
    """One train step of Unreal with value replay and reward prediction on a multi-asset env: (session, what
    `Session.train_step` returned, whether the reward-prediction head's global weights moved)."""
    session = Session(Unreal, multi_asset_env(request.param), AacStackedRL2Policy, POLICY_KWARGS,
                      tmp_path_factory.mktemp('aux'), rollout_length=10, use_value_replay=True,
                      use_reward_prediction=True, replay_memory_size=40, rp_reward_threshold=0.001,
                      time_flat=True)  # as every shipped configuration: one-step unrolls, a graph half the size
    try:
        assert session.trainer.local_network.pc_q is None
        rp_head = [index for index, variable in enumerate(session.trainer.network.var_list)
                   if '/rp_' in variable.op.name]
        before = session.global_weights()
        step = session.train_step()
        after = session.global_weights()
        yield session, step, any(not np.array_equal(before[index], after[index]) for index in rp_head)
    finally:
        session.close()


def test_value_replay_and_reward_prediction_losses_are_computed_finite_on_replayed_sequences(aux_train_step):
    session = aux_train_step[0]
    assert [rollout.size for rollout in session.data['off_policy']] == [10]
    assert [rollout.size for rollout in session.data['off_policy_rp']] == [3]
    events = scalar_events(session.log_dir)
    for loss in ('aux/value_replay/v_loss', 'aux/reward_prediction/class_loss', 'on_policy/aac/value_loss'):
        (step, value), = tagged(events, loss)
        assert step == 10 and np.isfinite(value), loss


def test_a_train_step_with_auxiliary_tasks_moves_the_weights_and_the_reward_prediction_head(aux_train_step):
    """The step trains on the rollout's 10 frames; the reward-prediction head, trained by its loss alone, moves only
    when that loss reaches the update."""
    _, (frames, real, advance, moved), rp_moved = aux_train_step
    assert frames == real == advance == 10
    assert moved and rp_moved


@ENV_KINDS
def test_pixel_control_on_a_multi_asset_env_is_refused_naming_the_observation(portfolio):
    env = multi_asset_env(portfolio)
    message = ("pixel control needs a single [H, W, C] `external` observation, got shape OrderedDict([('X', (30, 1, "
               "3)), ('Y', (30, 1, 3))]); pass pixel_control=False")
    try:
        with tf.Graph().as_default(), pytest.raises(ValueError, match=re.escape(message)):
            Unreal(env=env, task=0, policy_config={'class_ref': AacStackedRL2Policy, 'kwargs': {'lstm_layers': (16,
                   16)}}, use_pixel_control=True, replay_memory_size=40)
    finally:
        env.close()
