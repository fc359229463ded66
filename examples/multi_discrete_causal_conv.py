"""Port of the original `multi_discrete_setup_intro` notebook: discrete actions (hold / buy / sell / close) on two
assets, USD and CHF, with GBP and JPY as information-only data lines, all four EUR crosses observed through
CausalConvStrategyMulti's wavelet features. BTgymMultiData over BTgymCausalDataDomain (expanding 30-day source
trials before a time split frozen at 2017-03-01, 7-day trial test periods, episodes of 2 days 23h55m),
StackedLstmPolicy with the causal-convolution attention encoder, A3C, four workers. The joint action space has
4 ** 2 = 16 categories over ('CHF', 'USD').

Differences from the notebook:
* data: the notebook reads HistData.com's 1-minute EURUSD, EURGBP, EURJPY and EURCHF files of 2017 from ./data.
  They are used when ./data holds all four (same names, `DAT_ASCII_EURUSD_M1_2017.csv`, ...). None is shipped, so
  otherwise four stand-ins are written once to runs/synthetic_fx_2017 with the same names and format (HistData
  CSV, no header): correlated geometric random walks (`make_correlated_walks`, log-return correlation 0.5, volatility
  1e-4 a bar) of 90 days of 1-minute bars from 2017-01-01, enough for 30-day trials ending at the frozen split plus
  an episode; JPY is scaled to a level of 120 (the others start at 1.1), the scale the notebook's JPY
  `state_ext_scale` expects, and prices are rounded to HistData's decimals. They have no weekend gaps,
  unlike the real files.
* the original's network kwargs (`port`, `data_port`, `connect_timeout`) are dropped: the envs run in process, with
  no data server, as in the other examples;
* cluster: free ports instead of 12230 (two runs cannot collide), logs in runs/multi_discrete instead of
  ~/tmp/multi_discrete;
* the run is shortened (`max_env_steps`) from 100 million env steps.

Run: python examples/multi_discrete_causal_conv.py   (or: btgym-aac train examples/multi_discrete_causal_conv.py)
"""
import os
from collections import OrderedDict

import backtrader as bt
import numpy as np

from btgym_aac import MultiDiscreteEnv
from btgym_aac.algorithms import A3C, Launcher
from btgym_aac.algorithms.policy import StackedLstmPolicy
from btgym_aac.data import BTgymCausalDataDomain, BTgymMultiData, make_correlated_walks, write_histdata_csv
from btgym_aac.research.causal_conv import CausalConvStrategyMulti, conv_1d_causal_attention_encoder

LINES = ('USD', 'GBP', 'JPY', 'CHF')
NOTEBOOK_DATA_DIR = 'data'
SYNTHETIC_DATA_DIR = os.path.join('runs', 'synthetic_fx_2017')


def histdata_file(folder, line):
    return os.path.abspath(os.path.join(folder, 'DAT_ASCII_EUR{}_M1_2017.csv'.format(line)))


def write_synthetic_lines(folder, num_days=90, seed=0):
    """Writes the stand-ins of the notebook's four files that `folder` lacks (the same series every time)."""
    os.makedirs(folder, exist_ok=True)
    frames = make_correlated_walks(num_bars=num_days * 24 * 60, names=LINES, correlation=0.5, volatility=1e-4,
                                   base=1.1, start='2017-01-01 00:00', seed=seed)
    for line, frame in frames.items():
        path = histdata_file(folder, line)
        if os.path.isfile(path):
            continue
        frame, prices = frame.copy(), ['open', 'high', 'low', 'close']
        if line == 'JPY':  # quoted as HistData does: EURJPY to 3 decimals, the others to 5
            frame[prices] = (frame[prices] * (120 / 1.1)).round(3)
        else:
            frame[prices] = frame[prices].round(5)
        staging = '{}.{}.writing'.format(path, os.getpid())
        os.replace(write_histdata_csv(frame, staging), path)  # a reader never sees half a file


def data_folder():
    """./data where it holds the notebook's four files, else the synthetic stand-ins."""
    if all(os.path.isfile(histdata_file(NOTEBOOK_DATA_DIR, line)) for line in LINES):
        return NOTEBOOK_DATA_DIR
    if not all(os.path.isfile(histdata_file(SYNTHETIC_DATA_DIR, line)) for line in LINES):
        write_synthetic_lines(SYNTHETIC_DATA_DIR)
    return SYNTHETIC_DATA_DIR


DATA_DIR = data_folder()

engine = bt.Cerebro()

num_features = 16

engine.addstrategy(
    CausalConvStrategyMulti,
    cash_name='EUR',
    start_cash=2000,
    commission=0.0001,
    leverage=10.0,
    asset_names={'USD', 'CHF'},  # GBP and JPY are information-only data lines
    drawdown_call=10,
    target_call=10,
    skip_frame=10,
    gamma=0.99,
    state_ext_scale={
        'USD': np.linspace(1, 2, num=num_features),
        'GBP': np.linspace(1, 2, num=num_features),
        'CHF': np.linspace(1, 2, num=num_features),
        'JPY': np.linspace(5e-3, 1e-2, num=num_features),
    },
    cwt_signal_scale=4e3,
    cwt_lower_bound=4.0,
    cwt_upper_bound=90.0,
    reward_scale=7,
    order_size={
        'CHF': 1000,
        'USD': 1000,
    },
)

data_config = OrderedDict([
    ('USD', {'filename': histdata_file(DATA_DIR, 'USD')}),
    ('GBP', {'filename': histdata_file(DATA_DIR, 'GBP')}),
    ('JPY', {'filename': histdata_file(DATA_DIR, 'JPY')}),
    ('CHF', {'filename': histdata_file(DATA_DIR, 'CHF')}),
])

dataset = BTgymMultiData(
    data_class_ref=BTgymCausalDataDomain,
    data_config=data_config,
    trial_params=dict(
        start_weekdays={0, 1, 2, 3, 4, 5, 6},
        sample_duration={'days': 30, 'hours': 0, 'minutes': 0},
        start_00=False,
        time_gap={'days': 15, 'hours': 0},
        test_period={'days': 7, 'hours': 0, 'minutes': 0},
        expanding=True,
    ),
    episode_params=dict(
        start_weekdays={0, 1, 2, 3, 4, 5, 6},
        sample_duration={'days': 2, 'hours': 23, 'minutes': 55},
        start_00=False,
        time_gap={'days': 2, 'hours': 15},
    ),
    frozen_time_split={'year': 2017, 'month': 3, 'day': 1},
)

env_config = dict(
    class_ref=MultiDiscreteEnv,
    kwargs=dict(
        dataset=dataset,
        engine=engine,
        render_modes=['episode'],
        render_state_as_image=True,
        render_size_episode=(12, 16),
        render_size_human=(9, 4),
        render_size_state=(11, 3),
        render_dpi=75,
        verbose=0,
    ),
)

cluster_config = dict(
    host='127.0.0.1',
    port=None,
    num_workers=4,
    num_ps=1,
    num_envs=1,
    log_dir='runs/multi_discrete',
)

policy_config = dict(
    class_ref=StackedLstmPolicy,
    kwargs={
        'lstm_layers': (256, 256),
        'dropout_keep_prob': 1.0,
        'encode_internal_state': False,
        'conv_1d_num_filters': 64,
        'state_encoder_class_ref': conv_1d_causal_attention_encoder,
    },
)

trainer_config = dict(
    class_ref=A3C,
    kwargs=dict(
        opt_learn_rate=1e-4,
        opt_end_learn_rate=1e-5,
        opt_decay_steps=50 * 10 ** 6,
        model_gamma=0.99,
        model_gae_lambda=1.0,
        model_beta=0.001,
        rollout_length=20,
        time_flat=True,
        model_summary_freq=10,
        episode_summary_freq=1,
        env_render_freq=5,
    ),
)

launcher_config = dict(test_mode=False, max_env_steps=100000, root_random_seed=0, purge_previous=1, verbose=0)

if __name__ == '__main__':
    print('data: {}'.format(os.path.abspath(DATA_DIR)))
    print(Launcher(env_config=env_config, cluster_config=cluster_config, policy_config=policy_config,
                   trainer_config=trainer_config, **launcher_config).run())
