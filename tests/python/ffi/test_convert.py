"""tilecore.convert and the containers: Array, Map, Shape (seed 003: convert)."""
import pytest

import tilecore
from tilecore import testing


def test_list_to_array_with_negative_indices_and_slicing():
    a = tilecore.convert([1, 2, 3])
    assert isinstance(a, tilecore.Array)
    assert len(a) == 3
    assert a[-1] == 3
    a_slice = a[-3:-1]
    assert (a_slice[0], a_slice[1]) == (1, 2)
    assert a[::-1] == [3, 2, 1]
    assert a[5:] == []
    assert list(a) == [1, 2, 3]
    assert a == [1, 2, 3] and a == (1, 2, 3) and a != [1, 2]
    with pytest.raises(IndexError, match="out of range"):
        a[3]
    with pytest.raises(IndexError):
        a[-4]


def test_nested_and_mixed_arrays():
    x = tilecore.nd.array([1, 2, 3])
    arr = tilecore.convert([x, x, "s", 1.5, None, [1, [2]], {"k": "v"}])
    assert arr[0].same_as(arr[1]) and arr[0].same_as(x)
    assert arr[2] == "s" and arr[3] == 1.5 and arr[4] is None
    assert arr[5][1] == [2]
    assert arr[6]["k"] == "v"


def test_dict_to_map():
    amap = tilecore.convert({"a": 2, "b": 3})
    assert isinstance(amap, tilecore.Map)
    assert len(amap) == 2
    assert amap["a"] == 2 and "b" in amap and "c" not in amap
    assert sorted(amap.keys()) == ["a", "b"]
    assert dict(amap.items()) == {"a": 2, "b": 3}
    assert amap.get("c", 7) == 7
    assert amap == {"a": 2, "b": 3}
    with pytest.raises(KeyError):
        amap["c"]


def test_map_with_non_string_keys():
    key = tilecore.convert([1])
    m = tilecore.convert({1: "one", key: "obj"})
    assert m[1] == "one"
    assert m[key] == "obj"


def test_dict_of_functions():
    converted = tilecore.convert({"add": lambda a, b: a + b, "neg": lambda a: -a})
    f = converted["add"]
    assert isinstance(f, tilecore.Function)
    assert f(1, 2) == 3
    assert testing.apply(converted["neg"], 5) == -5


def test_convert_keeps_values_that_have_a_form_already():
    arr = tilecore.convert([1])
    assert tilecore.convert(arr) is arr
    for v in [1, 2.5, "s", None, True]:
        assert tilecore.convert(v) == v
    f = tilecore.convert(len)
    assert isinstance(f, tilecore.Function) and f("abc") == 3


def test_shape_behaves_like_a_tuple():
    s = tilecore.Shape(2, 3, 4)
    assert isinstance(s, tilecore.Shape)
    assert len(s) == 3 and s[0] == 2 and s[-1] == 4 and tuple(s) == (2, 3, 4)
    assert s == (2, 3, 4) and hash(s) == hash((2, 3, 4))
    assert testing.echo(s) is s


def test_deep_nesting_does_not_crash():
    deep = []
    for _ in range(100000):
        deep = [deep]
    with pytest.raises(RecursionError):
        tilecore.convert(deep)


def test_unconvertible_element_names_the_argument():
    with pytest.raises(TypeError, match="str is not encodable"):
        testing.echo(["ok", "\ud800"])
