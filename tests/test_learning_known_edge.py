"""The default suite's learning check: A3C, trained briefly on a mean-reverting market, takes a good part of what the
market's oracle takes on bars it never saw (docs/learning.md)."""
import pytest

from btgym_aac.data.markets import make_mean_reversion_data, write_market_csv
from btgym_aac.evaluation import evaluate
from btgym_aac.distributed.launcher import make_launcher
from btgym_aac.distributed.run_config import default_configs

pytestmark = pytest.mark.xdist_group('known_edge_learning')  # a cluster of its own: one at a time

MARKET = dict(half_life=30.0, volatility=4e-4, noise=0.0)
TRAIN_STEPS = 16000
ENVS = 4
EPISODES = 12
MIN_FRACTION = 0.3
"""Out-of-sample fraction of the oracle the policy must reach: runs of this set-up gave 0.62, 0.74 and 0.84; with
12,000 steps 0.36 and 0.59 (and 0.58 to 0.80 in seven runs of two workers with one env each, at about 1.4 times
the CPU); at 6,000 steps, before it has learned, 0.04 and -0.02. Those were against the oracle's first rule (+2.04 %
per episode here); against the current one (six decisions ahead, +2.12 %) a run gave 0.72."""


def known_edge_configs(train_file, log_dir):
    """The reference A3C configuration on `train_file`, sized to learn within the test's budget: 8-hour episodes,
    LSTMs of 64 units, learn rate 3e-4 held, entropy weight 0.01, one worker acting in `ENVS` envs, no
    rendering."""
    configs = default_configs('a3c')
    configs['env_config']['kwargs'].update(filename=train_file, episode_duration={'days': 0, 'hours': 8, 'minutes': 0},
                                           time_gap={'hours': 1}, render_enabled=False)
    configs['env_config']['kwargs'].pop('render_modes', None)
    configs['cluster_config'].update(num_workers=1, num_envs=ENVS, log_dir=log_dir)
    configs['policy_config']['kwargs'].update(lstm_layers=(64, 64))
    configs['trainer_config']['kwargs'].update(opt_learn_rate=3e-4, opt_end_learn_rate=3e-4, model_beta=0.01,
                                               env_render_freq=10 ** 9)
    configs['launcher_config'].update(max_env_steps=TRAIN_STEPS, save_secs=600)
    return configs


def test_a3c_takes_a_good_part_of_the_mean_reversion_oracle_out_of_sample(tmp_path):
    train = write_market_csv(make_mean_reversion_data(num_bars=60000, seed=11, **MARKET), str(tmp_path / 'train.csv'))
    test = write_market_csv(make_mean_reversion_data(num_bars=20000, seed=12, start='2018-01-01', **MARKET),
                            str(tmp_path / 'test.csv'))
    log_dir = str(tmp_path / 'run')
    result = make_launcher(known_edge_configs(train, log_dir), show_progress=False, root_random_seed=0).run()
    assert result['completed'] and result['global_step'] >= TRAIN_STEPS
    report = evaluate(log_dir, data=[test], episodes=EPISODES, out=str(tmp_path / 'evaluation'), seed=0, plots=False)
    means = {name: agent['mean']['return_pct'] for name, agent in report['agents'].items()}
    assert means['oracle'] > 0
    assert report['fraction_of_oracle']['fraction'] >= MIN_FRACTION, means
    assert means['policy'] > max(means['buy_and_hold'], means['random']), means
