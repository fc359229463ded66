"""Packed cross-device moves: exact values, only small tensors that change device are packed, one pack per
(source, destination, dtype); in a ps + worker cluster the trainer's sync and gradient push use them and stay
exact."""
import numpy as np
import pytest

from btgym_aac import BTgymEnv
from btgym_aac.algorithms import A3C
from btgym_aac.algorithms.nn.layers import linear
from btgym_aac.algorithms.policy import BaseAacPolicy
from btgym_aac.algorithms.common.transfers import moved_to
from btgym_aac.compat import tf
from btgym_aac.distributed.cluster import make_cluster_spec
from btgym_aac.distributed.worker import worker_session_config
from btgym_aac.strategy import DevStrat_4_11

SOURCE, DESTINATION, OTHER_SOURCE = '/device:CPU:0', '/device:CPU:1', '/device:CPU:2'


def test_small_tensors_move_packed_per_source_and_dtype_with_exact_values():
    rng = np.random.RandomState(0)
    values = [rng.randn(3, 4).astype(np.float32), rng.randn(5).astype(np.float32), rng.randn(300).astype(np.float32),
              np.arange(2, dtype=np.int32), np.arange(3, dtype=np.int32), rng.randn(2),
              rng.randn(2, 2).astype(np.float32), rng.randn(3).astype(np.float32), rng.randn(2).astype(np.float32)]
    devices = [SOURCE] * 6 + [OTHER_SOURCE] * 2 + [DESTINATION]
    graph = tf.Graph()
    with graph.as_default():
        tensors = []
        for value, device in zip(values, devices):
            with tf.device(device):
                tensors.append(tf.constant(value))
        tensors.append(None)
        moved = moved_to(tensors, [DESTINATION] * len(tensors), max_elements=100)
    packs = sorted((op.device, op.inputs[0].dtype.name) for op in graph.get_operations() if op.type == 'ConcatV2')
    assert [(device.split('/')[-1], dtype) for device, dtype in packs] == [
        ('device:CPU:0', 'float32'), ('device:CPU:0', 'int32'), ('device:CPU:2', 'float32')]
    for index in (2, 5, 8, 9):  # too large; the only float64; already on the destination; None
        assert moved[index] is tensors[index]
    for index in (0, 1, 3, 4, 6, 7):
        assert moved[index] is not tensors[index] and DESTINATION in moved[index].device
        assert moved[index].get_shape().as_list() == list(values[index].shape)
    with tf.Session(graph=graph, config=tf.ConfigProto(device_count={'CPU': 3})) as sess:
        fetched = sess.run(moved[:-1])
    for value, result in zip(values, fetched):
        assert result.dtype == value.dtype
        np.testing.assert_array_equal(result, value)


def test_tensors_and_destinations_of_different_lengths_are_refused():
    with tf.Graph().as_default():
        tensors = [tf.constant([1.0]), tf.constant([2.0])]
        with pytest.raises(ValueError, match='2 tensors but 1 destinations'):
            moved_to(tensors, [DESTINATION])


def _cluster_trainer(**trainer_kwargs):
    """A3C with a small policy on a ps + worker cluster whose servers run in this process (`trainer_kwargs` go to
    A3C).

    Returns:
        trainer, its graph, the worker server, the global variables' initializer.
    """
    spec = make_cluster_spec(num_workers=1, num_ps=1)
    cluster = tf.train.ClusterSpec(spec)
    tf.train.Server(cluster, job_name='ps', task_index=0)
    server = tf.train.Server(cluster, job_name='worker', task_index=0)
    graph = tf.Graph()
    with graph.as_default():
        env = BTgymEnv(strategy=DevStrat_4_11, render_enabled=False, random_seed=0,
                       episode_duration={'days': 0, 'hours': 8, 'minutes': 0})
        trainer = A3C(env=env, task=0, cluster_spec=spec, random_seed=0, rollout_length=8,
                      policy_config={'class_ref': BaseAacPolicy, 'kwargs': dict(
                          lstm_layers=(16,), linear_layer_ref=linear, conv_2d_num_filters=(8, 8, 8, 8))},
                      **trainer_kwargs)
        init_op = tf.global_variables_initializer()
    return trainer, graph, server, init_op


def _started(trainer, graph, server, init_op, log_dir):
    """Worker session with the trainer started and fed one fixed rollout batch for ever.

    Returns:
        session, the batch.
    """
    sess = tf.Session(server.target, graph=graph, config=worker_session_config(0))
    sess.run(init_op)
    trainer.start(sess, tf.summary.FileWriter(str(log_dir)))
    data = trainer.get_data()
    trainer.get_data = lambda **kwargs: data
    return sess, data


def test_trainer_in_a_cluster_syncs_and_pushes_exact_values_through_packs(tmp_path):
    """A3C on a ps + worker cluster: the syncs and the gradient push are packed; after the sync run at the end of a
    train step, and after a sync of its own, the local variables equal the global ones bit for bit, and the
    gradients the parameter server's Adam receives equal the clipped local gradients of the same run."""
    trainer, graph, server, init_op = _cluster_trainer()
    packs = [op for op in graph.get_operations() if op.type == 'ConcatV2' and 'packed_move' in op.name]
    assert {'/job:ps' in op.device for op in packs} == {True, False}
    sess, data = _started(trainer, graph, server, init_op, tmp_path)
    try:
        for _ in range(2):  # the first step writes the model summary and syncs nothing at its end
            trainer.process(sess)
        synced = [op.inputs[0].op.name for op in trainer.sync_pi.control_inputs]
        local = {var.op.name: var for var in trainer.local_network.var_list}
        pairs = [(local[name], glob) for name, glob in zip(local, trainer.network.var_list) if name in synced]
        assert len(pairs) == len(synced) > 2
        for sync in ([], [trainer.sync_pi]):
            sess.run(sync)
            for local_value, global_value in sess.run(pairs):
                np.testing.assert_array_equal(local_value, global_value)
        applied = {op.inputs[0].op.name: op.inputs[9] for op in graph.get_operations() if op.type == 'ApplyAdam'}
        pushed = [(applied.pop(glob.op.name), grad)
                  for grad, glob in zip(trainer.grads, trainer.network.var_list) if grad is not None]
        assert pushed and not applied
        feed = trainer.process_data(sess, data, [True], trainer.local_network)
        for received, sent in sess.run(pushed, feed):
            np.testing.assert_array_equal(received, sent)
    finally:
        trainer.stop()
        sess.close()
        trainer.env_list[0].close()


def _moved_between_tasks(run_metadata):
    """(source job, destination job) of every tensor the partitions of a run receive from another task."""
    moves = []
    for graph in run_metadata.partition_graphs:
        for node in graph.node:
            if node.op in ('_Recv', '_HostRecv'):
                source, destination = (tf.DeviceSpec.from_string(node.attr[key].s.decode())
                                       for key in ('send_device', 'recv_device'))
                if (source.job, source.task) != (destination.job, destination.task):
                    moves.append((source.job, destination.job))
    return sorted(moves)


def test_cluster_train_step_moves_one_pack_each_way_and_decays_its_learning_rate_on_the_ps(tmp_path):
    """The gradients, the train phase and the frame count reach the parameter server as one pack, the new global
    step is the only tensor coming back; the learning rate the ps applies is the linear decay of the global step
    from 1e-3 to 1e-4 over 40 steps, `lr0 - (lr0 - lr_end) * min(step + 1, 40) / 40`, then stays at 1e-4 (0 with
    `train_phase` False, which leaves the global variables unchanged), and the global step grows by the number of
    frames trained on."""
    trainer, graph, server, init_op = _cluster_trainer(opt_learn_rate=1e-3, opt_end_learn_rate=1e-4,
                                                       opt_decay_steps=40)
    sess, data = _started(trainer, graph, server, init_op, tmp_path)
    try:
        for _ in range(3):
            trainer.process(sess)
        pi = trainer.local_network
        feed = trainer.process_data(sess, data, [True], pi)
        step = sess.run(trainer.global_step)
        decay = trainer.opt_decay_steps
        expected = (trainer.opt_learn_rate - trainer.opt_end_learn_rate) * (1 - min(step + 1, decay) / decay) + \
            trainer.opt_end_learn_rate
        np.testing.assert_allclose(sess.run(trainer.train_learn_rate, feed), expected, rtol=1e-12)
        assert 0 < step < 39 and 1e-4 < expected < 1e-3
        applied_rate = next(op.inputs[5] for op in graph.get_operations() if op.type == 'ApplyAdam')
        for at_step, rate in ((0, 9.775e-4), (9, 7.75e-4), (38, 1.225e-4), (39, 1e-4), (40, 1e-4), (1000, 1e-4)):
            trainer.global_step.load(at_step, sess)
            np.testing.assert_allclose(sess.run(trainer.train_learn_rate, feed), rate, rtol=1e-8)
            np.testing.assert_allclose(sess.run(applied_rate, feed), rate, rtol=1e-6)
        trainer.global_step.load(step, sess)
        frozen = {**feed, pi.train_phase: False}
        assert sess.run(trainer.train_learn_rate, frozen) == 0.0
        before = sess.run(trainer.network.var_list)
        sess.run([trainer.train_op, trainer.inc_step], frozen)
        for old, new in zip(before, sess.run(trainer.network.var_list)):
            np.testing.assert_array_equal(old, new)
        step = sess.run(trainer.global_step)
        run_metadata = tf.RunMetadata()
        new_step = sess.run([trainer.train_op, trainer.inc_step], feed, run_metadata=run_metadata,
                            options=tf.RunOptions(output_partition_graphs=True))[1]
        assert new_step - step == int(np.sum(feed[trainer.targets.on_policy.mask])) > 0
        assert _moved_between_tasks(run_metadata) == [('ps', 'worker'), ('worker', 'ps')]
    finally:
        trainer.stop()
        sess.close()
        trainer.env_list[0].close()
