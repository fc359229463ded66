"""A worker task's training: its environments, graph, session, training loop, checkpoints and progress reports.

A worker builds its environments, graph and session; the chief (task 0) alone initialises or restores the global
variables (pre-trained model, else this run's checkpoint, else scratch) and then writes the run's configs
(`run_config.pkl`); other workers wait until the global variables are ready. Every worker trains until the global
step reaches `max_env_steps`; the chief saves every `save_secs` and at the end. Workers report progress to the
launcher through a queue.
"""
import os
import resource
import socket
import threading
import time
import traceback


PROGRESS_SECONDS = 2.0
SESSION_RUN_TIMEOUT_SECONDS = 120
PS_POLL_SECONDS = 0.1
PS_CONNECT_TIMEOUT_SECONDS = 1.0
PS_WAIT_NOTICE_SECONDS = 30.0
CHIEF_WAIT_POLL_SECONDS = 0.2
"""How often a worker other than the chief checks whether the chief has set up the global variables."""


class WorkerSetupError(RuntimeError):
    """A worker could not make its environments, build its trainer or restore its checkpoint: causes that a restart
    would meet again (or, for a checkpoint, work around by training from scratch over it)."""


def _setup_error(what, error):
    """WorkerSetupError saying `what` failed, with the type and first line of `error` and where it was raised."""
    from btgym_aac.logs import error_summary

    frames = traceback.extract_tb(error.__traceback__)
    where = '; raised at {}:{}'.format(frames[-1].filename, frames[-1].lineno) if frames else ''
    return WorkerSetupError('{} ({}{})'.format(what, error_summary(error), where))


def cause_where(error, test):
    """The first of `error` and its causes and contexts (a runner's error carries the env's) that passes `test`,
    or None."""
    while error is not None:
        if test(error):
            return error
        error = error.__cause__ or error.__context__
    return None


def _accepts_connections(address):
    """True if a TCP connection to `address` ('host:port') succeeds now."""
    host, _, port = address.rpartition(':')
    try:
        with socket.create_connection((host, int(port)), timeout=PS_CONNECT_TIMEOUT_SECONDS):
            return True
    except OSError:
        return False


def quiet_threads_config(**kwargs):
    """`session_config(**kwargs)` whose idle TensorFlow threads sleep at once instead of spinning: on a machine with
    a core per worker, spinning pool threads of one process take CPU from the other processes' env runners."""
    from btgym_aac.algorithms.common.session_config import session_config

    config = session_config(**kwargs)
    config.experimental.disable_thread_spinning = True
    return config


def worker_session_config(task):
    """Session config of worker `task`: sees only the parameter servers and itself, one intra-op thread, idle
    threads that do not spin, and session runs that fail after `SESSION_RUN_TIMEOUT_SECONDS`."""
    return quiet_threads_config(
        device_filters=['/job:ps', '/job:worker/task:{}/cpu:0'.format(task)],
        intra_op_parallelism_threads=1, inter_op_parallelism_threads=2,
        operation_timeout_in_ms=SESSION_RUN_TIMEOUT_SECONDS * 1000)


def _env_kwargs(config, index):
    """Per-env kwargs: task number, rendering (chief's last env only when `render_last_env`), seed."""
    from btgym_aac.env.construction import env_seed_kwargs, training_env_config

    env_config = training_env_config(config['env_config'])
    kwargs = dict(env_config.get('kwargs', {}))
    num_envs, task = config['num_envs'], config['task']
    render = task == 0 and (index == num_envs - 1 if config['render_last_env'] else True)
    kwargs['render_enabled'] = bool(kwargs.get('render_enabled', True)) and render
    kwargs['task'] = task + 0.01 * index if num_envs > 1 else task
    seed = None if config['random_seed'] is None else config['random_seed'] + index
    kwargs.update(env_seed_kwargs(env_config, seed))
    return kwargs


class Worker:
    """Training loop of one worker task (see the module docstring).

    Args:
        config: see `task_process.run_task`.
        server: this task's tf.train.Server.
        log: logbook logger.
        progress_queue: multiprocessing queue or None.
        stop: threading.Event set to stop training (None: never).

    Attribute `startup`: `time.time()` stamps of its start-up, sent with every progress report: `started` and
    `imported` (from `config['startup']`, where given), `envs_made`, `graph_built`, `session_ready`, `first_step`.
    """

    def __init__(self, config, server, log, progress_queue=None, stop=None):
        self.config = config
        self.stop = stop or threading.Event()
        self.server = server
        self.log = log
        self.progress_queue = progress_queue
        self.task = config['task']
        self.is_chief = self.task == 0
        self.envs = []
        self.start_step = self.step = None
        self.startup = dict(config.get('startup', {}))

    def run(self):
        from btgym_aac.env.episode_recorder import EpisodeRecorder
        from btgym_aac.data.shared import register

        register(self.config.get('data_cache'))  # the envs map the launcher's copy of the data files
        try:
            env_config = self.config['env_config']
            for index in range(self.config['num_envs']):
                try:
                    env = env_config['class_ref'](**_env_kwargs(self.config, index))
                except Exception as error:
                    raise _setup_error('cannot make environment {} from env_config'.format(index), error) from error
                self.envs.append(EpisodeRecorder(env))
            self.startup['envs_made'] = time.time()
            self._train()
        finally:
            for env in self.envs:
                env.close()

    def _build(self):
        from btgym_aac.compat import tf
        from btgym_aac.distributed.fast_saver import FastSaver

        config = self.config
        trainer_config = config['trainer_config']
        trainer_kwargs = dict(trainer_config.get('kwargs', {}), test_mode=config['test_mode'])
        trainer_kwargs.setdefault('log_level', config.get('log_level'))
        self.trainer = trainer_config['class_ref'](
            env=self.envs, task=self.task, policy_config=config['policy_config'],
            cluster_spec=config['cluster_spec'], random_seed=config['random_seed'], **trainer_kwargs)
        global_vars = [v for v in tf.global_variables() if 'local' not in v.name]
        local_vars = [v for v in tf.global_variables() if 'local' in v.name] + tf.local_variables()
        global_step = self.trainer.global_step
        with tf.device(global_step.device):
            self.saved_step = tf.Variable(0, dtype=global_step.dtype.base_dtype, trainable=False,
                                          name='saved_global_step', collections=[])
        self.snapshot_step = self.saved_step.assign(global_step)
        saved = {variable.op.name: self.saved_step if variable is global_step else variable for variable in global_vars}
        self.saver = FastSaver(var_list=saved, max_to_keep=2, save_relative_paths=True)
        self.resume_step = global_step.assign(self.saved_step)
        self.float_globals = [(variable.op.name, variable) for variable in global_vars
                              if variable.dtype.base_dtype.is_floating]
        self.init_op = tf.variables_initializer(global_vars)
        self.local_init_op = tf.variables_initializer(local_vars)
        with tf.device('/job:ps/task:0'):
            self.chief_ready = tf.Variable(True, trainable=False, name='chief_ready', collections=[])
        self.ready_op = tf.report_uninitialized_variables(global_vars + [self.chief_ready])
        self.ready_op.mark_used()  # a worker stopped before its session never runs it: no "never used" dump
        self.session_config = worker_session_config(self.task)

    def _wait_for_parameter_servers(self):
        """Waits until every parameter server accepts connections, in Python so that a stop is seen (TensorFlow's
        session creation would block unseen); says what it waits for at once and every `PS_WAIT_NOTICE_SECONDS`.

        Returns:
            False if a stop was requested first.
        """
        pending = list(self.config['cluster_spec']['ps'])
        last_notice = 0.0
        while True:
            pending = [address for address in pending if not _accepts_connections(address)]
            if not pending:
                return True
            if time.time() - last_notice >= PS_WAIT_NOTICE_SECONDS:
                self.log.notice('waiting for parameter server(s) {} to accept connections'.format(pending))
                last_notice = time.time()
            if self.stop.wait(PS_POLL_SECONDS):
                return False

    def _chief_session(self):
        """The chief initialises and restores the global variables unless the parameter server has them from a
        chief that finished doing so: `chief_ready` (on the parameter server, never saved) is initialised only
        after the restore, so a chief that died in between is followed by one that restores again, and the
        other workers wait for it."""
        from btgym_aac.compat import tf
        from btgym_aac.distributed.checkpoints import recover_checkpoints, remove_save_leftovers, restore_order

        sess = tf.Session(self.server.target, config=self.session_config)
        uninitialized = sess.run(self.ready_op)
        if len(uninitialized) == 0:
            self.log.notice('global variables are live on the parameter server: rejoining')
        else:
            sess.run(self.init_op)
            try:
                restore_order(sess, self.saver, self.trainer.reset_global_step, self.config['initial_ckpt_dir'],
                              self.config['current_ckpt_dir'], self.log, resume_step=self.resume_step)
            except (tf.errors.OpError, ValueError) as error:
                raise _setup_error(
                    'cannot restore the checkpoint in {}; it is left as it is. Point the run at a new log dir (or '
                    'start fresh) to train from scratch, or use the policy and trainer configs the checkpoint was '
                    'made with'.format(self.config['initial_ckpt_dir'] or self.config['current_ckpt_dir']),
                    error) from error
            sess.run(self.chief_ready.initializer)
        remove_save_leftovers(self.config['current_ckpt_dir'], self.log)
        recover_checkpoints(self.saver, self.config['current_ckpt_dir'])
        sess.run(self.local_init_op)
        return sess

    def _worker_session(self):
        from btgym_aac.compat import tf

        manager = tf.train.SessionManager(local_init_op=self.local_init_op, ready_op=self.ready_op,
                                          ready_for_local_init_op=self.ready_op,
                                          recovery_wait_secs=CHIEF_WAIT_POLL_SECONDS)
        return manager.wait_for_session(self.server.target, config=self.session_config, max_wait_secs=600)

    def _train(self):
        from btgym_aac.compat import tf

        graph = tf.Graph()
        with graph.as_default():
            try:
                self._build()
            except Exception as error:
                raise _setup_error('cannot build the trainer and policy from trainer_config and policy_config',
                                   error) from error
        graph.finalize()
        self.startup['graph_built'] = time.time()
        if not self._wait_for_parameter_servers():
            self.log.notice('stop requested while waiting for the parameter servers')
            return
        with graph.as_default():
            sess = self._chief_session() if self.is_chief else self._worker_session()
        self.startup['session_ready'] = time.time()
        if self.is_chief:
            self._write_run_config()
        summary_dir = os.path.join(self.config['log_dir'], 'worker_{}'.format(self.task))
        self._train_in(sess, tf.summary.FileWriter(summary_dir), graph if self.is_chief else None)

    def _write_run_config(self):
        from btgym_aac.distributed.run_config import write_run_config

        try:
            write_run_config(self.config['log_dir'], self.config['run_config'])
        except OSError as error:
            raise _setup_error('cannot write the run config to {}'.format(self.config['log_dir']), error) from error

    def _train_in(self, sess, writer, graph=None):
        """Trains to `max_env_steps` (see `learner.train_until`), the chief saving every `save_secs` and
        every worker reporting progress every PROGRESS_SECONDS; then ends (see `_end_training`). `graph` (the
        chief's) goes to the summary `writer` for TensorBoard after the first trained step, off the start-up's
        critical path."""
        from btgym_aac.algorithms.learner import train_until

        ckpt_path = os.path.join(self.config['current_ckpt_dir'], 'model_parameters')
        self.trainer.start(sess, writer, stop_event=self.stop)
        self.start_step = self.step = int(sess.run(self.trainer.global_step))
        self.log.notice('started at global step {}'.format(self.step))
        start_time = time.time()
        times = {'save': start_time, 'report': 0.0}

        def after_step(step):
            self.step, now = step, time.time()
            if 'first_step' not in self.startup:
                self.startup['first_step'] = now
                if graph is not None:
                    writer.add_graph(graph)
            if self.is_chief and now - times['save'] >= self.config['save_secs']:
                self._save(sess, ckpt_path, start_time)
                times['save'] = now
            if now - times['report'] >= PROGRESS_SECONDS:
                self._report(step, now - start_time)
                times['report'] = now

        failure = None
        try:
            self.step, _ = train_until(self.trainer, sess, self.config['max_env_steps'], self.stop, after_step)
        except BaseException as error:
            failure = error
            raise
        finally:
            self._end_training(sess, writer, ckpt_path, self.step, start_time, failure)
        if not self.stop.is_set():
            self.log.notice('reached {} steps, exiting'.format(self.step))

    def _end_training(self, sess, writer, ckpt_path, step, start_time, failure):
        """Stops the runners (first: after a `failure`, the first cause being raised, they would add errors of their
        own), saves (chief) and reports the end, and always closes the writer and the session. After a failed
        cluster session the chief does not try to save (the parameter server it would read is gone); a final save
        that fails after another `failure` is logged, not raised over it.
        """
        from btgym_aac.algorithms.acting.env_runner import is_session_failure
        from btgym_aac.logs import error_summary

        session_lost = failure is not None and cause_where(failure, is_session_failure) is not None
        self.trainer.stop()
        try:
            if self.stop.is_set():
                self.log.notice('stop requested at step {}'.format(step))
            if self.is_chief and not session_lost:
                self._save(sess, ckpt_path, start_time)
            self._report(step, time.time() - start_time, finished=True)
        except Exception as error:
            if failure is None:
                raise
            self.log.warning('no final checkpoint ({}); the run failed first of {}'.format(
                error_summary(error), error_summary(failure)))
        finally:
            writer.close()
            if not session_lost:
                sess.close()  # (closing a failed cluster session waits on its lost tasks: the process ends instead)

    def _save(self, sess, ckpt_path, start_time):
        """Saves a checkpoint of the global variables named after the global step it stores (a snapshot of the
        step, taken first, is saved in its place: other workers move the step meanwhile), unless a variable holds
        NaN or inf: then raises NonFiniteTrainingError, and the previous checkpoint stays the latest."""
        from btgym_aac.algorithms.common.finite_guard import first_non_finite
        from btgym_aac.nonfinite import NonFiniteTrainingError

        step = int(sess.run(self.snapshot_step))
        bad = first_non_finite(sess, self.float_globals)
        if bad is not None:
            raise NonFiniteTrainingError('the global variables hold NaN or inf (first {}) at step {}: no checkpoint '
                                         'is written, the last one is kept'.format(bad, step))
        os.makedirs(os.path.dirname(ckpt_path), exist_ok=True)
        self.saver.save(sess, ckpt_path, global_step=step)
        speed = (step - self.start_step) / max(time.time() - start_time, 1e-9)
        self.log.notice('saved checkpoint at step {}; cluster speed {:.1f} env steps/s'.format(step, speed))

    def _report(self, step, seconds, finished=False):
        if self.progress_queue is None:
            return
        episodes = [episode for env in self.envs for episode in env.episodes if not episode['test']]
        self.progress_queue.put({
            'task': self.task, 'step': step, 'start_step': self.start_step, 'seconds': seconds, 'finished': finished,
            'episodes': len(episodes), 'recent_rewards': [episode['total_reward'] for episode in episodes[-10:]],
            'peak_rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 'startup': self.startup,
        })
