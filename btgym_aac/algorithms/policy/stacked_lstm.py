"""Two-LSTM policies: `StackedLstmPolicy` (NAV-A3C style) and its RL² flavour `AacStackedRL2Policy`."""
from btgym_aac.algorithms.nn.layer_norm import LayerNormBasicLSTMCell
from btgym_aac.algorithms.nn.layers import noisy_linear
from btgym_aac.algorithms.nn.networks import (
    conv_2d_network, dense_aac_network, duelling_pc_network, lstm_network, pixel_change_2d_estimator,
)
from btgym_aac.algorithms.policy.base import (
    AacGraph, BaseAacPolicy, checked_datetime_features, datetime_cycles, flatten_frames, to_sequences,
)
from btgym_aac.algorithms.policy.interface import checked_layers
from btgym_aac.compat import tf

ENCODED_MODES = ('external', 'internal')
"""Top-level observation keys encoded by the state encoder (`internal` when present)."""

NETWORK_DEFAULTS = dict(conv_2d_filter_size=(3, 1), conv_2d_stride=(2, 1), conv_2d_num_filters=(32, 32, 64, 64),
                        pc_estimator_stride=(2, 1), duell_pc_x_inner_shape=(6, 1, 32), duell_pc_filter_size=(4, 1),
                        duell_pc_stride=(2, 1))
"""Encoder and pixel-control options of `StackedLstmPolicy` that its kwargs do not set."""


class StackedLstmPolicy(BaseAacPolicy):
    """Conv-encoder, two-LSTM actor-critic policy.

    Papers: https://arxiv.org/pdf/1611.03673.pdf (NAV A3C), https://arxiv.org/pdf/1611.05763.pdf (learning to RL).

    * `external` and (if present) `internal` are encoded separately by `state_encoder_class_ref` under
      `encoded_<key>` (a dict of streams: `encoded_<key>_<stream>`, or one `encoded_<key>_shared` encoder when
      `share_encoder_params`) and flattened. `internal` is optional, so the policy also runs on single-modality
      observations (e.g. images).
    * LSTM 1 (`lstm_1`, `lstm_layers[0]` units) reads `[external features, last reward]`; the policy head
      `aac_dense_pi` reads its output.
    * LSTM 2 (`lstm_2`, `lstm_layers[-1]` units) reads `[external features, last action code, internal features,
      LSTM 1 output]`; the value head `aac_dense_vfn` reads its output (`shared_p_v`: one head `aac_dense_pi_vfn`
      on LSTM 2 gives both). With `datetime_features` both LSTMs also read `datetime_cycles` of the observation.
      Unused sub-heads keep their variables (synced and saved, no gradient).
    * An extra head `aac_dense_simple_pi_v` on the external features gives `on_simple_logits`,
      `on_simple_value` (not used by the trainers: its variables are synced and saved but get no gradient).
    * Dropout `1 - (1 - dropout_keep_prob)·train_phase` after every conv layer and on every LSTM output (none in
      the graph when `dropout_keep_prob` is 1).
    * Context: `(lstm_1 state, lstm_2 state)`, each a 1-tuple of `LSTMStateTuple(c, h)`;
      `on_lstm_state_pl_flatten = [c1, h1, c2, h2]`.
    * Pixel control: the duelling Q head on the off-policy LSTM 2 output is built when `pixel_control` resolves
      to True (None: `aux_estimate`); it needs a single [H, W, C] `external` observation whose pixel-change map
      matches the Q map (raises ValueError otherwise).
    """

    encodes_streams = True
    supports_continuous_actions = True

    @classmethod
    def kwargs_readers(cls, kwargs):
        """The state encoder (given or default), `lstm_network` and the pixel-control builders."""
        return (kwargs.get('state_encoder_class_ref', conv_2d_network), lstm_network, pixel_change_2d_estimator,
                duelling_pc_network)

    def __init__(self, ob_space, ac_space, rp_sequence_size, state_encoder_class_ref=conv_2d_network,
                 lstm_class_ref=LayerNormBasicLSTMCell, lstm_layers=(256, 256), linear_layer_ref=noisy_linear,
                 share_encoder_params=False, dropout_keep_prob=1.0, action_dp_alpha=200.0, aux_estimate=False,
                 encode_internal_state=None, static_rnn=True, shared_p_v=False, pixel_control=None,
                 off_policy_pass=True, logits_layer_norm=True, datetime_features=False,
                 normalize_observations=False, heads_read_features=False, **kwargs):
        """
        Args:
            ob_space: DictSpace with an `external` key (optional `internal`, `metadata`, ...).
            ac_space: ActionDictSpace (discrete or continuous).
            rp_sequence_size: reward-prediction sample length in frames (>= 2).
            state_encoder_class_ref: encoder builder with the signature of `conv_2d_network`.
            lstm_class_ref: RNN cell class, called as `lstm_class_ref(units)`.
            lstm_layers: (units of LSTM 1, ..., units of LSTM 2); first and last entries are used.
            linear_layer_ref: dense layer of all heads.
            share_encoder_params: one encoder for all streams of a dict-valued mode.
            dropout_keep_prob: keep probability in (0, 1], active only while `train_phase` is True.
            action_dp_alpha: concentration of continuous-action sampling (`sample_dp`).
            aux_estimate: register the pixel-change callback (when pixel control is built).
            encode_internal_state: accepted and ignored (`internal` is encoded whenever it is present).
            static_rnn: single-step static RNNs (the trainer's `time_flat`), dynamic otherwise.
            shared_p_v: policy and value from one head on LSTM 2.
            pixel_control: build the pixel-control head; None means `aux_estimate` where `external` is one
                [H, W, C] array.
            off_policy_pass: build the off-policy pass; False leaves it out unless the pixel-control head, which
                reads it, is built (the trainer passes False when no loss of its reads it: about a third fewer ops
                to build).
            logits_layer_norm: layer-normalised logits in the policy heads (see `networks.dense_aac_network`: they
                bound how peaked the policy can get).
            datetime_features: both LSTMs also read the time of day and of the week of the observation's
                `datetime` ([month / 12, day / 31, weekday / 6, hour / 24, minute / 60], as `DevStrat_4_12` gives
                it) as sines and cosines (`datetime_cycles`); the observation must have `datetime`.
            normalize_observations: standardise `external` and `internal` by running statistics (see
                `normalization.ObservationNormalizer`; the trainer's learner updates them).
            heads_read_features: not available here (its heads read both LSTMs); True raises ValueError.
            **kwargs: encoder / pixel-control options (`NETWORK_DEFAULTS` when absent). All kwargs (including
                the trainer's `task`, `cluster_spec`) also reach `lstm_network`, which ignores what it does not know.
        """
        if heads_read_features:
            raise ValueError('{}: heads_read_features is a BaseAacPolicy / AacDensePolicy option; this policy\'s '
                             'heads read its two LSTMs'.format(type(self).__name__))
        self._init_interface(ob_space, ac_space, rp_sequence_size, action_dp_alpha, aux_estimate,
                             normalize_observations)
        if not 0 < dropout_keep_prob <= 1:
            raise ValueError('StackedLstmPolicy: dropout_keep_prob must be in (0, 1], got {}'.format(
                dropout_keep_prob))
        self.state_encoder_class_ref = state_encoder_class_ref
        self.lstm_class = lstm_class_ref
        self.lstm_layers = checked_layers(lstm_layers)
        self.linear_layer_ref = linear_layer_ref
        self.share_encoder_params = share_encoder_params
        self.dropout_keep_prob = dropout_keep_prob
        self.static_rnn = static_rnn
        self.shared_p_v = shared_p_v
        self.logits_layer_norm = logits_layer_norm
        self.encoded_modes = tuple(key for key in ENCODED_MODES if key in ob_space.spaces)
        self.datetime_features = checked_datetime_features(datetime_features, ob_space, type(self).__name__)
        self.keep_prob = None if dropout_keep_prob == 1 else \
            1.0 - (1.0 - dropout_keep_prob) * tf.cast(self.train_phase, tf.float32)
        self.network_kwargs = dict(NETWORK_DEFAULTS, keep_prob=self.keep_prob, **kwargs)
        self._build_graphs(self._wants_pixel_control(pixel_control), off_policy_pass)

    def _build_graphs(self, pixel_control, off_policy_pass):
        """The on-policy graph with its simple head, the off-policy graph (when built), the auxiliary heads and
        the variable list (see the class docstring)."""
        on_graph = self._build_stacked_graph('on', reuse=False)
        self.on_simple_logits, self.on_simple_value, _ = dense_aac_network(
            on_graph.features, self.ac_space.one_hot_depth, name='aac_dense_simple_pi_v',
            linear_layer_ref=self.linear_layer_ref, logits_layer_norm=self.logits_layer_norm)
        off_graph = self._build_stacked_graph('off', reuse=True) if off_policy_pass or pixel_control else None
        self._bind_graphs(on_graph, off_graph)
        self._make_pixel_control(off_graph if pixel_control else None, linear_layer_ref=self.linear_layer_ref,
                                 **self.network_kwargs)
        self._make_aux_aliases()
        rp_external = self._encode_mode(self.normalized(self.rp_state_in), 'external', reuse=True)
        self._make_reward_prediction(rp_external, self.linear_layer_ref)
        self._collect_variables()

    def _encode_mode(self, state_in, key, reuse):
        """Encodes and flattens `state_in[key]` (one array or a dict of streams); returns [N, D]."""
        modality = state_in[key]
        if not isinstance(modality, dict):
            return flatten_frames(self.state_encoder_class_ref(
                x=modality, ob_space=self.ob_space.shape[key], ac_space=self.ac_space,
                name='encoded_{}'.format(key), reuse=reuse, **self.network_kwargs))
        if self.share_encoder_params:
            stream_reuse = True if reuse else tf.AUTO_REUSE
        else:
            stream_reuse = reuse
        encoded_streams = []
        for stream, x in modality.items():
            name = 'encoded_{}_shared'.format(key) if self.share_encoder_params else 'encoded_{}_{}'.format(key, stream)
            encoded_streams.append(flatten_frames(self.state_encoder_class_ref(
                x=x, ob_space=self.ob_space.shape[key][stream], ac_space=self.ac_space, name=name,
                reuse=stream_reuse, **self.network_kwargs)))
        return tf.concat(encoded_streams, axis=-1, name='multi_encoded_{}'.format(key))

    def _lstm(self, x, time_length, units, name, reuse):
        """One single-layer `lstm_network` named `name`; returns (outputs, init_state, final_state, pl_flat)."""
        return lstm_network(x, time_length, lstm_class=self.lstm_class, lstm_layers=(units,), static=self.static_rnn,
                            name=name, reuse=reuse, **self.network_kwargs)

    def _build_stacked_graph(self, prefix, reuse):
        """Builds the encoders-LSTM1-LSTM2-heads pass on the `prefix` ('on'/'off') inputs; returns an AacGraph."""
        state_in, last_a_in, last_reward_in, batch_size, time_length = self._policy_inputs(prefix)
        encoded = {key: self._encode_mode(state_in, key, reuse) for key in self.encoded_modes}
        features = encoded['external']
        frames = tf.shape(features)[0]
        max_seq_len = frames // batch_size

        def sequences(x):
            return to_sequences(x, batch_size, max_seq_len)

        depth = self.ac_space.one_hot_depth
        times = [sequences(datetime_cycles(state_in['datetime']))] if self.datetime_features else []
        lstm_1_in = tf.concat([sequences(features), sequences(last_reward_in)] + times, axis=-1)
        lstm_1_out, init_1, state_1, pl_1 = self._lstm(lstm_1_in, time_length, self.lstm_layers[0], 'lstm_1', reuse)
        if not self.shared_p_v:
            logits, _, sample = dense_aac_network(
                tf.reshape(lstm_1_out, [frames, self.lstm_layers[0]]), depth, name='aac_dense_pi',
                linear_layer_ref=self.linear_layer_ref, reuse=reuse, logits_layer_norm=self.logits_layer_norm)

        internal = [sequences(encoded['internal'])] if 'internal' in encoded else []
        lstm_2_in = tf.concat([sequences(features), sequences(last_a_in)] + internal + times + [lstm_1_out], axis=-1)
        lstm_2_out, init_2, state_2, pl_2 = self._lstm(lstm_2_in, time_length, self.lstm_layers[-1], 'lstm_2', reuse)
        lstm_2_out = tf.reshape(lstm_2_out, [frames, self.lstm_layers[-1]])
        if self.shared_p_v:
            logits, vf, sample = dense_aac_network(lstm_2_out, depth, name='aac_dense_pi_vfn',
                                                   linear_layer_ref=self.linear_layer_ref, reuse=reuse,
                                                   logits_layer_norm=self.logits_layer_norm)
        else:
            _, vf, _ = dense_aac_network(lstm_2_out, depth, name='aac_dense_vfn',
                                         linear_layer_ref=self.linear_layer_ref, reuse=reuse)
        return AacGraph(features, logits, vf, sample, lstm_2_out, (init_1, init_2), (state_1, state_2), pl_1 + pl_2)


class AacStackedRL2Policy(StackedLstmPolicy):
    """`StackedLstmPolicy` whose LSTM-2 context may carry over episodes (RL², https://arxiv.org/pdf/1611.02779.pdf).

    Only `get_initial_features` differs: LSTM 1 always starts from zeros; LSTM 2 keeps the previous episode's final
    state unless a reset rule fires (see `get_initial_features`). A new data trial resets it too: the trainer asks
    for one every `episodes_per_trial` episodes (by default every episode, as the original; set it to
    `lstm_2_init_period`, with a data domain whose trials hold several episodes, for the context to carry over).
    """

    def __init__(self, lstm_2_init_period=50, **kwargs):
        """
        Args:
            lstm_2_init_period: reset LSTM 2 every this many episodes (counting calls of `get_initial_features`).
            **kwargs: `StackedLstmPolicy` arguments.
        """
        if isinstance(lstm_2_init_period, bool) or int(lstm_2_init_period) != lstm_2_init_period \
                or lstm_2_init_period < 1:
            raise ValueError('AacStackedRL2Policy: lstm_2_init_period must be a positive int, got {!r}'.format(
                lstm_2_init_period))
        super().__init__(**kwargs)
        self.lstm_2_init_period = int(lstm_2_init_period)
        self.current_trial_num = -1
        self.current_ep_num = 0
        self._env_episodes = {}

    def get_initial_features(self, state, context=None, sess=None, env=None, **kwargs):
        """Context for a new episode.

        LSTM 1 gets the zero state. LSTM 2 keeps `context[-1]` (the previous episode's final LSTM-2 state) unless:
        `state['metadata']['trial_num']` differs from the last call's, `context` is None, `state['metadata']['type']`
        is non-zero (test episode), or the episode counter is a multiple of `lstm_2_init_period` (true on the first
        call). Records the trial number and counts the episode. The last trial number and the counter are kept per
        `env` (runners pass theirs), so interleaved episodes of two envs on different trials do not reset each
        other's LSTM 2; `current_trial_num` and `current_ep_num` show the pair of the latest call.

        Args:
            state: first observation of the episode (dict with `metadata` `trial_num` and `type`).
            context: final context of the previous episode, structured as `on_lstm_init_state`, or None.
            sess: session (None: the default session).
            env: the env of the episode; None: one pair shared by all callers that give none.
            **kwargs: ignored.

        Returns:
            tuple (lstm_1 state, lstm_2 state).

        Raises:
            KeyError: `state` lacks `metadata` `trial_num` or `type`.
        """
        try:
            trial_num = state['metadata']['trial_num']
            episode_type = state['metadata']['type']
        except (KeyError, TypeError) as error:
            raise KeyError('AacStackedRL2Policy: the episode state must hold metadata `trial_num` and `type`, got '
                           '{!r}'.format(state if not isinstance(state, dict) else list(state))) from error
        lstm_1_state, lstm_2_state = super().get_initial_features(sess=sess)
        last_trial_num, episodes = self._env_episodes.get(id(env), (-1, 0))
        reset_lstm_2 = (
            trial_num != last_trial_num
            or context is None
            or bool(episode_type)
            or episodes % self.lstm_2_init_period == 0
        )
        if not reset_lstm_2:
            lstm_2_state = context[-1]
        self.current_trial_num, self.current_ep_num = self._env_episodes[id(env)] = (trial_num, episodes + 1)
        return lstm_1_state, lstm_2_state
