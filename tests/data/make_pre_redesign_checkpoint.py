"""Writes `pre_redesign_checkpoint/`: the global variables of a small A3C trainer on CartPole, saved by the code of
commit 8d35572 (before the trainer's redesign), and the global policy's value and logits for one observation.

Run with that commit's package first on the path: `PYTHONPATH=OLD_CHECKOUT python
tests/data/make_pre_redesign_checkpoint.py OUT_DIR`.
"""
import json
import os
import sys

import numpy as np

from btgym_aac.algorithms import A3C
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac.compat import tf
from btgym_aac.env.gym_wrappers import TestModeEnv

POLICY = {'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (16,), 'lstm_layers': (16,)}}
OBSERVATION = [0.03, -0.2, 0.05, 0.3]


def policy_outputs(policy, sess):
    """Value and logits of `policy` for OBSERVATION from the zero context, with no previous action or reward."""
    observation = {'external': np.asarray(OBSERVATION, dtype=np.float32)}
    context = policy.get_initial_features(sess=sess)
    last_action = np.zeros([1, policy.on_last_a_in.get_shape().as_list()[-1]], dtype=np.float32)
    value = policy.get_value(observation, context, last_action, [0.0], sess=sess)
    logits = policy.act(observation, context, last_action, [0.0], deterministic=True, sess=sess)[1]
    return value, np.asarray(logits, dtype=np.float64).reshape(-1).tolist()


def build(seed=5):
    """(graph, trainer, env) of the trainer whose global variables the fixture holds."""
    env = TestModeEnv(env_id='CartPole-v1')
    graph = tf.Graph()
    with graph.as_default():
        trainer = A3C(env=env, task=0, policy_config=POLICY, test_mode=True, rollout_length=5, random_seed=seed)
    return graph, trainer, env


def main(out):
    graph, trainer, env = build()
    with graph.as_default(), tf.Session(graph=graph) as sess:
        sess.run(tf.global_variables_initializer())
        saver = tf.train.Saver(var_list=[v for v in tf.global_variables() if v.name.startswith('global/')])
        saver.save(sess, os.path.join(out, 'model_parameters'), global_step=0, write_meta_graph=False)
        value, logits = policy_outputs(trainer.network, sess)
    env.close()
    with open(os.path.join(out, 'outputs.json'), 'w') as f:
        json.dump({'value': value, 'logits': logits}, f, indent=1)


if __name__ == '__main__':
    main(sys.argv[1])
