"""Batched acting: one thread steps a worker's K envs in lockstep and acts for all of them with one policy call.

Every env keeps what a runner of its own has (episode, context, rollout, replay memory, statistics, renderings):
the runner state `_EnvRunner` of `BaseEnvRunnerFn`. At each step `policy.act_batch` acts on the K current states
in one session run, then each env is stepped with its row. A rollout that is due (full, or its episode over) takes
its bootstrap value from one `policy.get_value_batch` call for all the envs due at that step. Envs whose episodes
end restart at once, so the K envs keep stepping together while their rollouts end at different steps.

A trainer reads the K envs as K runners (`BatchedRunnerThread.views`), taking one rollout of each per train step
as from K runner threads. Rollouts are handed out in rounds, one per env, so that a train step never waits for an
env whose rollouts the lockstep holds back behind another env's full queue.
"""
import collections
import queue
import time

import numpy as np

from btgym_aac.algorithms.acting.env_runner import (
    RolloutAssembler, _EnvRunner, env_task, logged_runner_data, make_memory, positive_int,
)
from btgym_aac.algorithms.acting.thread_runner import POLL_INTERVAL, PUT_TIMEOUT, QUEUE_SIZE, QueueReader, RunnerThread

def _stacked_inputs(slots):
    """The K slots' policy inputs as `act_batch` takes them: observations, contexts, last actions, last rewards."""
    inputs = [slot.policy_inputs() for slot in slots]
    return ([item[0] for item in inputs], [item[1] for item in inputs],
            np.concatenate([item[2] for item in inputs]), np.concatenate([item[3] for item in inputs]))


class _LockstepRunners:
    """State of one `BatchedEnvRunnerFn` generator: the K envs' `_EnvRunner`s, rollout assemblers and finished
    rollouts waiting for their round."""

    def __init__(self, sess, envs, policy, task, rollout_length, episode_summary_freq, env_render_freq, test_mode,
                 memory_configs, stop_event):
        self.sess, self.policy, self.stop_event = sess, policy, stop_event
        rollout_length = positive_int(rollout_length, 'rollout_length')
        self.slots = [
            _EnvRunner(sess, env, policy, env_task(task, index), rollout_length, episode_summary_freq,
                       env_render_freq, test_mode, make_memory(memory_config), stop_event)
            for index, (env, memory_config) in enumerate(zip(envs, memory_configs))]
        self.assemblers = [RolloutAssembler(rollout_length, slot.remember) for slot in self.slots]
        self.waiting = [collections.deque() for _ in self.slots]

    def stop_requested(self):
        return self.stop_event is not None and self.stop_event.is_set()

    def step(self):
        """Acts for every env in one call and steps each; finishes the rollouts that are due."""
        acted = self.policy.act_batch(*_stacked_inputs(self.slots), sess=self.sess)
        due = [index for index, (slot, assembler, output) in enumerate(zip(self.slots, self.assemblers, acted))
               if assembler.add(slot.step(output))]
        bootstrapped = [index for index in due if self.assemblers[index].needs_bootstrap]
        values = {}
        if bootstrapped:
            batch = _stacked_inputs([self.slots[index] for index in bootstrapped])
            values = dict(zip(bootstrapped, self.policy.get_value_batch(*batch, sess=self.sess)))
        for index in due:
            rollout, terminal = self.assemblers[index].finish(lambda: values[index])
            item = self.slots[index].rollout_done(rollout, terminal)
            if item is not None:
                self.waiting[index].append(item)

    def data(self):
        """Yields rounds: lists of one data dict per env (see `BaseEnvRunnerFn`), in env order."""
        for slot in self.slots:
            slot.start_episode()
        while not self.stop_requested():
            self.step()
            if all(self.waiting):
                yield [waiting.popleft() for waiting in self.waiting]


def BatchedEnvRunnerFn(sess, envs, policy, task, rollout_length, summary_writer, episode_summary_freq,
                       env_render_freq, atari_test, ep_summary, memory_configs, log, stop_event=None, **kwargs):
    """Generator of rounds of runner data for K envs stepped in lockstep (see the module docstring).

    Arguments as `BaseEnvRunnerFn`'s, except:
        envs: the K environments.
        policy: a policy with `act_batch` and `get_value_batch` (e.g. `BaseAacPolicy`, `ActingReplica`).
        task: task number of the first env; env i gets ``env_task(task, i)``.
        memory_configs: K replay memory configs (or Nones), one per env.

    Yields:
        lists of K data dicts, the i-th being env i's next `BaseEnvRunnerFn` item.
    """
    yield from logged_runner_data(
        lambda: _LockstepRunners(sess, envs, policy, task, rollout_length, episode_summary_freq, env_render_freq,
                                 atari_test, memory_configs, stop_event),
        task, log, stop_event)


class BatchedRunnerThread(RunnerThread):
    """A `RunnerThread` over K envs running `BatchedEnvRunnerFn`; `views` are the K runners a trainer reads.

    Args:
        envs: the K environments.
        policy: policy with `act_batch` and `get_value_batch`.
        task: task number of the first env.
        memory_configs: K replay memory configs (or Nones).
        **kwargs: the other `RunnerThread` arguments (rollout length, summary and render periods, ...).
    """

    def __init__(self, envs, policy, task, memory_configs, **kwargs):
        kwargs['runner_fn_ref'] = BatchedEnvRunnerFn
        super().__init__(env=list(envs), policy=policy, task=task, memory_config=list(memory_configs), **kwargs)
        self.views = [RunnerView(self, env, env_task(task, index)) for index, env in enumerate(envs)]

    def _put(self, item):
        """Puts a round's data dicts in the views' queues once every queue has room; False if stopped first.

        Raises:
            queue.Full: no queue had room for `PUT_TIMEOUT` seconds.
        """
        deadline = time.monotonic() + PUT_TIMEOUT
        while not self._stop_requested():
            if all(view.queue.qsize() < QUEUE_SIZE for view in self.views):
                for view, data in zip(self.views, item):
                    view.queue.put(data)
                return True
            if time.monotonic() > deadline:
                raise queue.Full('runner of task {}: nobody took data for {} s'.format(self.task, PUT_TIMEOUT))
            time.sleep(POLL_INTERVAL)
        return False


class RunnerView(QueueReader):
    """One env of a `BatchedRunnerThread`, read as a runner of its own: its `get_data()` gives that env's data.

    `start_runner` starts the shared thread (once), `stop` stops it.
    """

    def __init__(self, thread, env, task):
        self.thread, self.env, self.task = thread, env, task
        self.queue = queue.Queue()

    @property
    def ident(self):
        return self.thread.ident

    @property
    def error(self):
        return self.thread.error

    def is_alive(self):
        return self.thread.is_alive()

    def _stop_requested(self):
        return self.thread._stop_requested()

    def start_runner(self, sess, summary_writer, stop_event=None, **kwargs):
        """Starts the shared thread unless another view did (arguments as `RunnerThread.start_runner`)."""
        if self.thread.ident is None:
            self.thread.start_runner(sess, summary_writer, stop_event=stop_event, **kwargs)

    def stop(self, timeout=10.0):
        """Stops the shared thread; True once it has ended."""
        return self.thread.stop(timeout)
