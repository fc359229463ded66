"""Port of the original `unreal_stacked_lstm_strat_4_11` notebook: UNREAL (here without auxiliary tasks, as in the
notebook) with the RL2 stacked-LSTM policy on DevStrat_4_11 and the sine test data.

Run: python examples/unreal_stacked_lstm_strat_4_11.py   (TensorBoard: tensorboard --logdir runs/test_4_11)
"""
import backtrader as bt
import numpy as np

from btgym_aac import BTgymDataset, BTgymEnv
from btgym_aac.algorithms import AacStackedRL2Policy, Launcher, Unreal
from btgym_aac.data import make_sine_data
from btgym_aac.strategy import DevStrat_4_11
from btgym_aac.strategy.observers import NormPnL, Position, Reward


def make_engine():
    engine = bt.Cerebro()
    engine.addstrategy(
        DevStrat_4_11, start_cash=2000, commission=0.0001, leverage=10.0, order_size=2000, drawdown_call=10,
        target_call=10, skip_frame=10, gamma=0.99, reward_scale=7, state_ext_scale=np.linspace(3e3, 1e3, 5))
    for observer in (Reward, Position, NormPnL):
        engine.addobserver(observer)
    return engine


env_config = dict(
    class_ref=BTgymEnv,
    kwargs=dict(
        dataset=BTgymDataset(dataframe=make_sine_data(num_bars=10000), start_weekdays={0, 1, 2, 3, 4, 5, 6},
                             episode_duration={'days': 1, 'hours': 23, 'minutes': 40}, start_00=False,
                             time_gap={'hours': 10}),
        engine=make_engine(),
        render_modes=['episode', 'human', 'internal'],
        render_state_as_image=True,
    ),
)
cluster_config = dict(num_workers=2, num_ps=1, num_envs=1, log_dir='runs/test_4_11')
policy_config = dict(class_ref=AacStackedRL2Policy, kwargs={'lstm_layers': (256, 256), 'lstm_2_init_period': 60})
trainer_config = dict(
    class_ref=Unreal,
    kwargs=dict(opt_learn_rate=[1e-4, 1e-4], opt_end_learn_rate=1e-5, opt_decay_steps=50e6, model_gamma=0.99,
                model_gae_lambda=1.0, model_beta=0.05, rollout_length=20, time_flat=True, use_value_replay=False,
                model_summary_freq=10, episode_summary_freq=1, env_render_freq=2),
)
launcher_config = dict(max_env_steps=50000, save_secs=300, root_random_seed=0)

if __name__ == '__main__':
    launcher = Launcher(env_config=env_config, cluster_config=cluster_config, policy_config=policy_config,
                        trainer_config=trainer_config, **launcher_config)
    print(launcher.run())
    launcher.export_checkpoint('runs/pre_trained_model/test_4_11')
