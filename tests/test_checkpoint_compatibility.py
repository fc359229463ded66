"""A checkpoint written before the trainer's redesign (commit 8d35572: no AacConfig, no learner module) restores
into the trainer built by the current code: the same global variables, names and shapes, and the same policy
outputs. The fixture and the script that wrote it are in tests/data."""
import json
import pathlib
import sys

import numpy as np

from btgym_aac.compat import tf

DATA = pathlib.Path(__file__).resolve().parent / 'data'
sys.path.insert(0, str(DATA))
from make_pre_redesign_checkpoint import build, policy_outputs  # noqa: E402  (the fixture's own builder)

FIXTURE = DATA / 'pre_redesign_checkpoint'


def test_a_checkpoint_of_the_code_before_the_redesign_restores_with_the_same_outputs():
    saved = tf.train.load_checkpoint(str(FIXTURE / 'model_parameters-0')).get_variable_to_shape_map()
    expected = json.loads((FIXTURE / 'outputs.json').read_text())
    graph, trainer, env = build(seed=6)  # other initial weights than the fixture's: they must come from the file
    try:
        with graph.as_default(), tf.Session(graph=graph) as sess:
            global_variables = [v for v in tf.global_variables() if v.name.startswith('global/')]
            assert {v.op.name: v.get_shape().as_list() for v in global_variables} == saved
            sess.run(tf.global_variables_initializer())
            before = policy_outputs(trainer.network, sess)
            tf.train.Saver(var_list=global_variables).restore(sess, str(FIXTURE / 'model_parameters-0'))
            value, logits = policy_outputs(trainer.network, sess)
    finally:
        env.close()
    assert before[0] != expected['value']
    np.testing.assert_allclose(value, expected['value'], rtol=1e-6)
    np.testing.assert_allclose(logits, expected['logits'], rtol=1e-6)
