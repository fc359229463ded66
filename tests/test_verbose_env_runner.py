"""VerboseEnvRunnerFn: the original's import path, the policy renderings it adds to a rendered episode (drawn from
that episode's own logits, values and LSTM states), BaseEnvRunnerFn's data without aux modes, and a trainer whose
thread runner passes its aux modes on and summarises the images."""
import numpy as np
import pytest

from btgym_aac.algorithms import A3C
from btgym_aac.algorithms.policy import AacStackedRL2Policy
from btgym_aac.algorithms.acting import BaseEnvRunnerFn, RunnerThread
from btgym_aac.algorithms.acting.aux_renderings import AUX_RENDER_MODES, draw_aux
from btgym_aac.compat import tf
from btgym_aac.env.rendering import BTgymRendering
from btgym_aac.research.verbose_env_runner import VerboseEnvRunnerFn
from test_env import assert_line_picture
from test_runners import LOG, RecordingEnv, ScriptedPolicy, ToyEnv, counted_context, frames_of, take
from trainer_helpers import started_trainer


def verbose_fn(env, policy, **kwargs):
    return VerboseEnvRunnerFn(None, env, policy, 0, 40, None, 1, 1, False, None, None, LOG, **kwargs)


def expected_aux(mode, rollout, action_space, logits):
    """The aux image of the one-rollout episode `rollout` of a `ScriptedPolicy`, drawn from its frames."""
    steps = rollout.size
    accum = {'logits': [logits] * steps, 'value': [frame['value'] for frame in frames_of([rollout])],
             'context': [counted_context(count + 1) for count in range(steps)]}
    return draw_aux(BTgymRendering(render_modes=()), mode, accum, action_space)


def test_the_originals_import_path_and_the_lazy_package_name():
    import btgym_aac.research as research

    assert research.VerboseEnvRunnerFn is VerboseEnvRunnerFn
    assert 'VerboseEnvRunnerFn' in research.__all__


def test_rendered_episodes_get_the_policy_renderings_of_their_own_steps():
    env = RecordingEnv(render_enabled=True, render_modes=['human'])
    policy = ScriptedPolicy(env.action_space)
    items = take(verbose_fn(env, policy), 2)
    logits = np.linspace(1.0, 0.0, env.action_space.one_hot_depth)
    for item in items:
        assert item['on_policy']['terminal'][-1]
        renderings = item['render_summary']
        assert set(renderings) == {'human', *AUX_RENDER_MODES}
        assert len(renderings['human']) == 1
        assert_line_picture(renderings['human'][0])  # the env's OHLC picture of the episode's last step
        for mode in AUX_RENDER_MODES:
            np.testing.assert_array_equal(renderings[mode],
                                          expected_aux(mode, item['on_policy'], env.action_space, logits))
    # Different episodes, different pictures; different values, different value plots:
    for mode in ('human', 'value_fn'):
        assert not np.array_equal(items[0]['render_summary'][mode], items[1]['render_summary'][mode]), mode


def test_the_trainers_modes_take_precedence_test_mode_gets_no_aux_and_unknown_modes_raise():
    env = RecordingEnv(render_enabled=True, render_modes=['human'])
    item = next(verbose_fn(env, ScriptedPolicy(env.action_space), aux_summaries=AUX_RENDER_MODES,
                           aux_render_modes=('value_fn',)))
    assert set(item['render_summary']) == {'human', 'value_fn'}
    toy = ToyEnv(episode_length=2, render_enabled=True, frame_shape=(2, 2, 1))
    item = next(VerboseEnvRunnerFn(None, toy, ScriptedPolicy(toy.action_space), 0, 2, None, 1, 1, True, None, None,
                                   LOG))
    assert set(item['render_summary']) == {'render_atari'}
    with pytest.raises(NotImplementedError, match='lstm_3_h'):
        next(verbose_fn(env, ScriptedPolicy(env.action_space), aux_summaries=('lstm_3_h',)))


def test_without_aux_modes_the_data_is_base_env_runner_fns():
    def run(runner_fn, **kwargs):
        env = RecordingEnv(render_enabled=True, render_modes=['human'])
        items = take(runner_fn(None, env, ScriptedPolicy(env.action_space), 0, 7, None, 1, 1, False, None, None, LOG,
                               **kwargs), 4)
        env.close()
        return items

    base, verbose = run(BaseEnvRunnerFn), run(VerboseEnvRunnerFn, aux_render_modes=())
    for base_item, verbose_item in zip(base, verbose):
        assert set(base_item) == set(verbose_item)
        for key in ('test_ep_summary', 'off_policy', 'off_policy_rp'):
            assert base_item[key] == verbose_item[key]
        wall_clock = {'cpu_time': None}
        assert (base_item['ep_summary'] and {**base_item['ep_summary'], **wall_clock}) == \
            (verbose_item['ep_summary'] and {**verbose_item['ep_summary'], **wall_clock})
        for key in ('reward', 'value', 'action', 'r', 'terminal'):
            np.testing.assert_array_equal(base_item['on_policy'][key], verbose_item['on_policy'][key])
        assert (base_item['render_summary'] is None) == (verbose_item['render_summary'] is None)
        if base_item['render_summary'] is not None:
            assert set(verbose_item['render_summary']) == {'human'}
            np.testing.assert_array_equal(base_item['render_summary']['human'],
                                          verbose_item['render_summary']['human'])
    assert any(item['render_summary'] is not None for item in verbose)


def test_a_trainers_thread_runner_draws_its_aux_modes_from_the_episode_and_they_are_summarised():
    env = RecordingEnv(render_enabled=True, render_modes=['human'])
    runner_config = {'class_ref': RunnerThread, 'kwargs': {'runner_fn_ref': VerboseEnvRunnerFn}}
    with started_trainer(A3C, env, AacStackedRL2Policy, dict(lstm_layers=(8, 8)), runner_config=runner_config,
                         aux_render_modes=list(AUX_RENDER_MODES), env_render_freq=1, rollout_length=8) as (
            trainer, sess, _):
        assert trainer.runners[0].aux_render_modes == AUX_RENDER_MODES
        rollouts = []
        while True:
            data = trainer.get_data(timeout=60)
            rollouts.append(data['on_policy'][0])
            renderings = data['render_summary'][0]
            if renderings is not None:
                break
        assert set(renderings) == {'human', *AUX_RENDER_MODES}
        for image in renderings.values():
            assert image.dtype == np.uint8 and image.ndim == 4 and image.shape[0] == 1 and image.shape[-1] == 3
        values = [frame['value'] for frame in frames_of(rollouts)]
        assert rollouts[-1]['terminal'][-1] and not any(r['terminal'][-1] for r in rollouts[:-1])
        expected = draw_aux(BTgymRendering(render_modes=()), 'value_fn', {'value': values}, env.action_space)
        np.testing.assert_array_equal(renderings['value_fn'], expected)
        summary = tf.Summary.FromString(sess.run(
            trainer.ep_summary['render_op'], {trainer.ep_summary[mode]: image for mode, image in renderings.items()}))
        assert {value.tag.split('/')[-3] for value in summary.value} == set(renderings)  # '<scope>/<mode>/image/0'
