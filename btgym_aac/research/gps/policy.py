"""GuidedPolicy_0_0: the stacked-LSTM RL² policy with a handle on the expert actions its observations carry."""
from btgym_aac.algorithms.nn.layer_norm import LayerNormBasicLSTMCell
from btgym_aac.algorithms.nn.layers import noisy_linear
from btgym_aac.algorithms.policy.stacked_lstm import AacStackedRL2Policy
from btgym_aac.research.gps.strategy import EXPERT_KEY


def conv_2d_settings(conv_2d_layer_config):
    """`conv_2d_network` settings of a per-layer config.

    Args:
        conv_2d_layer_config: sequence of (filters, kernel size, stride), one per layer; all layers must share
            the kernel size and the stride.

    Returns:
        dict conv_2d_num_filters, conv_2d_filter_size, conv_2d_stride.

    Raises:
        ValueError: the config is empty, malformed, or its layers differ in kernel size or stride.
    """
    try:
        filters, kernels, strides = zip(*[(int(f), tuple(k), tuple(s)) for f, k, s in conv_2d_layer_config])
    except (TypeError, ValueError) as error:
        raise ValueError('conv_2d_layer_config must be a non-empty sequence of (filters, kernel size, stride), got '
                         '{!r}'.format(conv_2d_layer_config)) from error
    if len(set(kernels)) != 1 or len(set(strides)) != 1:
        raise ValueError('conv_2d_layer_config: every layer must have the same kernel size and stride (the encoder '
                         'takes one of each), got {!r}'.format(conv_2d_layer_config))
    return dict(conv_2d_num_filters=filters, conv_2d_filter_size=kernels[0], conv_2d_stride=strides[0])


class GuidedPolicy_0_0(AacStackedRL2Policy):
    """`AacStackedRL2Policy` for guided training: `expert_actions` is the on-policy placeholder [None, A] of the
    `expert` observation key.

    The `expert` key gets a placeholder like every observation key, but no network reads it (the stacked-LSTM
    policy encodes only `external` and `internal`): the trainer feeds it with the observations and only the
    imitation loss uses it.
    """

    def __init__(self, conv_2d_layer_config=((32, (3, 1), (2, 1)), (32, (3, 1), (2, 1)), (64, (3, 1), (2, 1)),
                                             (64, (3, 1), (2, 1))),
                 lstm_class_ref=LayerNormBasicLSTMCell, lstm_layers=(256, 256), lstm_2_init_period=50,
                 linear_layer_ref=noisy_linear, **kwargs):
        """
        Args:
            conv_2d_layer_config: (filters, kernel size, stride) per layer of the default `conv_2d_network`
                encoder (one kernel size and stride for all layers); explicit `conv_2d_num_filters`,
                `conv_2d_filter_size`, `conv_2d_stride` kwargs take precedence.
            lstm_class_ref: RNN cell class of both LSTMs.
            lstm_layers: (LSTM 1 units, LSTM 2 units).
            lstm_2_init_period: reset LSTM 2 every this many episodes.
            linear_layer_ref: dense layer of all heads.
            **kwargs: `AacStackedRL2Policy` arguments; `ob_space` must hold an `expert` key.

        Raises:
            ValueError: the observation space has no `expert` key, or a bad `conv_2d_layer_config`.
        """
        keys = getattr(kwargs.get('ob_space'), 'spaces', None)
        if keys is not None and EXPERT_KEY not in keys:
            raise ValueError('GuidedPolicy_0_0: the observation space needs an `{}` key (expert action '
                             'distribution), got keys {}'.format(EXPERT_KEY, list(keys)))
        for name, value in conv_2d_settings(conv_2d_layer_config).items():
            kwargs.setdefault(name, value)
        super().__init__(lstm_class_ref=lstm_class_ref, lstm_layers=lstm_layers,
                         lstm_2_init_period=lstm_2_init_period, linear_layer_ref=linear_layer_ref, **kwargs)
        self.expert_actions = self.on_state_in[EXPERT_KEY]
