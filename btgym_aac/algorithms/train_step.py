"""The order of one train step's session runs: target-policy copy, sync, `num_epochs` updates, step increment.

Without a target policy the sync before an update is run at the end of the previous update, in the same session
run (`sync_pi_after_train`), which saves a parameter-server round trip per train step; the local policy then
holds the global weights from the end of its own last update, as in universe-starter-agent's A3C. A step that
writes the model summary (its ops read the local weights) and trainers with a target policy (the target copies
the local policy before the sync) sync before their update instead. With `num_epochs` > 1 every epoch but the
last ends with that sync too, so each takes its gradient at the weights the previous one made.
"""
from btgym_aac.algorithms.session_callables import CallableCache


class TrainStep:
    """Runs the train and sync ops (`trainer_graph.TrainOps`) of a trainer in the order above.

    Args:
        ops: TrainOps.
        num_epochs: updates per batch.
        pi_prime_update_period: train steps between local -> target policy copies (with a target policy).
    """

    def __init__(self, ops, num_epochs=1, pi_prime_update_period=1):
        self.ops = ops
        self.num_epochs = num_epochs
        self.pi_prime_update_period = pi_prime_update_period
        self.use_target_policy = ops.sync_pi_prime is not None
        self.local_synced = False
        self._callables = CallableCache()

    def start(self, sess):
        """Copies every global variable to the local policy."""
        sess.run(self.ops.sync)
        self.local_synced = True

    def update_target(self, sess, local_steps):
        """Copies the local policy to the target policy every `pi_prime_update_period` train steps."""
        if self.use_target_policy and local_steps % self.pi_prime_update_period == 0:
            self._callables.run(sess, 'sync_pi_prime', None, {}, targets=[self.ops.sync_pi_prime])

    def run(self, sess, feed_dict, summary_op=None, check_finite=None):
        """Syncs the local policy if needed and runs the `num_epochs` updates.

        Args:
            sess: session.
            feed_dict: the step's feed (see `trainer_feeds.train_feed`).
            summary_op: model summary op to run with the last update, or None.
            check_finite: fn(sess, finite, feed_dict) called after each update with its `train_finite` value.

        Returns:
            (global step after the update, serialized summary or None).
        """
        ops = self.ops
        if self.use_target_policy or not self.local_synced:
            self._callables.run(sess, 'sync_pi', None, {}, targets=[ops.sync_pi])
        for _ in range(self.num_epochs - 1):
            finite = self._callables.run(sess, 'train_epoch', [ops.train_finite], feed_dict,
                                         targets=[ops.sync_pi_after_train])
            if check_finite is not None:
                check_finite(sess, finite[0], feed_dict)
        write_summary = summary_op is not None
        sync_after = not (write_summary or self.use_target_policy)
        fetches = [ops.inc_step, ops.train_finite] + ([summary_op] if write_summary else [])
        fetched = self._callables.run(sess, ('train_last', write_summary, sync_after), fetches, feed_dict,
                                      targets=[ops.train_op] + ([ops.sync_pi_after_train] if sync_after else []))
        self.local_synced = sync_after
        if check_finite is not None:
            check_finite(sess, fetched[1], feed_dict)
        return int(fetched[0]), fetched[2] if write_summary else None
