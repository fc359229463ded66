"""Clusters described by schedulers: `btgym-aac cluster-node` with TF_CONFIG (as Kubeflow's TFJob sets it) or a
SLURM job step instead of --cluster/--job/--task; malformed descriptions named."""
import json
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest

from btgym_aac.cli import _configs_from_args, build_parser, main as cli_main
from btgym_aac.distributed.cluster import EVALUATOR, free_ports, role_from_slurm, role_from_tf_config
from test_launcher import CKPT, checkpoint_step

CLUSTER = {'chief': ['c:1'], 'worker': ['w:2', 'w:3'], 'ps': ['p:4']}


def tf_config(cluster, job, index=0):
    return json.dumps({'cluster': cluster, 'task': {'type': job, 'index': index}})


@pytest.mark.parametrize('job, index, role', [
    ('chief', 0, ('worker', 0)), ('worker', 0, ('worker', 1)), ('worker', 1, ('worker', 2)), ('ps', 0, ('ps', 0)),
])
def test_tf_config_chief_is_worker_0_and_workers_follow(job, index, role):
    spec, *own_role = role_from_tf_config(tf_config(CLUSTER, job, index))
    assert spec == {'ps': ['p:4'], 'worker': ['c:1', 'w:2', 'w:3']}
    assert tuple(own_role) == role


def test_tf_config_without_chief_and_with_tf1_master():
    assert role_from_tf_config(tf_config({'worker': ['w:2'], 'ps': ['p:4']}, 'worker'))[0] == \
        {'ps': ['p:4'], 'worker': ['w:2']}
    assert role_from_tf_config(tf_config({'master': ['m:1'], 'ps': ['p:4']}, 'master'))[1:] == ('worker', 0)


def test_tf_config_evaluator_takes_no_part():
    assert role_from_tf_config(tf_config(dict(CLUSTER, evaluator=['e:5']), 'evaluator')) == (None, EVALUATOR, 0)


@pytest.mark.parametrize('text, message', [
    ('{"cluster": ', 'TF_CONFIG is not valid JSON'),
    ('[]', 'TF_CONFIG must be a JSON object'),
    (json.dumps({'task': {'type': 'ps', 'index': 0}}), "TF_CONFIG needs a 'cluster' object"),
    (json.dumps({'cluster': CLUSTER}), "TF_CONFIG needs a 'task' object"),
    (tf_config(CLUSTER, 'trainer'), "TF_CONFIG['task']['type'] 'trainer' is not a job"),
    (tf_config(CLUSTER, 'worker', 2), "TF_CONFIG['task']['index'] 2 is not a task of TF_CONFIG['cluster']['worker']"),
    (tf_config(dict(CLUSTER, ps='p:4'), 'chief'), "TF_CONFIG['cluster']['ps'] must be a list"),
    (tf_config({'chief': ['c:1'], 'worker': ['w:2']}, 'chief'), "TF_CONFIG['cluster'] has no ps task"),
    (tf_config(dict(CLUSTER, master=['m:9']), 'chief'), 'names 2 chiefs'),
    (tf_config(dict(CLUSTER, sidecar=['s:9']), 'chief'), "has the job(s) ['sidecar']"),
])
def test_malformed_tf_config_is_named(text, message):
    with pytest.raises(ValueError) as error:
        role_from_tf_config(text)
    assert message in str(error.value)


def test_cluster_node_names_a_bad_tf_config_and_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv('TF_CONFIG', tf_config(CLUSTER, 'worker', 5))
    assert cli_main(['cluster-node', '--log-dir', str(tmp_path / 'run')]) == 2
    assert "TF_CONFIG['task']['index'] 5" in capsys.readouterr().err


def test_cluster_node_without_any_cluster_source_says_what_it_needs(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv('TF_CONFIG', raising=False)
    monkeypatch.delenv('SLURM_PROCID', raising=False)
    assert cli_main(['cluster-node', '--log-dir', str(tmp_path / 'run')]) == 2
    assert 'needs the cluster: --cluster SPEC.json with --job and --task, a TF_CONFIG' in capsys.readouterr().err


def test_an_evaluator_node_exits_0_at_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv('TF_CONFIG', tf_config(CLUSTER, 'evaluator'))
    assert cli_main(['cluster-node', '--log-dir', str(tmp_path / 'run')]) == 0
    assert 'evaluator task has no part in training' in capsys.readouterr().out
    assert not (tmp_path / 'run').exists()


def slurm_env(rank, num_tasks, nodelist='localhost', tasks_per_node=None):
    return {'SLURM_PROCID': str(rank), 'SLURM_STEP_NUM_TASKS': str(num_tasks), 'SLURM_STEP_NODELIST': nodelist,
            'SLURM_STEP_TASKS_PER_NODE': tasks_per_node or str(num_tasks)}


def test_slurm_step_gives_the_first_tasks_to_the_parameter_servers(monkeypatch):
    for name, value in slurm_env(2, 4, 'node[1-2]', '2(x2)').items():
        monkeypatch.setenv(name, value)
    spec, job, task = role_from_slurm(num_ps=1, port_base=20000)
    assert spec == {'ps': ['node1:20000'], 'worker': ['node1:20001', 'node2:20000', 'node2:20001']}
    assert (job, task) == ('worker', 1)


def test_slurm_step_without_a_worker_or_variables_is_named(monkeypatch):
    for name, value in slurm_env(0, 1).items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match='has 1 task'):
        role_from_slurm(num_ps=1)
    monkeypatch.delenv('SLURM_STEP_NODELIST')
    with pytest.raises(ValueError, match='SLURM_STEP_NODELIST not found'):
        role_from_slurm(num_ps=1)


CONFIG = '''
    from btgym_aac.algorithms import A3C
    from btgym_aac.algorithms.policy import AacDensePolicy
    from btgym_aac.env.gym_wrappers import TestModeEnv
    env_config = {'class_ref': TestModeEnv, 'kwargs': {'env_id': 'CartPole-v1'}}
    policy_config = {'class_ref': AacDensePolicy, 'kwargs': {'dense_layers': (16,), 'lstm_layers': (16,)}}
    trainer_config = {'class_ref': A3C, 'kwargs': {'rollout_length': 20}}
    cluster_config = {'log_dir': %r, 'num_ps': 1, 'port': %d}
    launcher_config = {'test_mode': True, 'max_env_steps': %d, 'save_secs': %d}
'''


def start_node(config_path, environment, log):
    return subprocess.Popen([sys.executable, '-m', 'btgym_aac.cli', 'cluster-node', str(config_path)],
                            env=dict(os.environ, **environment['vars']), stdout=subprocess.DEVNULL, stderr=log)


def run_nodes(tmp_path, environments, max_env_steps=600, save_secs=5, during=None):
    """Starts one `cluster-node CONFIG.py` process per environment (ps first), calls `during(nodes, start)` (the
    list of node processes, which it may change, and a function starting a node by index) if given, and waits for
    the workers to exit 0."""
    config_path = tmp_path / 'config.py'
    config_path.write_text(textwrap.dedent(CONFIG % (str(tmp_path / 'run'), environments[0]['port'], max_env_steps,
                                                     save_secs)))
    logs = [open(tmp_path / 'node_{}.log'.format(index), 'w+') for index in range(len(environments))]
    nodes = [start_node(config_path, environment, log) for environment, log in zip(environments, logs)]
    try:
        if during is not None:
            during(nodes, lambda index: start_node(config_path, environments[index], logs[index]))
        codes = [node.wait(timeout=240) for node in nodes[1:]]
        assert codes == [0, 0], [open(log.name).read()[-3000:] for log in logs]
        assert checkpoint_step(str(tmp_path / 'run' / CKPT)) >= max_env_steps
    finally:
        for node, log in zip(nodes, logs):
            if node.poll() is None:
                node.terminate()
                node.wait(30)
            log.close()


def tf_config_nodes():
    """The environments of a ps, a chief and a worker node on free loopback ports, as TFJob sets them."""
    ports = free_ports(3)
    cluster = {'ps': ['127.0.0.1:{}'.format(ports[0])], 'chief': ['127.0.0.1:{}'.format(ports[1])],
               'worker': ['127.0.0.1:{}'.format(ports[2])]}
    roles = (('ps', 0), ('chief', 0), ('worker', 0))
    return [{'port': ports[0], 'vars': {'TF_CONFIG': tf_config(cluster, job, index)}} for job, index in roles]


@pytest.mark.slow
def test_a_cluster_started_only_through_tf_config_trains_to_its_max_steps(tmp_path):
    run_nodes(tmp_path, tf_config_nodes())


@pytest.mark.slow
def test_a_cluster_started_only_through_slurm_variables_trains_to_its_max_steps(tmp_path, monkeypatch):
    monkeypatch.delenv('TF_CONFIG', raising=False)
    base = free_ports(1)[0]
    if base > 65000:
        pytest.skip('the free port found leaves no room for three consecutive ports')
    run_nodes(tmp_path, [{'port': base, 'vars': slurm_env(rank, 3)} for rank in range(3)])


def test_the_kubernetes_example_config_loads_and_its_manifest_runs_cluster_node_with_it():
    folder = os.path.join(os.path.dirname(__file__), os.pardir, 'examples', 'kubernetes')
    args = build_parser().parse_args(['cluster-node', os.path.join(folder, 'config.py')])
    configs = _configs_from_args(args)
    assert configs['cluster_config']['log_dir'] == '/runs/btgym_aac'
    assert configs['launcher_config']['max_env_steps'] == 2000000
    with open(os.path.join(folder, 'tfjob.yaml')) as f:
        manifest = f.read()
    assert manifest.count('args: ["cluster-node", "/etc/btgym_aac/config.py"]') == 3
    with open(os.path.join(folder, 'Dockerfile')) as f:
        assert 'cp examples/kubernetes/config.py /etc/btgym_aac/config.py' in f.read()


@pytest.mark.slow
def test_workers_wait_for_a_parameter_server_node_the_scheduler_restarts_and_resume(tmp_path):
    checkpoints = tmp_path / 'run' / CKPT
    seen = {}

    def kill_and_restart_the_ps_node(nodes, start):
        deadline = time.time() + 180
        while time.time() < deadline and not (checkpoints / 'checkpoint').exists():
            time.sleep(0.2)
        seen['saved'] = checkpoint_step(str(checkpoints))  # the checkpoint state file is written last
        nodes[0].kill()  # the node and, as its launcher dies, its parameter server
        nodes[0].wait(30)
        chief_log = tmp_path / 'node_1.log'
        deadline = time.time() + 180
        while time.time() < deadline and 'worker 0 lost its cluster session' not in chief_log.read_text():
            time.sleep(0.2)  # until the chief has lost its session and waits for the parameter server
        nodes[0] = start(0)

    run_nodes(tmp_path, tf_config_nodes(), max_env_steps=20000, save_secs=1, during=kill_and_restart_the_ps_node)
    chief_log = (tmp_path / 'node_1.log').read_text()
    assert 'its cluster session failed' in chief_log
    assert 'worker 0 lost its cluster session (a parameter server is gone or cannot be reached): starting it again ' \
           '(restart 1 of 3 allowed within 10 minutes); it waits for the parameter servers' in chief_log
    resumed = [int(step) for step in re.findall(r'resumed from .*model_parameters-(\d+)', chief_log)]
    assert resumed and resumed[0] >= seen['saved']
    took = re.search(r'took the weights worker \d held at step (\d+) .* over the checkpoint at step (\d+)', chief_log)
    assert took and int(took.group(1)) > int(took.group(2))  # the log dir the nodes share holds the rescued weights
    assert 'Traceback' not in chief_log
