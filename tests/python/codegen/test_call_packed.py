"""Calls from compiled kernels to registered global functions (``tir.call_packed``,
DSL ``S.call_packed``) — seed 003's extern stage — on the c target and in PySim; and
the c target's plugin hooks: the per-target pass list and ``codegen.postproc_c``."""
import numpy as np
import pytest

import tilecore
from tilecore import ir
from tilecore import script as S
from tilecore import transform

CALLS = []


@tilecore.register_func("test_call_packed.scale_rows", override=True)
def _scale_rows(x, factor, offset):
    """The extern stage: x[i, j] = x[i, j] * factor + offset, in place, on the view."""
    a = x.numpy()
    CALLS.append((a.shape, str(a.dtype), factor, offset))
    x.copyfrom((a * factor + int(offset)).astype(a.dtype))


@tilecore.register_func("test_call_packed.fail", override=True)
def _fail(x):
    raise KeyError("the callback refused its buffer")


@S.prim_func(num_cores=1)
def extern_stage(a: S.ptr("int32", "global"), b: S.ptr("int32", "global"), k: S.int32):
    T = S.alloc_buffer((4, 8), "int32")
    S.dma_copy(T, S.view(a, (4, 8))[0:4, 0:8])
    S.call_packed("test_call_packed.scale_rows", T, k, 7)
    S.dma_copy(S.view(b, (4, 8))[0:4, 0:8], T)


@S.prim_func(num_cores=1)
def extern_fails(a: S.ptr("int32", "global")):
    T = S.alloc_buffer((8,), "int32")
    S.call_packed("test_call_packed.fail", T)


@S.prim_func(num_cores=1)
def extern_missing(a: S.ptr("int32", "global")):
    T = S.alloc_buffer((8,), "int32")
    S.call_packed("test_call_packed.nobody", T)


@pytest.mark.parametrize("leg", ["pysim", "c", "npu"])
def test_kernel_calls_a_python_callback_on_a_buffer(leg):
    a = np.arange(32, dtype=np.int32).reshape(4, 8) - 9
    b = np.zeros((4, 8), np.int32)
    CALLS.clear()
    if leg == "pysim":
        extern_stage(a, b, 3)
    elif leg == "c":
        mod = tilecore.build(extern_stage, target="c")
        assert 'tc_host_call("test_call_packed.scale_rows", 3,' in mod.get_source()
        mod["extern_stage"](a, b, 3)
    else:  # npu: fence + hcall, serviced by the simulator's host
        mod = tilecore.build(extern_stage, target="npu -cores=1")
        assert "hcall" in mod.get_source()
        mod["extern_stage"](a, b, 3)
    np.testing.assert_array_equal(b, a * 3 + 7)
    assert CALLS == [((4, 8), "int32", 3, 7)]


@pytest.mark.parametrize("leg", ["pysim", "c", "npu"])
def test_callback_errors_fail_the_kernel_with_their_type(leg):
    a = np.zeros(8, np.int32)
    with pytest.raises(KeyError, match="refused its buffer"):
        if leg == "pysim":
            extern_fails(a)
        else:
            tilecore.build(extern_fails, target=leg)["extern_fails"](a)
    with pytest.raises(ValueError, match="no global function `test_call_packed.nobody`"):
        if leg == "pysim":
            extern_missing(a)
        else:
            tilecore.build(extern_missing, target=leg)["extern_missing"](a)


def test_call_packed_checks_its_arguments():
    with pytest.raises(TypeError, match=r"argument 0 \(name\) must be string"):
        ir.call("tir.call_packed", ir.const(1, "int32"))
    with pytest.raises(TypeError, match="call_packed: `name` must be a string literal"):
        @S.prim_func(num_cores=1)
        def bad(a: S.ptr("int32", "global")):
            S.call_packed(3, a)

        bad(np.zeros(4, np.int32))


def copy_kernel(name="copy8"):
    ib = ir.IRBuilder(name)
    a = ib.buffer_param("A", (8,), "int32")
    b = ib.buffer_param("B", (8,), "int32")
    with ib.for_range(0, 8, name="i") as i:
        b[i] = a[i]
    return ib.get()


def test_postproc_hook_rewrites_the_c_source_before_it_is_compiled():
    seen = []

    def postproc(code):
        seen.append(code)
        # a real edit that changes behaviour: every copied element gets + 100
        return code.replace("int32_t tc_copy8(void** args) {", "int32_t tc_copy8_orig(void** args);\n"
                            "int32_t tc_copy8(void** args) { int32_t r = tc_copy8_orig(args); "
                            "for (int i = 0; i < 8; ++i) ((int32_t*)args[1])[i] += 100; return r; }\n"
                            "int32_t tc_copy8_orig(void** args) {")

    tilecore.register_func("codegen.postproc_c", postproc, override=True)
    try:
        mod = tilecore.build(copy_kernel(), target="c")
    finally:
        tilecore.remove_global_func("codegen.postproc_c")
    assert len(seen) == 1 and "tc_copy8" in seen[0]
    assert "tc_copy8_orig" in mod.get_source()
    a = np.arange(8, dtype=np.int32)
    b = np.zeros(8, np.int32)
    mod(a, b)
    np.testing.assert_array_equal(b, a + 100)
    # without the hook, the plain copy
    b2 = np.zeros(8, np.int32)
    tilecore.build(copy_kernel(), target="c")(a, b2)
    np.testing.assert_array_equal(b2, a)


def test_postproc_must_return_a_string():
    tilecore.register_func("codegen.postproc_c", lambda code: 3, override=True)
    try:
        with pytest.raises(TypeError, match="codegen.postproc_c must return the source as a string"):
            tilecore.build(copy_kernel(), target="c")
    finally:
        tilecore.remove_global_func("codegen.postproc_c")


def test_a_plugin_pass_joins_the_c_target_pipeline():
    add_pass = tilecore.get_global_func("target.AddPass")
    list_passes = tilecore.get_global_func("target.ListPasses")
    clear = tilecore.get_global_func("target.ClearPasses")
    ran = []

    def mark(func, mod, ctx):
        ran.append(func.attrs["global_symbol"] if "global_symbol" in func.attrs else "?")
        return func

    clear("c")
    add_pass("c", transform.prim_func_pass(mark, name="MarkForC"))
    try:
        assert len(list_passes("c")) == 1
        assert len(list_passes("npu")) == 0
        a = np.arange(8, dtype=np.int32)
        b = np.zeros(8, np.int32)
        tilecore.build(copy_kernel("copy8p"), target="c")(a, b)
        np.testing.assert_array_equal(b, a)
        assert ran == ["copy8p"]
    finally:
        clear("c")
    with pytest.raises(ValueError, match="target kind"):
        add_pass("nosuchkind", transform.prim_func_pass(mark))
    with pytest.raises(TypeError, match="must be a transform.Pass"):
        add_pass("c", 3)
