"""Cluster specs and ports: consecutive given ports checked to be free, or free ports found by the OS."""
import errno
import socket

MAX_PORT = 65535


class PortInUseError(OSError):
    """A requested cluster port is taken by another program."""


def port_is_free(host, port):
    """True if a TCP socket can bind `host:port` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def free_ports(host, count):
    """Asks the OS for `count` distinct free ports on `host`.

    Returns:
        list of ints.
    """
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def cluster_ports(host, port, count):
    """Ports for `count` cluster tasks.

    Args:
        host: interface the servers bind.
        port: first of `count` consecutive ports, or None / 0 to take free ports.
        count: number of tasks (parameter servers plus workers).

    Returns:
        list of ints.

    Raises:
        PortInUseError: a requested port is taken (nothing is killed to free it).
        ValueError: the requested ports do not all lie in 1..65535.
    """
    if not port:
        return free_ports(host, count)
    ports = list(range(int(port), int(port) + count))
    if ports[0] < 1 or ports[-1] > MAX_PORT:
        raise ValueError('cluster ports {}..{} are outside 1..{}: choose another `port` in cluster_config'.format(
            ports[0], ports[-1], MAX_PORT))
    taken = [p for p in ports if not port_is_free(host, p)]
    if taken:
        raise PortInUseError(
            'cluster port(s) {} on {} are in use by another program; choose another `port` in cluster_config '
            '(ports {}..{} are needed) or set port=None to pick free ports'.format(taken, host, ports[0], ports[-1]))
    return ports


def make_cluster_spec(host='127.0.0.1', port=None, num_workers=1, num_ps=1):
    """Cluster dict for `tf.train.ClusterSpec`: parameter servers first, then workers, on consecutive ports.

    Returns:
        {'ps': ['host:port', ...], 'worker': ['host:port', ...]}.
    """
    if num_workers < 1 or num_ps < 1:
        raise ValueError('a cluster needs num_workers >= 1 and num_ps >= 1, got {} and {}'.format(num_workers, num_ps))
    ports = cluster_ports(host, port, num_ps + num_workers)
    addresses = ['{}:{}'.format(host, p) for p in ports]
    return {'ps': addresses[:num_ps], 'worker': addresses[num_ps:]}
