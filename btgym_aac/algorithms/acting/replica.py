"""Acting replica: a copy of a worker's local policy in its own graph and session, for the runners.

In a distributed worker every session run goes through TensorFlow's master/worker runtime and its thread pools,
which makes an acting step cost more than the same graph run in a plain session that executes every op in the
calling thread. Acting is on the runner's critical path, so the runners act through this replica
(`benchmarks/train_throughput.py` measures the difference: configuration `a3c` against `a3c_no_replica`).

The replica copies the local policy's variables from the worker session every `refresh_period` acting steps
(the rollout length), so it follows whatever updates the local policy (the trainer's sync op, or a subclass's
own) within one rollout. Everything that is not acting (the trainer's episode counter and sample config, policy
callbacks) is the local policy's, run in the worker session.
"""
from btgym_aac.algorithms.policy.calls import resolve_session
from btgym_aac.algorithms.common.sessions import CallableCache, feed_callable, session_config
from btgym_aac.algorithms.common.placeholders import check_variable_pairing, copied_in_getter
from btgym_aac.compat import tf


class ActingReplica:
    """Acts like `local_policy`, through a copy of it (see the module docstring).

    Args:
        local_policy: the worker's local policy (its `var_list` is copied).
        policy_class: class of the local policy.
        policy_kwargs: kwargs the local policy was built with.
        refresh_period: acting steps between two copies of the local variables.
        random_seed: graph-level seed of the replica graph, or None.

    Raises:
        ValueError: refresh_period < 1.
        RuntimeError: the replica's variables do not pair with the local policy's by shape.
    """

    def __init__(self, local_policy, policy_class, policy_kwargs, refresh_period, random_seed=None):
        self.local_policy = local_policy
        self.refresh_period = int(refresh_period)
        if self.refresh_period < 1:
            raise ValueError('acting replica: refresh_period must be >= 1 acting step, got {!r}'.format(refresh_period))
        self.graph = tf.Graph()
        with self.graph.as_default():
            if random_seed is not None:
                tf.set_random_seed(random_seed)
            with tf.variable_scope('acting_replica', custom_getter=copied_in_getter):
                self.policy = policy_class(**policy_kwargs)
            check_variable_pairing(self.policy.var_list, local_policy.var_list,
                                   'acting replica: the policy built variables that do not pair with the local '
                                   "policy's (the policy class must build the same variables on every call)")
            self._values_in = [tf.placeholder(var.dtype.base_dtype, var.get_shape()) for var in self.policy.var_list]
            self._load = tf.group(*[var.assign(value) for var, value in zip(self.policy.var_list, self._values_in)])
            init_op = tf.global_variables_initializer()
        self.graph.finalize()
        self.session = tf.Session(graph=self.graph, config=session_config(
            intra_op_parallelism_threads=1, inter_op_parallelism_threads=-1))
        self.session.run(init_op)
        self._load_values = feed_callable(self.session, None, self._values_in, targets=[self._load])
        self._read_local = CallableCache()
        self._steps = 0

    def __getattr__(self, name):
        if name == 'local_policy':
            raise AttributeError(name)
        return getattr(self.local_policy, name)

    def refresh(self, sess=None):
        """Copies the local policy's variables into the replica.

        Args:
            sess: the worker session (None: the default session).
        """
        values = self._read_local.run(resolve_session(sess), 'read', self.local_policy.var_list, {})
        self._load_values(*values)

    def act(self, *args, sess=None, **kwargs):
        """`local_policy.act` computed by the replica; refreshes it first every `refresh_period` calls.

        Args:
            *args, **kwargs: see the policy's `act`.
            sess: the worker session, used only to read the local variables.
        """
        self._count_step(sess)
        return self.policy.act(*args, sess=self.session, **kwargs)

    def _count_step(self, sess):
        """Refreshes the replica every `refresh_period` acting steps (`sess`: the worker session)."""
        if self._steps % self.refresh_period == 0:
            self.refresh(sess)
        self._steps += 1

    def act_batch(self, *args, sess=None, **kwargs):
        """`local_policy.act_batch` computed by the replica; a batched call counts as one acting step."""
        self._count_step(sess)
        return self.policy.act_batch(*args, sess=self.session, **kwargs)

    def get_value_batch(self, *args, sess=None, **kwargs):
        """`local_policy.get_value_batch` computed by the replica."""
        return self.policy.get_value_batch(*args, sess=self.session, **kwargs)

    def get_value(self, *args, sess=None, **kwargs):
        """`local_policy.get_value` computed by the replica."""
        return self.policy.get_value(*args, sess=self.session, **kwargs)

    def get_initial_features(self, sess=None, **kwargs):
        """`local_policy.get_initial_features` computed by the replica."""
        return self.policy.get_initial_features(sess=self.session, **kwargs)

    def close(self):
        """Closes the replica's session."""
        self.session.close()
