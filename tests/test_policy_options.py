"""Policy kwargs that no part of a policy reads are found (and a trainer warns of them); the ones its `__init__`s or
the builders its leftover kwargs reach name are not."""
import logbook
import pytest

from btgym_aac.algorithms import A3C
from btgym_aac.algorithms.policy import (Aac1dPolicy, AacDensePolicy, AacStackedRL2Policy, BaseAacPolicy,
                                         StackedLstmPolicy)
from btgym_aac.algorithms.policy.interface import unread_policy_kwargs
from btgym_aac.compat import tf
from btgym_aac.env import BTgymEnv
from btgym_aac.strategy import DevStrat_4_11


def custom_encoder(x, ob_space, ac_space, width=8, name='encoder', reuse=False, **kwargs):
    return x


@pytest.mark.parametrize('policy_class, kwargs, unread', [
    (BaseAacPolicy, {'lstm_layers': (64,), 'conv_2d_num_filters': (8,), 'duell_pc_stride': (2, 1),
                     'pc_estimator_stride': (2, 1)}, []),
    (BaseAacPolicy, {'lstm_layer': (64,), 'conv2d_num_filters': (8,)}, ['conv2d_num_filters', 'lstm_layer']),
    (Aac1dPolicy, {'lstm_class': None, 'linear_layer_ref': None, 'conv_2d_layer_ref': None}, []),
    (AacDensePolicy, {'dense_layers': (8,), 'lstm_layers': (8,), 'static_rnn': True}, []),
    (AacDensePolicy, {'conv_2d_num_filters': (8,)}, ['conv_2d_num_filters']),
    (StackedLstmPolicy, {'lstm_class_ref': None, 'dropout_keep_prob': 0.5, 'conv_2d_stride': (2, 1)}, []),
    (StackedLstmPolicy, {'state_encoder_class_ref': custom_encoder, 'width': 4}, []),
    (StackedLstmPolicy, {'width': 4}, ['width']),
    (AacStackedRL2Policy, {'lstm_2_init_period': 5, 'lstm_layers': (8, 8), 'lstm_2_init_periods': 5},
     ['lstm_2_init_periods']),
])
def test_unread_kwargs_are_found(policy_class, kwargs, unread):
    assert unread_policy_kwargs(policy_class, kwargs) == unread


def test_a_class_that_does_not_say_where_its_kwargs_go_is_not_judged():
    class OwnPolicy:
        def __init__(self, **kwargs):
            self.options = kwargs

    assert unread_policy_kwargs(OwnPolicy, {'anything': 1}) == []


def test_a_subclass_names_its_own_readers():
    def own_encoder(x, depth=3, **kwargs):
        return x

    class OwnPolicy(BaseAacPolicy):
        @classmethod
        def kwargs_readers(cls, kwargs):
            return super().kwargs_readers(kwargs) + (own_encoder,)

    assert unread_policy_kwargs(OwnPolicy, {'depth': 2, 'conv_2d_stride': (2, 1), 'deep': 1}) == ['deep']


def test_the_trainer_warns_of_each_unread_policy_kwarg():
    env = BTgymEnv(strategy=DevStrat_4_11, render_enabled=False, random_seed=0)
    try:
        with logbook.TestHandler() as handler, tf.Graph().as_default():
            A3C(env=env, task=0, policy_config={'class_ref': BaseAacPolicy, 'kwargs': {
                'lstm_layer': (16,), 'lstm_layers': (16,), 'conv_2d_num_filters': (4, 4, 4, 4)}})
    finally:
        env.close()
    warnings = [record.message for record in handler.records if record.level == logbook.WARNING]
    assert warnings == ['policy argument `lstm_layer` is read by no part of BaseAacPolicy; ignored']
