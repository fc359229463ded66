"""A run's log dir made without training (its configs and a checkpoint of a freshly initialised global policy): what
evaluating and exporting read, without starting a cluster."""
import os

from btgym_aac.compat import tf
from btgym_aac.distributed.run_config import pickle_run_config, write_run_config
from btgym_aac.evaluation.loading import GLOBAL_SCOPE, env_spaces, global_policy_kwargs, make_env, read_run_config

CKPT_SUBDIR = 'current_train_checkpoint'


def write_saved_run(log_dir, env_config, policy_config, trainer_config, step=100, seed=0, weight_scale=1.0,
                    preset=None):
    """Writes run_config.pkl (naming `preset`, as a Launcher does) and checkpoint `model_parameters-<step>` of the
    global policy, its weights drawn with graph seed `seed` (noise scales included) and multiplied by
    `weight_scale` (above 1, activations as large as a trained policy's, where float rounding differences between
    two ways of computing the graph show).

    Returns:
        the log dir (str).
    """
    log_dir = str(log_dir)
    configs = {'env_config': env_config, 'policy_config': policy_config, 'trainer_config': trainer_config,
               'cluster_config': {'log_dir': log_dir, 'log_ckpt_subdir': CKPT_SUBDIR}, 'test_mode': False,
               'preset': preset}
    write_run_config(log_dir, pickle_run_config(configs))
    run_config = read_run_config(log_dir)
    env = make_env(run_config)
    try:
        ob_space, ac_space, _ = env_spaces(env)
    finally:
        env.close()
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        with tf.variable_scope(GLOBAL_SCOPE):
            policy_config['class_ref'](**global_policy_kwargs(run_config, ob_space, ac_space))
        saver = tf.train.Saver(tf.global_variables())
        with tf.Session(graph=graph) as session:
            session.run(tf.global_variables_initializer())
            if weight_scale != 1.0:
                session.run([variable.assign(variable * weight_scale) for variable in tf.global_variables()])
            os.makedirs(os.path.join(log_dir, CKPT_SUBDIR), exist_ok=True)
            saver.save(session, os.path.join(log_dir, CKPT_SUBDIR, 'model_parameters'), global_step=step)
    return log_dir


def reference_configs():
    """The `fast` preset (the stacked-LSTM policy on DevStrat_4_11: untrained, it trades) on a small noisy sine
    series, 8-hour episodes."""
    from btgym_aac.data import make_sine_data
    from btgym_aac.distributed.run_config import default_configs

    configs = default_configs('a3c', preset='fast')
    env_config = configs['env_config']
    env_config['kwargs'] = dict(env_config['kwargs'], dataframe=make_sine_data(num_bars=6000, noise=2e-5, seed=1),
                                episode_duration={'days': 0, 'hours': 8, 'minutes': 0})
    return configs


def exported_reference_run(folder, step=100):
    """(log dir, artifact folder) of an untrained reference run saved at `step` and exported under `folder`."""
    from btgym_aac.cli import main as cli_main

    configs = reference_configs()
    log_dir = write_saved_run(os.path.join(str(folder), 'run'), configs['env_config'], configs['policy_config'],
                              configs['trainer_config'], step=step, preset=configs['launcher_config']['preset'])
    artifact = os.path.join(str(folder), 'artifact')
    if cli_main(['export', log_dir, artifact]) != 0:
        raise RuntimeError('export of the reference run failed')
    return log_dir, artifact
