"""The pictures of a BTgymEnv: its render settings and `render(mode)` (the `RenderModes` mixin), which picks what a
mode shows, and the renderer that draws environment steps and finished episodes as uint8 RGB arrays (matplotlib,
Agg canvas).

Images are drawn on demand, never during training steps. All drawing is serialised by one lock, so several
environments in different threads can render side by side.
"""
import contextlib
import threading

import matplotlib
import matplotlib.style
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

_PLOT_LOCK = threading.Lock()
_STYLE_ALIASES = {'seaborn': 'seaborn-v0_8'}
GYM_RENDER_MODES = ('rgb_array', 'human')


def figure_to_rgb(fig):
    """Draws a matplotlib figure on an Agg canvas.

    Args:
        fig: matplotlib Figure.

    Returns:
        uint8 array [height, width, 3].
    """
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.array(canvas.buffer_rgba())[..., :3]


def _import_backtrader_plot():
    """Imports backtrader.plot without letting it switch the user's matplotlib backend to TkAgg."""
    backend = dict.__getitem__(matplotlib.rcParams, 'backend')
    import backtrader.plot as bt_plot
    dict.__setitem__(matplotlib.rcParams, 'backend', backend)
    return bt_plot


class BTgymRendering:
    """Draws observations ('human' OHLC window and any observation key) and finished episodes.

    Args:
        render_modes: list of modes; 'human', 'episode' and observation keys.
        **kwargs: any of `defaults` (render_* settings) to override.
    """
    enabled = True
    defaults = dict(
        render_state_as_image=True,
        render_state_channel=0,
        render_size_human=(6, 3.5),
        render_size_state=(7, 3.5),
        render_size_episode=(12, 8),
        render_rowsmajor_episode=1,
        render_dpi=75,
        render_plotstyle='seaborn',
        render_cmap='PRGn',
        render_xlabel='Relative timesteps',
        render_ylabel='Value',
        render_title='local step: {}, state observation min: {:.4f}, max: {:.4f}',
        render_boxtext=dict(
            fontsize=12, fontweight='bold', color='w',
            bbox={'facecolor': 'k', 'alpha': 0.3, 'edgecolor': 'none'},
        ),
    )

    def __init__(self, render_modes, **kwargs):
        unknown = set(kwargs) - set(self.defaults)
        if unknown:
            raise TypeError('unknown rendering arguments: {}'.format(sorted(unknown)))
        self.render_modes = list(render_modes)
        self.params = dict(self.defaults, **kwargs)
        for key, value in self.params.items():
            setattr(self, key, value)

    def _style(self):
        style = _STYLE_ALIASES.get(self.render_plotstyle, self.render_plotstyle)
        if style not in matplotlib.style.available:
            style = 'default'
        return matplotlib.style.context(style)

    @staticmethod
    def _info_text(step):
        info = step['infos'][-1] if step['infos'] else {}
        lines = ['step: {}'.format(info.get('step')), 'time: {}'.format(info.get('time'))]
        lines += ['{}: {:.4f}'.format(name, info[name]) for name in ('broker_value', 'drawdown') if name in info]
        lines += ['reward: {:.4f}'.format(step['reward']), 'is_done: {}'.format(step['done'])]
        return '\n'.join(lines)

    def _new_figure(self, figsize):
        return Figure(figsize=figsize, dpi=self.render_dpi)

    @contextlib.contextmanager
    def _axes(self, figsize):
        """Yields (figure, axes) of a new one-plot figure, holding the drawing lock and the plot style."""
        with _PLOT_LOCK, self._style():
            fig = self._new_figure(figsize)
            yield fig, fig.add_subplot(1, 1, 1)

    def draw_plot(self, data, figsize, title, box_text, xlabel, ylabel, line_labels=None):
        """Line plot of the columns of `data` against reversed time offsets.

        Args:
            data: array [time, lines].
            figsize: (width, height) inches.
            title, box_text, xlabel, ylabel: texts.
            line_labels: legend labels, one per column.

        Returns:
            uint8 RGB array.
        """
        data = np.asarray(data, dtype=np.float64).reshape(len(data), -1)
        with self._axes(figsize) as (fig, ax):
            offsets = np.arange(-len(data) + 1, 1)
            for column in range(data.shape[1]):
                label = line_labels[column] if line_labels and column < len(line_labels) else None
                ax.plot(offsets, data[:, column], label=label)
            if line_labels:
                ax.legend(loc='upper left')
            self._decorate(fig, ax, title, box_text, xlabel, ylabel)
            return figure_to_rgb(fig)

    def draw_image(self, data, figsize, title, box_text, xlabel, ylabel):
        """Heat-map of `data` transposed: rows are features, columns time offsets.

        Args:
            data: array [time, features].
            figsize: (width, height) inches.
            title, box_text, xlabel, ylabel: texts.

        Returns:
            uint8 RGB array.
        """
        data = np.asarray(data, dtype=np.float64).reshape(len(data), -1)
        with self._axes(figsize) as (fig, ax):
            image = ax.imshow(data.T, aspect='auto', cmap=self.render_cmap, interpolation='nearest',
                              extent=(-len(data) + 0.5, 0.5, data.shape[1] - 0.5, -0.5))
            fig.colorbar(image, ax=ax)
            self._decorate(fig, ax, title, box_text, xlabel, ylabel)
            return figure_to_rgb(fig)

    def _decorate(self, fig, ax, title, box_text, xlabel, ylabel):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.text(0.02, 0.04, box_text, transform=ax.transAxes, verticalalignment='bottom',
                **dict(self.render_boxtext, fontsize=min(self.render_boxtext.get('fontsize', 12), 8)))
        fig.tight_layout()

    def state_to_2d(self, state):
        """Reduces an observation array to [time, features] for `render_state`'s plot.

        Rank <= 2 is used as is; rank 3 with a fake width axis of 1 is squeezed; other rank 3 arrays show
        channel `render_state_channel`.

        Raises:
            NotImplementedError: rank > 3.
        """
        state = np.asarray(state)
        if state.ndim <= 2:
            return state.reshape(len(state), -1) if state.ndim else state.reshape(1, 1)
        if state.ndim == 3:
            return state[:, 0, :] if state.shape[1] == 1 else state[..., self.render_state_channel]
        raise NotImplementedError('cannot render a state of rank {}'.format(state.ndim))

    def render_state(self, mode, step):
        """Image of observation key `mode` at the last step.

        Args:
            mode: observation key.
            step: dict with 'state', 'reward', 'done', 'infos', 'raw_state', 'number'.

        Returns:
            uint8 RGB array.
        """
        data = self.state_to_2d(step['state'][mode])
        title = '{} / {}'.format(mode, self.render_title.format(step['number'], data.min(), data.max()))
        draw = self.draw_image if self.render_state_as_image else self.draw_plot
        return draw(data, self.render_size_state, title, self._info_text(step), self.render_xlabel,
                    self.render_ylabel)

    def render_human(self, step):
        """Line plot of the last OHLC window.

        Args:
            step: as in `render_state`; needs 'raw_state' [time, 4].

        Returns:
            uint8 RGB array.
        """
        raw = np.asarray(step['raw_state'])
        title = self.render_title.format(step['number'], raw.min(), raw.max())
        return self.draw_plot(raw, self.render_size_human, title, self._info_text(step), self.render_xlabel,
                              'Price', line_labels=['Open', 'High', 'Low', 'Close'])

    def render_episode(self, strategy):
        """Backtrader's own plot of a finished episode (prices, orders, observers).

        Args:
            strategy: the strategy instance of a finished cerebro run.

        Returns:
            uint8 RGB array.
        """
        bt_plot = _import_backtrader_plot()
        import matplotlib.pyplot as pyplot
        with _PLOT_LOCK, self._style():
            plotter = bt_plot.Plot_OldSync(rowsmajor=self.render_rowsmajor_episode)
            figures = plotter.plot(strategy, iplot=False, numfigs=1)
            try:
                fig = figures[0]
                fig.set_size_inches(*self.render_size_episode)
                fig.set_dpi(self.render_dpi)
                return figure_to_rgb(fig)
            finally:
                for fig in figures:
                    pyplot.close(fig)

    def render_message(self, text, figsize=(6, 3.5)):
        """Image with a centred message (used before anything can be drawn).

        Returns:
            uint8 RGB array.
        """
        with _PLOT_LOCK:
            fig = self._new_figure(figsize)
            fig.text(0.5, 0.5, text, ha='center', va='center', wrap=True)
            return figure_to_rgb(fig)


class BTgymNullRendering:
    """Stand-in renderer when rendering is disabled (`render_enabled=False`)."""
    enabled = False
    render_modes = []
    params = {'rendering': 'disabled'}


class RenderModes:
    """Mixin of `BTgymEnv` for its pictures.

    It reads the env's `metadata`, `_episode_done`, `_finished_strategy`, `_finished_recorded`, `_episode_number`
    and `_last_step`, and calls its `_finish_episode()` before drawing a finished episode.
    """

    def _set_rendering(self, kwargs):
        """Pops the render kwargs and sets up the renderer.

        Args:
            kwargs: the env's keyword arguments: `render_enabled`, `render_modes`, `render_mode` and the
                `BTgymRendering` settings are taken out.

        Raises:
            ValueError: a `render_mode` that is not gymnasium's.
        """
        self.render_enabled = kwargs.pop('render_enabled', True)
        self.record_episode = True
        self.render_modes = list(kwargs.pop('render_modes', ['human', 'episode']))
        self.render_mode = kwargs.pop('render_mode', None)
        if self.render_mode not in (None,) + GYM_RENDER_MODES:
            raise ValueError("render_mode must be None, 'rgb_array' or 'human' (gymnasium's), got {!r}; the original's "
                             "picture modes go in render_modes, drawn by render(mode)".format(self.render_mode))
        render_kwargs = {key: kwargs.pop(key) for key in list(kwargs) if key in BTgymRendering.defaults}
        self.renderer = BTgymRendering(self.render_modes, **render_kwargs) if self.render_enabled \
            else BTgymNullRendering()
        self.metadata = dict(self.metadata, **{'render.modes': list(self.render_modes)})

    def render(self, mode=None):
        """Picture of the last step ('human' or an observation key) or of the last finished episode ('episode').

        Args:
            mode: one of `render_modes` (the original's call); None: gymnasium's, by `render_mode` (None and
                'human' draw nothing, 'rgb_array' the 'human' picture).

        Returns:
            uint8 RGB array [height, width, 3], or None.

        Raises:
            ValueError: unknown mode. RuntimeError: rendering disabled.
        """
        if mode is None:
            if self.render_mode != 'rgb_array':
                return None
            mode = 'human'
        if mode not in self.render_modes:
            raise ValueError('render mode {!r} is not one of render_modes {}'.format(mode, self.render_modes))
        if not self.renderer.enabled:
            raise RuntimeError('rendering is disabled: create the env with render_enabled=True')
        if mode == 'episode':
            if self._episode_done:
                self._finish_episode()
            if self._finished_strategy is None:
                return self.renderer.render_message('no finished episode to render yet')
            if not self._finished_recorded:
                return self.renderer.render_message('episode {} was not recorded (record_episode was False at its '
                                                    'reset)'.format(self._episode_number))
            return self.renderer.render_episode(self._finished_strategy)
        if self._last_step is None:
            return self.renderer.render_message('nothing to render before the first reset()')
        if mode == 'human':
            return self.renderer.render_human(self._last_step)
        return self.renderer.render_state(mode, self._last_step)
