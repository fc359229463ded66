"""Candidate: tuned with the value taken from a network of its own (a critic apart from the actor's trunk).

AacDenseSeparateValue was an experiment, not kept in the package; it was this subclass of
policy.dense.AacDensePolicy, run with its module (sepvalue.py) on PYTHONPATH. The actor is tuned's (dense encoder,
LSTM, head reading both); the value is a dense network of the same size (`dense_encoder`, 64 x 64) over the
`external`, `internal` and time-of-day observations, then one linear unit; the shared head's value output is left
unread:

    class AacDenseSeparateValue(AacDensePolicy):
        def _build_aac_graph(self, prefix, reuse):
            graph = super()._build_aac_graph(prefix, reuse)
            state_in = self._policy_inputs(prefix)[0]
            streams = {'external': state_in['external']}
            if 'internal' in state_in:
                streams['internal'] = state_in['internal']
            if self.datetime_features:
                streams['time'] = datetime_cycles(state_in['datetime'])
            with tf.variable_scope('value_network', reuse=reuse):
                hidden = dense_encoder(streams, self.dense_layers, reuse=reuse)
                vf = tf.reshape(linear(hidden, 1, 'value', initializer=normalized_columns_initializer(1.0),
                                       reuse=reuse), [-1])
            return graph._replace(vf=vf)
"""
from btgym_aac.class_refs import ClassRef
policy_config = {'class_ref': ClassRef('sepvalue', 'AacDenseSeparateValue'),
                 'kwargs': {'datetime_features': True, 'heads_read_features': True}}
