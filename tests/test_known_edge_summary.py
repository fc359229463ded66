"""The time-to-skill summary of `benchmarks/known_edge.py`: the env steps and CPU seconds to 50 % and 80 % of the
oracle, the fraction at fixed budgets and the sampling policy's fraction, against hand-computed values; the
market files its `--market-params` make; and recorded results rescored against the current oracle."""
import argparse
import importlib.util
import json
import pathlib
import sys

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / 'benchmarks'


def benchmark_module(name):
    """Imports benchmarks/NAME.py (which imports its neighbours by name)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, str(BENCHMARKS / '{}.py'.format(name)))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


@pytest.fixture(scope='module')
def summary():
    return benchmark_module('known_edge_summary')


def run(seed, policy, sampled, cpu_per_stage=10.0, oracle=2.0):
    """A run of 4 stages of 5,000 env steps whose episodes return `policy[k]` (and `sampled[k]` sampling) and the
    oracle `oracle`, at stage k."""
    stages = [{'stage': k + 1, 'env_steps': 5000 * (k + 1) - (k % 2), 'cpu_seconds': cpu_per_stage * (k + 1),
               'wall_seconds': 1.0, 'returns_pct': {'policy': [policy[k]] * 3, 'oracle': [oracle] * 3,
                                                    'buy_and_hold': [0.0] * 3},
               'sampled_returns_pct': [sampled[k]] * 3} for k in range(4)]
    return {'market': 'mr', 'edge': True, 'trainer': 'a3c', 'seed': seed, 'stages': stages}


def test_time_to_skill_and_the_fractions_at_budgets(summary):
    runs = [run(0, [0.2, 1.2, 1.4, 1.8], [0.1, 0.6, 1.0, 1.2]),
            run(1, [0.4, 0.9, 1.9, 1.8], [0.1, 0.6, 1.0, 1.2], cpu_per_stage=20.0)]
    [row] = summary.summarize(runs, budgets=[10000, 20000, 40000])
    # pooled fractions per stage: (0.2 + 0.4) / 2 / 2 = 0.15, then 0.525, 0.825, 0.9
    assert [point['fraction'] for point in row['learning_curve']] == pytest.approx([0.15, 0.525, 0.825, 0.9])
    assert row['time_to'] == {'0.5': {'env_steps': pytest.approx(9999.0), 'cpu_seconds': 30.0},
                              '0.8': {'env_steps': pytest.approx(15000.0), 'cpu_seconds': 45.0}}
    assert row['at_budgets']['10000']['fraction'] == pytest.approx(0.525)  # 9,999 steps: within 1 % of it
    assert row['at_budgets']['20000']['fraction'] == pytest.approx(0.9)
    assert row['at_budgets']['40000'] is None
    assert row['fraction_of_oracle']['sampled']['fraction'] == pytest.approx(0.6)
    lines = summary.table_lines([row], budgets=[10000, 20000, 40000])
    assert '| 9,999 / 30 s; 15,000 / 45 s | 0.53 [' in lines[2]  # (the seeds differ there: a bootstrap interval)
    assert '| 0.90 [0.90, 0.90] | - | 0.90 [0.90, 0.90] | 0.60 [0.60, 0.60] |' in lines[2]


def test_a_fraction_never_reached_and_runs_without_sampling(summary):
    runs = [run(0, [0.4, 0.8, 1.2, 1.5], [0.0] * 4)]
    for stage in runs[0]['stages']:
        del stage['sampled_returns_pct']  # a run of an earlier version of the benchmark
    [row] = summary.summarize(runs)
    assert row['time_to'] == {'0.5': {'env_steps': 15000.0, 'cpu_seconds': 30.0},
                              '0.8': {'env_steps': None, 'cpu_seconds': None}}
    assert row['fraction_of_oracle']['sampled'] is None
    assert '| 15,000 / 30 s; - |' in summary.table_lines([row])[2]


def test_the_rule_within_reach_is_summarised_where_every_run_has_it(summary):
    runs = [run(0, [0.4, 0.8, 1.2, 1.2], [0.0] * 4), run(1, [0.4, 0.8, 1.2, 0.9], [0.0] * 4)]
    for seed_run, rule in zip(runs, (1.6, 1.4)):
        for stage in seed_run['stages']:
            stage['returns_pct'][summary.REACHABLE_RULE] = [rule] * 3
    [row] = summary.summarize(runs)
    # the last stage: the rule takes (1.6 + 1.4) / 2 / 2 = 0.75 of the oracle; the policy (1.2 + 0.9) / 3 = 0.7 of it
    assert row['reachable_rule']['of_the_oracle']['fraction'] == pytest.approx(0.75)
    assert row['reachable_rule']['policy_of_the_rule']['fraction'] == pytest.approx(0.7)
    line = summary.table_lines([row])[2]
    assert '| 0.75 [' in line and '] / 0.70 [' in line
    del runs[1]['stages'][-1]['returns_pct'][summary.REACHABLE_RULE]  # a run of an earlier version
    [row] = summary.summarize(runs)
    assert row['reachable_rule'] is None
    assert summary.table_lines([row])[2].split(' | ')[6] == '-'


def test_the_late_fraction_pools_every_stage_from_its_env_steps_on(summary):
    runs = [run(0, [0.2, 1.2, 1.4, 1.8], [0.0] * 4), run(1, [0.4, 0.9, 1.9, 1.8], [0.0] * 4)]
    # the stages at 15,000 and 19,999 env steps: the policy's (1.4 + 1.9 + 1.8 + 1.8) / 4 over the oracle's 2
    late = summary.late_fraction(runs, 15000)
    assert late['stages'] == 2 and late['fraction'] == pytest.approx(6.9 / 4 / 2)
    assert late['ci_low'] <= late['fraction'] <= late['ci_high']
    assert summary.late_fraction(runs, 5000)['fraction'] == pytest.approx((0.6 + 2.1 + 3.3 + 3.6) / 8 / 2)
    assert summary.late_fraction(runs, 30000) is None


def test_the_paired_difference_averages_each_episode_over_the_late_stages(summary):
    reference = [run(0, [0.2, 1.2, 1.4, 1.8], [0.0] * 4), run(1, [0.4, 0.9, 1.9, 1.8], [0.0] * 4)]
    variant = [run(1, [0.0, 0.0, 1.0, 1.2], [0.0] * 4), run(0, [0.0, 0.0, 2.0, 2.0], [0.0] * 4)]
    # late means per episode: reference 1.6 (seed 0) and 1.85 (seed 1), variant 2.0 and 1.1; gains +0.4 and -0.75
    # on three episodes each, over the oracle's 2 per episode
    difference = summary.paired_late_difference(reference, variant, 15000)
    assert difference['episodes'] == 6
    assert difference['difference'] == pytest.approx(3 * (0.4 - 0.75) / 12)
    # a resample is at most all seed 0's episodes (+0.2) and at least all seed 1's (-0.375)
    assert -0.375 - 1e-12 <= difference['ci_low'] < difference['difference'] < difference['ci_high'] <= 0.2 + 1e-12
    assert summary.paired_late_difference(reference, variant, 30000) is None


def test_what_both_sides_share_cancels_in_the_paired_difference(summary):
    reference = [run(0, [0.1, 0.3, 2.5, 0.2], [0.0] * 4), run(1, [0.0, 0.1, -0.6, 1.9], [0.0] * 4)]
    variant = [run(seed, [value + 0.2 for value in policy], [0.0] * 4)
               for seed, policy in ((0, [0.1, 0.3, 2.5, 0.2]), (1, [0.0, 0.1, -0.6, 1.9]))]
    apart = summary.late_fraction(reference, 15000)
    assert apart['ci_high'] - apart['ci_low'] > 0.5  # each side's own interval is wide ...
    difference = summary.paired_late_difference(reference, variant, 15000)
    # ... but the variant takes 0.2 of 2 more on every episode, whatever the seed and the stage
    assert (difference['difference'], difference['ci_low'], difference['ci_high']) == pytest.approx((0.1, 0.1, 0.1))


def test_the_paired_difference_needs_the_same_seeds_and_test_episodes(summary):
    reference = [run(0, [1.0] * 4, [0.0] * 4), run(1, [1.0] * 4, [0.0] * 4)]
    with pytest.raises(ValueError, match=r'same seeds: \[0, 1\] and \[0, 2\]'):
        summary.paired_late_difference(reference, [run(0, [1.0] * 4, [0.0] * 4), run(2, [1.0] * 4, [0.0] * 4)], 0)
    other_windows = [run(0, [1.0] * 4, [0.0] * 4), run(1, [1.0] * 4, [0.0] * 4, oracle=2.5)]
    with pytest.raises(ValueError, match="seed 1: the oracle's returns differ"):
        summary.paired_late_difference(reference, other_windows, 0)


def test_compare_cuts_runs_at_until_and_pairs_each_variant_with_the_first(tmp_path):
    compare = benchmark_module('known_edge_compare')
    files = {}
    for name, policy in (('first', [0.2, 1.2, 1.4, 1.8]), ('second', [0.2, 1.6, 1.8, 0.0])):
        files[name] = tmp_path / '{}.json'.format(name)
        files[name].write_text(json.dumps({'settings': {}, 'runs': [run(0, policy, [0.0] * 4)]}))
    args = argparse.Namespace(variants={name: str(path) for name, path in files.items()}, trainer='a3c',
                              markets=['mr'], seeds=[0], late_from=10000, until=15000)
    first, second = compare.compare(args)
    # the stages at 5,000, 9,999 and 15,000 env steps are kept, the one at 19,999 left out
    assert [point['env_steps'] for point in second['learning_curve']] == [5000, 9999, 15000]
    assert first['late_minus_first'] is None
    # late stages 9,999 and 15,000: (1.6 + 1.8) / 2 - (1.2 + 1.4) / 2 = 0.4 more per episode, over the oracle's 2
    assert second['late_minus_first']['difference'] == pytest.approx(0.2)
    args.until = 1000
    with pytest.raises(ValueError, match='no stage at or before --until 1,000 env steps'):
        compare.compare(args)


def test_compare_takes_the_markets_and_seeds_every_variant_has_unless_told(tmp_path):
    compare = benchmark_module('known_edge_compare')
    first = [run(seed, [1.0] * 4, [0.0] * 4) for seed in range(5)]
    first += [dict(run(seed, [1.0] * 4, [0.0] * 4), market='regime') for seed in range(5)]
    second = [run(seed, [1.0] * 4, [0.0] * 4) for seed in (0, 1, 2, 7)] + [dict(first[0], trainer='ppo')]
    files = {}
    for name, runs in (('first', first), ('second', second)):
        files[name] = tmp_path / '{}.json'.format(name)
        files[name].write_text(json.dumps({'settings': {}, 'runs': runs}))
    first_runs, _ = compare.edge_runs(str(files['first']), 'a3c')
    second_runs, _ = compare.edge_runs(str(files['second']), 'a3c')
    assert compare.shared_markets_and_seeds([first_runs, second_runs]) == (['mr'], [0, 1, 2])
    assert compare.shared_markets_and_seeds([first_runs], ['regime']) == (['regime'], [0, 1, 2, 3, 4])
    variants = {'first': str(files['first']), 'second': str(files['second'])}
    args = argparse.Namespace(variants=variants, trainer='a3c', markets=None, seeds=None, late_from=10000, until=None)
    rows = compare.compare(args)
    assert (args.markets, args.seeds) == (['mr'], [0, 1, 2])
    assert [row['market'] for row in rows] == ['mr', 'mr']
    second_ppo, _ = compare.edge_runs(str(files['second']), 'ppo')
    no_unreal, _ = compare.edge_runs(str(files['second']), 'unreal')
    with pytest.raises(ValueError, match='no market has runs in every variant'):
        compare.shared_markets_and_seeds([first_runs, second_ppo, no_unreal])
    other = [run(9, [1.0] * 4, [0.0] * 4)]
    with pytest.raises(ValueError, match=r'no seed has runs in every variant on every one of mr'):
        compare.shared_markets_and_seeds([first_runs, other])


def test_compare_pools_the_runs_of_files_joined_by_a_plus(tmp_path):
    compare = benchmark_module('known_edge_compare')
    files = []
    for name, seeds in (('first', (0, 1)), ('later', (2,))):
        files.append(tmp_path / '{}.json'.format(name))
        files[-1].write_text(json.dumps({'settings': {'trainer_overrides': {'num_epochs': len(name)}},
                                         'runs': [run(seed, [1.0 + seed] * 4, [0.0] * 4) for seed in seeds]}))
    joined = '{}+{}'.format(*files)
    runs, settings = compare.edge_runs(joined, 'a3c')
    assert sorted(run['seed'] for run in runs) == [0, 1, 2] and settings == {'trainer_overrides': {'num_epochs': 5}}
    args = argparse.Namespace(variants={'pooled': joined, 'first': str(files[0])}, trainer='a3c', markets=None,
                              seeds=None, late_from=10000, until=None)
    compare.compare(args)
    assert args.seeds == [0, 1]  # (the seeds both variants have)
    args.seeds = None
    args.variants = {'pooled': joined}
    pooled, = compare.compare(args)
    assert args.seeds == [0, 1, 2]
    # seeds 0, 1, 2 make 1, 2 and 3 % per episode at every stage against the oracle's 2
    assert pooled['fraction_of_oracle']['fraction'] == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r'mr seed 2 of a3c has runs in more than one file'):
        compare.edge_runs('{}+{}'.format(files[1], files[1]), 'a3c')


def test_market_params_reach_the_generator_and_the_recipe_the_oracle_reads(tmp_path):
    from btgym_aac.data.markets import read_market_spec

    runs = benchmark_module('known_edge_runs')
    train, test = runs.write_markets('mr', True, 0, str(tmp_path), 600, 400, {'half_life': 20.0, 'volatility': 3e-4})
    for path, bars, seed in ((train, 600, 1000), (test, 400, 1001)):
        spec = read_market_spec(path)
        assert (spec.kind, spec.edge, spec.seed) == ('mean_reversion', True, seed)
        assert spec.params['num_bars'] == bars
        assert (spec.params['half_life'], spec.params['volatility']) == (20.0, 3e-4)
        assert spec.params['noise'] == 5e-5  # the generator's default where not given
    assert read_market_spec(test).params['start'].startswith(runs.TEST_START)


def test_resuming_adds_the_rule_within_reach_to_kept_mean_reversion_runs(tmp_path, monkeypatch):
    """A kept run of results written before the rule within reach was recorded gets the rule's returns in every
    stage (on the test file written again, the env of the run's preset), as a run of now records them; twins, runs
    that have them and markets without a rule come back as they are."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the scripts' directory, where they run (their imports by name)
    known_edge, runs = benchmark_module('known_edge'), benchmark_module('known_edge_runs')
    monkeypatch.setattr(sys, 'argv', ['known_edge.py', '--markets', 'mr', 'regime', '--trainers', 'a3c', '--preset',
                                      'tuned', '--train-bars', '3000', '--test-bars', '6000'])
    args = known_edge.parse_args()
    stages = [{'stage': k, 'returns_pct': {'oracle': [1.0, 2.0], 'policy': [0.5, 0.5]}} for k in (1, 2)]
    kept = {'market': 'mr', 'edge': True, 'trainer': 'a3c', 'seed': 0, 'stages': stages}
    filled = runs.with_reachable_rule(kept, str(tmp_path), args)
    train, test = runs.write_markets('mr', True, 0, runs.data_folder(str(tmp_path), 'mr', True, 0), 3000, 6000)
    configs = runs.reference_configs('a3c', train, runs.env_overrides(args), preset='tuned')
    expected = runs.reachable_rule_returns(configs, test, 2)
    assert len(expected) == 2
    assert [stage['returns_pct'] for stage in filled['stages']] == [
        dict(stage['returns_pct'], reachable_rule=expected) for stage in stages]
    assert all('reachable_rule' not in stage['returns_pct'] for stage in kept['stages'])  # not changed in place
    assert runs.with_reachable_rule(filled, str(tmp_path), args) is filled
    twin = dict(kept, edge=False)
    assert runs.with_reachable_rule(twin, str(tmp_path), args) is twin
    regime = dict(kept, market='regime')
    assert runs.with_reachable_rule(regime, str(tmp_path), args) is regime


@pytest.mark.parametrize('market_params, message', [
    ({'regime': {}}, "'regime' is not one of the markets run"),
    ({'mr': [1]}, 'a dict of generator arguments is needed'),
    ({'mr': {'half_lfe': 20}}, r'half_lfe not among the arguments it takes \(base, half_life, noise, volatility\)'),
    ({'mr': {'seed': 3}}, 'seed not among'),
])
def test_market_params_the_benchmark_cannot_use_are_refused_by_name(market_params, message):
    runs = benchmark_module('known_edge_runs')
    with pytest.raises(ValueError, match=message):
        runs.check_market_params(market_params, ['mr', 'intraday'])
    runs.check_market_params({'mr': {'half_life': 20}, 'intraday': {'phase': 2.0}}, ['mr', 'intraday'])


def test_the_benchmark_trains_several_assets_as_train_assets_does_and_records_it(monkeypatch):
    from btgym_aac.strategy import MultiAssetSpreadStrategy, MultiAssetStrategy

    known_edge, runs = benchmark_module('known_edge'), benchmark_module('known_edge_runs')
    pair = runs.reference_configs('a3c', {'X': 'x.csv', 'Y': 'y.csv'}, {}, preset='tuned')
    one = runs.reference_configs('a3c', 'train.csv', {}, preset='tuned')
    assert pair['trainer_config']['kwargs']['rollout_length'] == 64
    assert 'rollout_length' not in one['trainer_config']['kwargs']

    def written_settings(*flags):
        monkeypatch.setattr(sys, 'argv', ['known_edge.py', *flags])
        return known_edge.settings(known_edge.parse_args())

    assert written_settings('--seeds', '2', '--first-seed', '3')['seeds'] == [3, 4]
    longer = {'trainer_config': {'kwargs': {'rollout_length': 64}}}
    ppo = {'trainer_config': {'kwargs': dict(rollout_length=64, num_epochs=4, num_minibatches=8,
                                             behaviour_logits=True, opt_learn_rate=3e-4, model_beta=0.0,
                                             model_gae_lambda=0.95, clip_epsilon=0.2)}}
    assert written_settings('--markets', 'mr', 'pair', '--trainers', 'a3c', 'ppo', 'unreal', 'sb3_ppo', '--preset',
                            'tuned')['multi_asset_layers'] == {'a3c': longer, 'ppo': ppo, 'unreal': longer}
    for flags in (['--markets', 'mr', '--preset', 'tuned'], ['--markets', 'pair', '--preset', 'reference'],
                  ['--markets', 'pair', '--trainers', 'sb3_ppo', '--preset', 'tuned']):
        assert 'multi_asset_layers' not in written_settings(*flags), flags  # so --resume reads earlier results
    assert written_settings('--markets', 'pair', '--trainers', 'a3c', 'ppo', 'sb3_ppo', '--preset', 'tuned')[
        'multi_asset_env_settings'] == {'ppo': {'action_encoding': 'per_asset',
                                                'strategy': 'btgym_aac.strategy.multi_asset.MultiAssetSpreadStrategy'}}
    for flags in (['--markets', 'pair', '--preset', 'tuned', '--portfolio'], ['--markets', 'mr', '--preset', 'tuned'],
                  ['--markets', 'pair', '--trainers', 'a3c', '--preset', 'tuned']):
        assert 'multi_asset_env_settings' not in written_settings(*flags), flags
    ppo_pair = runs.reference_configs('ppo', {'X': 'x.csv', 'Y': 'y.csv'}, {}, preset='tuned')
    assert ppo_pair['env_config']['kwargs']['action_encoding'] == 'per_asset'
    assert ppo_pair['env_config']['kwargs']['strategy'] is MultiAssetSpreadStrategy
    assert 'action_encoding' not in pair['env_config']['kwargs']
    assert pair['env_config']['kwargs']['strategy'] is MultiAssetStrategy


def test_rescoring_plays_the_current_oracle_on_the_runs_test_episodes_and_recomputes_every_fraction(
        tmp_path, monkeypatch):
    """`known_edge_rescore.py` on a result of the pair: the oracle's returns are those the current oracle makes on
    the run's test file and episodes in the env of the run's preset; the policies' returns stay as recorded; the
    rule within reach (`oracle_variants.EpisodeSpreadOracle`) is added, played on the same episodes, its signal the
    spread's pull times the spread less its mean over the episode's bars so far."""
    import numpy as np

    from btgym_aac.evaluation.episodes import make_evaluation_env
    from btgym_aac.evaluation.oracle_agent import oracle_agent

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    known_edge, runs = benchmark_module('known_edge'), benchmark_module('known_edge_runs')
    rescore, variants = benchmark_module('known_edge_rescore'), benchmark_module('oracle_variants')
    monkeypatch.setattr(sys, 'argv', ['known_edge.py', '--markets', 'pair', '--trainers', 'ppo', '--preset', 'tuned',
                                      '--train-bars', '3000', '--test-bars', '3000', '--budgets', '10000'])
    settings = known_edge.settings(known_edge.parse_args())

    def stage(k, policy):
        return {'stage': k, 'env_steps': 10000 * k, 'cpu_seconds': 30.0 * k, 'wall_seconds': 20.0 * k,
                'returns_pct': {'policy': policy, 'oracle': [9.0, 9.0], 'buy_and_hold': [0.0, 0.0]},
                'fraction_of_oracle': float(np.mean(policy)) / 9.0, 'sampled_returns_pct': [0.5, 0.7],
                'sampled_fraction_of_oracle': 0.6 / 9.0}

    recorded = {'market': 'pair', 'edge': True, 'trainer': 'ppo', 'seed': 0,
                'stages': [stage(1, [1.0, 2.0]), stage(2, [2.0, 4.0])]}
    results = tmp_path / 'known_edge.json'
    results.write_text(json.dumps({'benchmark': 'known_edge', 'settings': settings, 'runs': [recorded]}))
    rescore.main(['--results', str(results), '--out', str(tmp_path / 'rescored')])

    train, test = runs.write_markets('pair', True, 0, str(tmp_path / 'data'), 3000, 3000)
    configs = runs.reference_configs('ppo', train, dict(runs.ENV_OVERRIDES), preset='tuned')
    env = make_evaluation_env(configs, test)
    try:
        oracle = runs.episode_returns(env, oracle_agent(env), 2)
        rule_agent = variants.episode_spread_oracle(env)
        decisions = []
        act = rule_agent.act
        rule_agent.act = lambda observation: decisions.append(
            (rule_agent.times.searchsorted(env.episode_window[0]), rule_agent.now(), rule_agent.expected_now(),
             dict(rule_agent.sides), act(observation))) or decisions[-1][4]
        rule = runs.episode_returns(env, rule_agent, 2)
        closes = {line: frame['close'].to_numpy() for line, frame in env.dataset.frames.items()}
        actions = list(env.portfolio_actions)
    finally:
        env.close()
    spread = np.log(closes['Y']) - np.log(closes['X'])  # the pair's beta is 1: its base cancels
    pull = rule_agent.oracle.pull
    assert len(decisions) > 10
    for first, now, expected, held, action in decisions:
        assert expected == pytest.approx(-(spread[now] - spread[first:now + 1].mean()) * pull, rel=1e-9)
        side = np.sign(expected) if abs(expected) > rule_agent.oracle.leg_round_trip else 0
        wanted_y = {0: 'hold', 1: 'close' if held.get('Y', 0) < 0 else 'buy',
                    -1: 'close' if held.get('Y', 0) > 0 else 'sell'}[side]
        assert actions[action['Y']] == wanted_y
        assert actions[action['X']] == ('close' if held.get('X', 0) else 'hold')
    assert {'buy', 'sell'} <= {actions[action['Y']] for *_, action in decisions}  # it trades both ways
    written = json.loads((tmp_path / 'rescored' / 'known_edge.json').read_text())
    assert np.mean(oracle) > 0
    for before, after in zip(recorded['stages'], written['runs'][0]['stages']):
        assert after['returns_pct'] == dict(before['returns_pct'], oracle=oracle, reachable_rule=rule)
        assert after['fraction_of_oracle'] == pytest.approx(np.mean(before['returns_pct']['policy']) / np.mean(oracle))
        assert after['sampled_fraction_of_oracle'] == pytest.approx(0.6 / np.mean(oracle))
    assert written['settings']['rescored']['oracle_return_pct'] == {
        'pair edge seed 0': {'before': 9.0, 'after': pytest.approx(np.mean(oracle))}}
    assert written['summary'][0]['fraction_of_oracle']['fraction'] == pytest.approx(3.0 / np.mean(oracle))
    assert written['summary'][0]['reachable_rule']['of_the_oracle']['fraction'] == pytest.approx(
        np.mean(rule) / np.mean(oracle))
    assert (tmp_path / 'rescored' / 'known_edge_steps.png').stat().st_size > 0


@pytest.mark.parametrize('content, message', [(None, 'No such file'), ('{"runs": [', 'Expecting'),
                                              ('{"benchmark": "learning"}', 'not a known_edge.py result')])
def test_rescoring_refuses_a_file_that_is_not_a_known_edge_result(tmp_path, capsys, content, message):
    rescore = benchmark_module('known_edge_rescore')
    results = tmp_path / 'known_edge.json'
    if content is not None:
        results.write_text(content)
    with pytest.raises(SystemExit) as exit_info:
        rescore.parse_args(['--results', str(results), '--out', str(tmp_path / 'out')])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err and not (tmp_path / 'out').exists()


def test_the_rule_with_a_trailing_window_takes_the_spreads_level_from_its_last_bars(monkeypatch):
    """`EpisodeSpreadOracle(window=W)`: the expected change is the pull times the spread (with `own_level`, Y's log
    close) less its mean over the last W bars up to now (fewer at the start of the file), whatever the episode's
    first bar."""
    import numpy as np
    import pandas as pd

    from btgym_aac.data.markets import MarketSpec, PairOracle, make_pair_market

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    variants = benchmark_module('oracle_variants')
    frames = make_pair_market(num_bars=600, seed=5)
    times = frames['X'].index
    closes = np.stack([frames['X']['close'].to_numpy(), frames['Y']['close'].to_numpy()], axis=1)
    oracle = PairOracle(MarketSpec.from_frame(frames['X']), commission=1e-4, horizon=10)
    levels = {False: np.log(closes[:, 1]) - np.log(closes[:, 0]), True: np.log(closes[:, 1])}  # beta 1: no base
    for window, now, own_level in ((128, 400, False), (128, 50, False), (1, 300, False), (128, 400, True)):
        rule = variants.EpisodeSpreadOracle(oracle, times, closes, ('X', 'Y'), ('hold', 'buy', 'sell', 'close'),
                                            env=None, window=window, own_level=own_level)
        rule.time = times[now] + pd.Timedelta(seconds=30)  # between two bars: the one before is current
        spreads = levels[own_level]
        level = spreads[max(0, now + 1 - window):now + 1].mean()
        assert rule.expected_now() == pytest.approx(-(spreads[now] - level) * oracle.pull, rel=1e-9, abs=1e-15)
