"""The learn rate, the entropy weight, the rollout length and GAE's lambda of A3C in the default preset."""
from optuna.distributions import CategoricalDistribution, FloatDistribution

SPACE = {
    'trainer_config.kwargs.opt_learn_rate': FloatDistribution(3e-4, 3e-3, log=True),
    'trainer_config.kwargs.model_beta': FloatDistribution(1e-3, 3e-2, log=True),
    'trainer_config.kwargs.rollout_length': CategoricalDistribution([20, 40]),
    'trainer_config.kwargs.model_gae_lambda': FloatDistribution(0.9, 1.0),
}
