"""Network isolation of a launcher's cluster: its tasks live in a private network namespace, their ports cannot be
reached from outside it (loopback or any other address of the machine), a restarted worker rejoins it, an
unprivileged user gets it too, and where it cannot be had the run warns ('auto') or refuses to start ('require')."""
import contextlib
import fcntl
import functools
import json
import multiprocessing
import os
import queue
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from btgym_aac.distributed.cluster import address_port, free_ports, spec_ports
from btgym_aac.distributed.log_dir import LOCK_FILE
from proc_helpers import live_descendants
from btgym_aac.distributed.network_namespace import (CLONE_NEWNET, CLONE_NEWUSER, JOIN_FAILED_EXIT_CODE,
                                                     NamespaceHolder, NetworkIsolationError, check_isolation_mode,
                                                     isolate_cluster, isolation_obstacle)

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'isolation_run.py')
UNPRIVILEGED_UID = 65534
SIOCGIFADDR = 0x8915
# A user namespace whose limit of network namespaces is 0: unshare(CLONE_NEWNET) fails there with ENOSPC, as it
# fails with EPERM where a container or distribution blocks namespaces.
NO_NET_NAMESPACES = ['unshare', '--user', '--map-root-user', 'sh', '-c',
                     'echo 0 > /proc/sys/user/max_net_namespaces && exec "$@"', 'sh']
# What a NamespaceHolder does first: unshare a network namespace, and a user namespace too unless it runs as root.
NAMESPACES_PROBE = f"""
import ctypes, os, sys
root = os.geteuid() == 0
if ctypes.CDLL(None, use_errno=True).unshare({CLONE_NEWNET} | (0 if root else {CLONE_NEWUSER})):
    kinds = 'CLONE_NEWNET' if root else 'CLONE_NEWUSER | CLONE_NEWNET'
    sys.exit(f'unshare({{kinds}}) failed: {{os.strerror(ctypes.get_errno())}}')
"""


def machine_addresses():
    """Every IPv4 address of this machine's interfaces (loopback included)."""
    addresses = {'127.0.0.1'}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _, name in socket.if_nameindex():
            try:
                reply = fcntl.ioctl(sock, SIOCGIFADDR, struct.pack('256s', name.encode()[:15]))
            except OSError:  # no IPv4 address
                continue
            addresses.add(socket.inet_ntoa(reply[20:24]))
    return sorted(addresses)


def connects(host, port):
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def net_namespace(pid, kind='net'):
    return os.stat('/proc/{}/ns/{}'.format(pid, kind)).st_ino


def socket_inodes(pid):
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir('/proc/{}/fd'.format(pid)):
            with contextlib.suppress(OSError):
                target = os.readlink('/proc/{}/fd/{}'.format(pid, fd))
                if target.startswith('socket:['):
                    inodes.add(int(target[8:-1]))
    return inodes


def listening_ports(pid):
    """TCP ports that process `pid` itself listens on (sockets of its own among the LISTEN rows of its network
    namespace's /proc/PID/net/tcp and tcp6)."""
    own, ports = socket_inodes(pid), set()
    for table in ('tcp', 'tcp6'):
        try:
            with open('/proc/{}/net/{}'.format(pid, table)) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == '0A' and int(fields[9]) in own:
                ports.add(int(fields[1].rsplit(':', 1)[1], 16))
    return ports


def is_running(pid):
    try:
        with open('/proc/{}/stat'.format(pid)) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


class ScriptRun:
    """`isolation_run.py` in a subprocess (after `prefix`), its output read line by line as it comes."""

    def __init__(self, prefix, log_dir, mode, max_env_steps, num_workers=2):
        self.process = subprocess.Popen(prefix + [sys.executable, SCRIPT, str(log_dir), mode, str(max_env_steps),
                                                  str(num_workers)],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines, self.new_lines = [], queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.seen_pids = set()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line)
            self.new_lines.put(line)

    def wait_for_line(self, predicate, seconds=180):
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                line = self.new_lines.get(timeout=1)
            except queue.Empty:
                assert self.process.poll() is None, 'the run ended early:\n' + ''.join(self.lines)
                continue
            if predicate(line):
                return line
        raise AssertionError('no such line within {} s:\n{}'.format(seconds, ''.join(self.lines)))

    def spec(self):
        return json.loads(self.wait_for_line(lambda line: line.startswith('SPEC ')).split(' ', 1)[1])

    def wait_until_trained(self):
        self.wait_for_line(lambda line: line.startswith('env steps ') and int(line.split()[2].split('/')[0]) > 0)

    def tasks(self):
        """{port: pid} of the run's task processes listening now (below the script), noting every one of them."""
        found = {}
        for pid in live_descendants(self.process.pid):
            self.seen_pids.add(pid)
            for port in listening_ports(pid):
                found[port] = pid
        return found

    def wait_for_tasks(self, ports, exclude=(), seconds=120):
        deadline = time.time() + seconds
        while time.time() < deadline:
            found = self.tasks()
            if all(port in found and found[port] not in exclude for port in ports):
                return found
            time.sleep(0.1)
        raise AssertionError('tasks listening on {} not found:\n{}'.format(ports, ''.join(self.lines)))

    def finish(self, seconds=240):
        assert self.process.wait(seconds) == 0, ''.join(self.lines)
        time.sleep(0.5)
        return json.loads(self.wait_for_line(lambda line: line.startswith('RESULT ')).split(' ', 1)[1])

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def script_run(*args, **kwargs):
    run = ScriptRun(*args, **kwargs)
    try:
        yield run
    finally:
        run.kill()


def assert_unreachable(ports):
    for port in ports:
        for host in machine_addresses():
            assert not connects(host, port), 'task port {} answers on {}'.format(port, host)


def assert_all_gone(pids):
    time.sleep(0.5)
    assert [pid for pid in pids if is_running(pid)] == []


@functools.cache
def namespaces_obstacle(prefix=()):
    """Why a process started after `prefix` (a tuple) cannot make the namespaces a holder makes, or None."""
    if not sys.platform.startswith('linux'):
        return f'network namespaces exist on Linux only, and this is {sys.platform}'
    probe = subprocess.run(list(prefix) + [sys.executable, '-c', NAMESPACES_PROBE], capture_output=True, text=True,
                           check=False)
    if probe.returncode == 0:
        return None
    return probe.stderr.strip() or f'the probe exited with status {probe.returncode}'


def skip_without_namespaces(prefix=()):
    """Skips a test that needs Linux user / network namespaces where a process started after `prefix` cannot
    make them."""
    reason = namespaces_obstacle(tuple(prefix))
    if reason:
        pytest.skip(f'needs Linux network namespaces: {reason}')


# ------------------------------------------------------------------------------------------- holder and joining

def listen_and_report(port, replies):
    with socket.socket() as sock:
        sock.bind(('', port))
        sock.listen()
        replies.put((net_namespace(os.getpid()), multiprocessing.current_process().name))
        time.sleep(1.5)


def spawn_listener(name, port):
    context = multiprocessing.get_context('spawn')
    replies = context.Queue()
    process = context.Process(target=listen_and_report, args=(port, replies), name=name)
    process.start()
    return process, replies


def test_a_spawned_task_joins_the_holders_namespace_where_its_port_cannot_be_reached():
    skip_without_namespaces()
    own_namespace = net_namespace(os.getpid())
    port, control_port = free_ports(2)
    outside, outside_replies = spawn_listener('outside', control_port)  # the probe's control: a port that answers
    holder = NamespaceHolder()
    try:
        inside, replies = spawn_listener(holder.task_name('task-0'), port)
        namespace, name = replies.get(timeout=60)
        outside_replies.get(timeout=60)
        assert connects('127.0.0.1', control_port)
        assert not connects('127.0.0.1', port)
        assert namespace == holder.namespace_id() != own_namespace
        assert name == 'task-0' and type(name) is str
        inside.join(30)
        assert inside.exitcode == 0
    finally:
        holder.close()
        outside.join(30)
    assert not holder.alive() and net_namespace(os.getpid()) == own_namespace


def test_a_task_that_cannot_join_exits_with_its_own_status_and_says_why(capfd):
    skip_without_namespaces()
    holder = NamespaceHolder()
    name = holder.task_name('task-0')
    holder.close()
    process, _ = spawn_listener(name, 34568)
    process.join(60)
    assert process.exitcode == JOIN_FAILED_EXIT_CODE
    assert "cannot join the run's net namespace (/proc/{}/ns/net)".format(holder.pid) in capfd.readouterr().err


def test_isolation_settings_and_obstacles_are_named():
    with pytest.raises(ValueError, match="network_isolation must be 'auto', 'require' or 'off', got 'yes'"):
        check_isolation_mode('yes')
    loopback = {'ps': ['127.0.0.1:1'], 'worker': ['localhost:2']}
    assert isolation_obstacle(loopback) is None
    assert spec_ports(loopback) == [1, 2]
    assert 'host(s) 10.255.255.1 that are not loopback' in isolation_obstacle(
        {'ps': ['127.0.0.1:1'], 'worker': ['10.255.255.1:2']})


def test_require_refuses_a_cluster_spec_that_spans_hosts_before_any_task_starts(tmp_path):
    from btgym_aac.algorithms import Launcher

    launcher = Launcher(cluster_config={'log_dir': str(tmp_path), 'network_isolation': 'require'},
                        cluster_spec={'ps': ['127.0.0.1:1'], 'worker': ['10.255.255.1:2']}, show_progress=False)
    with pytest.raises(NetworkIsolationError, match="network_isolation is 'require' but the cluster cannot be "
                                                    "isolated: the cluster spec names host.s. 10.255.255.1"):
        launcher.run()
    assert launcher.processes == {}
    off = Launcher(cluster_config={'log_dir': str(tmp_path / 'off'), 'network_isolation': 'off'}, show_progress=False)
    assert isolate_cluster(off.cluster_config['network_isolation'], off.cluster_spec, off.log) is None


# ------------------------------------------------------------------------------------------- whole runs

def test_an_isolated_run_trains_unreachable_and_its_restarted_worker_rejoins(tmp_path):
    skip_without_namespaces()
    with script_run([], tmp_path / 'run', 'auto', 8000) as run:
        spec = run.spec()
        ports = spec_ports(spec)
        run.wait_until_trained()
        tasks = run.wait_for_tasks(ports)
        assert_unreachable(ports)
        namespaces = {net_namespace(pid) for pid in tasks.values()}
        assert len(namespaces) == 1 and namespaces != {net_namespace(os.getpid())}
        worker_1_port = address_port(spec['worker'][1])
        os.kill(tasks[worker_1_port], signal.SIGKILL)
        restarted = run.wait_for_tasks([worker_1_port], exclude={tasks[worker_1_port]})[worker_1_port]
        assert net_namespace(restarted) in namespaces
        assert_unreachable([worker_1_port])
        result = run.finish()
    assert result['global_step'] >= 8000 and result['restarts'] == {'1': 1}
    assert result['owners'] and set(result['owners'].values()) == {os.getuid()}
    assert any('private network namespace' in line for line in run.lines)
    assert not any('WARNING' in line and 'listen on port' in line for line in run.lines)
    assert_all_gone(run.seen_pids)


def unprivileged_prefix():
    """A command prefix that runs a command as an unprivileged uid able to run this interpreter: `setpriv` to
    UNPRIVILEGED_UID, else a user namespace in which this user is UNPRIVILEGED_UID without capabilities (where
    the interpreter lies in a folder that uid cannot enter). Skips where neither can start this interpreter's
    subprocesses."""
    if os.geteuid() != 0:
        return []
    probe = [sys.executable, '-c', 'import subprocess, sys; open({!r}).close(); subprocess.run([sys.executable, '
             '"-c", "import btgym_aac"], check=True)'.format(SCRIPT)]
    candidates = [['setpriv', '--reuid={}'.format(UNPRIVILEGED_UID), '--regid={}'.format(UNPRIVILEGED_UID),
                   '--clear-groups'],
                  ['unshare', '--user', '--map-user={}'.format(UNPRIVILEGED_UID),
                   '--map-group={}'.format(UNPRIVILEGED_UID)]]
    for prefix in candidates:
        if shutil.which(prefix[0]) and subprocess.run(prefix + probe, capture_output=True).returncode == 0:
            return prefix
    pytest.skip('no unprivileged uid here can run {} and its subprocesses'.format(sys.executable))


def test_an_unprivileged_users_run_is_isolated_in_its_own_user_namespace(tmp_path):
    prefix = unprivileged_prefix()
    skip_without_namespaces(prefix)
    with tempfile.TemporaryDirectory() as shared:
        os.chmod(shared, 0o777)  # the unprivileged uid writes its log dir here
        with script_run(prefix, os.path.join(shared, 'run'), 'auto', 4000) as run:
            ports = spec_ports(run.spec())
            run.wait_until_trained()
            tasks = run.wait_for_tasks(ports)
            assert_unreachable(ports)
            for pid in tasks.values():
                assert net_namespace(pid) != net_namespace(os.getpid())
                assert net_namespace(pid, 'user') != net_namespace(run.process.pid, 'user')
            result = run.finish()
    assert result['uid'] != 0 and result['global_step'] >= 4000
    assert result['owners'] and set(result['owners'].values()) == {result['uid']}
    assert_all_gone(run.seen_pids)


def skip_unless_namespaces_can_be_blocked():
    if not shutil.which('unshare') or subprocess.run(['unshare', '--user', '--map-root-user', 'true']).returncode:
        pytest.skip('no user namespaces here to block network namespaces in')
    if subprocess.run(NO_NET_NAMESPACES + ['unshare', '--net', 'true'], capture_output=True).returncode == 0:
        pytest.skip('network namespaces cannot be blocked here')


def test_auto_warns_that_the_ports_are_open_where_unshare_fails_and_trains(tmp_path):
    skip_unless_namespaces_can_be_blocked()
    with script_run(NO_NET_NAMESPACES, tmp_path / 'run', 'auto', 300, num_workers=1) as run:
        ports = spec_ports(run.spec())
        result = run.finish()
    assert result['global_step'] >= 300
    warning = ''.join(run.lines)
    assert 'unshare(CLONE_NEWNET) failed' in warning
    assert 'listen on port(s) {} of every network interface'.format(', '.join(map(str, ports))) in warning
    assert "cluster_config['network_isolation'] = 'require'" in warning


def test_require_refuses_to_start_where_unshare_fails(tmp_path):
    skip_unless_namespaces_can_be_blocked()
    log_dir = tmp_path / 'run'
    done = subprocess.run(NO_NET_NAMESPACES + [sys.executable, '-m', 'btgym_aac.cli', 'train', '--max-steps', '100',
                                               '--log-dir', str(log_dir), '--network-isolation', 'require'],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "btgym-aac train: network_isolation is 'require' but the cluster cannot be isolated: the private network " \
           "namespace could not be made: unshare(CLONE_NEWNET) failed" in done.stderr
    assert set(os.listdir(log_dir)) <= {LOCK_FILE}  # no task started: no summaries, no checkpoint folder


def test_a_cluster_node_cannot_be_isolated_and_refuses_require(tmp_path, capsys):
    from btgym_aac.cli import main as cli_main

    spec = tmp_path / 'cluster.json'
    spec.write_text(json.dumps({'ps': ['127.0.0.1:{}'.format(port) for port in free_ports(1)],
                                'worker': ['127.0.0.1:{}'.format(port) for port in free_ports(1)]}))
    assert cli_main(['cluster-node', '--cluster', str(spec), '--job', 'ps', '--task', '0', '--log-dir',
                     str(tmp_path / 'run'), '--network-isolation', 'require']) == 2
    assert "btgym-aac cluster-node: network isolation is required, but a cluster-node's task must be reachable " \
           "from the cluster's other nodes" in capsys.readouterr().err
