"""Guided A3C: A3C plus an imitation loss that pulls the policy towards an expert's advised actions.

    L = aac_lambda * L_base + L_guided,  L_guided = expert_loss(logits, expert actions, guided_lambda(t))

with `guided_lambda(t)` falling linearly from `guided_lambda` to 0 over `guided_decay_steps` global steps (constant
when None) and zero in steps fed `train_phase=False`. The expert's advice is the `expert` observation key, which
`GuidedPolicy_0_0` exposes as `expert_actions`. Written only against `BaseAAC`'s extension points
(`_make_loss`, `_make_base_loss`, `runner_config`); docs/custom-algorithms.md walks through it.
"""
from btgym_aac.algorithms.aac import BaseAAC
from btgym_aac.algorithms.acting import BaseSynchroRunner, VerboseSynchroRunner
from btgym_aac.compat import tf
from btgym_aac.research.gps.loss import guided_aac_loss_def_0_3
from btgym_aac.validation import check_number

VERBOSE_RENDER_MODES = ('action_prob', 'value_fn', 'lstm_1_h', 'lstm_2_h')
"""Policy renderings of `VerboseGuidedAAC`'s episode summaries (see `VerboseSynchroRunner`)."""


class GuidedAAC(BaseAAC):
    """A3C with an imitation term on expert actions; trains through the same launcher as every trainer.

    Args:
        expert_loss: imitation loss builder (see `loss`): fn(pi_actions, expert_actions, name, verbose,
            guided_lambda, mask) -> (loss, summaries).
        aac_lambda: weight of the actor-critic loss (and its auxiliary terms).
        guided_lambda: start weight of the imitation loss.
        guided_decay_steps: global steps over which the imitation weight decays linearly to 0 (None: constant).
        runner_config: runner {'class_ref', 'kwargs'} (default: `BaseSynchroRunner`, collecting in the trainer's
            thread).
        aux_render_modes: extra rendering modes summarised as images.
        name: variable scope of the worker graph.
        **kwargs: `BaseAAC` arguments.

    Raises:
        TypeError: the policy has no `expert_actions` (use `GuidedPolicy_0_0` and a strategy with an `expert`
            observation key such as `GuidedStrategy_0_0`).
        ValueError: a weight is negative or `guided_decay_steps` not > 0.
    """

    def __init__(self, expert_loss=guided_aac_loss_def_0_3, aac_lambda=1.0, guided_lambda=1.0,
                 guided_decay_steps=None, runner_config=None, aux_render_modes=None, name='GuidedA3C', **kwargs):
        self.expert_loss = expert_loss
        self.aac_lambda = check_number('aac_lambda', aac_lambda)
        self.guided_lambda = check_number('guided_lambda', guided_lambda)
        self.guided_decay_steps = None if guided_decay_steps is None else \
            check_number('guided_decay_steps', guided_decay_steps, low_open=True)
        if runner_config is None:
            runner_config = {'class_ref': BaseSynchroRunner, 'kwargs': {'aux_render_modes': aux_render_modes}}
        super().__init__(runner_config=runner_config, aux_render_modes=aux_render_modes, name=name, **kwargs)

    def _make_loss(self, pi, pi_prime):
        """`aac_lambda` times the base loss (under name scope `<name>/base`) plus the imitation loss."""
        if getattr(pi, 'expert_actions', None) is None:
            raise TypeError('{} needs a policy with `expert_actions` (such as GuidedPolicy_0_0, on an env whose '
                            'strategy gives an `expert` observation); {} has none'.format(
                                type(self).__name__, type(pi).__name__))
        aac_loss, summaries = self._make_base_loss(pi=pi, pi_prime=pi_prime)
        self.guided_lambda_decayed = self._decayed_guided_lambda()
        self.train_guided_lambda = self.guided_lambda_decayed * tf.cast(pi.train_phase, tf.float32)
        guided_loss, guided_summaries = self.expert_loss(
            pi_actions=pi.on_logits, expert_actions=pi.expert_actions, name='on_policy', verbose=True,
            guided_lambda=self.train_guided_lambda, mask=self.targets.on_policy.mask)
        self.log.notice('guided_lambda: {:1.6f}, guided_decay_steps: {}'.format(self.guided_lambda,
                                                                               self.guided_decay_steps))
        self.guided_loss = guided_loss
        return self.aac_lambda * aac_loss + guided_loss, summaries + guided_summaries

    def _decayed_guided_lambda(self):
        """float32 `guided_lambda * (1 - min(step + 1, D) / D)` for D = `guided_decay_steps`, else the constant."""
        if self.guided_decay_steps is None:
            return tf.constant(self.guided_lambda, tf.float32)
        decayed = tf.train.polynomial_decay(float(self.guided_lambda), tf.cast(self.global_step, tf.float32) + 1.0,
                                            float(self.guided_decay_steps), 0.0, power=1.0, cycle=False)
        return tf.cast(decayed, tf.float32)


class VerboseGuidedAAC(GuidedAAC):
    """`GuidedAAC` whose episode summaries add the policy's renderings (action probabilities, values, LSTM
    states; see `VerboseSynchroRunner`).

    Args:
        aux_render_modes: subset of `VERBOSE_RENDER_MODES`.
        name: variable scope of the worker graph.
        **kwargs: `GuidedAAC` arguments but `runner_config` (the runner is `VerboseSynchroRunner`).

    Raises:
        TypeError: `runner_config` is given.
    """

    def __init__(self, aux_render_modes=VERBOSE_RENDER_MODES, name='VerboseGuidedA3C', **kwargs):
        if 'runner_config' in kwargs:
            raise TypeError('VerboseGuidedAAC fixes runner_config (VerboseSynchroRunner); use GuidedAAC to set it')
        modes = list(aux_render_modes)
        super().__init__(runner_config={'class_ref': VerboseSynchroRunner, 'kwargs': {'aux_render_modes': modes}},
                         aux_render_modes=modes, name=name, **kwargs)
