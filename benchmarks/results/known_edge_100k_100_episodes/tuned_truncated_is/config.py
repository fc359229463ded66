"""Candidate: tuned's A3C with truncated importance weights on the policy gradient.

A3CTruncatedIS was an experiment, not kept in the package; it was this module (truncis.py), run with its folder on
PYTHONPATH:

    '''Experiment: A3C whose policy-gradient term is weighted by truncated importance weights
    min(1, pi(a|s) / mu(a|s)) against the logits the runners acted with (IMPALA's rho-bar = 1), so that the 2nd to
    4th minibatch updates of a train step, taken after the local policy moved, are corrected for it.'''
    from btgym_aac.algorithms.aac import BaseAAC
    from btgym_aac.algorithms.config import fixed_kwargs
    from btgym_aac.algorithms.nn.losses import (_scalar_summaries, _squared_error, batch_mean, entropy_of, loss_scope,
                                                neg_log_prob)
    from btgym_aac.compat import tf


    def truncated_is_aac_loss(act_target, adv_target, r_target, pi_logits, pi_vf, pi_prime_logits, entropy_beta,
                              epsilon=None, name='_aac_', verbose=False, mask=None, action_groups=1):
        with loss_scope(name, 'aac'):
            neg_log_pi = neg_log_prob(act_target, pi_logits, action_groups)
            neg_log_mu = neg_log_prob(act_target, pi_prime_logits, action_groups)
            rho = tf.stop_gradient(tf.minimum(1.0, tf.exp(neg_log_mu - neg_log_pi)))
            pi_loss = batch_mean(neg_log_pi * adv_target * rho, mask)
            vf_loss = 0.5 * batch_mean(_squared_error(r_target, pi_vf, 'truncated_is_aac_loss'), mask)
            entropy = batch_mean(entropy_of(pi_logits, action_groups), mask)
            loss = pi_loss + vf_loss - entropy * entropy_beta
            summaries = _scalar_summaries([('policy_loss', pi_loss), ('value_loss', vf_loss)],
                                          [('entropy', entropy), ('value_fn', batch_mean(pi_vf, mask)),
                                           ('truncated_rho', batch_mean(rho, mask))], verbose)
        return loss, summaries


    class A3CTruncatedIS(BaseAAC):
        FIXED_SETTINGS = dict(on_policy_loss=truncated_is_aac_loss, use_off_policy_aac=False,
                              use_reward_prediction=False, use_pixel_control=False, use_value_replay=False,
                              _use_target_policy=False, behaviour_logits=True, name='A3C')

        def __init__(self, **kwargs):
            super().__init__(**fixed_kwargs('A3CTruncatedIS', kwargs, A3CTruncatedIS.FIXED_SETTINGS))
"""
from btgym_aac.class_refs import ClassRef
trainer_config = {'class_ref': ClassRef('truncis', 'A3CTruncatedIS'),
                  'kwargs': {'time_flat': True, 'model_summary_freq': 10, 'episode_summary_freq': 1,
                             'opt_learn_rate': 0.001, 'normalize_advantages': True, 'model_gamma': 0.9,
                             'num_minibatches': 4}}
