"""`AacDensePolicy`: the `BaseAacPolicy` graph with a dense encoder, for vector observations (e.g. classic-control
environments such as CartPole with `{'external': Box(shape=(4,))}`) and small trading policies (one window or
several data lines, flattened)."""
from btgym_aac.algorithms.nn.layer_norm import layer_norm
from btgym_aac.algorithms.nn.layers import linear
from btgym_aac.algorithms.policy.base import BaseAacPolicy, flatten_frames
from btgym_aac.algorithms.policy.interface import checked_layers
from btgym_aac.compat import tf


def dense_encoder(x, dense_layers=(64, 64), name='dense_encoder', reuse=False):
    """Flattens frames (a dict of streams: each stream's, joined in the order of their sorted names) and applies
    `elu(layer_norm(linear(x, size)))` per entry of `dense_layers`.

    Variables: `<name>/_layer_<i>/{w,b}` and `<name>/norm_layer_<i>/{beta,gamma}`, i = 1, 2, ...

    Args:
        x: tensor [N, ...] with static non-batch dims, or a dict of them.
        dense_layers: units per layer.
        name: variable scope.
        reuse: reuse the variables of an existing scope.

    Returns:
        tensor [N, dense_layers[-1]].
    """
    with tf.variable_scope(name, reuse=reuse):
        streams = [flatten_frames(stream) for stream in tf.nest.flatten(x)]
        x = streams[0] if len(streams) == 1 else tf.concat(streams, axis=-1)
        for i, size in enumerate(dense_layers, start=1):
            x = tf.nn.elu(layer_norm(linear(x, size, '_layer_{}'.format(i)), scope='norm_layer_{}'.format(i)))
    return x


class AacDensePolicy(BaseAacPolicy):
    """Dense-encoder LSTM actor-critic policy for vector observations and small trading policies.

    Identical to `BaseAacPolicy` (last action, last reward and flattened `internal` join the encoded `external`
    features before the LSTM; reward prediction uses the shared encoder) except that `external`, one array or a
    dict of streams, is encoded by `dense_encoder`, continuous actions (portfolio weights) are taken, and the
    heads default to plain linear layers with unnormalised logits (classic-control tasks often have two actions,
    where `BaseAacPolicy`'s layer-normalised logits cannot learn). There is no pixel-control head (`pc_q` is None;
    `pixel_control=True` raises ValueError).
    """

    supports_pixel_control = False
    encodes_streams = True
    supports_continuous_actions = True

    @classmethod
    def kwargs_readers(cls, kwargs):
        """None: the dense encoder takes no options from kwargs and there is no pixel-control head."""
        return ()

    def __init__(self, ob_space, ac_space, rp_sequence_size, dense_layers=(64, 64), lstm_layers=(64,),
                 linear_layer_ref=linear, logits_layer_norm=False, **kwargs):
        """
        Args:
            ob_space: DictSpace with an `external` array (any static shape, flattened) or dict of arrays.
            ac_space: ActionDictSpace, discrete or continuous (portfolio weights).
            rp_sequence_size: reward-prediction sample length in frames (>= 2).
            dense_layers: units per encoder layer.
            lstm_layers: units per LSTM layer.
            linear_layer_ref: dense layer of the heads.
            logits_layer_norm: layer-normalised logits (`BaseAacPolicy`'s default head).
            **kwargs: other `BaseAacPolicy` arguments (`lstm_class`, `aux_estimate`, `static_rnn`,
                `datetime_features`, `heads_read_features`, `normalize_observations`, ...); unknown ones (e.g.
                `task`, `cluster_spec`) are ignored.
        """
        self.dense_layers = checked_layers(dense_layers, 'dense_layers')
        super().__init__(ob_space, ac_space, rp_sequence_size, lstm_layers=lstm_layers,
                         linear_layer_ref=linear_layer_ref, logits_layer_norm=logits_layer_norm, **kwargs)

    def _encode_external(self, x, reuse):
        return dense_encoder(x, self.dense_layers, reuse=reuse)
