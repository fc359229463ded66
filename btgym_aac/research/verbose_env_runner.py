"""`VerboseEnvRunnerFn`: the thread runner's `BaseEnvRunnerFn` plus policy renderings of every rendered episode
(action probabilities, value function, LSTM h states; see `btgym_aac.algorithms.acting.aux_renderings`).

Use it as the runner function of `RunnerThread`: ``A3C(..., runner_fn_ref=VerboseEnvRunnerFn,
aux_render_modes=['action_prob', 'value_fn', 'lstm_1_h', 'lstm_2_h'])`` or ``runner_config={'class_ref':
RunnerThread, 'kwargs': {'runner_fn_ref': VerboseEnvRunnerFn}}``. The trainer summarises only the renderings
named in its `aux_render_modes`, which `RunnerThread` passes on, so those are the ones drawn.
"""
from btgym_aac.algorithms.acting.aux_renderings import (
    AUX_RENDER_MODES, check_aux_render_modes, draw_aux_renderings, new_episode_accumulator,
)
from btgym_aac.algorithms.acting.env_runner import _EnvRunner, logged_runner_data, make_memory
from btgym_aac.env.rendering import BTgymRendering

__all__ = ['VerboseEnvRunnerFn']


class _VerboseEnvRunner(_EnvRunner):
    """`_EnvRunner` that keeps each episode's logits, values and contexts and draws them into its render summary."""

    def __init__(self, *args, aux_render_modes=(), **kwargs):
        self.aux_render_modes = check_aux_render_modes(aux_render_modes, 'VerboseEnvRunnerFn')
        super().__init__(*args, **kwargs)
        self.plotter = BTgymRendering(render_modes=())
        self.ep_accum = new_episode_accumulator()

    def start_episode(self, previous_context=None):
        self.ep_accum = new_episode_accumulator()
        super().start_episode(previous_context)

    def record(self, transition):
        self.ep_accum['logits'].append(transition.logits)
        self.ep_accum['value'].append(transition.experience['value'])
        self.ep_accum['context'].append(transition.context)

    def render(self):
        render_stat = super().render()
        if render_stat is not None and not self.test_mode:
            render_stat.update(draw_aux_renderings(self.plotter, self.aux_render_modes, self.ep_accum,
                                                   self.env.action_space))
        return render_stat


def VerboseEnvRunnerFn(sess, env, policy, task, rollout_length, summary_writer, episode_summary_freq,
                       env_render_freq, atari_test, ep_summary, memory_config, log, aux_summaries=AUX_RENDER_MODES,
                       stop_event=None, aux_render_modes=None, **kwargs):
    """Generator of runner data: `BaseEnvRunnerFn` (same arguments, behaviour and yielded dicts) whose render
    summaries also hold policy renderings of the episode.

    A BTGym episode that is rendered (see `should_render`) gets, next to ``{mode: env.render(mode)[None]}``, one
    uint8 [1, H, W, 3] image per aux mode: ``action_prob`` (softmax of the logits at every step), ``value_fn``
    (the value estimates), ``lstm_1_h`` / ``lstm_2_h`` (first-layer h states of LSTM-1 / LSTM-2 after every
    step, min-max scaled; they need a two-LSTM context such as `AacStackedRL2Policy`'s). Test-mode envs get
    `BaseEnvRunnerFn`'s rendering only.

    Args:
        sess ... log: as in `BaseEnvRunnerFn`.
        aux_summaries: aux modes drawn when `aux_render_modes` is None (a direct call); default all four.
        stop_event: as in `BaseEnvRunnerFn`.
        aux_render_modes: the trainer's aux modes (`RunnerThread` passes them); they take precedence over
            `aux_summaries`, since the trainer summarises no others. Empty: no aux rendering, exactly
            `BaseEnvRunnerFn`'s data.
        **kwargs: ignored.

    Raises:
        NotImplementedError: on the first ``next()``, for an aux mode that is not one of
            'action_prob', 'value_fn', 'lstm_1_h', 'lstm_2_h'.

    Yields:
        data dicts as `BaseEnvRunnerFn`.
    """
    modes = aux_summaries if aux_render_modes is None else aux_render_modes
    yield from logged_runner_data(
        lambda: _VerboseEnvRunner(sess, env, policy, task, rollout_length, episode_summary_freq, env_render_freq,
                                  atari_test, make_memory(memory_config), stop_event, aux_render_modes=modes),
        task, log, stop_event)
