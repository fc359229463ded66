"""A private network namespace for the tasks of a single-host cluster (Linux).

TensorFlow's gRPC servers listen on every interface whatever host their address names, and run any graph sent to
them without authentication. A launcher therefore runs its tasks in a network namespace of their own that holds
only a loopback interface: their ports exist inside it and nowhere else, not even for the host's other processes.

A small holder process (`NamespaceHolder`, running `hold()`) creates the namespace (as root a network namespace
alone, otherwise a user namespace plus a network namespace, the user's own uid and gid mapped to themselves so
files keep their owner), brings loopback up and stays in it until the launcher closes it or dies. Each task
process joins it (`setns`) first thing after its interpreter starts, while it is still single-threaded: its
`multiprocessing` name is a `TaskName`, and the first object a spawned child unpickles is that name, before it
imports the launching script or anything else. The launching process itself never changes namespace.
"""
import ctypes
import errno
import fcntl
import ipaddress
import os
import signal
import socket
import struct
import subprocess
import sys

from btgym_aac.distributed.cluster import spec_ports

ISOLATION_MODES = ('auto', 'require', 'off')
JOIN_FAILED_EXIT_CODE = 4
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
NAMESPACE_FLAGS = {'user': CLONE_NEWUSER, 'net': CLONE_NEWNET}
READY = 'ready'
HOLDER_START_SECONDS = 30
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
PR_SET_PDEATHSIG = 1


class NetworkIsolationError(OSError):
    """The cluster's network cannot be isolated where isolation was required, or the namespace was lost."""


def check_isolation_mode(mode):
    """Returns `mode` when it is one of `ISOLATION_MODES`, else raises ValueError naming the setting."""
    if not isinstance(mode, str) or mode not in ISOLATION_MODES:
        raise ValueError("cluster_config network_isolation must be 'auto', 'require' or 'off', got {!r}".format(mode))
    return mode


def _is_loopback(host):
    """True if every address `host` resolves to is a loopback address."""
    try:
        infos = socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError):
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split('%')[0]).is_loopback for info in infos)


def isolation_obstacle(cluster_spec):
    """Why the tasks of `cluster_spec` cannot share a private network namespace, or None when they can.

    Args:
        cluster_spec: {'ps': ['host:port', ...], 'worker': [...]}.

    Returns:
        a sentence, or None.
    """
    if not sys.platform.startswith('linux'):
        return 'network namespaces exist on Linux only, and this is {}'.format(sys.platform)
    hosts = sorted({address.rpartition(':')[0] for addresses in cluster_spec.values() for address in addresses})
    outside = [host for host in hosts if not _is_loopback(host)]
    if outside:
        return 'the cluster spec names host(s) {} that are not loopback addresses, so its tasks must be reachable ' \
               'from the network'.format(', '.join(outside))
    return None


def open_ports_warning(ports, reason):
    """The warning of a cluster whose TensorFlow ports are open to the network.

    Args:
        ports: the ports of this machine's tasks.
        reason: why they are not isolated.
    """
    return ('the cluster\'s TensorFlow servers listen on port(s) {} of every network interface of this machine, '
            'unauthenticated: anyone who can reach this machine can run code through them with your privileges '
            '(read and write your files). They are not isolated because {}. Run the cluster only on a network that '
            'it alone uses, or firewall these ports to the cluster\'s own hosts (docs/distributed.md, "Security"); '
            "cluster_config['network_isolation'] = 'require' (--network-isolation require) refuses to run without "
            "isolation, 'off' silences this warning.".format(', '.join(str(port) for port in ports), reason))


def isolate_cluster(mode, cluster_spec, log):
    """Starts the holder of a private network namespace for the tasks of `cluster_spec`, as `mode` asks.

    Args:
        mode: one of `ISOLATION_MODES`.
        cluster_spec: {'ps': ['host:port', ...], 'worker': [...]}.
        log: logger told that the cluster is isolated, or warned that its ports are open.

    Returns:
        the NamespaceHolder, or None where the run goes on without one (warned of in 'auto' mode).

    Raises:
        NetworkIsolationError: isolation is required and cannot be had.
    """
    if mode == 'off':
        return None
    reason = isolation_obstacle(cluster_spec)
    if reason is None:
        try:
            holder = NamespaceHolder()
        except NetworkIsolationError as error:
            reason = str(error)
        else:
            log.notice('the cluster runs in a private network namespace: its ports cannot be reached from outside it')
            return holder
    if mode == 'require':
        raise NetworkIsolationError('network_isolation is \'require\' but the cluster cannot be isolated: '
                                    '{}'.format(reason))
    log.warning(open_ports_warning(spec_ports(cluster_spec), reason))
    return None


# ------------------------------------------------------------------------------------------- system calls

def _libc_call(name, *args):
    """Calls libc's `name(*args)`; raises OSError with errno when it returns -1."""
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) == -1:
        code = ctypes.get_errno()
        raise OSError(code, '{}: {}'.format(name, os.strerror(code)))


def _unshare(flags):
    if hasattr(os, 'unshare'):
        os.unshare(flags)
    else:
        _libc_call('unshare', flags)


def _setns(fd, flag):
    if hasattr(os, 'setns'):
        os.setns(fd, flag)
    else:
        _libc_call('setns', fd, flag)


def _write_proc_file(name, text):
    with open('/proc/self/{}'.format(name), 'w') as f:
        f.write(text)


def _bring_loopback_up():
    """Sets the IFF_UP flag of interface `lo` of this process's network namespace."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack('16sh', b'lo', 0)
        flags = struct.unpack('16sh', fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack('16sh', b'lo', flags | IFF_UP))


def _namespace_kinds():
    """The namespaces a holder makes: the network one, and a user one unless the process is root."""
    return ('net',) if os.geteuid() == 0 else ('user', 'net')


# ------------------------------------------------------------------------------------------- the holder

def hold():
    """Main of the holder process: creates the namespaces, prints `READY` (or 'error: ...') on stdout, then stays in
    them until its stdin closes. Ignores Ctrl-C and SIGTERM (the launcher closes it after stopping its tasks) and
    dies with its parent.

    Returns:
        the exit status: 0, or 1 when the namespaces cannot be made.
    """
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    kinds = _namespace_kinds()
    uid, gid = os.getuid(), os.getgid()
    try:
        _unshare(sum(NAMESPACE_FLAGS[kind] for kind in kinds))
        if 'user' in kinds:
            _write_proc_file('uid_map', '{0} {0} 1'.format(uid))
            _write_proc_file('setgroups', 'deny')
            _write_proc_file('gid_map', '{0} {0} 1'.format(gid))
        _bring_loopback_up()
    except OSError as error:
        print('error: unshare({}) failed ({})'.format(' | '.join('CLONE_NEW' + kind.upper() for kind in kinds),
                                                    error), flush=True)
        return 1
    print(READY, ' '.join(kinds), flush=True)
    sys.stdin.buffer.read()
    return 0


class NamespaceHolder:
    """The holder process of one run's namespaces, started by the launcher.

    Raises:
        NetworkIsolationError: the holder could not make the namespaces (the message says why).
    """

    def __init__(self):
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([package_root] + [
            path for path in os.environ.get('PYTHONPATH', '').split(os.pathsep) if path]))
        self.process = subprocess.Popen([sys.executable, '-m', __name__], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        status = self.process.stdout.readline().split()
        if not status or status[0] != READY:
            self.process.stdin.close()
            self.process.wait(HOLDER_START_SECONDS)
            errors = self.process.stderr.read().strip().splitlines()
            self.close()
            reply = ' '.join(status).replace('error: ', '', 1) or (errors[-1] if errors else
                                                                  'its holder exited with status {}'.format(
                                                                      self.process.returncode))
            raise NetworkIsolationError('the private network namespace could not be made: {}'.format(reply))
        self.kinds = tuple(status[1:])
        self.pid = self.process.pid

    def alive(self):
        """True while the holder runs (its namespaces can be joined)."""
        return self.process.poll() is None

    def task_name(self, name):
        """A process name for a task that is to join this holder's namespaces (see `TaskName`)."""
        return TaskName(name, self.pid, self.kinds)

    def namespace_id(self, kind='net'):
        """The inode number that identifies the holder's namespace `kind`."""
        return os.stat('/proc/{}/ns/{}'.format(self.pid, kind)).st_ino

    def close(self):
        """Ends the holder (a namespace lives on while a task is still in it)."""
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            stream.close()


# ------------------------------------------------------------------------------------------- the tasks

class TaskName(str):
    """The `multiprocessing` name of a task process that joins a holder's namespaces when unpickled.

    A spawned child unpickles its name first of all, before it imports the launching script (whose imports, numpy's
    among them, start threads) or the task's code; a process must still be single-threaded to join a user
    namespace. The child's name is then the plain string.
    """

    def __new__(cls, name, holder_pid, kinds):
        self = super().__new__(cls, name)
        self.holder_pid, self.kinds = holder_pid, tuple(kinds)
        return self

    def __reduce__(self):
        return _joined_name, (str(self), self.holder_pid, self.kinds)


def _joined_name(name, holder_pid, kinds):
    join_namespaces(holder_pid, kinds)
    return name


def join_namespaces(holder_pid, kinds):
    """Moves this process into the holder's namespaces `kinds` (in order: user before net); does nothing for one
    it is already in. Where it cannot, writes why to stderr and exits with `JOIN_FAILED_EXIT_CODE`: a task outside
    the namespace could neither reach the cluster nor be left open to the network.
    """
    for kind in kinds:
        path = '/proc/{}/ns/{}'.format(holder_pid, kind)
        try:
            if os.stat(path).st_ino == os.stat('/proc/self/ns/{}'.format(kind)).st_ino:
                continue
            threads = len(os.listdir('/proc/self/task'))
            if kind == 'user' and threads > 1:
                raise OSError(errno.EINVAL, 'this process already runs {} threads'.format(threads))
            fd = os.open(path, os.O_RDONLY)
            try:
                _setns(fd, NAMESPACE_FLAGS[kind])
            finally:
                os.close(fd)
        except OSError as error:
            sys.stderr.write('task {}: cannot join the run\'s {} namespace ({}): {}\n'.format(
                os.getpid(), kind, path, error))
            sys.stderr.flush()
            os._exit(JOIN_FAILED_EXIT_CODE)


if __name__ == '__main__':
    sys.exit(hold())
