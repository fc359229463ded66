"""A cluster's spec, {'ps': ['host:port', ...], 'worker': [...]}, and this process's role in it: made on one host
(consecutive given ports checked to be free, or free ports found by the OS), checked when given, or read from a
scheduler's description of the cluster: `TF_CONFIG` (Kubeflow's TFJob, Vertex AI, SageMaker) or a SLURM job step
(through TensorFlow's `SlurmClusterResolver`).

TensorFlow's servers listen on every interface whatever the host of their address, so ports are checked and
found on all interfaces: a port taken on any one of them cannot be used.

A scheduler's role is (cluster dict, job, task). TF_CONFIG's `chief` (or TF1's `master`) is worker 0 and its
workers follow; an `evaluator` task has no part in training (`EVALUATOR`: the caller exits).
"""
import errno
import json
import socket

MAX_PORT = 65535
MAX_LOCAL_TASKS = 1024
ALL_INTERFACES = ''
EVALUATOR = 'evaluator'
CHIEF_NAMES = ('chief', 'master')
TRAINING_JOBS = ('ps', 'worker') + CHIEF_NAMES
SLURM_PORT_BASE = 8888
_SLURM_MAX_TASKS_PER_NODE = 1024


class PortInUseError(OSError):
    """A requested cluster port is taken by another program."""


class SchedulerConfigError(ValueError):
    """A scheduler's description of the cluster is malformed or inconsistent; the message names the field."""


# ----------------------------------------------------------------------------------------------------- ports and specs

def port_is_free(port):
    """True if a TCP socket can bind `port` on all interfaces now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((ALL_INTERFACES, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def free_ports(count):
    """Asks the OS for `count` distinct ports free on all interfaces.

    Returns:
        list of ints.
    """
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((ALL_INTERFACES, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def cluster_ports(host, port, count):
    """Ports for `count` cluster tasks.

    Args:
        host: host of the task addresses (named in messages).
        port: first of `count` consecutive ports, or None / 0 to take free ports.
        count: number of tasks (parameter servers plus workers).

    Returns:
        list of ints.

    Raises:
        PortInUseError: a requested port is taken (nothing is killed to free it).
        ValueError: the requested ports do not all lie in 1..65535.
    """
    if not port:
        return free_ports(count)
    ports = list(range(int(port), int(port) + count))
    if ports[0] < 1 or ports[-1] > MAX_PORT:
        raise ValueError('cluster ports {}..{} are outside 1..{}: choose another first port (`port` in '
                         'cluster_config, --port of btgym-aac train)'.format(ports[0], ports[-1], MAX_PORT))
    taken = [p for p in ports if not port_is_free(p)]
    if taken:
        raise PortInUseError(
            'cluster port(s) {} are in use by another program (on {} or another interface); choose another first '
            'port (`port` in cluster_config, --port of btgym-aac train; ports {}..{} are needed) or leave it unset '
            'to pick free ports'.format(taken, host, ports[0], ports[-1]))
    return ports


def check_local_task_count(num_workers, num_ps):
    """Raises ValueError unless a cluster of `num_workers` workers and `num_ps` parameter servers (each >= 1)
    fits the `MAX_LOCAL_TASKS` one launcher runs on one host."""
    if num_workers < 1 or num_ps < 1:
        raise ValueError('a cluster needs num_workers >= 1 and num_ps >= 1, got {} and {}'.format(num_workers, num_ps))
    if num_workers + num_ps > MAX_LOCAL_TASKS:
        raise ValueError('a cluster of {} tasks (num_workers {} + num_ps {}) is more than the {} one launcher runs '
                         'on one host'.format(num_workers + num_ps, num_workers, num_ps, MAX_LOCAL_TASKS))


def make_cluster_spec(host='127.0.0.1', port=None, num_workers=1, num_ps=1):
    """Cluster dict for `tf.train.ClusterSpec`: parameter servers first, then workers, on consecutive ports.

    Returns:
        {'ps': ['host:port', ...], 'worker': ['host:port', ...]}.
    """
    check_local_task_count(num_workers, num_ps)
    try:
        socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError) as error:
        raise ValueError('cluster_config host {!r} does not resolve to an address ({})'.format(host, error)) from None
    ports = cluster_ports(host, port, num_ps + num_workers)
    addresses = ['{}:{}'.format(host, p) for p in ports]
    return {'ps': addresses[:num_ps], 'worker': addresses[num_ps:]}


def check_cluster_spec(spec, source):
    """Raises ValueError naming `source` unless `spec` is `{'ps': [...], 'worker': [...]}` of distinct 'host:port'
    strings (two tasks cannot share an address).

    Returns:
        `spec`.
    """
    if not isinstance(spec, dict):
        raise ValueError('cluster spec {} must be a JSON object {{"ps": [...], "worker": [...]}}, got {}'.format(
            source, type(spec).__name__))
    for job in ('ps', 'worker'):
        addresses = spec.get(job)
        if not isinstance(addresses, list) or not addresses:
            raise ValueError('cluster spec {} needs a non-empty list of "host:port" addresses under "{}"'.format(
                source, job))
        for address in addresses:
            host, _, port = str(address).rpartition(':')
            if not isinstance(address, str) or not host or not port.isdigit() or not 1 <= int(port) <= MAX_PORT:
                raise ValueError('cluster spec {}: {} address {!r} is not "host:port" with a port in 1..{}'.format(
                    source, job, address, MAX_PORT))
    owners = {}
    for job in ('ps', 'worker'):
        for index, address in enumerate(spec[job]):
            task = '{} {}'.format(job, index)
            if address in owners:
                raise ValueError('cluster spec {}: {} and {} share the address {}; every task needs its own'.format(
                    source, owners[address], task, address))
            owners[address] = task
    return spec


def address_port(address):
    """The port of a task address 'host:port', an int."""
    return int(address.rpartition(':')[2])


def spec_ports(spec):
    """The ports of every task address of cluster dict `spec`, parameter servers first."""
    return [address_port(address) for job in ('ps', 'worker') for address in spec[job]]


def check_own_port(address):
    """Raises PortInUseError when the port of this task's `address` ('host:port') is taken on this machine."""
    port = address_port(address)
    if not port_is_free(port):
        raise PortInUseError('port {} of this task ({}) is in use by another program'.format(port, address))


# ----------------------------------------------------------------------------------------------- a scheduler's cluster

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
