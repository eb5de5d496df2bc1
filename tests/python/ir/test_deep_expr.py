"""A Kernel IR expression 100000 levels deep saves, loads, compares and hashes, on a
thread with a 256 KiB C stack (no walk may take a C++ frame per level)."""
import pytest

import tilecore
from tilecore import ir

from small_stack import run_on_small_stack

DEPTH = 100000


def add_chain(bottom):
    """let i = 0 in (((i + bottom) + 1) + 2) ... with DEPTH Adds."""
    i = ir.Var("i")
    e = ir.Add(i, bottom)
    for k in range(1, DEPTH):
        e = ir.Add(e, k % 7)
    return ir.Let(i, 0, e)


def test_deep_add_chain_round_trips_and_names_the_deepest_mismatch():
    def body():
        a, b, c = add_chain(1), add_chain(1), add_chain(2)
        assert tilecore.structural_equal(a, b)
        assert tilecore.structural_hash(a) == tilecore.structural_hash(b)
        back = tilecore.load_json(tilecore.save_json(a))
        assert isinstance(back, ir.Let)
        assert tilecore.structural_equal(back, a)
        assert tilecore.structural_hash(back) == tilecore.structural_hash(a)
        assert not tilecore.structural_equal(a, c)
        bottom = "root.body" + ".a" * (DEPTH - 1) + ".b.value"
        assert tilecore.get_first_structural_mismatch(a, c) == (bottom, bottom)
        # The script printer refuses a tree this deep; the mismatch is reported anyway.
        with pytest.raises(ValueError) as info:
            tilecore.assert_structural_equal(a, c)
        assert f"lhs {bottom} vs rhs {bottom}" in str(info.value)
        del a, b, c, back  # freed on this small stack too

    run_on_small_stack(body)
