"""Cluster specs and ports: consecutive given ports checked to be free, or free ports found by the OS.

TensorFlow's servers listen on every interface whatever the host of their address, so ports are checked and
found on all interfaces: a port taken on any one of them cannot be used.
"""
import errno
import socket

MAX_PORT = 65535
MAX_LOCAL_TASKS = 1024


class PortInUseError(OSError):
    """A requested cluster port is taken by another program."""


ALL_INTERFACES = ''


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
