"""A throwaway PostgreSQL server for the tests: Debian's binaries (the newest of /usr/lib/postgresql/*/bin), a cluster
in a temporary folder, listening only on a Unix socket there, run by an unprivileged user when the tests run as root
(PostgreSQL refuses to run as root)."""
import contextlib
import glob
import grp
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time

POSTGRES_ROOT = '/usr/lib/postgresql'
SERVER_USER = 'nobody'
SERVER_GROUP = 'nogroup'
TOOLS = ('initdb', 'pg_ctl', 'createdb')
SETTINGS = {'listen_addresses': "''", 'fsync': 'off', 'synchronous_commit': 'off', 'full_page_writes': 'off'}
"""Appended to postgresql.conf (with the socket folder): no TCP at all, and no waiting on the disk."""


def postgres_bin_dir(root=POSTGRES_ROOT):
    """The bin folder of the newest PostgreSQL under `root` that has initdb, pg_ctl and createdb, or None."""
    found = []
    for path in glob.glob(os.path.join(root, '*', 'bin')):
        version = os.path.basename(os.path.dirname(path))
        if re.fullmatch(r'\d+(\.\d+)*', version) and all(
                os.access(os.path.join(path, tool), os.X_OK) for tool in TOOLS):
            found.append((tuple(int(part) for part in version.split('.')), path))
    return max(found)[1] if found else None


def server_account():
    """(command prefix running a program as the server's user, (uid, gid) to give its folders to, user name): the
    unprivileged SERVER_USER under root, the current user (no prefix, nothing to give) otherwise."""
    if os.geteuid() != 0:
        return [], None, pwd.getpwuid(os.geteuid()).pw_name
    user = pwd.getpwnam(SERVER_USER)
    try:
        gid = grp.getgrnam(SERVER_GROUP).gr_gid
    except KeyError:
        gid = user.pw_gid
    prefix = ['setpriv', '--reuid={}'.format(user.pw_uid), '--regid={}'.format(gid), '--clear-groups']
    return prefix, (user.pw_uid, gid), user.pw_name


def _alive(pid):
    """Whether process `pid` runs (not a zombie)."""
    try:
        with open('/proc/{}/stat'.format(pid)) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


@contextlib.contextmanager
def postgres_server(database, keep_log_in=None):
    """Starts a PostgreSQL server with database `database`, yields its SQLAlchemy URL (psycopg2, over the Unix
    socket); then stops the server (`pg_ctl stop -m fast`, the postmaster killed if it outlives that), copies its
    log into `keep_log_in` (a folder) and removes the cluster.

    The cluster lives in a folder of its own under the temporary folder, not under pytest's `tmp_path`: pytest's
    folders are private to the user running the tests (0700), so that the server's unprivileged user could not
    reach them; the short path also keeps the socket's name under its 107 characters.

    Raises:
        RuntimeError: no PostgreSQL binaries (install Debian's `postgresql` package), or a server that does not
            start (with its output and log).
    """
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        raise RuntimeError('no PostgreSQL binaries ({}) in {}/*/bin: install them (Debian: apt-get install '
                           'postgresql), as .ci/run does'.format(', '.join(TOOLS), POSTGRES_ROOT))
    prefix, owner, user = server_account()
    root = tempfile.mkdtemp(prefix='btgym-pg-')
    data, socket_dir, log = (os.path.join(root, name) for name in ('data', 'socket', 'server.log'))
    os.mkdir(socket_dir, 0o700)
    if owner is not None:
        for path in (root, socket_dir):
            os.chown(path, *owner)
    env = dict(os.environ, LC_ALL='C', LANG='C')

    def run(tool, *arguments):
        result = subprocess.run(prefix + [os.path.join(bin_dir, tool)] + list(arguments), cwd=root, env=env,
                                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            server_log = open(log).read()[-3000:] if os.path.exists(log) else ''
            raise RuntimeError('{} {} exited {}:\n{}{}\n{}'.format(tool, ' '.join(arguments), result.returncode,
                                                                 result.stdout[-2000:], result.stderr[-2000:],
                                                                 server_log))
        return result

    postmaster = None
    try:
        run('initdb', '--pgdata', data, '--auth', 'trust', '--no-locale', '--encoding', 'UTF8', '--no-sync')
        with open(os.path.join(data, 'postgresql.conf'), 'a') as conf:
            conf.write('\n# {}\n'.format(__name__))
            for name, value in dict(SETTINGS, unix_socket_directories="'{}'".format(socket_dir)).items():
                conf.write('{} = {}\n'.format(name, value))
        run('pg_ctl', '--pgdata', data, '--log', log, '--wait', '--timeout', '60', 'start')
        with open(os.path.join(data, 'postmaster.pid')) as f:
            postmaster = int(f.readline())
        run('createdb', '--host', socket_dir, '--username', user, database)
        yield 'postgresql+psycopg2://{}@/{}?host={}'.format(user, database, socket_dir)
    finally:
        try:
            if postmaster is not None:
                try:
                    run('pg_ctl', '--pgdata', data, '--mode', 'fast', '--wait', '--timeout', '60', 'stop')
                finally:
                    deadline = time.time() + 30
                    while _alive(postmaster) and time.time() < deadline:
                        time.sleep(0.1)
                    if _alive(postmaster):
                        os.kill(postmaster, signal.SIGKILL)  # its backends end when they see it gone
            if keep_log_in is not None and os.path.exists(log):
                shutil.copy(log, os.path.join(keep_log_in, 'postgres.log'))
        finally:
            shutil.rmtree(root, ignore_errors=True)
