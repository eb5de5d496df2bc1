"""JSON save/load and structural equality and hashing (seed 003: save_json)."""
import pytest

import tilecore
from tilecore import testing

from conftest import require_global


@pytest.fixture(autouse=True)
def _needs_json():
    require_global("ffi.SaveJSON")
    require_global("ffi.StructuralEqual")


def test_array_json_round_trip():
    a = tilecore.convert([1, 2, 3])
    json_str = tilecore.save_json(a)
    assert isinstance(json_str, str)
    a_loaded = tilecore.load_json(json_str)
    assert isinstance(a_loaded, tilecore.Array)
    assert not a_loaded.same_as(a)
    tilecore.assert_structural_equal(a_loaded, a, map_free_vars=True)
    assert tilecore.structural_hash(a_loaded) == tilecore.structural_hash(a)


def test_object_graph_round_trip_keeps_sharing():
    shared = tilecore.convert([1, 2])
    obj = testing.make_test_object(5, "graph", {"a": shared, "b": shared})
    loaded = tilecore.load_json(tilecore.save_json(obj))
    assert loaded.value == 5 and loaded.name == "graph"
    assert loaded.payload["a"].same_as(loaded.payload["b"])
    assert tilecore.structural_equal(loaded, obj)


def test_map_and_scalars_round_trip():
    for value in [{"k": 1.5, "s": "text"}, [None, True, "x" * 100], 7, "plain"]:
        tilecore.assert_structural_equal(tilecore.load_json(tilecore.save_json(value)), tilecore.convert(value))


@pytest.mark.parametrize("bad", ["", "{", "[1, 2", "null", '{"root": 5}', "not json", '{"root": 0, "nodes": [{"type": "no.such.Type", "data": {}}]}'])
def test_bad_json_raises_value_error_saying_what(bad):
    with pytest.raises(ValueError) as info:
        tilecore.load_json(bad)
    assert isinstance(info.value, tilecore.TilecoreError)
    assert "LoadJSON" in str(info.value)


def test_bad_json_names_the_position():
    with pytest.raises(ValueError, match="line 1, column 5"):
        tilecore.load_json("[1,2")


def test_structural_mismatch_paths_in_assert_message():
    lhs = testing.make_test_object(1, "n", [1, 2, 3])
    rhs = testing.make_test_object(1, "n", [1, 2, 4])
    assert not tilecore.structural_equal(lhs, rhs)
    assert tilecore.get_first_structural_mismatch(lhs, rhs) == ("root.payload[2]", "root.payload[2]")
    with pytest.raises(ValueError, match=r"payload\[2\]"):
        tilecore.assert_structural_equal(lhs, rhs)
    assert tilecore.get_first_structural_mismatch(lhs, lhs) is None


def test_free_variables_and_binding_sites():
    x = testing.make_test_var("x")
    y = testing.make_test_var("y")
    assert not tilecore.structural_equal(x, y)
    assert tilecore.structural_equal(x, y, map_free_vars=True)
    # Bound by a let, variables match by position whatever their names.
    assert tilecore.structural_equal(testing.make_test_let(x, 1, x), testing.make_test_let(y, 1, y))
    assert tilecore.structural_hash(testing.make_test_let(x, 1, x)) == tilecore.structural_hash(
        testing.make_test_let(y, 1, y)
    )


def test_dict_of_functions_result_compares_structurally():
    f = tilecore.convert({"add": lambda a, b: tilecore.convert([a, "+", b])})["add"]
    a = testing.make_test_var("a")
    b = testing.make_test_var("b")
    tilecore.assert_structural_equal(f(a, b), tilecore.convert([a, "+", b]))


def test_pickle_and_deepcopy_go_through_json():
    import copy
    import pickle

    obj = testing.make_test_object(2, "p", {"k": [1, 2]})
    again = pickle.loads(pickle.dumps(obj))
    assert type(again) is type(obj) and not again.same_as(obj)
    tilecore.assert_structural_equal(again, obj)
    deep = copy.deepcopy(tilecore.convert([1, [2]]))
    assert deep == [1, [2]]
    with pytest.raises(tilecore.TilecoreError):
        pickle.dumps(tilecore.convert(len))  # a function has no JSON form
