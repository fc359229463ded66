"""A market's recipe (`MarketSpec`): carried by its frames, written next to its CSV files, and regenerating them."""
import copy
import dataclasses
import json
import os

from btgym_aac.data.markets import basket, intraday, mean_reversion, pair, regime
from btgym_aac.data.synthetic import write_histdata_csv

GENERATORS = {
    mean_reversion.KIND: mean_reversion.make_mean_reversion_data,
    regime.KIND: regime.make_regime_switching_data,
    intraday.KIND: intraday.make_intraday_pattern_data,
    pair.KIND: pair.make_pair_market,
    basket.KIND: basket.make_basket_market,
}
"""Market kind -> the generator of its frames."""

SIDECAR_SUFFIX = '.market.json'


@dataclasses.dataclass(frozen=True)
class MarketSpec:
    """Everything that generated a market frame.

    Attributes:
        kind: 'mean_reversion', 'regime_switching', 'intraday_pattern', 'cointegrated_pair' or
            'relative_momentum'.
        edge: False for the no-edge twin.
        seed: the generator's seed.
        params: every other argument of the generator (JSON-able dict).
        asset: for a market of several assets, the name of the frame's asset among its `params['names']` (whose
            order gives each asset its role: X and Y of a pair); None for one asset.
    """
    kind: str
    edge: bool
    seed: int
    params: dict = dataclasses.field(hash=False)
    asset: str = None

    def __post_init__(self):
        if self.kind not in GENERATORS:
            raise ValueError('unknown market kind {!r}; known: {}'.format(self.kind, sorted(GENERATORS)))

    @classmethod
    def from_frame(cls, df):
        """The spec in `df.attrs['market']`, or None when the frame carries none."""
        recipe = df.attrs.get('market')
        return None if recipe is None else cls.from_dict(recipe)

    @classmethod
    def from_dict(cls, recipe):
        """The spec of a dict with keys kind, edge, seed, params (ValueError when one is missing or unknown)."""
        missing = sorted({'kind', 'edge', 'seed', 'params'} - set(recipe))
        if missing:
            raise ValueError('market recipe lacks {}'.format(missing))
        return cls(kind=recipe['kind'], edge=bool(recipe['edge']), seed=recipe['seed'],
                   params=copy.deepcopy(dict(recipe['params'])), asset=recipe.get('asset'))

    def to_dict(self):
        """JSON-able dict with keys kind, edge, seed, params (and asset, for a market of several assets)."""
        recipe = dict(kind=self.kind, edge=self.edge, seed=self.seed, params=copy.deepcopy(self.params))
        if self.asset is not None:
            recipe['asset'] = self.asset
        return recipe

    def make(self):
        """Regenerates the frame this spec describes, exactly (of a market of several assets, its asset's)."""
        made = GENERATORS[self.kind](edge=self.edge, seed=self.seed, **copy.deepcopy(self.params))
        return made if self.asset is None else made[self.asset]

    def same_market(self, other):
        """Whether `other` describes a frame of the same generated market (another asset of it, or the same)."""
        return (self.kind, self.edge, self.seed, self.params) == (other.kind, other.edge, other.seed, other.params)


def sidecar_path(path):
    """The spec file written next to the CSV file `path`: `<path>.market.json`."""
    return os.fspath(path) + SIDECAR_SUFFIX


def write_market_csv(df, path, header=False):
    """Writes a market frame's bars as a HistData CSV file (`write_histdata_csv`) and its spec next to it.

    Args:
        df: frame from one of the market generators (it carries `df.attrs['market']`).
        path: CSV file path; the spec goes to `<path>.market.json`.
        header: write the HistData header line first.

    Returns:
        `path`.
    """
    spec = MarketSpec.from_frame(df)
    if spec is None:
        raise ValueError('the frame carries no market spec (df.attrs["market"]); write it with write_histdata_csv')
    write_histdata_csv(df, path, header=header)
    write_market_spec(spec, path)
    return path


def write_market_spec(spec, path):
    """Writes `spec` next to the CSV file `path` (as `<path>.market.json`), for bars of that market written there
    by other means (a slice of its series, for example).

    Returns:
        the spec file's path.
    """
    sidecar = sidecar_path(path)
    with open(sidecar, 'w') as handle:
        json.dump(spec.to_dict(), handle, indent=1)
    return sidecar


def read_market_spec(path):
    """The spec written next to the CSV file `path`, or None when there is no `<path>.market.json`.

    Raises:
        ValueError: the spec file does not parse or names an unknown market kind (the file named).
    """
    sidecar = sidecar_path(path)
    if not os.path.exists(sidecar):
        return None
    try:
        with open(sidecar) as handle:
            return MarketSpec.from_dict(json.load(handle))
    except (ValueError, TypeError, AttributeError) as error:
        raise ValueError('market spec file <{}> is not a valid spec: {}'.format(sidecar, error)) from error
