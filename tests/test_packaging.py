"""The source distribution: its metadata, that it carries the test suite, examples and benchmarks, and that its
tests are collected and run when it is unpacked."""
import concurrent.futures
import email
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

pytestmark = pytest.mark.xdist_group('packaging')  # one xdist worker builds the module's fixtures

ROOT = pathlib.Path(__file__).resolve().parent.parent
QUICK_TESTS = ['tests/test_logs.py', 'tests/test_spaces.py']
# What pip says when it cannot reach a package index to install the build requirements into build's isolated env.
UNREACHABLE_INDEX = re.compile('connection broken by|NewConnectionError|NameResolutionError|Failed to establish a new '
                               'connection|ConnectTimeoutError|ProxyError|Could not fetch URL')


def run(args, cwd, **env):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=540,
                          env=dict(os.environ, PYTEST_ADDOPTS='', **env))


def unreachable_index(output):
    """pip's words in a build's output for a package index it could not reach, or None."""
    match = UNREACHABLE_INDEX.search(' '.join(output.split()))  # build wraps pip's lines
    return match and match.group(0)


def source_copy(destination):
    """`destination`: a copy of the source tree without what installs, builds and runs leave in it. A build writes
    into the tree it builds (egg-info, a release folder it then deletes), so it builds a copy: the working tree,
    which the other xdist process reads and writes meanwhile, stays out of it."""
    shutil.copytree(ROOT, destination, symlinks=True, ignore=shutil.ignore_patterns(
        '.venv', '.git', '__pycache__', '*.egg-info', 'build', 'dist', '.pytest_cache', 'runs', 'out'))
    return destination


@pytest.fixture(scope='module')
def unpacked_sdist(tmp_path_factory):
    out = tmp_path_factory.mktemp('sdist')
    source = source_copy(tmp_path_factory.mktemp('source') / 'btgym_aac')
    built = run([sys.executable, '-m', 'build', '--sdist', '--outdir', str(out), str(source)], cwd=out)
    pip_says = built.returncode and unreachable_index(built.stdout + built.stderr)
    if pip_says:
        pytest.skip(f'python -m build cannot install the build requirements: no package index reachable ({pip_says})')
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    archive, = out.glob('btgym_aac-*.tar.gz')
    with tarfile.open(archive) as tar:
        tar.extractall(out, filter='data')
    unpacked, = [path for path in out.iterdir() if path.is_dir()]
    return unpacked


def project_files():
    """The files the suite, the examples, the benchmarks and the two set-up commands need."""
    files = {'Makefile', 'pyproject.toml', 'README.md', 'LICENSE', '.ci/run'}
    for folder in ('tests', 'examples', 'benchmarks'):
        files |= {str(path.relative_to(ROOT)) for path in (ROOT / folder).rglob('*')
                  if path.is_file() and '__pycache__' not in path.parts}
    return files


def test_the_sdist_carries_the_suite_examples_benchmarks_and_makefile(unpacked_sdist):
    carried = {str(path.relative_to(unpacked_sdist)) for path in unpacked_sdist.rglob('*') if path.is_file()}
    assert project_files() - carried == set()
    assert not [path for path in carried if '__pycache__' in path or path.endswith('.pyc')]


def test_the_sdist_metadata_has_the_spdx_licence_and_the_tested_pythons(unpacked_sdist):
    metadata = email.message_from_string((unpacked_sdist / 'PKG-INFO').read_text())
    assert metadata['Name'] == 'btgym-aac'
    assert metadata['License-Expression'] == 'GPL-3.0-or-later'
    assert set(metadata['Requires-Python'].split(',')) == {'>=3.11', '<3.14'}
    assert not [value for value in metadata.get_all('Classifier') if value.startswith('License ::')]
    assert any(value.startswith('Original BTGym, https://') for value in metadata.get_all('Project-URL'))


def collected(pytest_output):
    """The count in pytest's '<N> tests collected in <time>' line."""
    return int(re.search(r'(\d+) tests? collected', pytest_output).group(1))


def test_the_unpacked_sdist_collects_every_test_and_passes_quick_ones(unpacked_sdist):
    pythonpath = dict(PYTHONPATH=str(unpacked_sdist))
    collect = [sys.executable, '-m', 'pytest', '--collect-only', '-q', '-p', 'no:cacheprovider']
    quick_run = [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider'] + QUICK_TESTS
    with concurrent.futures.ThreadPoolExecutor(3) as pool:  # three independent pytest processes at once
        here, there, quick = pool.map(lambda job: run(job[0], cwd=job[1], **job[2]), [
            (collect, ROOT, {}), (collect, unpacked_sdist, pythonpath), (quick_run, unpacked_sdist, pythonpath)])
    assert there.returncode == 0, there.stdout[-3000:]
    assert collected(there.stdout) == collected(here.stdout) > 900
    assert quick.returncode == 0, quick.stdout[-3000:]
    assert ' passed' in quick.stdout.splitlines()[-1] and 'failed' not in quick.stdout.splitlines()[-1]
