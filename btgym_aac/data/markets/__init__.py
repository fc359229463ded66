"""Markets with a known edge, their no-edge twins, and oracles that trade on the edge: a learner can be measured
against an edge that exists (and shown to find none where none exists)."""
from btgym_aac.data.markets.basket import BasketOracle, make_basket_market
from btgym_aac.data.markets.intraday import make_intraday_pattern_data
from btgym_aac.data.markets.mean_reversion import make_mean_reversion_data
from btgym_aac.data.markets.pair import PairOracle, make_pair_market
from btgym_aac.data.markets.oracles import (IntradayPatternOracle, MeanReversionOracle, Oracle, RegimeSwitchingOracle,
                                            net_return_summary, oracle_for, oracle_log_returns)
from btgym_aac.data.markets.regime import make_regime_switching_data
from btgym_aac.data.markets.spec import MarketSpec, read_market_spec, write_market_csv, write_market_spec

__all__ = [
    'BasketOracle', 'IntradayPatternOracle', 'MarketSpec', 'MeanReversionOracle', 'Oracle', 'PairOracle', 'RegimeSwitchingOracle',
    'make_basket_market', 'make_intraday_pattern_data', 'make_mean_reversion_data', 'make_pair_market', 'make_regime_switching_data',
    'net_return_summary',
    'oracle_for', 'oracle_log_returns', 'read_market_spec', 'write_market_csv', 'write_market_spec',
]
