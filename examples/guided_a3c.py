"""Port of the original `guided_a3c` notebook: A3C plus an imitation loss on the advice of a look-ahead expert
(GuidedAAC, GuidedPolicy_0_0, GuidedStrategy_0_0 with ExpertObserver) on the sine test data, four workers.

The notebook's settings are kept, its sine file replaced by the same series generated in memory (`make_sine_data`)
and its run shortened (`max_env_steps`). See docs/custom-algorithms.md for how GuidedAAC is built.

Run: python examples/guided_a3c.py   (or: btgym-aac train examples/guided_a3c.py --max-steps 50000)
"""
import backtrader as bt
import numpy as np

from btgym_aac import BTgymEnv, BTgymRandomDataDomain
from btgym_aac.algorithms import Launcher
from btgym_aac.data import make_sine_data
from btgym_aac.research.gps import ExpertObserver, GuidedAAC, GuidedPolicy_0_0, GuidedStrategy_0_0


def make_engine():
    engine = bt.Cerebro()
    engine.addstrategy(
        GuidedStrategy_0_0, drawdown_call=10, target_call=10, skip_frame=10, gamma=0.99,
        state_ext_scale=np.linspace(4e3, 1e3, num=6), reward_scale=7,
        expert_config={'time_threshold': 5, 'pips_threshold': 10, 'pips_scale': 1e-4, 'kernel_size': 10,
                       'kernel_stddev': 1})
    engine.addobserver(ExpertObserver)
    engine.broker.setcash(2000)
    engine.broker.setcommission(commission=0.0001, leverage=10.0)
    engine.addsizer(bt.sizers.SizerFix, stake=5000)
    return engine


every_day = {0, 1, 2, 3, 4, 5, 6}
dataset = BTgymRandomDataDomain(
    dataframe=make_sine_data(num_bars=30000),
    trial_params=dict(start_weekdays=every_day, sample_duration={'days': 3, 'hours': 0, 'minutes': 0},
                      start_00=False, time_gap={'days': 1, 'hours': 10},
                      test_period={'days': 0, 'hours': 0, 'minutes': 0}),
    episode_params=dict(start_weekdays=every_day, sample_duration={'days': 1, 'hours': 23, 'minutes': 50},
                        start_00=False, time_gap={'days': 1, 'hours': 0}),
)
env_config = dict(class_ref=BTgymEnv, kwargs=dict(
    dataset=dataset, engine=make_engine(), render_modes=['episode', 'human', 'external', 'internal'],
    render_state_as_image=True, render_ylabel='OHL_diff. / Internals', render_size_episode=(12, 8),
    render_size_human=(9, 4), render_size_state=(11, 3), render_dpi=75))
cluster_config = dict(num_workers=4, num_ps=1, num_envs=1, log_dir='runs/gps')
policy_config = dict(class_ref=GuidedPolicy_0_0, kwargs={
    'lstm_layers': (256, 256), 'lstm_2_init_period': 50,
    'conv_2d_layer_config': ((32, (3, 1), (2, 1)), (32, (3, 1), (2, 1)), (64, (3, 1), (2, 1)), (64, (3, 1), (2, 1)))})
trainer_config = dict(class_ref=GuidedAAC, kwargs=dict(
    opt_learn_rate=1e-4, opt_end_learn_rate=1e-5, opt_decay_steps=20 * 10 ** 6, model_gamma=0.99,
    model_gae_lambda=1.0, model_beta=0.01, aac_lambda=1.0, guided_lambda=1.0, guided_decay_steps=10 * 10 ** 6,
    rollout_length=20, time_flat=True,
    use_value_replay=False, episode_train_test_cycle=[1, 0], model_summary_freq=100, episode_summary_freq=5,
    env_render_freq=5))
launcher_config = dict(max_env_steps=50000, save_secs=300, root_random_seed=0)

if __name__ == '__main__':
    print(Launcher(env_config=env_config, cluster_config=cluster_config, policy_config=policy_config,
                   trainer_config=trainer_config, **launcher_config).run())
