"""Learning checks on the known-edge markets (docs/learning.md): in the default suite, A3C in the default preset
trained briefly on a mean-reverting market takes a good part of what the market's oracle takes on bars it never
saw; `slow`, the default preset trained and evaluated as `benchmarks/known_edge.py` trains and evaluates it takes
part of it on every single-asset market, its checkpoints at 20,000 and 40,000 env steps pooled, and on the pair and
the basket, trained as `btgym-aac train --assets` trains (PPO, the preset's settings for several assets), at 40,000."""
import os

import numpy as np
import pytest

from btgym_aac.data.markets import (make_basket_market, make_intraday_pattern_data, make_mean_reversion_data,
                                    make_pair_market, make_regime_switching_data, write_market_csv)
from btgym_aac.evaluation import evaluate
from btgym_aac.distributed.checkpoints import KEPT_CHECKPOINT_DIR, checkpoints_on_disk
from btgym_aac.distributed.launcher import make_launcher
from btgym_aac.distributed.run_config import DEFAULT_PRESET, default_configs, multi_asset_env_config, trainer_algo

pytestmark = pytest.mark.xdist_group('known_edge_learning')  # a cluster of its own: one at a time

MARKET = dict(half_life=30.0, volatility=4e-4, noise=0.0)
TRAIN_STEPS = 12000
EPISODES = 12
MIN_FRACTION = 0.4
"""Out-of-sample fraction of the oracle the default preset must reach after `TRAIN_STEPS` env steps; docs/learning.md,
"Learning, checked", has the runs the bound comes from."""


EPISODES_OF_THE_BENCHMARK = dict(episode_duration={'days': 0, 'hours': 8, 'minutes': 0}, time_gap={'hours': 1})
"""`benchmarks/known_edge.py`'s episodes: 8 hours, an hour apart."""


def known_edge_configs(train_data, log_dir):
    """The default preset's configuration, its trainer included, on `train_data` (a file: A3C; or for several assets
    a dict asset -> file: PPO, with the preset's settings for several assets and the env of `train --assets`, one
    head per asset),
    logging to `log_dir`: the benchmark's episodes, no rendering."""
    multi_asset = isinstance(train_data, dict)
    configs = default_configs(multi_asset=multi_asset)
    if multi_asset:
        configs['env_config'] = multi_asset_env_config(train_data, preset=DEFAULT_PRESET,
                                                       algo=trainer_algo(configs['trainer_config']),
                                                       **EPISODES_OF_THE_BENCHMARK)
        configs['env_config']['kwargs'].update(render_enabled=False)
    else:
        configs['env_config']['kwargs'].update(filename=train_data, render_enabled=False, **EPISODES_OF_THE_BENCHMARK)
    configs['cluster_config'].update(log_dir=log_dir)
    return configs


def test_the_default_preset_takes_a_good_part_of_the_mean_reversion_oracle_out_of_sample(tmp_path):
    train = write_market_csv(make_mean_reversion_data(num_bars=60000, seed=11, **MARKET), str(tmp_path / 'train.csv'))
    test = write_market_csv(make_mean_reversion_data(num_bars=20000, seed=12, start='2018-01-01', **MARKET),
                            str(tmp_path / 'test.csv'))
    log_dir = str(tmp_path / 'run')
    configs = known_edge_configs(train, log_dir)
    configs['env_config']['kwargs'].pop('render_modes', None)
    configs['trainer_config']['kwargs'].update(env_render_freq=10 ** 9)
    configs['launcher_config'].update(max_env_steps=TRAIN_STEPS, save_secs=600)
    result = make_launcher(configs, show_progress=False, root_random_seed=0).run()
    assert result['completed'] and result['global_step'] >= TRAIN_STEPS
    report = evaluate(log_dir, data=[test], episodes=EPISODES, out=str(tmp_path / 'evaluation'), seed=0, plots=False)
    means = {name: agent['mean']['return_pct'] for name, agent in report['agents'].items()}
    assert means['oracle'] > 0
    assert report['fraction_of_oracle']['fraction'] >= MIN_FRACTION, means
    assert means['policy'] > max(means['buy_and_hold'], means['random']), means


DEFAULT_PRESET_STEPS = 40000
KEEP_EVERY_STEPS = 20000
TEST_BARS = 100000
TEST_EPISODES = 100
DEFAULT_PRESET_MARKETS = {
    'mean_reversion': (make_mean_reversion_data, 0, 0.2),
    'regime_switching': (make_regime_switching_data, 0, 0.7),
    'intraday_pattern': (make_intraday_pattern_data, 1, 0.6),
}
"""Market -> (generator, run seed of `benchmarks/known_edge.py`, least fraction of the oracle over the checkpoints
at 20,000 and 40,000 env steps, pooled); docs/learning.md, "Learning, checked", has the runs the bounds come from."""


def benchmark_market_files(generator, seed, folder):
    """The train and test files of `benchmarks/known_edge.py`'s run seed `seed` of a market: 60,000 bars of the
    generator seeded 1000 + 2 seed, `TEST_BARS` of seed 1001 + 2 seed from 2018-01-01; a path each, or for a market
    of several assets a dict asset -> path."""
    written = []
    for name, bars, generator_seed, start in (('train', 60000, 1000 + 2 * seed, {}),
                                              ('test', TEST_BARS, 1001 + 2 * seed, {'start': '2018-01-01'})):
        data = generator(num_bars=bars, seed=generator_seed, **start)
        if isinstance(data, dict):
            written.append({asset: write_market_csv(frame, str(folder / '{}_{}.csv'.format(name, asset)))
                            for asset, frame in data.items()})
        else:
            written.append(write_market_csv(data, str(folder / '{}.csv'.format(name))))
    return tuple(written)


def pooled_returns(log_dir, test, folder):
    """Mean return per episode (%) of every agent over `TEST_EPISODES` test episodes of each kept checkpoint (the
    same windows each time, episode i seeded i, as the benchmark plays them), pooled, and the checkpoints' steps."""
    kept = checkpoints_on_disk(os.path.join(log_dir, KEPT_CHECKPOINT_DIR))
    steps = sorted(kept)
    returns = {}
    for step in steps:
        report = evaluate(log_dir, data=[test], episodes=TEST_EPISODES, checkpoint=kept[step], seed=0, plots=False,
                          out=os.path.join(folder, 'evaluation_{}'.format(step)))
        for name, agent in report['agents'].items():
            returns.setdefault(name, []).extend(agent['per_episode']['return_pct'])
    return {name: float(np.mean(values)) for name, values in returns.items()}, steps


def assert_takes_part_of_the_oracle(means, least_fraction):
    """Asserts that the policy's mean return per episode (`means`: agent -> %) is `least_fraction` of the oracle's
    or more, the oracle gaining, and above buy-and-hold's and random's."""
    assert means['oracle'] > 0
    assert means['policy'] / means['oracle'] >= least_fraction, means
    assert means['policy'] > max(means['buy_and_hold'], means['random']), means


@pytest.mark.slow
@pytest.mark.parametrize('market', sorted(DEFAULT_PRESET_MARKETS))
def test_the_default_preset_takes_part_of_every_single_asset_oracle_out_of_sample(market, tmp_path):
    generator, seed, least_fraction = DEFAULT_PRESET_MARKETS[market]
    train, test = benchmark_market_files(generator, seed, tmp_path)
    log_dir = str(tmp_path / 'run')
    result = make_launcher(known_edge_configs(train, log_dir), max_env_steps=DEFAULT_PRESET_STEPS,
                           root_random_seed=1000 * seed, keep_checkpoint_every_steps=KEEP_EVERY_STEPS,
                           show_progress=False).run()
    assert result['completed'] and result['global_step'] >= DEFAULT_PRESET_STEPS
    means, steps = pooled_returns(log_dir, test, str(tmp_path))
    assert len(steps) == 2 and steps[0] >= KEEP_EVERY_STEPS, steps
    assert_takes_part_of_the_oracle(means, least_fraction)


MULTI_ASSET_MARKETS = {
    'pair': (make_pair_market, 0, 0.15),
    'basket': (make_basket_market, 0, 0.35),
}
"""Market of several assets -> (generator, run seed of `benchmarks/known_edge.py`, least fraction of the oracle at
40,000 env steps); docs/multi-asset.md, "Oracles that use the margin", has the runs the bounds come from."""


@pytest.mark.slow
@pytest.mark.parametrize('market', sorted(MULTI_ASSET_MARKETS))
def test_the_default_preset_on_several_assets_takes_part_of_their_oracle_out_of_sample(market, tmp_path):
    generator, seed, least_fraction = MULTI_ASSET_MARKETS[market]
    train, test = benchmark_market_files(generator, seed, tmp_path)
    log_dir = str(tmp_path / 'run')
    result = make_launcher(known_edge_configs(train, log_dir), max_env_steps=DEFAULT_PRESET_STEPS,
                           root_random_seed=1000 * seed, show_progress=False).run()
    assert result['completed'] and result['global_step'] >= DEFAULT_PRESET_STEPS
    report = evaluate(log_dir, data=test, episodes=TEST_EPISODES, seed=0, plots=False, out=str(tmp_path / 'evaluation'))
    means = {name: agent['mean']['return_pct'] for name, agent in report['agents'].items()}
    assert_takes_part_of_the_oracle(means, least_fraction)
