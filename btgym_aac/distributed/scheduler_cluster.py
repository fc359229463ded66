"""The cluster and this process's role as schedulers describe them: `TF_CONFIG` (Kubeflow's TFJob, Vertex AI,
SageMaker) or a SLURM job step (through TensorFlow's `SlurmClusterResolver`).

A role is (cluster dict {'ps': [...], 'worker': [...]}, job, task). TF_CONFIG's `chief` (or TF1's `master`) is
worker 0 and its workers follow; an `evaluator` task has no part in training (`EVALUATOR`: the caller exits).
"""
import json

EVALUATOR = 'evaluator'
CHIEF_NAMES = ('chief', 'master')
TRAINING_JOBS = ('ps', 'worker') + CHIEF_NAMES
SLURM_PORT_BASE = 8888
_SLURM_MAX_TASKS_PER_NODE = 1024


class SchedulerConfigError(ValueError):
    """A scheduler's description of the cluster is malformed or inconsistent; the message names the field."""


def _addresses(cluster, job):
    addresses = cluster.get(job, [])
    field = "TF_CONFIG['cluster'][{!r}]".format(job)
    if not isinstance(addresses, list) or not all(isinstance(address, str) for address in addresses):
        raise SchedulerConfigError('{} must be a list of "host:port" strings, got {!r}'.format(field, addresses))
    return addresses


def _parsed(text):
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise SchedulerConfigError('TF_CONFIG is not valid JSON: {}'.format(error)) from None
    if not isinstance(config, dict):
        raise SchedulerConfigError('TF_CONFIG must be a JSON object with "cluster" and "task", got {}'.format(
            type(config).__name__))
    for key in ('cluster', 'task'):
        if not isinstance(config.get(key), dict):
            raise SchedulerConfigError('TF_CONFIG needs a {!r} object, got {!r}'.format(key, config.get(key)))
    return config['cluster'], config['task']


def _training_cluster(cluster):
    """{'ps': [...], 'worker': chief + workers} of TF_CONFIG's cluster."""
    unknown = sorted(set(cluster) - set(TRAINING_JOBS) - {EVALUATOR})
    if unknown:
        raise SchedulerConfigError("TF_CONFIG['cluster'] has the job(s) {}; btgym-aac runs {}".format(
            unknown, ', '.join(TRAINING_JOBS)))
    chiefs = [address for job in CHIEF_NAMES for address in _addresses(cluster, job)]
    if len(chiefs) > 1:
        raise SchedulerConfigError("TF_CONFIG['cluster'] names {} chiefs ({}); a cluster has at most one".format(
            len(chiefs), chiefs))
    spec = {'ps': _addresses(cluster, 'ps'), 'worker': chiefs + _addresses(cluster, 'worker')}
    for job in ('ps', 'worker'):
        if not spec[job]:
            raise SchedulerConfigError("TF_CONFIG['cluster'] has no {} task".format(
                'ps' if job == 'ps' else 'chief or worker'))
    return spec, len(chiefs)


def role_from_tf_config(text):
    """The role TF_CONFIG gives this process.

    Args:
        text: the TF_CONFIG value.

    Returns:
        (cluster dict, job, task); job is `EVALUATOR` (cluster None) for an evaluator task.

    Raises:
        SchedulerConfigError: naming the malformed or inconsistent field.
    """
    cluster, task = _parsed(text)
    job, index = task.get('type'), task.get('index', 0)
    if job == EVALUATOR:
        return None, EVALUATOR, index
    if job not in TRAINING_JOBS or not _addresses(cluster, job):
        raise SchedulerConfigError("TF_CONFIG['task']['type'] {!r} is not a job of TF_CONFIG['cluster'] ({})".format(
            job, ', '.join(sorted(cluster))))
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(cluster[job]):
        raise SchedulerConfigError("TF_CONFIG['task']['index'] {!r} is not a task of TF_CONFIG['cluster'][{!r}], "
                                   "which has {}".format(index, job, len(cluster[job])))
    spec, num_chiefs = _training_cluster(cluster)
    if job in CHIEF_NAMES:
        return spec, 'worker', 0
    return spec, job, index + (num_chiefs if job == 'worker' else 0)


def role_from_slurm(num_ps, port_base=None):
    """The role of this task of a SLURM job step: the first `num_ps` tasks (by SLURM_PROCID) are parameter
    servers, the others workers; each node's tasks listen on consecutive ports from `port_base`.

    Args:
        num_ps: parameter servers (cluster_config['num_ps']).
        port_base: first port on every node (cluster_config['port']; default 8888, TensorFlow's).

    Returns:
        (cluster dict, job, task).

    Raises:
        SchedulerConfigError: the SLURM variables are missing, malformed or leave no worker.
    """
    from btgym_aac.compat import tf

    def resolver(jobs):
        # No GPUs are assigned: every task gets a notional one so the resolver's GPU bookkeeping adds up.
        return tf.distribute.cluster_resolver.SlurmClusterResolver(
            jobs=jobs, port_base=port_base or SLURM_PORT_BASE, gpus_per_node=_SLURM_MAX_TASKS_PER_NODE,
            gpus_per_task=1, auto_set_gpu=False)

    try:
        num_tasks = len(resolver(None).cluster_spec().as_dict()['worker'])
        if num_tasks <= num_ps:
            raise SchedulerConfigError('the SLURM job step has {} task(s): no worker is left beside num_ps={} '
                                       'parameter servers'.format(num_tasks, num_ps))
        step = resolver({'ps': num_ps, 'worker': num_tasks - num_ps})
        spec = step.cluster_spec().as_dict()
    except (RuntimeError, ValueError, KeyError) as error:
        if isinstance(error, SchedulerConfigError):
            raise
        raise SchedulerConfigError('the SLURM job step cannot be read as a cluster: {}'.format(error)) from None
    job, task = step.get_task_info()
    return {'ps': list(spec['ps']), 'worker': list(spec['worker'])}, job, task
