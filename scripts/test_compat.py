"""`make test-compat`: the smoke subset of the tests on every supported TensorFlow release line and Python.

For each (Python, TensorFlow) pair of MATRIX that has wheels, a virtual environment `.compat/py<X.Y>-tf<V>` gets
that TensorFlow, this package (editable) and the test tools, plus tf-keras of the same minor version where one
exists (the reference of tests/test_rnn.py; without it that file is not run: see `tests` in the results), and the
pins of PINS. The smoke
subset (SMOKE) then runs there. Pythons come from pyenv (`pyenv root`/versions/<X.Y>.*) or the PATH. Writes
`.compat/results.json` and prints a table; exits 1 if any pair failed.

Usage: python scripts/test_compat.py [--only PY:TF ...]
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

MATRIX = [('3.11', '2.16.2'), ('3.11', '2.21.0'), ('3.13', '2.21.0'), ('3.11', '2.22.0rc0'), ('3.13', '2.22.0rc0')]
"""TensorFlow 2.16 has no wheels for Python 3.13 (its last is 3.12); 2.21 and 2.22 have both."""
TF_KERAS = {'2.16': 'tf-keras==2.16.0', '2.21': 'tf-keras==2.21.0'}
"""tf-keras of each TensorFlow minor version, where one exists (none for 2.22 yet)."""
PINS = {'2.16': ['onnx<1.18'], '2.17': ['onnx<1.18']}
"""What a TensorFlow minor version needs pinned beside it: onnx 1.18 and later need ml_dtypes 0.5, which TensorFlow
2.16 and 2.17 do not allow (docs/configuration.md)."""
SMOKE = ['tests/test_public_api.py', 'tests/test_losses.py', 'tests/test_rnn.py', 'tests/test_trainer_features.py',
         'tests/test_checkpoint_compatibility.py', 'tests/test_walk_forward.py', 'tests/test_deploy_artifact.py']
TOOLS = ['pytest>=7', 'pytest-timeout>=2.1', 'pytest-xdist>=3.2']
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDER = os.path.join(ROOT, '.compat')


def find_python(version):
    """The path of a Python `version` (X.Y) interpreter, or None."""
    try:
        root = subprocess.run(['pyenv', 'root'], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        root = None
    candidates = sorted(glob.glob(os.path.join(root, 'versions', version + '.*', 'bin', 'python'))) if root else []
    return candidates[-1] if candidates else shutil.which('python' + version)


def run(command, log, **kwargs):
    """Runs `command`, appending its output to `log`; returns its exit status."""
    with open(log, 'a') as f:
        f.write('$ {}\n'.format(' '.join(command)))
        f.flush()
        return subprocess.run(command, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT, **kwargs).returncode


def check_pair(python_version, tf_version):
    """Builds the pair's environment and runs the smoke subset there; returns its record."""
    name = 'py{}-tf{}'.format(python_version, tf_version)
    record = {'python': python_version, 'tensorflow': tf_version, 'log': os.path.join('.compat', name + '.log')}
    log = os.path.join(ROOT, record['log'])
    open(log, 'w').close()
    python = find_python(python_version)
    if python is None:
        return dict(record, status='no python {}'.format(python_version))
    venv = os.path.join(FOLDER, name)
    started = time.monotonic()
    if not os.path.exists(os.path.join(venv, 'bin', 'python')) and run([python, '-m', 'venv', venv], log):
        return dict(record, status='venv failed')
    pip = [os.path.join(venv, 'bin', 'python'), '-m', 'pip', 'install', '--quiet']
    minor = '.'.join(tf_version.split('.')[:2])
    keras = TF_KERAS.get(minor)
    pins = PINS.get(minor, []) + ([keras] if keras else [])
    if run(pip + ['tensorflow=={}'.format(tf_version), '-e', '.'] + TOOLS + pins, log):
        return dict(record, status='install failed', seconds=round(time.monotonic() - started))
    tests = [path for path in SMOKE if keras or path != 'tests/test_rnn.py']
    status = run([os.path.join(venv, 'bin', 'python'), '-m', 'pytest', '-q', '-p', 'no:randomly', '-m', 'not slow',
                  '-n', '2', '--dist', 'loadgroup'] + tests, log)
    with open(log) as f:
        summary = [line.strip() for line in f if ' passed' in line or ' failed' in line][-1:]
    return dict(record, status='passed' if status == 0 else 'failed', tests=tests, summary=summary[0] if summary
                else None, pins=pins, seconds=round(time.monotonic() - started))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--only', nargs='+', metavar='PY:TF', help='pairs to check (default: all of MATRIX)')
    args = parser.parse_args()
    pairs = [tuple(pair.split(':')) for pair in args.only] if args.only else MATRIX
    os.makedirs(FOLDER, exist_ok=True)
    records = []
    for python_version, tf_version in pairs:
        records.append(check_pair(python_version, tf_version))
        print('Python {python:5} TensorFlow {tensorflow:10} {status}  {summary}'.format(
            **dict(records[-1], summary=records[-1].get('summary') or '')), flush=True)
    with open(os.path.join(FOLDER, 'results.json'), 'w') as f:
        json.dump(records, f, indent=2)
    return 0 if all(record['status'] == 'passed' for record in records) else 1


if __name__ == '__main__':
    sys.exit(main())
