"""Value graphs far deeper than any recursive walk could take: save_json/load_json,
structural equality and hashing, repr and freeing all keep their place on the heap.

Each check runs on a thread with a 256 KiB C stack, which one C++ frame per level of a
100000-deep chain would overflow many times over.
"""
import pytest

import tilecore
from tilecore import testing

from conftest import require_global
from small_stack import run_on_small_stack

DEPTH = 100000


@pytest.fixture(autouse=True)
def _needs_json():
    require_global("ffi.SaveJSON")
    require_global("ffi.StructuralEqual")


def round_trip(value):
    """value through save_json/load_json: the copy is structurally equal, with the same hash."""
    back = tilecore.load_json(tilecore.save_json(value))
    assert tilecore.structural_equal(back, value)
    assert tilecore.structural_hash(back) == tilecore.structural_hash(value)
    return back


def array_chain(leaf):
    node = tilecore.convert(leaf)
    for _ in range(DEPTH):
        node = tilecore.convert([node])
    return node


def object_chain(leaf):
    node = testing.make_test_object(leaf, "leaf", None)
    for i in range(DEPTH):
        node = testing.make_test_object(i, "level", node)
    return node


def test_array_chain_round_trips_compares_and_prints():
    def body():
        a, c = array_chain(1), array_chain(2)
        back = round_trip(a)
        assert not tilecore.structural_equal(back, c)
        bottom = "root" + "[0]" * DEPTH
        assert tilecore.get_first_structural_mismatch(a, c) == (bottom, bottom)
        with pytest.raises(ValueError) as info:
            tilecore.assert_structural_equal(a, c)
        assert f"lhs {bottom} vs rhs {bottom}" in str(info.value)
        assert repr(back) == "[" * DEPTH + "1" + "]" * DEPTH
        del a, back, c  # freed on this small stack too

    run_on_small_stack(body)


def test_object_and_map_chains_round_trip():
    def body():
        a, c = object_chain(1), object_chain(2)
        back = round_trip(a)
        bottom = "root" + ".payload" * DEPTH + ".value"
        assert tilecore.get_first_structural_mismatch(back, c) == (bottom, bottom)
        node = back
        for _ in range(DEPTH):
            node = node.payload
        assert node.value == 1 and node.name == "leaf"
        # repr (ffi.Repr, through reflection) prints the first MiB and says it cut.
        expected = "".join(f'testing.TestObject(value={i}, name="level", payload='
                           for i in reversed(range(DEPTH)))
        expected += 'testing.TestObject(value=1, name="leaf", payload=None)' + ")" * DEPTH
        text = repr(back)
        assert text.endswith("... (truncated)")
        assert text[:1 << 20] == expected[:1 << 20]

        maps = tilecore.convert(0)
        for _ in range(DEPTH):
            maps = tilecore.convert({"next": maps})
        back = round_trip(maps)
        assert repr(back) == "{'next': " * DEPTH + "0" + "}" * DEPTH

    run_on_small_stack(body)


def test_shared_dag_hashes_compares_and_saves_in_linear_time():
    # 60 levels of [x, x]: 2^60 paths through 61 distinct arrays. A walk per path would
    # never finish; one visit per distinct node (or pair of nodes) is instant.
    def dag(leaf):
        node = tilecore.convert(leaf)
        for _ in range(60):
            node = tilecore.convert([node, node])
        return node

    a, b, c = dag(1), dag(1), dag(2)
    assert tilecore.structural_equal(a, b)
    assert tilecore.structural_hash(a) == tilecore.structural_hash(b)
    assert not tilecore.structural_equal(a, c)
    assert tilecore.structural_hash(a) != tilecore.structural_hash(c)
    assert tilecore.get_first_structural_mismatch(a, c) == ("root" + "[0]" * 60,) * 2
    text = tilecore.save_json(a)
    assert len(text) < 10000  # one node per distinct array
    back = tilecore.load_json(text)
    assert tilecore.structural_equal(back, a)
    assert tilecore.structural_hash(back) == tilecore.structural_hash(a)
