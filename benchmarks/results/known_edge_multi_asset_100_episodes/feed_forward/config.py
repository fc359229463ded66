"""Candidate: tuned with an actor and a critic that are each a dense network over the observation, as SB3's PPO
policy is (no LSTM on their path).

AacDenseFeedForward was an experiment, not kept in the package; it was this subclass of
policy.dense.AacDensePolicy, run with its module (sepvalue.py) on PYTHONPATH. The LSTM graph is still built (the
runners feed its state) but nothing reads it; the actor and the critic each read `dense_encoder` (64 x 64) over the
`external`, `internal` and time-of-day observations:

    class AacDenseFeedForward(AacDensePolicy):
        def _streams(self, prefix):
            # the dict of `external`, `internal` and time-of-day observations that AacDenseSeparateValue's value
            # network reads (../separate_value/config.py)

        def _build_aac_graph(self, prefix, reuse):
            graph = super()._build_aac_graph(prefix, reuse)
            streams = self._streams(prefix)
            depth = self.ac_space.one_hot_depth
            with tf.variable_scope('actor_network', reuse=reuse):
                hidden = dense_encoder(streams, self.dense_layers, reuse=reuse)
                logits = linear(hidden, depth, 'action', initializer=normalized_columns_initializer(0.01),
                                reuse=reuse)
                sample = categorical_sample(logits, depth)[0, :]
            with tf.variable_scope('value_network', reuse=reuse):
                hidden = dense_encoder(streams, self.dense_layers, reuse=reuse)
                vf = tf.reshape(linear(hidden, 1, 'value', initializer=normalized_columns_initializer(1.0),
                                       reuse=reuse), [-1])
            return graph._replace(logits=logits, vf=vf, sample=sample)
"""
from btgym_aac.class_refs import ClassRef
policy_config = {'class_ref': ClassRef('sepvalue', 'AacDenseFeedForward'),
                 'kwargs': {'datetime_features': True, 'heads_read_features': True}}
