"""docs/dsl.md and tilecore/script/compass.py: ``aipu.tir.BuildManager().build(kernel)`` parses
the kernel and compiles it with ``tilecore.build`` (npu by default), returning the module; only
a target kind registered without a code generator gives back the parsed PrimFunc."""
import numpy as np
import pytest

import tilecore
from tilecore import script as S
from tilecore.script import compass as aipu


@S.prim_func
def add_one(a: S.ptr("int32", "global"), b: S.ptr("int32", "global")):
    S.vstore(S.vadd(S.vload(a), 1), b)


@pytest.mark.npu
def test_build_compiles_for_the_npu_and_the_module_runs():
    mod = aipu.tir.BuildManager().build(add_one)
    assert isinstance(mod, tilecore.runtime.Module) and mod.kind == "npu"
    a = np.arange(8, dtype="int32")
    b = np.zeros(8, dtype="int32")
    mod[add_one.name](a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_build_for_another_target():
    mod = aipu.tir.BuildManager(target="c").build(add_one)
    assert isinstance(mod, tilecore.runtime.Module) and mod.kind == "c"
    a = np.arange(8, dtype="int32")
    b = np.zeros(8, dtype="int32")
    mod[add_one.name](a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_a_kind_without_a_code_generator_gives_the_parsed_prim_func():
    tilecore.get_global_func("target.RegisterKind")("compass_nocodegen", 33, [], True)
    try:
        got = aipu.tir.BuildManager(target="compass_nocodegen").build(add_one)
    finally:
        tilecore.remove_global_func("target.kind.compass_nocodegen")
    assert got.same_as(add_one.prim_func)


def test_an_unknown_kind_raises():
    with pytest.raises(ValueError, match="unknown target kind `compass_nosuchkind`"):
        aipu.tir.BuildManager(target="compass_nosuchkind").build(add_one)
