"""CPU per acting call of the reference policy: `act` for one env and `act_batch` for K, and their Python part.

Builds `btgym-aac train`'s reference configuration (DevStrat_4_11, AacStackedRL2Policy (256, 256), A3C) in one
process, its local policy in a plain session (one intra-op thread, ops run in the calling thread, as the acting
replica runs them), and times `--calls` calls on the env's reset observation after 20 warm-up calls: process CPU per
call, and the part outside the session run (feeds, action draws, context split). With `--baseline DIR` (the
source tree of another version, e.g. from `git worktree add`) each round also runs this script against that
tree in a subprocess, the two in turn. Writes `act_cost.json` to --out and prints a table.

Usage: python benchmarks/act_cost.py [--envs 1 16] [--calls 300] [--rounds 3] [--baseline DIR]
                                     [--out benchmarks/results]
"""
import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

WARM_UP_CALLS = 20


def measure(envs, calls):
    """CPU ms per call, and its part outside the session run, for each count in `envs` (1: `act`)."""
    import numpy as np

    from btgym_aac.algorithms.common.sessions import session_config
    from btgym_aac.compat import tf
    from btgym_aac.env.training_envs import build_from_config, training_env_config
    from btgym_aac.distributed.run_config import default_configs

    configs = default_configs('a3c', preset='reference')
    env = build_from_config(training_env_config(configs['env_config']))
    try:
        observation, _ = env.reset()
        graph = tf.Graph()
        with graph.as_default():
            trainer = configs['trainer_config']['class_ref'](
                env=[env], task=0, policy_config=configs['policy_config'], **configs['trainer_config']['kwargs'])
            init_op = tf.global_variables_initializer()
        policy = trainer.local_network
        with tf.Session(graph=graph, config=session_config(intra_op_parallelism_threads=1,
                                                           inter_op_parallelism_threads=-1)) as sess:
            sess.run(init_op)
            context = policy.get_initial_features(state=observation, sess=sess)
            last_action = np.zeros((1, policy.on_last_a_in.get_shape()[-1]), np.float32)
            return {str(count): _time_calls(policy, sess, observation, context, last_action, count, calls)
                    for count in envs}
    finally:
        env.close()


def _time_calls(policy, sess, observation, context, last_action, count, calls):
    """Times `calls` acting calls for `count` envs; the session runs are timed through the policy's `_run_step`."""
    import numpy as np

    run_step = policy._run_step
    in_session = [0.0]

    def timed_run_step(*args, **kwargs):
        start = time.process_time()
        try:
            return run_step(*args, **kwargs)
        finally:
            in_session[0] += time.process_time() - start

    def call():
        if count == 1:
            policy.act(observation, context, last_action, 0.0, sess=sess)
        else:
            policy.act_batch([observation] * count, [context] * count, np.repeat(last_action, count, axis=0),
                             np.zeros(count), sess=sess)

    for _ in range(WARM_UP_CALLS):
        call()
    policy._run_step = timed_run_step
    try:
        start = time.process_time()
        for _ in range(calls):
            call()
        total = time.process_time() - start
    finally:
        del policy._run_step
    return {'cpu_ms_per_call': 1e3 * total / calls, 'python_ms_per_call': 1e3 * (total - in_session[0]) / calls,
            'session_run_ms_per_call': 1e3 * in_session[0] / calls}


def run_child(envs, calls, source_tree=None):
    """This script's measurement in a fresh process (against `source_tree` when given); returns its results."""
    environment = dict(os.environ)
    if source_tree:
        environment['PYTHONPATH'] = os.path.abspath(source_tree)
    finished = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), '--child', '--calls',
                               str(calls), '--envs'] + [str(count) for count in envs],
                              env=environment, cwd=source_tree or None, capture_output=True, text=True)
    if finished.returncode != 0:
        sys.exit('act_cost: the measurement{} failed (exit {}):\n{}'.format(
            ' against {}'.format(source_tree) if source_tree else '', finished.returncode, finished.stderr[-3000:]))
    return json.loads(finished.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--envs', type=int, nargs='+', default=[1, 16])
    parser.add_argument('--calls', type=int, default=300)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--baseline', help='source tree of another version to run in turn')
    parser.add_argument('--out', default='benchmarks/results')
    parser.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if min(args.envs) < 1:
        parser.error('--envs must be >= 1, got {}'.format(args.envs))
    if args.calls < 1 or args.rounds < 1:
        parser.error('--calls and --rounds must be >= 1, got {} and {}'.format(args.calls, args.rounds))
    if args.baseline and not os.path.isdir(os.path.join(args.baseline, 'btgym_aac')):
        parser.error('--baseline {} holds no btgym_aac package'.format(args.baseline))
    if args.child:
        print(json.dumps(measure(args.envs, args.calls)))
        return
    versions = {'this': None}
    if args.baseline:
        versions['baseline'] = args.baseline
    runs = {name: [] for name in versions}
    for round_index in range(args.rounds):
        order = list(versions) if round_index % 2 == 0 else list(reversed(list(versions)))
        for name in order:
            load = os.getloadavg()[0]
            runs[name].append({'round': round_index, 'load_before': round(load, 2),
                               'results': run_child(args.envs, args.calls, versions[name])})
    medians = {name: {str(count): {key: statistics.median(run['results'][str(count)][key] for run in runs[name])
                                   for key in ('cpu_ms_per_call', 'python_ms_per_call', 'session_run_ms_per_call')}
                      for count in args.envs} for name in versions}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'act_cost.json'), 'w') as out:
        json.dump({'benchmark': 'act_cost', 'configuration': 'reference (default_configs("a3c", '
                   'preset="reference")), local policy, plain session', 'calls': args.calls,
                   'baseline_source_tree': args.baseline, 'medians': medians, 'runs': runs,
                   'machine': {'python': platform.python_version(), 'cpus': os.cpu_count()}}, out, indent=1)
    print('{:10s} {:>5s} {:>12s} {:>12s} {:>12s}'.format('version', 'envs', 'CPU ms/call', 'python ms', 'session ms'))
    for name, by_count in medians.items():
        for count, row in by_count.items():
            print('{:10s} {:>5s} {:12.3f} {:12.3f} {:12.3f}'.format(name, count, row['cpu_ms_per_call'],
                                                                   row['python_ms_per_call'],
                                                                   row['session_run_ms_per_call']))


if __name__ == '__main__':
    main()
