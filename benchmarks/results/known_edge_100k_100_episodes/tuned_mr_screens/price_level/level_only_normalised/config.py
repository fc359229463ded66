"""Candidate: the price level of ../config.py (DevStrat_Level) with only that channel standardised by running
statistics; DevStrat_4_12's six channels and the broker statistics reach the encoder as they are.

AacDenseLevelOnly was an experiment, not kept in the package; it was this subclass of policy.dense.AacDensePolicy,
run with its module (sepvalue.py) on PYTHONPATH beside level.py:

    class AacDenseLevelOnly(AacDensePolicy):
        def normalized(self, state_in):
            full = super().normalized(state_in)
            if self.observation_normalizer is None:
                return full
            external = tf.concat([state_in['external'][..., :-1], full['external'][..., -1:]], axis=-1)
            return dict(state_in, external=external)
"""
from btgym_aac.class_refs import ClassRef
env_config = {'kwargs': {'strategy': ClassRef('level', 'DevStrat_Level')}}
policy_config = {'class_ref': ClassRef('sepvalue', 'AacDenseLevelOnly'),
                 'kwargs': {'datetime_features': True, 'heads_read_features': True, 'normalize_observations': True}}
