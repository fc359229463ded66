"""The default preset on the known-edge markets' episodes: 8 hours each, an hour apart, no rendering."""
env_config = {'kwargs': {'episode_duration': {'days': 0, 'hours': 8, 'minutes': 0}, 'time_gap': {'hours': 1},
                         'render_enabled': False}}
