"""CausalConvPolicy_0_0: GuidedPolicy_0_0 with the tree-shaped causal convolution encoder."""
from btgym_aac.compat import tf
from btgym_aac.research.causal_conv.networks import conv_1d_causal_encoder
from btgym_aac.research.gps.policy import GuidedPolicy_0_0
from btgym_aac.research.gps.strategy import EXPERT_KEY


class CausalConvPolicy_0_0(GuidedPolicy_0_0):
    """`GuidedPolicy_0_0` (a stacked-LSTM RL² policy exposing `expert_actions`) whose state encoder is
    `conv_1d_causal_encoder` by default.

    Being a guided policy it needs an `expert` observation key (the expert action distribution [A], as
    `GuidedStrategy_0_0` sends); no CausalConvStrategy sends one. For plain RL on their observations use
    `StackedLstmPolicy` or `AacStackedRL2Policy` with `state_encoder_class_ref=conv_1d_causal_encoder` (or
    `conv_1d_causal_attention_encoder`).
    """

    @classmethod
    def kwargs_readers(cls, kwargs):
        """The state encoder (given or this class's default), `lstm_network` and the pixel-control builders."""
        readers = super().kwargs_readers(kwargs)
        return (kwargs.get('state_encoder_class_ref', conv_1d_causal_encoder),) + tuple(readers[1:])

    def __init__(self, state_encoder_class_ref=conv_1d_causal_encoder, conv_1d_num_filters=32, conv_1d_filter_size=2,
                 conv_1d_slice_size=1, conv_1d_activation=tf.nn.elu, conv_1d_use_bias=False, **kwargs):
        """
        Args:
            state_encoder_class_ref: encoder builder of `external` and `internal`.
            conv_1d_num_filters: encoder filters F.
            conv_1d_filter_size: encoder kernel length k.
            conv_1d_slice_size: must be 1 (reserved by the original).
            conv_1d_activation: encoder activation.
            conv_1d_use_bias: accepted and unused (the encoder's convolutions always have a bias).
            **kwargs: `GuidedPolicy_0_0` arguments; `ob_space` must hold an `expert` key.

        Raises:
            ValueError: `conv_1d_slice_size` is not 1, or the observation space has no `expert` key.
        """
        if conv_1d_slice_size != 1:
            raise ValueError('CausalConvPolicy_0_0: conv_1d_slice_size must be 1, got {!r}'.format(conv_1d_slice_size))
        keys = getattr(kwargs.get('ob_space'), 'spaces', None)
        if keys is not None and EXPERT_KEY not in keys:
            raise ValueError(
                'CausalConvPolicy_0_0 is a guided policy: the observation space needs an `{}` key (expert action '
                'distribution [A], sent by e.g. GuidedStrategy_0_0), got keys {}; for observations without one use '
                'StackedLstmPolicy(state_encoder_class_ref=conv_1d_causal_encoder)'.format(EXPERT_KEY, list(keys)))
        super().__init__(state_encoder_class_ref=state_encoder_class_ref, conv_1d_num_filters=conv_1d_num_filters,
                         conv_1d_filter_size=conv_1d_filter_size, conv_1d_activation=conv_1d_activation, **kwargs)
