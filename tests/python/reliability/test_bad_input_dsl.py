"""Bad input at the DSL and PySim: recursion, deadlocks, endless loops, huge unrolls,
hidden parse errors, and scalar arguments PySim must convert as TC1 does. Kernels are
written to files in the child (the DSL reads their source)."""
import textwrap

import pytest

from reliability_helpers import expect_error, run_isolated


def _kernel_snippet(tmp_path, source, use):
    path = tmp_path / "kern.py"
    path.write_text("import numpy as np\nfrom tilecore import script as S\n" + textwrap.dedent(source))
    return f"""
        import importlib.util
        spec = importlib.util.spec_from_file_location('kern', {str(path)!r})
        kern = importlib.util.module_from_spec(spec); spec.loader.exec_module(kern)
        k = kern.k
        {use}
    """


_RECURSIVE = """
@S.prim_func(num_cores=1)
def k(a: S.ptr("int32", "global")):
    k(a)
"""


@pytest.mark.parametrize("use", ["k.prim_func", "tilecore.build(k)", "k(np.zeros(8, np.int32))"])
def test_recursive_kernel_is_a_syntax_error(tmp_path, use):
    # H1
    expect_error(_kernel_snippet(tmp_path, _RECURSIVE, use), "KernelSyntaxError", "kernels cannot call kernels",
                 timeout=60)


def test_pysim_detects_a_barrier_deadlock(tmp_path):
    # H2
    src = """
    @S.prim_func(num_cores=4)
    def k(a: S.ptr("int32", "global")):
        if S.get_local_id() == 2:
            S.barrier()
    """
    expect_error(_kernel_snippet(tmp_path, src, "k(np.zeros(8, np.int32))"), "Error", "deadlock", "core", timeout=60)


def test_pysim_has_an_operation_budget(tmp_path):
    # H2
    src = """
    @S.prim_func(num_cores=1)
    def k(a: S.ptr("int32", "global")):
        x = 0
        while a[0] == 0:
            x = x + 1
    """
    expect_error(_kernel_snippet(tmp_path, src, "k(np.zeros(8, np.int32))"), "Error", "budget", timeout=120,
                 env={"TILECORE_PYSIM_MAX_OPS": "20000"})


_SPIN = """
@S.prim_func(num_cores=1)
def k(a: S.ptr("int32", "global")):
    x = 0
    while a[0] == 0:
        x = x + 1
"""


def test_pysim_stops_a_loop_without_effect_within_seconds(tmp_path):
    # H2: at the default settings the busy loop stops after the stall budget (5 s without a
    # store, DMA, tile command or barrier), not after 10^7 operations (minutes).
    out = run_isolated(_kernel_snippet(tmp_path, _SPIN, """
        import time
        t = time.monotonic()
        try:
            k(np.zeros(8, np.int32))
            error = None
        except RuntimeError as e:
            error = str(e)
        RESULT = (error is not None and 'stall budget exhausted' in error and 'core 0' in error
                  and 'TILECORE_PYSIM_STALL_SECONDS' in error, time.monotonic() - t < 30)
    """), timeout=120)
    assert out.expect_ok() == repr((True, True))


def test_pysim_stall_budget_is_configurable(tmp_path):
    # H2: a shorter stall budget stops sooner; a bad value is refused by name.
    expect_error(_kernel_snippet(tmp_path, _SPIN, "k(np.zeros(8, np.int32))"), "Error", "stall budget", "0.5 s",
                 timeout=60, env={"TILECORE_PYSIM_STALL_SECONDS": "0.5"})
    expect_error(_kernel_snippet(tmp_path, _SPIN, "k(np.zeros(8, np.int32))"), "ValueError",
                 "TILECORE_PYSIM_STALL_SECONDS='soon'", timeout=60, env={"TILECORE_PYSIM_STALL_SECONDS": "soon"})


def test_static_range_has_an_unroll_limit(tmp_path):
    # H4
    src = """
    @S.prim_func(num_cores=1)
    def k(b: S.ptr("int32", "global")):
        for i in S.static_range(3000000):
            b[0] = i
    """
    expect_error(_kernel_snippet(tmp_path, src, "tilecore.build(k)"), "Error", "unroll", "limit", timeout=60)


def test_build_reports_the_kernels_own_error(tmp_path):
    # M2
    src = """
    @S.prim_func(num_cores=1)
    def k(a: S.ptr("int32", "global")):
        a[0] = S.no_such_function(a[0])
    """
    expect_error(_kernel_snippet(tmp_path, src, "tilecore.build(k)"), "AttributeError", "no_such_function")


_SCALAR = """
@S.prim_func(num_cores=1)
def k(b: S.ptr("int32", "global"), n: S.int32):
    b[0] = n
"""


def test_pysim_passes_large_ints_as_tc1_does(tmp_path):
    # S11: the compiled kernel keeps the low 32 bits; PySim must compute the same.
    out = run_isolated(_kernel_snippet(tmp_path, _SCALAR, """
        b1 = np.zeros(4, np.int32); b2 = np.zeros(4, np.int32)
        k(b1, 2**40 + 3)
        tilecore.build(k)['k'](b2, 2**40 + 3)
        RESULT = (int(b1[0]), int(b2[0]))
    """))
    assert out.expect_ok() == repr((3, 3))


@pytest.mark.parametrize("arg,exc,word", [("1.7", "TypeError", "expected an int"), ("2**70", "OverflowError", "`n`")])
def test_pysim_scalar_argument_errors_name_the_argument(tmp_path, arg, exc, word):
    # S11, M11
    expect_error(_kernel_snippet(tmp_path, _SCALAR, f"k(np.zeros(4, np.int32), {arg})"), exc, word)


def test_string_annotation_error_names_the_parameter(tmp_path):
    # M11
    src = """
    @S.prim_func(num_cores=1)
    def k(a: 'int32'):
        pass
    """
    expect_error(_kernel_snippet(tmp_path, src, "k.prim_func"), "TypeError", "parameter `a`", "'int32'")


def test_prim_func_of_a_non_function(tmp_path):
    expect_error("from tilecore import script as S\nS.prim_func(5)", "TypeError", "decorates a Python function")


_VECTORS = """
@S.prim_func(num_cores=1)
def k(a: S.ptr("int32", "global"), b: S.ptr("int32", "global"), off: S.int32):
    S.vstore(S.vload(a + off), b)
"""


@pytest.mark.npu
@pytest.mark.parametrize("off,ok", [(1, False), (4, False), (8, True), (16, True)])
def test_pysim_refuses_a_misaligned_vector_load_as_tc1_does(tmp_path, off, ok):
    # S11: vld reads 32 aligned bytes; PySim and the compiled kernel agree on which offsets fault.
    use = f"""
        a = np.arange(64, dtype=np.int32)
        outcome = []
        for run in (lambda b: k(a, b, {off}), lambda b: tilecore.build(k)['k'](a, b, {off})):
            b = np.zeros(64, np.int32)
            try:
                run(b)
                outcome.append(b[:8].tolist())
            except Exception as e:
                outcome.append('aligned' in str(e))
        RESULT = outcome
    """
    result = eval(run_isolated(_kernel_snippet(tmp_path, _VECTORS, use)).expect_ok())  # noqa: S307
    expected = list(range(off, off + 8)) if ok else True
    assert result == [expected, expected], result


_PAST_THE_END = """
@S.prim_func(num_cores=1)
def k(a: S.ptr("int32", "global"), b: S.ptr("int32", "global")):
    b[64] = 99
"""

_DMA_PAST_THE_END = """
@S.prim_func(num_cores=1)
def k(a: S.ptr("int32", "global"), b: S.ptr("int32", "global")):
    T = S.alloc_buffer((128,), "int32")
    S.dma_copy(T, a, 128)
    S.dma_copy(b, T, 128)
"""


@pytest.mark.npu
@pytest.mark.parametrize("source,words", [
    (_PAST_THE_END, ["store to ddr", "element 64 of `b`, which has 64 elements"]),
    (_DMA_PAST_THE_END, ["DMA source", "of `a`, which has 64 elements"]),
])
def test_pointer_kernel_on_npu_cannot_write_past_an_array(tmp_path, source, words):
    # S1: an S.ptr parameter has no size, so the call limits the simulator's DDR accesses
    # to the arrays passed: a store or DMA past one is a SimError naming the kernel and the
    # array, and the next array in DDR (v) keeps its values. PySim raises IndexError.
    use = """
        npu = tilecore.npu(0)
        a = tilecore.nd.array(np.zeros(64, 'int32'), device=npu)
        b = tilecore.nd.array(np.zeros(64, 'int32'), device=npu)
        v = tilecore.nd.array(np.full(64, 7, 'int32'), device=npu)
        try:
            tilecore.build(k)['k'](a, b)
            error = None
        except Exception as e:
            error = (type(e).__name__, str(e))
        try:
            k(np.zeros(64, np.int32), np.zeros(64, np.int32))
            pysim = None
        except IndexError as e:
            pysim = 'IndexError'
        RESULT = (error, v.numpy().tolist() == [7] * 64, pysim)
    """
    out = run_isolated(_kernel_snippet(tmp_path, source, use))
    error, victim_kept, pysim = eval(out.expect_ok())
    assert error is not None and error[0] == "SimError", error
    for w in ["kernel `k`"] + words:
        assert w in error[1], (w, error[1])
    assert victim_kept and pysim == "IndexError"


@pytest.mark.npu
def test_pointer_kernel_on_npu_reaches_every_element_of_its_arrays(tmp_path):
    # The limit is the arrays' exact extents: the first and last elements, through pointer
    # arithmetic too, are in; host arrays staged into DDR count as well.
    src = """
    @S.prim_func(num_cores=1)
    def k(a: S.ptr("int32", "global"), b: S.ptr("int32", "global")):
        b[0] = a[63]
        c = b + 32
        c[31] = a[0] + 1
    """
    out = run_isolated(_kernel_snippet(tmp_path, src, """
        a = np.arange(64, dtype=np.int32) + 5; b = np.zeros(64, np.int32)
        tilecore.build(k)['k'](a, b)
        RESULT = (int(b[0]), int(b[63]))
    """))
    assert out.expect_ok() == repr((68, 6))


@pytest.mark.parametrize("source,words", [
    (_PAST_THE_END, ["store", "to `b`", "element 64", "which has 64 elements"]),
    (_DMA_PAST_THE_END, ["on `a`", "element 127", "which has 64 elements"]),
])
def test_pointer_kernel_on_c_cannot_write_past_an_array(tmp_path, source, words):
    # S1 on the c target: the code checks each access through an S.ptr parameter against
    # the element count of the array passed (no host heap overflow): IndexError naming the
    # kernel and the array, and the array after it in host memory keeps its values.
    use = """
        host = np.zeros(2 * 64 + 64, np.int32)
        a, b, v = host[:64], host[64:128], host[128:]
        v[:] = 7
        try:
            tilecore.build(k, 'c')['k'](a, b)
            error = None
        except Exception as e:
            error = (type(e).__name__, str(e))
        RESULT = (error, v.tolist() == [7] * 64)
    """
    out = run_isolated(_kernel_snippet(tmp_path, source, use))
    error, victim_kept = eval(out.expect_ok())  # noqa: S307
    assert error is not None and error[0] == "IndexError", error
    for w in ["kernel `k`"] + words:
        assert w in error[1], (w, error[1])
    assert victim_kept


def test_pointer_kernel_on_c_reaches_every_element_of_its_arrays(tmp_path):
    src = """
    @S.prim_func(num_cores=4)
    def k(a: S.ptr("int32", "global"), b: S.ptr("int32", "global")):
        cid = S.get_local_id()
        b[cid * 16] = a[63 - cid]
        c = b + 48
        c[15] = a[0] + 1
    """
    out = run_isolated(_kernel_snippet(tmp_path, src, """
        a = np.arange(64, dtype=np.int32) + 5; b = np.zeros(64, np.int32)
        tilecore.build(k, 'c')['k'](a, b)
        RESULT = (b[::16].tolist(), int(b[63]))
    """))
    assert out.expect_ok() == repr(([68, 67, 66, 65], 6))
