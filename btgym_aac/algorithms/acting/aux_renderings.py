"""Policy renderings of a finished episode, drawn next to the env's own renderings by the verbose runners
(`VerboseSynchroRunner`, `btgym_aac.research.verbose_env_runner.VerboseEnvRunnerFn`):

* ``action_prob``: softmax of the action logits over the episode (one line per action);
* ``value_fn``: the value estimates over the episode;
* ``lstm_1_h``, ``lstm_2_h``: heat-maps of the first layer's h state of LSTM-1 / LSTM-2, min-max scaled to 0..255
  (needs a two-LSTM context such as `StackedLstmPolicy`'s).

Images are drawn on matplotlib Agg canvases (no pyplot, so nothing needs initialising first) and returned as uint8
[1, H, W, 3] arrays. The episode is given as an accumulator ``{'logits': [[A] per step], 'value': [[1] per step],
'context': [policy context after each step]}`` (see `new_episode_accumulator`).
"""
import numpy as np

AUX_RENDER_MODES = ('action_prob', 'value_fn', 'lstm_1_h', 'lstm_2_h')
"""The policy renderings implemented here."""


def new_episode_accumulator():
    """Empty per-episode accumulator of logits, values and contexts."""
    return {'logits': [], 'value': [], 'context': []}


def check_aux_render_modes(modes, owner, implemented=AUX_RENDER_MODES):
    """Returns `modes` as a tuple; raises NotImplementedError naming `owner` for a mode not in `implemented`."""
    modes = tuple(modes or ())
    for mode in modes:
        if mode not in implemented:
            raise NotImplementedError('{}: aux render mode {!r} is not implemented; implemented: {}'.format(
                owner, mode, list(implemented)))
    return modes


def lstm_h_history(contexts, lstm_index):
    """h states of LSTM `lstm_index` (first layer) over an episode.

    Args:
        contexts: per-step policy contexts: a tuple of LSTM parts, each an ``LSTMStateTuple(c, h)`` or a tuple of
            per-layer ``LSTMStateTuple`` (stacked LSTM policies: ``(lstm_1 layers, lstm_2 layers)``).
        lstm_index: 0 for LSTM-1, 1 for LSTM-2.

    Returns:
        float64 array [steps, units].
    """
    rows = []
    for context in contexts:
        if len(context) <= lstm_index:
            raise ValueError('aux rendering of LSTM {} needs a policy context with at least {} LSTM parts, got '
                             '{}'.format(lstm_index + 1, lstm_index + 1, len(context)))
        part = context[lstm_index]
        layer = part if hasattr(part, 'h') else part[0]
        rows.append(np.asarray(layer.h, dtype=np.float64).reshape(-1))
    return np.stack(rows)


def min_max_255(x):
    """Scales `x` linearly to 0..255 (all zeros when constant)."""
    x = np.asarray(x, dtype=np.float64)
    span = np.ptp(x)
    return np.zeros_like(x) if span == 0 else np.round((x - x.min()) / span * 255)


def action_labels(action_space):
    """Legend of the ``action_prob`` plot: the base actions of a one-asset discrete space, `asset: action` with
    per-asset heads, else action numbers."""
    if getattr(action_space, 'is_discrete', False) and len(action_space.assets) == 1:
        return [str(action).capitalize() for action in action_space.base_actions]
    if getattr(action_space, 'action_groups', 1) > 1:
        return ['{}: {}'.format(asset, action) for asset in action_space.assets for action in action_space.base_actions]
    return ['action {}'.format(index) for index in range(action_space.one_hot_depth)]


def action_probabilities(logits, action_space):
    """Probabilities [steps, A] of the logits of every step (per asset for per-asset heads)."""
    logits = np.asarray(logits, dtype=np.float64)
    return np.stack([action_space.probabilities(row) for row in logits.reshape(-1, logits.shape[-1])])


def draw_aux(plotter, mode, accum, action_space):
    """One policy rendering of an episode.

    Args:
        plotter: `BTgymRendering` that draws it.
        mode: one of `AUX_RENDER_MODES`.
        accum: the episode's accumulator (see the module docstring).
        action_space: the env's action space (legend of ``action_prob``).

    Returns:
        uint8 array [1, H, W, 3].
    """
    if mode == 'action_prob':
        image = plotter.draw_plot(
            action_probabilities(accum['logits'], action_space), figsize=(12, 4),
            title='Episode action probabilities', box_text='', xlabel='Backward env. steps', ylabel='P',
            line_labels=action_labels(action_space))
    elif mode == 'value_fn':
        image = plotter.draw_plot(
            np.asarray(accum['value'], dtype=np.float64).reshape(-1, 1), figsize=(12, 4),
            title='Episode value function', box_text='', xlabel='Backward env. steps', ylabel='V',
            line_labels=['Value'])
    else:
        lstm_index = int(mode[len('lstm_')]) - 1
        image = plotter.draw_image(
            min_max_255(lstm_h_history(accum['context'], lstm_index)), figsize=(12, 4),
            title='LSTM-{} h state, min-max scaled to 0..255'.format(lstm_index + 1), box_text='',
            xlabel='Backward env. steps', ylabel='Unit')
    return image[None]


def draw_aux_renderings(plotter, modes, accum, action_space):
    """``{mode: draw_aux(...)}`` for every mode of `modes`."""
    return {mode: draw_aux(plotter, mode, accum, action_space) for mode in modes}
