"""A BTgymEnv's render settings and its `render(mode)`, which picks what a mode shows and has the renderer
(`rendering.BTgymRendering`) draw it."""
from btgym_aac.env.rendering import BTgymNullRendering, BTgymRendering

GYM_RENDER_MODES = ('rgb_array', 'human')


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
