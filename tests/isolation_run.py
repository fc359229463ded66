"""A 1-ps + 2-worker CartPole Launcher run for the network isolation tests, as a user's script would start one.

Usage: python isolation_run.py LOG_DIR MODE MAX_ENV_STEPS [NUM_WORKERS]

Prints `SPEC <cluster spec JSON>` before the run, the launcher's progress lines during it, then `RESULT <JSON>`
with the global step, this process's uid and the owners of the files in the checkpoint folder.
"""
import json
import os
import sys

import numpy  # noqa: F401  (a script's imports start threads before its tasks' code runs)

from btgym_aac.algorithms import A3C, Launcher
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac.env.gym_wrappers import TestModeEnv


def main(log_dir, mode, max_env_steps, num_workers=2):
    launcher = Launcher(
        env_config={'class_ref': TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}},
        cluster_config={'num_workers': num_workers, 'log_dir': log_dir, 'network_isolation': mode},
        policy_config={'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (16,), 'lstm_layers': (16,)}},
        trainer_config={'class_ref': A3C, 'kwargs': {'rollout_length': 20}},
        test_mode=True, max_env_steps=max_env_steps, save_secs=2, root_random_seed=0, max_restarts=1)
    print('SPEC', json.dumps(launcher.cluster_spec), flush=True)
    result = launcher.run()
    owners = {name: os.stat(os.path.join(launcher.current_ckpt_dir, name)).st_uid
              for name in os.listdir(launcher.current_ckpt_dir)}
    print('RESULT', json.dumps({'global_step': result['global_step'], 'restarts': result['restarts'],
                                'uid': os.getuid(), 'owners': owners}), flush=True)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), *[int(arg) for arg in sys.argv[4:]])
