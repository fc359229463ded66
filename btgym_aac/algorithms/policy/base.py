"""The conv-LSTM policies `BaseAacPolicy`, `Aac1dPolicy`, and the graph layout every policy builds on (the contract
it implements is `interface.AacPolicy`).

Every policy builds, when constructed, in the current variable scope:

* an on-policy graph (`on_*`: acting and on-policy training) and an off-policy graph with shared weights (`off_*`:
  replayed data);
* auxiliary heads: value replay (`vr_*`, aliases of the off-policy graph), pixel control (`pc_*`, off-policy inputs
  plus `pc_q`, `pc_target`) and reward prediction (`rp_*`).

Frames are fed sequence-major: N = B_rnn·T frames, all T frames of sequence 1 first, every sequence padded to the
same T; `*_batch_size` is B_rnn and `*_time_length` the true sequence lengths [B_rnn]. `flatten_frames` and
`to_sequences` reshape them for the encoders and the LSTMs of every policy.

Sessions: `act`, `get_value`, `get_initial_features` and `get_pc_target` run in the `sess` keyword argument when
given, else in the default session (`tf.get_default_session()`, e.g. inside `with sess.as_default():`). None of
them adds ops to the graph, so they work on a finalized graph.
"""
import collections
import copy
import re

import numpy as np

from btgym_aac.algorithms.nn.layers import noisy_linear
from btgym_aac.algorithms.nn.rnn import BasicLSTMCell
from btgym_aac.algorithms.nn.networks import (
    conv_2d_network, dense_aac_network, dense_rp_network, duelling_pc_network, lstm_network,
    pixel_change_2d_estimator,
)
from btgym_aac.algorithms.common.placeholders import nested_placeholders
from btgym_aac.algorithms.policy.calls import PolicyCalls
from btgym_aac.algorithms.policy.interface import check_spaces, checked_layers
from btgym_aac.algorithms.policy.normalization import ObservationNormalizer
from btgym_aac.compat import tf

AacGraph = collections.namedtuple(
    'AacGraph', ['features', 'logits', 'vf', 'sample', 'lstm_out', 'init_state', 'state_out', 'state_pl_flat']
)
"""Tensors of one (on- or off-policy) pass: encoded `external` features [N, D], logits [N, A], value [N], one-hot
sample of the first row [A], last LSTM output [N, units], zero state (batch 1), final state and the flat list of
context placeholders."""

_AUX_ALIASED_INPUTS = ('state_in', 'last_a_in', 'last_reward_in', 'batch_size', 'time_length',
                       'lstm_state_pl_flatten')


def static_width(x):
    """Product of the static non-batch dims of `x` (1 for a [N] tensor).

    Raises:
        ValueError: a non-batch dim is unknown.
    """
    dims = x.get_shape().as_list()[1:]
    if None in dims:
        raise ValueError('policy: tensor {} needs static non-batch dims, got shape {}'.format(x.name, x.get_shape()))
    return int(np.prod(dims))


def flatten_frames(x):
    """Reshapes frames [N, ...] to [N, D]."""
    return tf.reshape(x, [-1, static_width(x)])


def to_sequences(x, batch_size, max_seq_len):
    """Reshapes sequence-major frames [N, ...] to [batch_size, max_seq_len, D]."""
    return tf.reshape(x, [batch_size, max_seq_len, static_width(x)])


def datetime_cycles(datetime):
    """The time of day and of the week of `datetime` observations as points on circles.

    Args:
        datetime: [N, 1, 5] tensor of [month / 12, day / 31, weekday / 6, hour / 24, minute / 60] (a strategy's
            `get_datetime_state`).

    Returns:
        [N, 6] tensor: sin and cos of 2 pi d and of 4 pi d, d the fraction of the day passed, and sin and cos of
        2 pi w, w the fraction of the week (Monday 0:00 is 0).
    """
    fields = tf.reshape(datetime, [-1, 5])
    day = fields[:, 3] + fields[:, 4] / 24.0
    week = (fields[:, 2] * 6.0 + day) / 7.0
    angles = 2.0 * np.pi * tf.stack([day, 2.0 * day, week], axis=-1)
    return tf.concat([tf.sin(angles), tf.cos(angles)], axis=-1)


def checked_datetime_features(datetime_features, ob_space, owner):
    """`datetime_features` as a bool, checked against the observation.

    Args:
        datetime_features: whether the policy reads `datetime_cycles` of the observation's `datetime`.
        ob_space: the policy's DictSpace.
        owner: the policy's class name, for the error.

    Raises:
        ValueError: `datetime_features` is set and the observation has no `datetime`.
    """
    if datetime_features and 'datetime' not in ob_space.spaces:
        raise ValueError('{}: datetime_features needs a `datetime` observation (DevStrat_4_12\'s, '
                         'MultiAssetStrategy\'s); this one has {}'.format(owner, ', '.join(sorted(ob_space.spaces))))
    return bool(datetime_features)


class BaseAacPolicy(PolicyCalls):
    """Conv-LSTM advantage actor-critic policy with UNREAL auxiliary heads.

    Papers: https://arxiv.org/abs/1602.01783 (A3C), https://arxiv.org/abs/1611.05397 (UNREAL).

    Graph: `conv_2d_network(external)` features, concatenated with the last action code, the last reward and the
    flattened `internal` observation (if any) and, with `datetime_features`, the time of day and of the week
    (`datetime_cycles`), feed an LSTM stack (`lstm`); a dense head (`dense_aac`) on its output (with
    `heads_read_features`, on its output and the features) gives logits and value. Reward prediction encodes the
    `rp_sequence_size - 1` frames of each sample with the shared encoder.
    Pixel control (`pc_q` on the off-policy LSTM output, action axis of width `ac_space.one_hot_depth`) is built
    when `pixel_control` resolves to True; otherwise the `pc_q`, `pc_target`, `pc_change_state_in` and
    `pc_change_last_state_in` attributes are None. By default logits are layer-normalised across actions (see
    `dense_aac_network`; `logits_layer_norm=False` turns it off), and NoisyNet noise is redrawn at every session
    run; pass `linear_layer_ref=layers.linear` for noise-free heads.

    Attributes (see also the module docstring): `ob_space`, `ac_space`, `callback` (dict name -> callable the
    runner calls on every step), `var_list` (the policy scope's trainable variables plus its moving statistics),
    `update_ops`, `train_phase` (bool placeholder, default False), the on-policy tensors `on_state_in`,
    `on_last_a_in`, `on_last_reward_in`, `on_batch_size`, `on_time_length`, `on_lstm_state_pl_flatten`,
    `on_lstm_init_state`, `on_lstm_state_out`, `on_logits`, `on_vf`, `on_sample`, the same `off_*` tensors of the
    off-policy graph (no init or out state; the pass is built with `off_policy_pass` or pixel control, else
    `off_logits`, `off_vf`, `off_lstm_state_pl_flatten` and `vr_value` are None), and the auxiliary `vr_*`, `pc_*`
    and `rp_*` tensors.
    """

    supports_pixel_control = True
    encodes_streams = False
    """Whether the policy reads an `external` dict of streams (several data lines)."""
    supports_continuous_actions = False
    """Whether the policy takes a continuous ActionDictSpace (portfolio weights); the original's BaseAacPolicy
    does not, its stacked-LSTM policies do."""

    @classmethod
    def kwargs_readers(cls, kwargs):
        """The builders that get the leftover `**kwargs` of `__init__` (a trainer warns of kwargs that neither
        they nor an `__init__` name; see `interface.unread_policy_kwargs`). Subclasses that send kwargs elsewhere
        override it.

        Args:
            kwargs: the policy kwargs.

        Returns:
            tuple of callables.
        """
        return conv_2d_network, pixel_change_2d_estimator, duelling_pc_network

    def __init__(self, ob_space, ac_space, rp_sequence_size, lstm_class=BasicLSTMCell,
                 lstm_layers=(256,), action_dp_alpha=200.0, aux_estimate=False, static_rnn=False,
                 linear_layer_ref=noisy_linear, pixel_control=None, logits_layer_norm=True, off_policy_pass=True,
                 normalize_observations=False, datetime_features=False, heads_read_features=False, **kwargs):
        """
        Args:
            ob_space: DictSpace with an `external` [H, W, C] key (optional `internal`, `metadata`, ...).
            ac_space: discrete ActionDictSpace.
            rp_sequence_size: reward-prediction sample length in frames (>= 2).
            lstm_class: RNN cell class, called as `lstm_class(units)`.
            lstm_layers: units per LSTM layer.
            action_dp_alpha: concentration of continuous-action sampling (`sample_dp`).
            aux_estimate: register the pixel-change callback for the runner (the trainer sets it when any
                auxiliary task is used).
            static_rnn: single-step static RNN (sequences of length 1, the trainer's `time_flat`) instead of a
                dynamic one; both give the same results on length-1 sequences.
            linear_layer_ref: dense layer of the actor-critic, reward-prediction and pixel-control heads.
            pixel_control: build the pixel-control head; None means `aux_estimate` where `external` is one
                [H, W, C] array.
            logits_layer_norm: layer-normalised logits (see `networks.dense_aac_network`).
            off_policy_pass: build the off-policy pass; False leaves it out unless the pixel-control head, which
                reads it, is built (the trainer passes False when no loss of its reads it: fewer ops to build).
            normalize_observations: standardise `external` and `internal` by running statistics (see
                `normalization.ObservationNormalizer`; the trainer's learner updates them).
            datetime_features: the LSTM also reads the time of day and of the week of the observation's
                `datetime` (`datetime_cycles`); the observation must have `datetime`.
            heads_read_features: the actor-critic head reads the encoded `external` features beside the LSTM's
                output (a path around the LSTM).
            **kwargs: encoder and pixel-control options (`conv_2d_*`, `pc_estimator_stride`, `duell_pc_*`);
                anything else (e.g. the trainer's `task`, `cluster_spec`) is ignored (the trainer warns of
                kwargs of its `policy_config` read by nothing).
        """
        self._init_interface(ob_space, ac_space, rp_sequence_size, action_dp_alpha, aux_estimate,
                             normalize_observations)
        if not ac_space.is_discrete and not self.supports_continuous_actions:
            raise ValueError('{} needs a discrete action space, got {}'.format(type(self).__name__, ac_space))
        if isinstance(ob_space.shape['external'], dict) and not self.encodes_streams:
            raise ValueError('{} encodes one `external` array; this observation has the streams {} (several data '
                             'lines?): use StackedLstmPolicy, AacStackedRL2Policy or AacDensePolicy, which read '
                             'streams'.format(
                                 type(self).__name__, sorted(ob_space.shape['external'])))
        self.lstm_class = lstm_class
        self.lstm_layers = checked_layers(lstm_layers)
        self.datetime_features = checked_datetime_features(datetime_features, ob_space, type(self).__name__)
        self.heads_read_features = bool(heads_read_features)
        self.static_rnn = static_rnn
        self.linear_layer_ref = linear_layer_ref
        self.logits_layer_norm = logits_layer_norm
        self.network_kwargs = kwargs

        pixel_control = self._wants_pixel_control(pixel_control)
        on_graph = self._build_aac_graph('on', reuse=False)
        off_graph = self._build_aac_graph('off', reuse=True) if off_policy_pass or pixel_control else None
        self._bind_graphs(on_graph, off_graph)
        self._make_pixel_control(off_graph if pixel_control else None, linear_layer_ref=linear_layer_ref, **kwargs)
        self._make_aux_aliases()
        rp_external = self.normalized(self.rp_state_in)['external']
        self._make_reward_prediction(self._encode_external(rp_external, reuse=True), linear_layer_ref)
        self._collect_variables()

    def _init_interface(self, ob_space, ac_space, rp_sequence_size, action_dp_alpha, aux_estimate,
                        normalize_observations=False):
        """Validates the arguments shared by all policies, stores them, creates the input placeholders and, with
        `normalize_observations`, the observation statistics (`observation_normalizer`, else None)."""
        check_spaces(ob_space, ac_space)
        if isinstance(rp_sequence_size, bool) or int(rp_sequence_size) != rp_sequence_size or rp_sequence_size < 2:
            raise ValueError('policy: rp_sequence_size must be an int >= 2, got {!r}'.format(rp_sequence_size))
        self.ob_space = ob_space
        self.ac_space = ac_space
        self.rp_sequence_size = int(rp_sequence_size)
        self.action_dp_alpha = action_dp_alpha
        self.aux_estimate = aux_estimate
        self.callback = {}
        self.train_phase = tf.placeholder_with_default(False, shape=(), name='train_phase_flag_pl')
        self._make_placeholders()
        self.observation_normalizer = ObservationNormalizer(ob_space.shape) if normalize_observations else None

    def normalized(self, state_in):
        """`state_in` as the encoders read it: standardised by the observation statistics where the policy keeps
        them, else as it is."""
        if self.observation_normalizer is None:
            return state_in
        return self.observation_normalizer.normalize(state_in)

    def _make_placeholders(self):
        """Observation, last action [None, E], last reward [None], batch size and sequence length placeholders."""
        shape = self.ob_space.shape
        depth = self.ac_space.encoded_depth
        self.on_state_in = nested_placeholders(shape, batch_dim=None, name='on_policy_state_in')
        self.off_state_in = nested_placeholders(shape, batch_dim=None, name='off_policy_state_in_pl')
        self.rp_state_in = nested_placeholders(shape, batch_dim=None, name='rp_state_in')

        self.on_last_a_in = tf.placeholder(tf.float32, [None, depth], name='on_policy_last_action_in_pl')
        self.on_last_reward_in = tf.placeholder(tf.float32, [None], name='on_policy_last_reward_in_pl')
        self.off_last_a_in = tf.placeholder(tf.float32, [None, depth], name='off_policy_last_action_in_pl')
        self.off_last_reward_in = tf.placeholder(tf.float32, [None], name='off_policy_last_reward_in_pl')

        self.on_batch_size = tf.placeholder(tf.int32, name='on_policy_batch_size')
        self.on_time_length = tf.placeholder(tf.int32, name='on_policy_sequence_size')
        self.off_batch_size = tf.placeholder(tf.int32, name='off_policy_batch_size')
        self.off_time_length = tf.placeholder(tf.int32, name='off_policy_sequence_size')
        self.rp_batch_size = tf.placeholder(tf.int32, name='rp_batch_size')

    def _policy_inputs(self, prefix):
        """Returns (state_in, last_a_in, last_reward_in, batch_size, time_length) of the 'on' or 'off' graph, the
        observations `normalized`."""
        state_in, *others = (getattr(self, '{}_{}'.format(prefix, name))
                             for name in ('state_in', 'last_a_in', 'last_reward_in', 'batch_size', 'time_length'))
        return (self.normalized(state_in), *others)

    def _encode_external(self, x, reuse):
        """Encodes `external` frames [N, H, W, C] with the shared conv encoder; returns [N, D]."""
        return flatten_frames(conv_2d_network(x, self.ob_space.shape['external'], self.ac_space, reuse=reuse,
                                              **self.network_kwargs))

    def _build_aac_graph(self, prefix, reuse):
        """Builds the encoder-LSTM-head pass on the `prefix` ('on'/'off') inputs; returns an AacGraph."""
        state_in, last_a_in, last_reward_in, batch_size, time_length = self._policy_inputs(prefix)
        features = self._encode_external(state_in['external'], reuse)
        frames = tf.shape(features)[0]
        max_seq_len = frames // batch_size

        inputs = [features, last_a_in, last_reward_in] + tf.nest.flatten(state_in.get('internal', []))
        if self.datetime_features:
            inputs.append(datetime_cycles(state_in['datetime']))
        lstm_in = tf.concat([to_sequences(x, batch_size, max_seq_len) for x in inputs], axis=-1)
        lstm_out, init_state, state_out, state_pl_flat = lstm_network(
            lstm_in, time_length, lstm_class=self.lstm_class, lstm_layers=self.lstm_layers, static=self.static_rnn,
            reuse=reuse,
        )
        lstm_out = tf.reshape(lstm_out, [frames, self.lstm_layers[-1]])
        head_in = tf.concat([lstm_out, features], axis=-1) if self.heads_read_features else lstm_out
        logits, vf, sample = dense_aac_network(head_in, self.ac_space.one_hot_depth,
                                               linear_layer_ref=self.linear_layer_ref, reuse=reuse,
                                               logits_layer_norm=self.logits_layer_norm)
        return AacGraph(features, logits, vf, sample, lstm_out, init_state, state_out, state_pl_flat)

    def _bind_graphs(self, on_graph, off_graph):
        """Exposes the on- and off-policy passes under the interface attribute names (the `off_*` outputs are None
        where `off_graph` is)."""
        self.on_logits, self.on_vf, self.on_sample = on_graph.logits, on_graph.vf, on_graph.sample
        self.on_lstm_init_state = on_graph.init_state
        self.on_lstm_state_out = on_graph.state_out
        self.on_lstm_state_pl_flatten = on_graph.state_pl_flat
        self.off_logits = self.off_vf = self.off_lstm_state_pl_flatten = None
        if off_graph is not None:
            self.off_logits, self.off_vf = off_graph.logits, off_graph.vf
            self.off_lstm_state_pl_flatten = off_graph.state_pl_flat

    def _wants_pixel_control(self, pixel_control):
        """Whether to build the pixel-control head: `pixel_control`, or where it is None `aux_estimate` (False where
        the policy has no such head or the `external` observation is not a single [H, W, C] array, as on the
        multi-asset envs: value replay and reward prediction then train without it).

        Raises:
            ValueError: pixel control requested from a policy without a pixel-control head.
        """
        if pixel_control and not self.supports_pixel_control:
            raise ValueError('{} has no pixel-control head; pass pixel_control=False'.format(type(self).__name__))
        if pixel_control is None:
            return self.aux_estimate and self.supports_pixel_control and _is_image_shape(
                self.ob_space.shape['external'])
        return bool(pixel_control)

    def _make_pixel_control(self, off_graph, **kwargs):
        """Builds the pixel-change target and the duelling Q head on the LSTM output of the off-policy pass
        `off_graph` (an AacGraph) [N, D]; sets the `pc_*` ops to None where `off_graph` is None.

        Args:
            off_graph: the off-policy pass, or None for no pixel control.
            **kwargs: `pc_estimator_stride`, `duell_pc_*`, `linear_layer_ref` (others ignored).

        Raises:
            ValueError: for an `external` observation that is not a single [H, W, C] array, or with a Q map whose
                size differs from the target map.
        """
        self.pc_q = self.pc_target = self.pc_change_state_in = self.pc_change_last_state_in = None
        if off_graph is None:
            return
        external_shape = self.ob_space.shape['external']
        if not _is_image_shape(external_shape):
            raise ValueError('pixel control needs a single [H, W, C] `external` observation, got shape {}; '
                             'pass pixel_control=False'.format(external_shape))
        self.pc_change_state_in, self.pc_change_last_state_in, self.pc_target = pixel_change_2d_estimator(
            external_shape, **kwargs)
        self.pc_q = duelling_pc_network(off_graph.lstm_out, self.ac_space.one_hot_depth, **kwargs)
        target_map = self.pc_target.get_shape().as_list()[1:3]
        q_map = self.pc_q.get_shape().as_list()[1:3]
        if target_map != q_map:
            raise ValueError(
                'pixel control: the Q map {} differs from the pixel-change target map {} of `external` {}; '
                'adjust duell_pc_x_inner_shape / duell_pc_filter_size / duell_pc_stride or pc_estimator_stride, '
                'or pass pixel_control=False'.format(q_map, target_map, external_shape))

    def _make_aux_aliases(self):
        """Value-replay and pixel-control inputs are the off-policy ones; `vr_value` is the off-policy value."""
        for aux in ('vr', 'pc'):
            for name in _AUX_ALIASED_INPUTS:
                setattr(self, '{}_{}'.format(aux, name), getattr(self, 'off_{}'.format(name)))
        self.vr_value = self.off_vf

    def _make_reward_prediction(self, encoded, linear_layer_ref):
        """Reward-prediction logits [rp_batch_size, 3] from encoded frames [rp_batch_size·(rp_sequence_size-1), D]."""
        width = static_width(encoded) * (self.rp_sequence_size - 1)
        self.rp_logits = dense_rp_network(tf.reshape(encoded, [self.rp_batch_size, width]),
                                          linear_layer_ref=linear_layer_ref)

    def _collect_variables(self):
        """Sets `update_ops`, `var_list` and the pixel-change callback.

        `var_list` holds the trainable variables of the current variable scope (matched as `<scope>/`, so a
        sibling scope such as `global_prime` never leaks into `global`'s list) plus its moving/renorm statistics,
        in creation order, so equally built policies in two scopes pair up position by position.
        """
        scope = tf.get_variable_scope().name
        prefix = re.escape(scope) + '/' if scope else ''
        self.update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        self.var_list = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, prefix or None)
        for statistic in ('.*moving.*', '.*renorm.*'):
            self.var_list += tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, prefix + statistic)
        if self.aux_estimate and self.pc_q is not None:
            self.callback['pixel_change'] = self.get_pc_target

    @staticmethod
    def get_sample_config(*args, **kwargs):
        """Default environment reset configuration (the trainer replaces this on its local policies).

        Returns:
            a fresh copy of `btgym_aac.data.EnvResetConfig`.
        """
        from btgym_aac.data import EnvResetConfig
        return copy.deepcopy(EnvResetConfig)


class Aac1dPolicy(BaseAacPolicy):
    """`BaseAacPolicy` for one-dimensional signals [H, 1, C]: convolutions and pixel control run along H only.

    Forces `conv_2d_filter_size=(3, 1)`, `conv_2d_stride=(2, 1)`, `pc_estimator_stride=(2, 1)`,
    `duell_pc_x_inner_shape=(6, 1, 32)`, `duell_pc_filter_size=(4, 1)`, `duell_pc_stride=(2, 1)` (a 14x1 pixel-control
    map, matching a 30-row observation); `aux_estimate` defaults to True.
    """

    def __init__(self, ob_space, ac_space, rp_sequence_size, lstm_class=BasicLSTMCell,
                 lstm_layers=(256,), action_dp_alpha=200.0, aux_estimate=True, **kwargs):
        """
        Args:
            see `BaseAacPolicy`; the 1-D encoder and pixel-control options above override any given ones.
        """
        kwargs.update(
            conv_2d_filter_size=(3, 1),
            conv_2d_stride=(2, 1),
            pc_estimator_stride=(2, 1),
            duell_pc_x_inner_shape=(6, 1, 32),
            duell_pc_filter_size=(4, 1),
            duell_pc_stride=(2, 1),
        )
        super().__init__(ob_space, ac_space, rp_sequence_size, lstm_class=lstm_class, lstm_layers=lstm_layers,
                         action_dp_alpha=action_dp_alpha, aux_estimate=aux_estimate, **kwargs)


def _is_image_shape(shape):
    """Whether an observation entry's shape is a single [H, W, C] array (what the pixel-change target needs)."""
    return isinstance(shape, tuple) and len(shape) == 3
