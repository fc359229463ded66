"""Observation normalisation by running statistics, kept in the policy's graph.

A policy built with `normalize_observations=True` standardises its `external` and `internal` observations (every
stream of a dict-valued one) element by element before encoding them: clip((x - mean) / sqrt(var + 1e-8), -clip,
clip). The statistics are non-trainable variables of the policy's scope named `moving_*`, so they travel with its
weights: the local policies get them with every sync from the global one, checkpoints save them, evaluation
restores them and a policy artifact freezes them into its graph (what `trade` sees is what training saw). Only the
learner changes them: its train step merges the moments of the frames it trains on into the global policy's
statistics (`ObservationNormalizer.update`), as a parallel (Chan et al.) update of mean, variance and count.
"""
from btgym_aac.compat import tf

NORMALIZED_MODES = ('external', 'internal')
"""Observation keys a normalising policy standardises (when the observation has them)."""

VARIANCE_EPSILON = 1e-8
"""Added to the variance before its square root."""


class ObservationNormalizer:
    """Running per-element mean and variance of a policy's observations, and the observations standardised by them.

    Variables, under `name` in the current variable scope: `<mode>[/<stream>]/moving_mean` and `moving_variance`
    (shaped as the observation), and `moving_count` (frames merged so far), all float32 (the merge computes in
float64). Their initial values
    (mean 0, variance 1, count 0) leave observations as they are, only clipped.

    Args:
        ob_shape: the observation space's shape dict (`DictSpace.shape`).
        clip: bound of the standardised values (> 0).
        name: variable scope of the statistics.
    """

    def __init__(self, ob_shape, clip=10.0, name='observation_normalizer'):
        if not clip > 0:
            raise ValueError('observation normalisation: clip must be > 0, got {!r}'.format(clip))
        self.clip = float(clip)
        self.modes = tuple(mode for mode in NORMALIZED_MODES if mode in ob_shape)
        with tf.variable_scope(name):
            self.count = tf.get_variable('moving_count', [], tf.float32, tf.zeros_initializer(), trainable=False)
            self.statistics = {mode: _leaf_map(_statistics, ob_shape[mode], mode) for mode in self.modes}

    def normalize(self, state_in):
        """`state_in` (a dict of observation tensors [N, ...]) with its normalised modes standardised.

        Returns:
            a new dict; the other keys hold the same tensors.
        """
        normalized = dict(state_in)
        for mode in self.modes:
            statistics, x = self.statistics[mode], state_in[mode]
            normalized[mode] = {stream: self._standardize(statistics[stream], x[stream]) for stream in statistics} \
                if isinstance(statistics, dict) else self._standardize(statistics, x)
        return normalized

    def _standardize(self, statistics, x):
        mean, variance = (tf.stop_gradient(statistic) for statistic in statistics)  # only `update` changes them
        standardized = (x - mean) * tf.rsqrt(variance + VARIANCE_EPSILON)
        return tf.clip_by_value(standardized, -self.clip, self.clip)

    def update(self, state_in, weights):
        """Op merging the weighted moments of a batch into the statistics (all read before any is written).

        Args:
            state_in: dict of observation tensors [N, ...] (the frames trained on).
            weights: [N] tensor, 1 for a frame to count, 0 for padding (the on-policy mask).

        Returns:
            op; a batch of zero weight changes nothing.
        """
        weights = tf.cast(weights, tf.float64)
        frames = tf.reduce_sum(weights)
        count = tf.cast(self.count.read_value(), tf.float64)
        total = count + frames
        share = frames / tf.maximum(total, 1.0)
        merged = []
        for mode in self.modes:
            for statistics, x in _leaves(self.statistics[mode], state_in[mode]):
                merged += _merged(statistics, x, weights, frames, share)
        merged.append((self.count, count, total))
        counted = frames > 0
        new_values = [tf.where(counted, new, old) for _, old, new in merged]
        with tf.control_dependencies(new_values):
            return tf.group(*[variable.assign(tf.cast(value, variable.dtype.base_dtype))
                              for (variable, _, _), value in zip(merged, new_values)])


def _statistics(shape, path):
    """(moving_mean, moving_variance) variables of one observation leaf of `shape`, under scope `path`."""
    with tf.variable_scope(path):
        mean = tf.get_variable('moving_mean', shape, tf.float32, tf.zeros_initializer(), trainable=False)
        variance = tf.get_variable('moving_variance', shape, tf.float32, tf.ones_initializer(), trainable=False)
    return mean, variance


def _merged(statistics, x, weights, frames, share):
    """[(variable, its value read, merged value)] of the mean and the variance of one leaf and a batch `x`."""
    mean, variance = statistics
    x = tf.cast(x, tf.float64)
    frame_weights = tf.reshape(weights, [-1] + [1] * (x.get_shape().ndims - 1))
    counted = tf.maximum(frames, 1.0)
    batch_mean = tf.reduce_sum(frame_weights * x, axis=0) / counted
    batch_variance = tf.reduce_sum(frame_weights * tf.square(x - batch_mean), axis=0) / counted
    old_mean = tf.cast(mean.read_value(), tf.float64)
    old_variance = tf.cast(variance.read_value(), tf.float64)
    delta = batch_mean - old_mean
    new_mean = old_mean + delta * share
    new_variance = old_variance * (1.0 - share) + batch_variance * share + tf.square(delta) * share * (1.0 - share)
    return [(mean, old_mean, new_mean), (variance, old_variance, new_variance)]


def _leaf_map(fn, shape, path):
    """fn(leaf shape, scope path) over an observation entry: a shape tuple or a dict of stream -> shape tuple."""
    if isinstance(shape, dict):
        return {stream: fn(leaf, '{}/{}'.format(path, stream)) for stream, leaf in shape.items()}
    return fn(shape, path)


def _leaves(statistics, x):
    """[(statistics, tensor)] of every leaf of an observation entry: one array, or a dict of streams."""
    if isinstance(statistics, dict):
        return [(statistics[stream], x[stream]) for stream in statistics]
    return [(statistics, x)]
