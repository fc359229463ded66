"""Runners: they alone interact with environments and turn episodes into rollouts, summaries and replay memory.

`RunnerThread` runs `BaseEnvRunnerFn` in a background thread (the default of the trainers); `BaseSynchroRunner` and
`VerboseSynchroRunner` collect each rollout on request in the caller's thread.
"""
from btgym_aac.algorithms.runner.base import BaseEnvRunnerFn
from btgym_aac.algorithms.runner.synchro import BaseSynchroRunner, VerboseSynchroRunner
from btgym_aac.algorithms.runner.threadrunner import RunnerStopped, RunnerThread

__all__ = ['BaseEnvRunnerFn', 'BaseSynchroRunner', 'RunnerStopped', 'RunnerThread', 'VerboseSynchroRunner']
