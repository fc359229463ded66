"""gymnasium ids of the trading envs, registered when `btgym_aac.env` is imported (also by `from btgym_aac import
BTgymEnv`); in a fresh interpreter `gymnasium.make('btgym_aac.env:BTgymDevStrat_4_11-v0')` imports it first.

* `BTgym-v0`: `BTgymEnv` with its defaults (the built-in sine series, `BTgymBaseStrategy`).
* `BTgymDevStrat_4_11-v0`: the reference configuration's env (DevStrat_4_11 and the settings of
  `btgym-aac train`), see `REFERENCE_ENV_KWARGS`.

Keyword arguments of `gymnasium.make` override the defaults (`filename=`, `render_mode=`, ...).
"""
import gymnasium

REFERENCE_ENV_KWARGS = dict(
    start_cash=2000, commission=0.0001, leverage=10.0, order_size=2000, drawdown_call=10, target_call=10,
    skip_frame=10, gamma=0.99, reward_scale=7, state_ext_scale=(3e3, 2.5e3, 2e3, 1.5e3, 1e3),
    episode_duration={'days': 1, 'hours': 23, 'minutes': 40}, time_gap={'hours': 10},
    render_modes=['episode', 'human', 'internal', 'external'],
)
ENV_IDS = {
    'BTgym-v0': ('btgym_aac.env.base:BTgymEnv', {}),
    'BTgymDevStrat_4_11-v0': ('btgym_aac.registration:reference_env', REFERENCE_ENV_KWARGS),
}


def reference_env(**kwargs):
    """The reference configuration's `BTgymEnv` (DevStrat_4_11); `kwargs` as `REFERENCE_ENV_KWARGS`, which they
    override (`strategy=` included)."""
    import numpy as np

    from btgym_aac.env import BTgymEnv
    from btgym_aac.strategy import DevStrat_4_11

    kwargs = dict(REFERENCE_ENV_KWARGS, **kwargs)
    kwargs.setdefault('strategy', DevStrat_4_11)
    kwargs['state_ext_scale'] = np.asarray(kwargs['state_ext_scale'], dtype=np.float64)
    return BTgymEnv(**kwargs)


def register_envs():
    """Registers `ENV_IDS` with gymnasium (ids registered already are left as they are)."""
    for env_id, (entry_point, kwargs) in ENV_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point, kwargs=dict(kwargs))
