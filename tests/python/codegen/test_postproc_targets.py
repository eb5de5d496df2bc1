"""docs/runtime.md, "Per-target passes and source post-processing": which code generators
call ``codegen.postproc_<kind>``. The c one does (test_call_packed.py checks what the hook
does to the source); the npu one emits machine code directly and never calls it; an
out-of-tree generator reaches the hook through ``target.PostprocSource``."""
import numpy as np
import pytest

import tilecore
from tilecore import ir


def copy4():
    ib = ir.IRBuilder("copy4")
    a = ib.buffer_param("A", (4,), "int32")
    b = ib.buffer_param("B", (4,), "int32")
    with ib.for_range(0, 4, name="i") as i:
        b[i] = a[i]
    return ib.get()


@pytest.fixture
def hooks():
    """Registers a recording codegen.postproc_<kind> per kind asked for; removes them after."""
    calls, names = [], []

    def install(kind):
        def hook(code):
            calls.append(kind)
            return "/* postprocessed */\n" + code
        names.append("codegen.postproc_" + kind)
        tilecore.register_func(names[-1], hook, override=True)

    yield install, calls
    for n in names:
        tilecore.remove_global_func(n)


def test_the_c_code_generator_calls_its_hook(hooks):
    install, calls = hooks
    install("c")
    mod = tilecore.build(copy4(), target="c")
    assert calls == ["c"] and mod.get_source().startswith("/* postprocessed */\n")


@pytest.mark.npu
def test_the_npu_code_generator_never_calls_a_hook(hooks):
    install, calls = hooks
    plain = tilecore.build(copy4(), target="npu").get_source()
    install("npu")
    mod = tilecore.build(copy4(), target="npu")
    assert calls == [] and mod.get_source() == plain
    a, b = np.arange(4, dtype="int32"), np.zeros(4, dtype="int32")
    mod["copy4"](a, b)
    np.testing.assert_array_equal(b, a)


def test_postproc_source_is_the_hook_for_other_generators(hooks):
    install, calls = hooks
    postproc = tilecore.get_global_func("target.PostprocSource")
    assert postproc("toyacc_postproc", "ret\n") == "ret\n"  # no hook: unchanged
    install("toyacc_postproc")
    assert postproc("toyacc_postproc", "ret\n") == "/* postprocessed */\nret\n" and calls == ["toyacc_postproc"]


def test_postproc_source_refuses_a_hook_that_returns_no_string():
    tilecore.register_func("codegen.postproc_toyacc_postproc", lambda code: 3, override=True)
    try:
        with pytest.raises(TypeError, match="codegen.postproc_toyacc_postproc must return the source as a string"):
            tilecore.get_global_func("target.PostprocSource")("toyacc_postproc", "ret\n")
    finally:
        tilecore.remove_global_func("codegen.postproc_toyacc_postproc")
