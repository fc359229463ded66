"""Does guidance speed up early learning? GuidedAAC against plain A3C on the sine data, same env steps and seeds.

Both train in one process (`train_in_process`) on the guided_a3c notebook's env (GuidedStrategy_0_0 with its
settings, sine data of period 256) with GuidedPolicy_0_0 (smaller LSTMs than the notebook's, for speed) and the
notebook's trainer settings; plain A3C sees the same observations (its policy ignores the `expert` key). For every
seed and trainer: the total reward of every train episode in order; per trainer, the mean reward of each block of
`--window` episodes and the episodes until the running mean reaches `--threshold`. Writes `guided_vs_a3c.json` to
--out.

Usage: python benchmarks/guided_vs_a3c.py [--seeds 0 1 2] [--max-steps 20000] [--window 10] [--threshold 60]
                                          [--out benchmarks/results] [--summarise JSON]
"""
import argparse
import json
import os
import platform
import statistics
import time

import numpy as np


def env_config(seed):
    import backtrader as bt

    from btgym_aac import BTgymDataset, BTgymEnv
    from btgym_aac.data import make_sine_data
    from btgym_aac.research.gps import GuidedStrategy_0_0

    engine = bt.Cerebro()
    engine.addstrategy(GuidedStrategy_0_0, drawdown_call=10, target_call=10, skip_frame=10, gamma=0.99,
                       state_ext_scale=np.linspace(4e3, 1e3, num=6), reward_scale=7,
                       expert_config=dict(time_threshold=5, pips_threshold=10, pips_scale=1e-4, kernel_size=10,
                                          kernel_stddev=1))
    engine.broker.setcash(2000)
    engine.broker.setcommission(commission=0.0001, leverage=10.0)
    engine.addsizer(bt.sizers.SizerFix, stake=5000)
    dataset = BTgymDataset(dataframe=make_sine_data(num_bars=40000),
                           episode_duration={'days': 1, 'hours': 23, 'minutes': 50})
    return {'class_ref': BTgymEnv, 'kwargs': dict(dataset=dataset, engine=engine, render_enabled=False,
                                                  random_seed=seed)}


def run(trainer_name, seed, max_steps):
    from btgym_aac.algorithms import A3C, train_in_process
    from btgym_aac.research.gps import GuidedAAC, GuidedPolicy_0_0

    trainer_kwargs = dict(opt_learn_rate=1e-4, opt_end_learn_rate=1e-5, opt_decay_steps=20e6, model_gamma=0.99,
                          model_gae_lambda=1.0, model_beta=0.01, rollout_length=20, time_flat=True,
                          episode_train_test_cycle=[1, 0], model_summary_freq=100, episode_summary_freq=5,
                          env_render_freq=5)
    if trainer_name == 'GuidedAAC':
        trainer_kwargs.update(aac_lambda=1.0, guided_lambda=1.0, guided_decay_steps=10e6)
    trainer_class = {'GuidedAAC': GuidedAAC, 'A3C': A3C}[trainer_name]
    start = time.perf_counter()
    result = train_in_process(env_config(seed), {'class_ref': GuidedPolicy_0_0, 'kwargs': {'lstm_layers': (64, 64)}},
                              {'class_ref': trainer_class, 'kwargs': trainer_kwargs}, max_env_steps=max_steps,
                              random_seed=seed)
    return {'trainer': trainer_name, 'seed': seed, 'global_step': result['global_step'],
            'episode_rewards': result['episode_rewards'], 'seconds': time.perf_counter() - start}


def summarise(runs, window, threshold):
    """Per trainer, means over seeds: the mean reward of each block of `window` train episodes (as long as every
    seed has it), and the episodes until the running mean of `window` episodes first reaches `threshold`."""
    summary = {}
    for name in sorted({run['trainer'] for run in runs}):
        curves = [run['episode_rewards'] for run in runs if run['trainer'] == name]
        blocks = min(len(curve) for curve in curves) // window
        summary[name] = {
            'block_mean_rewards': [statistics.fmean(np.mean(curve[k * window:(k + 1) * window]) for curve in curves)
                                   for k in range(blocks)],
            'episodes_to_threshold': [_episodes_to(curve, window, threshold) for curve in curves],
            'episodes': [len(curve) for curve in curves],
        }
    return summary


def _episodes_to(curve, window, threshold):
    """Episodes until the mean of the last `window` first reaches `threshold` (None: never)."""
    running = np.convolve(curve, np.ones(window) / window, mode='valid')
    reached = np.flatnonzero(running >= threshold)
    return int(reached[0]) + window if reached.size else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--max-steps', type=int, default=20000)
    parser.add_argument('--window', type=int, default=10)
    parser.add_argument('--threshold', type=float, default=60.0,
                        help='running-mean episode reward that counts as learned')
    parser.add_argument('--summarise', metavar='JSON', help='only recompute the summary of an earlier run')
    parser.add_argument('--out', default=os.path.join(os.path.dirname(__file__), 'results'))
    args = parser.parse_args()
    if args.summarise:
        with open(args.summarise) as stream:
            report = json.load(stream)
        report.update(window=args.window, threshold=args.threshold,
                      summary=summarise(report['runs'], args.window, args.threshold))
        with open(args.summarise, 'w') as stream:
            json.dump(report, stream, indent=1)
        print(json.dumps(report['summary'], indent=1))
        return
    runs = []
    for seed in args.seeds:
        for name in (('GuidedAAC', 'A3C') if seed % 2 == 0 else ('A3C', 'GuidedAAC')):
            runs.append(run(name, seed, args.max_steps))
            print('{} seed {}: {} episodes, last {} mean reward {:.3f} ({:.0f} s)'.format(
                name, seed, len(runs[-1]['episode_rewards']), args.window,
                np.mean(runs[-1]['episode_rewards'][-args.window:]), runs[-1]['seconds']), flush=True)
    report = {'machine': platform.node(), 'cpus': os.cpu_count(), 'max_env_steps': args.max_steps,
              'window': args.window, 'threshold': args.threshold,
              'summary': summarise(runs, args.window, args.threshold), 'runs': runs}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'guided_vs_a3c.json'), 'w') as stream:
        json.dump(report, stream, indent=1)
    print(json.dumps(report['summary'], indent=1))


if __name__ == '__main__':
    main()
