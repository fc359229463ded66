"""docs/custom-algorithms.md: its example trainer, run as the document shows it, builds its extra loss on the
documented extension points, matches numpy on a fed batch, trains a few hundred steps (lowering its own penalty)
and writes its summary; the policy contract names what a policy lacks."""
import copy
import pathlib
import re
import types

import logbook
import numpy as np
import pytest

from btgym_aac.algorithms import A3C, Unreal
from btgym_aac.algorithms.policy import AacDensePolicy
from btgym_aac.algorithms.policy.interface import AacPolicy, check_policy, missing_members
from btgym_aac.compat import tf
from btgym_aac.env import gym_wrappers
from trainer_helpers import scalar_events, started_trainer, tagged

pytestmark = pytest.mark.xdist_group('custom_algorithms')  # one xdist worker builds the module's fixtures

DOC = pathlib.Path(__file__).resolve().parents[1] / 'docs' / 'custom-algorithms.md'
POLICY = {'dense_layers': (16,), 'lstm_layers': (16,)}


def doc_blocks():
    return re.findall(r'```python\n(.*?)```', DOC.read_text(), flags=re.S)


@pytest.fixture(scope='module')
def doc_module():
    """The document's first code block, executed as a module."""
    module = types.ModuleType('custom_algorithms_example')
    exec(compile(doc_blocks()[0], str(DOC), 'exec'), module.__dict__)
    return module


def cartpole(seed=0):
    return gym_wrappers.TestModeEnv(env_id='CartPole-v1', seed=seed)


def numpy_cross_entropy(labels, logits, mask):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    rows = -(labels * log_probs).sum(axis=1)
    return (rows * mask).sum() / max(mask.sum(), 1.0)


def test_the_example_penalty_equals_numpy_on_a_fed_batch_and_joins_the_loss(doc_module):
    with started_trainer(doc_module.TurnoverPenaltyA3C, cartpole(), AacDensePolicy, POLICY, test_mode=True,
                         rollout_length=20, turnover_lambda=0.5) as (trainer, sess, _):
        feed = trainer.process_data(sess, trainer.get_data(), [True], trainer.local_network)
        previous = feed[trainer.previous_action]
        mask = feed[trainer.targets.on_policy.mask]
        actions = feed[trainer.targets.on_policy.action]
        real = mask.astype(bool)
        np.testing.assert_array_equal(previous[1:][real[1:]], actions[:-1][real[1:]])  # one rollout: row t-1's action
        np.testing.assert_array_equal(previous.sum(axis=1), 1.0)
        penalty, logits, total = sess.run([trainer.turnover_loss, trainer.local_network.on_logits, trainer.loss],
                                          feed)
        np.testing.assert_allclose(penalty, numpy_cross_entropy(previous, logits, mask), rtol=1e-5)
        base = trainer.loss.op.inputs[0]  # loss = base loss + turnover_lambda * penalty
        np.testing.assert_allclose(total, sess.run(base, feed) + 0.5 * penalty, rtol=1e-5)


def repeat_fractions(trainer_class, tmp_path, turnover_lambda, steps=300):
    """Trains `steps` train steps; returns the fraction of frames repeating the previous action in the first and
    the last 20 train batches, and the scalar events written. A discount of 0 keeps CartPole's reward signal from
    outweighing the penalty."""
    with started_trainer(trainer_class, cartpole(), AacDensePolicy, POLICY, summary_dir=tmp_path, test_mode=True,
                         rollout_length=20, turnover_lambda=turnover_lambda, opt_learn_rate=3e-3, model_gamma=0.0,
                         model_summary_freq=50) as (trainer, sess, _):
        feeds, update_feeds = [], trainer.learner.update_feeds

        def recording_update_feeds(*args):
            step_feeds, frames = update_feeds(*args)
            feeds.extend(step_feeds)
            return step_feeds, frames

        trainer.learner.update_feeds = recording_update_feeds
        frames = sum(trainer.process(sess) for _ in range(steps))
    assert frames == int(trainer.last_global_step) == sum(feed[trainer.targets.on_policy.mask].sum() for feed in feeds)
    repeats = [np.mean(feed[trainer.targets.on_policy.action].argmax(1) == feed[trainer.previous_action].argmax(1))
               for feed in feeds]
    return np.mean(repeats[:20]), np.mean(repeats[-20:]), scalar_events(tmp_path)


def test_the_example_trains_a_few_hundred_steps_into_repeating_its_actions(doc_module, tmp_path):
    first, last, events = repeat_fractions(doc_module.TurnoverPenaltyA3C, tmp_path / 'penalised', 2.0)
    _, unpenalised, _ = repeat_fractions(doc_module.TurnoverPenaltyA3C, tmp_path / 'free', 0.0)
    assert first < 0.8 and unpenalised < 0.8 < 0.95 < last
    assert len(tagged(events, 'turnover/cross_entropy')) == 6


def test_the_example_trains_in_process_as_the_document_shows(doc_module):
    code = doc_blocks()[1].replace('max_env_steps=5000', 'max_env_steps=600')
    namespace = dict(vars(doc_module))
    exec(compile(code, str(DOC), 'exec'), namespace)
    assert namespace['result']['global_step'] >= 600


def test_built_policies_meet_the_contract_and_a_lacking_one_is_named():
    with started_trainer(Unreal, [cartpole()], AacDensePolicy, POLICY, test_mode=True, rollout_length=5,
                         use_value_replay=True, use_reward_prediction=True,
                         replay_memory_size=50) as (trainer, _, _):
        pi = trainer.local_network
        assert isinstance(pi, AacPolicy)
        assert missing_members(pi, {'use_value_replay': True, 'use_reward_prediction': True}) == []
        assert missing_members(pi, {'use_pixel_control': True}) == ['pc_change_last_state_in', 'pc_change_state_in',
                                                                    'pc_q']
        lacking = copy.copy(pi)
        del lacking.on_vf
        with pytest.raises(TypeError, match=r"lacks \['on_vf'\]"):
            check_policy(lacking)
        with pytest.raises(TypeError, match=r"lacks \['pc_change_last_state_in'.*with use_pixel_control"):
            check_policy(pi, {'use_pixel_control': True})


def test_a_trainer_refuses_a_policy_without_a_head_its_tasks_need():
    env = cartpole()
    try:
        with pytest.raises(TypeError, match=r"lacks \[.*'pc_q'\].*use_pixel_control"):
            with tf.Graph().as_default():
                Unreal(env=env, task=0, test_mode=True, use_pixel_control=True, replay_memory_size=50,
                       policy_config={'class_ref': AacDensePolicy, 'kwargs': dict(POLICY, pixel_control=False)})
    finally:
        env.close()


def test_original_arguments_that_are_not_used_are_warned_about_by_name():
    env = cartpole()
    try:
        with tf.Graph().as_default(), logbook.TestHandler() as handler:
            A3C(env=env, task=0, test_mode=True, opt_decay=0.9, opt_momentum=0.1, replay_batch_size=4,
                policy_config={'class_ref': AacDensePolicy, 'kwargs': POLICY})
    finally:
        env.close()
    messages = [record.message for record in handler.records if record.level == logbook.WARNING]
    for name in ('opt_decay', 'opt_momentum', 'replay_batch_size'):
        assert any('`{}` of the original btgym is not used here'.format(name) in text for text in messages), name


@pytest.mark.parametrize('hook', ['_get_main_feeder', '_process_rollouts', 'process_data', 'process_summary'])
def test_a_subclass_overriding_a_hook_that_is_no_longer_called_is_refused_by_name(hook):
    subclass = type('OldStyleTrainer', (A3C,), {hook: lambda self, *args, **kwargs: None})
    with pytest.raises(TypeError, match='OldStyleTrainer overrides {}, a hook of the original trainer'.format(hook)):
        subclass(env=None, task=0, policy_config={'class_ref': AacDensePolicy})
    grandchild = type('Grandchild', (subclass,), {})
    with pytest.raises(TypeError, match='Grandchild overrides {}'.format(hook)):
        grandchild(env=None, task=0, policy_config={'class_ref': AacDensePolicy})
