"""DictSpace and ActionDictSpace and the strategies' metadata space."""
import warnings
from collections import OrderedDict

import numpy as np
import pytest
from gymnasium import spaces

from btgym_aac.spaces import ActionDictSpace, DictSpace
from btgym_aac.strategy import metadata_space

ACTIONS = ('hold', 'buy', 'sell', 'close')


def _box(shape, low=-1.0, high=1.0):
    return spaces.Box(low=low, high=high, shape=shape, dtype=np.float32)


def _observation_space():
    return DictSpace({
        'internal': _box((20, 1, 6), -2.0, 2.0),
        'external': _box((30, 1, 5)),
        'metadata': {'type': spaces.Discrete(2), 'first_row': _box((), 0.0, 10.0)},
    })


# ------------------------------------------------------------------------------------------------ DictSpace


def test_dict_space_sorts_keys_at_every_level():
    space = DictSpace({'b': _box((1,)), 'c': _box((2,)), 'a': {'z': _box(()), 'y': _box(())}})
    assert list(space.spaces) == ['a', 'b', 'c']
    assert list(space.spaces['a'].spaces) == ['y', 'z']
    assert isinstance(space.spaces['a'], DictSpace)


def test_dict_space_shape_is_nested_ordered_dict_of_tuples():
    shape = _observation_space().shape
    assert isinstance(shape, OrderedDict) and isinstance(shape['metadata'], OrderedDict)
    assert list(shape) == ['external', 'internal', 'metadata']
    assert shape == {'external': (30, 1, 5), 'internal': (20, 1, 6), 'metadata': {'first_row': (), 'type': ()}}


def test_dict_space_contains_its_nested_samples():
    space = _observation_space()
    space.seed(0)
    for _ in range(20):
        sample = space.sample()
        assert space.contains(sample)
        assert sample['internal'].shape == (20, 1, 6) and np.abs(sample['internal']).max() <= 2.0


def test_dict_space_rejects_wrong_shape_bounds_and_keys():
    space = _observation_space()
    space.seed(1)
    good = space.sample()
    wrong_shape = dict(good, external=np.zeros((29, 1, 5), dtype=np.float32))
    out_of_bounds = dict(good, internal=np.full((20, 1, 6), 3.0, dtype=np.float32))
    missing_key = {key: value for key, value in good.items() if key != 'metadata'}
    bad_nested = dict(good, metadata={'type': 5, 'first_row': np.array(1.0, dtype=np.float32)})
    for candidate in (wrong_shape, out_of_bounds, missing_key, bad_nested):
        assert not space.contains(candidate)


def test_dict_space_rejects_bad_constructor_input():
    with pytest.raises(TypeError, match="DictSpace expects a dict of spaces, got <class 'list'>"):
        DictSpace([('a', _box(()))])
    with pytest.raises(TypeError, match="'a'"):
        DictSpace({'a': (3, 4)})


# ------------------------------------------------------------------------------- ActionDictSpace, discrete


def test_discrete_lookup_table_is_product_order_last_asset_fastest():
    space = ActionDictSpace(assets=['usd', 'eur'], base_actions=('hold', 'buy', 'sell'))
    assert space.assets == ('eur', 'usd')
    assert list(space.spaces) == ['eur', 'usd']
    assert space.lookup_table == {
        0: (0, 0), 1: (0, 1), 2: (0, 2),
        3: (1, 0), 4: (1, 1), 5: (1, 2),
        6: (2, 0), 7: (2, 1), 8: (2, 2),
    }
    assert space.cardinality == 9 and space.one_hot_depth == 9
    assert space.encoded_depth == 4
    assert space.tensor_shape == (2, 3)
    assert space.is_discrete and space.base_space is spaces.Discrete
    assert space.base_actions_lookup_table == {0: 'hold', 1: 'buy', 2: 'sell'}
    assert all(sub == spaces.Discrete(3) for sub in space.spaces.values())


@pytest.mark.parametrize('num_assets,num_actions,depth', [(1, 2, 1), (1, 4, 2), (1, 5, 3), (2, 3, 4),
                                                           (2, 4, 4), (3, 3, 5)])
def test_discrete_depths(num_assets, num_actions, depth):
    space = ActionDictSpace(assets=['a{}'.format(i) for i in range(num_assets)],
                            base_actions=['x{}'.format(i) for i in range(num_actions)])
    assert space.cardinality == num_actions ** num_assets == space.one_hot_depth
    assert space.encoded_depth == depth


def test_discrete_encode_decode_one_hot_for_every_category():
    space = ActionDictSpace(assets=['usd', 'eur'], base_actions=('hold', 'buy', 'sell'))
    eye = np.eye(9)
    for category in range(9):
        eur, usd = divmod(category, 3)
        action = {'eur': eur, 'usd': usd}
        bits = [float(bit) for bit in np.binary_repr(category, width=4)]
        np.testing.assert_array_equal(space.encode(action), bits)
        np.testing.assert_array_equal(space.one_hot_encode(action), eye[category])
        assert space.decode(np.array(bits)) == action
        np.testing.assert_array_equal(space._cat_to_vec(category), [eur, usd])
        assert space._vec_to_cat(np.array([eur, usd])) == category


def test_single_asset_binary_code_is_most_significant_bit_first():
    space = ActionDictSpace(assets=('default_asset',), base_actions=ACTIONS)
    expected = {'hold': [0, 0], 'buy': [0, 1], 'sell': [1, 0], 'close': [1, 1]}
    for index, name in enumerate(ACTIONS):
        np.testing.assert_array_equal(space.encode({'default_asset': index}), expected[name])
        assert space.decode(expected[name]) == {'default_asset': index}
    assert space.tensor_shape == (1, 4) and space.one_hot_depth == 4 and space.encoded_depth == 2
    assert space.get_initial_action() == {'default_asset': 0}
    np.testing.assert_array_equal(space.encode(space.get_initial_action()), [0, 0])


def test_discrete_bad_inputs_raise():
    with pytest.raises(TypeError):
        ActionDictSpace(assets='default_asset', base_actions=ACTIONS)
    space = ActionDictSpace(assets=['usd', 'eur'], base_actions=('hold', 'buy', 'sell'))
    for bad_action in ({'eur': 3, 'usd': 0}, {'eur': 0}, {'eur': 'buy', 'usd': 0}):
        with pytest.raises(ValueError):
            space.encode(bad_action)
        with pytest.raises(ValueError):
            space.one_hot_encode(bad_action)
    with pytest.raises(ValueError, match='1-D'):
        space.decode(np.zeros((1, 4)))
    with pytest.raises(ValueError):
        space.decode([1, 1, 1, 1])
    with pytest.raises(ValueError):
        space._vec_to_cat([3, 0])


# ----------------------------------------------------------------------------- ActionDictSpace, continuous


def test_continuous_space_attributes_and_encoding():
    space = ActionDictSpace(assets=['y', 'x'])
    assert not space.is_discrete and space.base_space is spaces.Box
    assert space.tensor_shape == (2, 1)
    assert space.lookup_table is None and space.cardinality is None
    assert space.encoded_depth == space.one_hot_depth == 2
    assert all(sub == spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32) for sub in space.spaces.values())
    action = {'x': np.array([0.25], dtype=np.float32), 'y': np.array([0.75], dtype=np.float32)}
    np.testing.assert_allclose(space.encode(action), [0.25, 0.75])
    np.testing.assert_allclose(space.one_hot_encode(action), [0.25, 0.75])
    decoded = space.decode(np.array([0.25, 0.75]))
    assert list(decoded) == ['x', 'y']
    np.testing.assert_allclose(decoded['x'], [0.25])
    np.testing.assert_allclose(decoded['y'], [0.75])


def test_continuous_initial_action_and_bad_values():
    space = ActionDictSpace(assets=['y', 'x'])
    initial = space.get_initial_action()
    assert space.contains(initial)
    assert list(initial) == ['x', 'y']
    for value in initial.values():
        np.testing.assert_array_equal(value, [0.0])
    with pytest.raises(ValueError):
        space.encode({'x': np.array([1.5], dtype=np.float32), 'y': np.array([0.5], dtype=np.float32)})
    with pytest.raises(ValueError):
        space.decode(np.array([[0.1, 0.2]]))


# ------------------------------------------------------------------------------------------ metadata space


def _metadata(**overrides):
    values = {'type': 1, 'trial_num': 10 ** 10, 'trial_type': 1, 'sample_num': 10 ** 10, 'first_row': 10 ** 10}
    values.update(overrides)
    meta = {key: np.array(value, dtype=np.int64) for key, value in values.items()}
    meta['timestamp'] = np.array(1.9e9, dtype=np.float64)
    return meta


def test_metadata_space_holds_large_int64_counters_and_timestamps():
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        space = metadata_space()
    assert list(space.spaces) == ['first_row', 'sample_num', 'timestamp', 'trial_num', 'trial_type', 'type']
    assert space.spaces['timestamp'].dtype == np.float64
    assert space.contains(_metadata())
    assert space.contains(_metadata(type=0, trial_num=0, trial_type=0, sample_num=0, first_row=0))
    assert not space.contains(_metadata(first_row=10 ** 10 + 1))
    assert not space.contains(_metadata(type=2))
    assert not space.contains(_metadata(sample_num=-1))


def test_per_asset_encoding_codes_each_asset_by_its_own_one_hot():
    space = ActionDictSpace(assets=('usd', 'eur', 'chf'), base_actions=ACTIONS, encoding='per_asset')
    assert space.action_groups == 3 and space.one_hot_depth == space.encoded_depth == 12
    assert space.cardinality == 64 and space.lookup_table is None
    action = {'chf': 2, 'eur': 0, 'usd': 3}
    code = np.zeros(12, dtype=np.float32)
    code[[0 + 2, 4 + 0, 8 + 3]] = 1.0  # sorted assets chf, eur, usd
    np.testing.assert_array_equal(space.encode(action), code)
    np.testing.assert_array_equal(space.one_hot_encode(action), code)
    assert dict(space.decode(code)) == action
    with pytest.raises(ValueError, match='one one-hot per asset'):
        space.decode(np.ones(12))
    with pytest.raises(ValueError, match='joint categories'):
        space._cat_to_vec(0)
    logits = np.arange(12, dtype=np.float64)
    probabilities = space.probabilities(logits)
    for group in range(3):
        part = logits[4 * group:4 * group + 4]
        np.testing.assert_allclose(probabilities[4 * group:4 * group + 4], np.exp(part) / np.exp(part).sum())


def test_per_asset_encoding_scales_to_many_assets_and_needs_discrete_actions():
    space = ActionDictSpace(assets=['a{}'.format(i) for i in range(12)], base_actions=ACTIONS, encoding='per_asset')
    assert space.one_hot_depth == 48 and space.cardinality == 4 ** 12
    initial = space.get_initial_action()
    assert space.encode(initial).reshape(12, 4)[:, 0].tolist() == [1.0] * 12
    with pytest.raises(ValueError, match='needs discrete'):
        ActionDictSpace(assets=('a',), encoding='per_asset')
    with pytest.raises(ValueError, match="'joint' or 'per_asset'"):
        ActionDictSpace(assets=('a',), base_actions=ACTIONS, encoding='factorised')
