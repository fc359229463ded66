"""Checkpoints: saving without meta-graphs, the restore order of a worker, and exporting a trained model.

TensorFlow's Saver writes the checkpoint files first and then replaces the `checkpoint` state file atomically,
so a process killed while saving leaves the previous checkpoint as the latest usable one.
"""
import os
import shutil

from btgym_aac.compat import tf

CHECKPOINT_PREFIX = 'model_parameters'


class FastSaver(tf.train.Saver):
    """Saver that never writes the meta-graph (writing it froze the original's workers)."""

    def save(self, sess, save_path, global_step=None, latest_filename=None, meta_graph_suffix='meta',
             write_meta_graph=True, write_state=True, strip_default_attrs=False, save_debug_info=False):
        return super().save(sess, save_path, global_step=global_step, latest_filename=latest_filename,
                            meta_graph_suffix=meta_graph_suffix, write_meta_graph=False, write_state=write_state,
                            strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info)


def latest_checkpoint(directory):
    """Path prefix of the latest checkpoint in `directory`, or None when there is none (or no directory)."""
    if not directory or not os.path.isdir(directory):
        return None
    return tf.train.latest_checkpoint(directory)


def restore_order(sess, saver, reset_global_step, initial_ckpt_dir, current_ckpt_dir, log):
    """Restores the model as the original worker did: pre-trained model, else the current run, else scratch.

    Args:
        sess: session whose global variables are initialised.
        saver: saver of the global variables.
        reset_global_step: op setting the global step to 0 (a pre-trained model starts counting anew).
        initial_ckpt_dir: directory of a pre-trained model, or None.
        current_ckpt_dir: this run's checkpoint directory.
        log: logbook logger.

    Returns:
        'pre-trained', 'resumed' or 'scratch'.

    Raises:
        FileNotFoundError: `initial_ckpt_dir` is given but holds no checkpoint.
    """
    if initial_ckpt_dir:
        path = latest_checkpoint(initial_ckpt_dir)
        if path is None:
            raise FileNotFoundError('initial_ckpt_dir {!r} holds no checkpoint (expected a `checkpoint` file '
                                    'written by btgym-aac export or a previous run)'.format(initial_ckpt_dir))
        saver.restore(sess, path)
        sess.run(reset_global_step)
        log.notice('pre-trained model restored from {}; global step reset to 0'.format(path))
        return 'pre-trained'
    path = latest_checkpoint(current_ckpt_dir)
    if path is not None:
        saver.restore(sess, path)
        log.notice('resumed from {}'.format(path))
        return 'resumed'
    log.notice('training from scratch')
    return 'scratch'


def recover_checkpoints(saver, ckpt_dir):
    """Has `saver` take over the checkpoints listed in `ckpt_dir`'s state file, so its saves keep rotating them
    (`max_to_keep`) instead of leaving them on disk unlisted (a resumed run, a restarted chief)."""
    state = tf.train.get_checkpoint_state(ckpt_dir)
    if state is not None:
        saver.recover_last_checkpoints(list(state.all_model_checkpoint_paths))


def export_checkpoint(source_dir, target_dir):
    """Copies the latest checkpoint of `source_dir` into `target_dir`, usable as an `initial_ckpt_dir`.

    The files are copied into a temporary folder next to the target, which then replaces the target.

    Returns:
        path prefix of the exported checkpoint.

    Raises:
        FileNotFoundError: `source_dir` holds no checkpoint.
    """
    path = latest_checkpoint(source_dir)
    if path is None:
        raise FileNotFoundError('no checkpoint to export in {!r}'.format(source_dir))
    name = os.path.basename(path)
    target_dir = os.path.abspath(target_dir)
    staging = target_dir + '.exporting'
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    for file_name in os.listdir(os.path.dirname(path)):
        if file_name.startswith(name + '.'):
            shutil.copy2(os.path.join(os.path.dirname(path), file_name), staging)
    tf.train.update_checkpoint_state(staging, name, all_model_checkpoint_paths=[name])
    if os.path.exists(target_dir):
        shutil.rmtree(target_dir)
    os.replace(staging, target_dir)
    return os.path.join(target_dir, name)
