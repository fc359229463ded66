"""The actor side: runners, the only code that talks to environments, and what builds and feeds them.

- `thread_runner.RunnerThread` runs `env_runner.BaseEnvRunnerFn` in a background thread (the trainers' default);
  `synchro_runner.BaseSynchroRunner` / `VerboseSynchroRunner` collect each rollout on request in the caller's
  thread; `batched_runner` acts for several envs in one policy call.
- `env_runner` also holds what every runner does with one episode (reset, act and step, render, statistics) and
  cuts its frames into rollouts with bootstrap values.
- `replica.ActingReplica`: the copy of the local policy that runners act through in a distributed worker.
- `aux_renderings`: the policy's renderings of an episode, drawn by the verbose runners.
- `construction`: a trainer's runners, built from its config (`make_runners`), and the train / test episode cycle
  of each env (`SampleCycles`).
"""
from btgym_aac.algorithms.acting.env_runner import BaseEnvRunnerFn
from btgym_aac.algorithms.acting.synchro_runner import BaseSynchroRunner, VerboseSynchroRunner
from btgym_aac.algorithms.acting.thread_runner import RunnerStopped, RunnerThread

__all__ = ['BaseEnvRunnerFn', 'BaseSynchroRunner', 'RunnerStopped', 'RunnerThread', 'VerboseSynchroRunner']
