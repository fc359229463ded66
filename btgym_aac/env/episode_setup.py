"""What a BTgymEnv's `reset()` prepares before an episode runs: the checked sample configs, the trial and episode
sampled from the dataset, and the episode's Cerebro with its statistics and observers."""
import copy

import backtrader as bt

from btgym_aac.data import EnvResetConfig
from btgym_aac.env.costs import check_spread_source
from btgym_aac.env.components import bars
from btgym_aac.env.engine import prepare_cerebro
from btgym_aac.strategy.observers import NormPnL, Position, Reward

SAMPLE_CONFIG_KEYS = frozenset(['get_new', 'sample_type', 'b_alpha', 'b_beta', 'timestamp', 'force_interval',
                                'interval'])
RENDER_OBSERVERS = (bt.observers.Broker, bt.observers.BuySell, bt.observers.Trades, Reward, Position, NormPnL)


class EpisodeSetup:
    """Mixin of `BTgymEnv` sampling its trials and episodes and preparing their Cerebros.

    It reads the env's `dataset`, `engine`, `render_enabled` and `record_episode`, and keeps the current trial in
    `_trial` and `_trial_stat`, the dataset's statistics in `_dataset_stat`, and the time of the current episode's
    first and last bar, its warm-up included, in `episode_window` (None before the first reset).
    """
    episode_window = None

    def _sample_config(self, options, kwargs):
        """The sample configs of a reset: `EnvResetConfig` updated by the given ones.

        Args:
            options: reset's `options` dict (or None).
            kwargs: reset's keyword arguments.

        Returns:
            dict with 'episode_config' and 'trial_config'.

        Raises:
            ValueError: an unknown config or config key.
        """
        config = copy.deepcopy(EnvResetConfig)
        for source in (options or {}, kwargs):
            unknown = set(source) - set(config)
            if unknown:
                raise ValueError('unknown reset options {}; expected {}'.format(sorted(unknown), sorted(config)))
            for key, value in source.items():
                unknown = set(value or {}) - SAMPLE_CONFIG_KEYS
                if unknown:
                    raise ValueError('unknown {} key(s) {}; expected some of {}'.format(
                        key, sorted(unknown), sorted(SAMPLE_CONFIG_KEYS)))
                config[key].update(value or {})
        return config

    def _next_episode(self, trial_config, episode_config):
        """Samples an episode of the current trial, sampling a new trial first when asked to or when there is none.

        Args:
            trial_config, episode_config: sample configs (see `_sample_config`).

        Returns:
            the episode sample.
        """
        if trial_config.get('get_new', True) or self._trial is None:
            self._trial = self.dataset.sample(**trial_config)
            self._trial.reset()
            self._trial_stat = self._trial.describe()
        return self._trial.sample(**episode_config)

    def _new_cerebro(self, episode, decide):
        """A copy of the engine prepared to run `episode`, with the observers of the 'episode' picture when it is
        recorded.

        Args:
            episode: episode sample.
            decide: the step analyzer's callable (see `engine.prepare_cerebro`).

        Returns:
            the prepared `bt.Cerebro`.
        """
        feeds = episode.to_btfeed()
        check_spread_source(self.engine.broker, feeds)
        episode_bars = bars(episode)
        for feed in feeds.values():
            feed.numrecords = len(episode_bars)
        self.episode_window = (episode_bars.index[0].to_pydatetime(), episode_bars.index[-1].to_pydatetime())
        strategy_params = dict(
            metadata=episode.metadata,
            trial_metadata=self._trial.metadata,
            dataset_stat=self._dataset_stat,
            trial_stat=self._trial_stat,
            episode_stat=self._episode_stat(episode),
        )
        observers = RENDER_OBSERVERS if self.render_enabled and self.record_episode else ()
        return prepare_cerebro(copy.deepcopy(self.engine), feeds, strategy_params, decide,
                               render_observers=observers, capture_raw_state=self.render_enabled)

    def _episode_stat(self, episode):
        """Statistics of the episode's bars; those of its trial when the episode spans the whole trial."""
        trial_data, data = bars(self._trial), bars(episode)
        if len(data) == len(trial_data) and data.index[0] == trial_data.index[0]:
            return self._trial_stat
        return episode.describe()

    def _reset_dataset(self, **kwargs):
        """Resets the dataset (kwargs go to its `reset()`) and forgets the trial and the episode count."""
        self.dataset.reset(**kwargs)
        self._trial = None
        self._trial_stat = None
        self._episode_number = -1
