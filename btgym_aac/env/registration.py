"""gymnasium ids of the trading envs, registered when `btgym_aac.env` is imported (also by `from btgym_aac import
BTgymEnv`). Registering imports gymnasium only: the entry points are strings, so neither backtrader nor TensorFlow
is imported before an env is made.

Ids, in the `btgym_aac` namespace:

* `btgym_aac/BTgym-v0`: `BTgymEnv` with its defaults (the built-in sine series, `BTgymBaseStrategy`).
* `btgym_aac/BTgymDevStrat_4_11-v0`: the reference configuration's env (DevStrat_4_11 and the settings of
  `btgym-aac train`), see `REFERENCE_ENV_KWARGS`.
* `btgym_aac/MultiDiscrete-v0`, `btgym_aac/Portfolio-v0`: `MultiDiscreteEnv` and `PortfolioEnv` with their
  defaults; they need `dataset=` (a `BTgymMultiData`).

`BTgym-v0` and `BTgymDevStrat_4_11-v0` (no namespace) are the same envs under the ids of earlier versions.

gymnasium 1.x loads no plugins (it ignores the `gymnasium.envs` entry-point group of gym and gymnasium < 1.0), so
a fresh interpreter imports this package first: `import btgym_aac.env`, or name the module in the id,
`gymnasium.make('btgym_aac.env:btgym_aac/BTgymDevStrat_4_11-v0')`. Keyword arguments of `gymnasium.make` override
the defaults (`filename=`, `dataset=`, `render_mode=`, ...).
"""
import gymnasium

NAMESPACE = 'btgym_aac'

REFERENCE_ENV_KWARGS = dict(
    start_cash=2000, commission=0.0001, leverage=10.0, order_size=2000, drawdown_call=10, target_call=10,
    skip_frame=10, gamma=0.99, reward_scale=7, state_ext_scale=(3e3, 2.5e3, 2e3, 1.5e3, 1e3),
    episode_duration={'days': 1, 'hours': 23, 'minutes': 40}, time_gap={'hours': 10},
    render_modes=['episode', 'human', 'internal', 'external'],
)
"""The reference configuration's env settings (with `strategy=DevStrat_4_11`; `state_ext_scale` as a float64
array when given to an env): `btgym-aac train`'s env and `btgym_aac/BTgymDevStrat_4_11-v0`."""

ENV_IDS = {
    NAMESPACE + '/BTgym-v0': ('btgym_aac.env.base:BTgymEnv', {}),
    NAMESPACE + '/BTgymDevStrat_4_11-v0': ('btgym_aac.env.registration:reference_env', REFERENCE_ENV_KWARGS),
    NAMESPACE + '/MultiDiscrete-v0': ('btgym_aac.env.multi_asset:MultiDiscreteEnv', {}),
    NAMESPACE + '/Portfolio-v0': ('btgym_aac.env.multi_asset:PortfolioEnv', {}),
}
"""id -> (entry point, default kwargs)."""

LEGACY_IDS = {'BTgym-v0': NAMESPACE + '/BTgym-v0', 'BTgymDevStrat_4_11-v0': NAMESPACE + '/BTgymDevStrat_4_11-v0'}
"""The ids of earlier versions (no namespace) -> the id in `ENV_IDS` they make."""


def reference_env(**kwargs):
    """The reference configuration's `BTgymEnv` (DevStrat_4_11); `kwargs` as `REFERENCE_ENV_KWARGS`, which they
    override (`strategy=` included)."""
    import numpy as np

    from btgym_aac.env.base import BTgymEnv
    from btgym_aac.strategy import DevStrat_4_11

    kwargs = dict(REFERENCE_ENV_KWARGS, **kwargs)
    kwargs.setdefault('strategy', DevStrat_4_11)
    kwargs['state_ext_scale'] = np.asarray(kwargs['state_ext_scale'], dtype=np.float64)
    return BTgymEnv(**kwargs)


def register_envs():
    """Registers `ENV_IDS` and `LEGACY_IDS` with gymnasium (ids registered already are left as they are)."""
    ids = dict(ENV_IDS, **{legacy: ENV_IDS[current] for legacy, current in LEGACY_IDS.items()})
    for env_id, (entry_point, kwargs) in ids.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point, kwargs=dict(kwargs))
