"""Kernel errors name the kernel's source line, in the compile path and in PySim, with
the same message (one front end checks both)."""
import inspect

import numpy as np
import pytest

import tilecore
from dsl_agreement import run_compiled
from tilecore import script as S
from tilecore.script import registry
from tilecore.script.pysim.runner import CoreContext, _Run
from tilecore.script.pysim.semantics import value

HERE = __file__


def line_of(kernel, text):
    lines, first = inspect.getsourcelines(kernel.py_func)
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(text)


# --- a type error ---------------------------------------------------------------
@S.prim_func
def type_error(a: S.ptr("int32", "global"), b: S.ptr("int16", "global")):
    va = S.vload(a)
    vb = S.vload(b)
    S.vstore(S.vadd(va, vb), a)


def test_type_error_compile_path_names_the_line():
    with pytest.raises(TypeError) as info:
        type_error.prim_func  # noqa: B018
    err = info.value
    assert isinstance(err, S.KernelError)
    assert err.line == line_of(type_error, "S.vadd(va, vb)")
    assert err.message == "vadd: operand dtypes differ: int32x8 vs int16x16"
    assert f"{HERE}:{err.line}: vadd: operand dtypes differ" in str(err)
    assert "S.vstore(S.vadd(va, vb), a)" in str(err)


def test_type_error_pysim_same_message():
    # PySim parses first, so it rejects the kernel exactly as the compiler does ...
    with pytest.raises(TypeError) as info:
        type_error(np.zeros(8, np.int32), np.zeros(16, np.int16))
    assert info.value.message == "vadd: operand dtypes differ: int32x8 vs int16x16"
    assert info.value.line == line_of(type_error, "S.vadd(va, vb)")
    # ... and its own front end, run on PySim values, says the same.
    ctx = CoreContext(_Run(1, True, None), 0)
    with registry.mode("py", ctx), pytest.raises(TypeError) as direct:
        S.vadd(value(np.zeros(8, np.int32), "int32x8"), value(np.zeros(16, np.int16), "int16x16"))
    assert str(direct.value) == info.value.message


def test_compile_time_type_errors_of_operators():
    @S.prim_func
    def bad_literal(a: S.ptr("int8", "global")):
        v = S.vload(a)
        S.vstore(v + 300, a)

    with pytest.raises(ValueError, match=r"the literal 300 does not fit int8 \(-128 .. 127\)") as info:
        bad_literal.prim_func  # noqa: B018
    assert info.value.line == line_of(bad_literal, "v + 300")

    @S.prim_func
    def vector_condition(a: S.ptr("int32", "global")):
        v = S.vload(a)
        if v > 0:
            S.vstore(v, a)

    with pytest.raises(TypeError, match="the condition must be a scalar bool") as info:
        vector_condition(np.zeros(8, np.int32))
    assert info.value.line == line_of(vector_condition, "if v > 0")


# --- out of bounds ------------------------------------------------------------------
@S.prim_func
def static_oob(a: S.ptr("int32", "global")):
    T = S.alloc_buffer((16,), "int32")
    T[16] = a[0]


def test_out_of_bounds_constant_index_both_paths():
    line = line_of(static_oob, "T[16] = a[0]")
    with pytest.raises(IndexError) as compiled:
        static_oob.prim_func  # noqa: B018
    assert compiled.value.line == line
    with pytest.raises(IndexError) as sim:
        static_oob(np.zeros(4, np.int32))
    assert sim.value.message == compiled.value.message == \
        "store: index 16 is out of range for dimension 0 of `buf` (extent 16)"


@S.prim_func
def core_fault(a: S.ptr("int32", "global"), b: S.ptr("int32", "global")):
    cid = S.get_local_id()
    v = S.vload(a + cid * 8)
    S.vstore(v, b + cid * 10)


@S.prim_func
def core_oob(a: S.ptr("int32", "global"), b: S.ptr("int32", "global")):
    cid = S.get_local_id()
    v = S.vload(a + cid * 8)
    S.vstore(v, b + cid * 8)


def test_out_of_bounds_pointer_names_core_and_line():
    # b holds 24 elements: core 3 writes b[24:32].
    with pytest.raises(IndexError) as info:
        core_oob(np.zeros(32, np.int32), np.zeros(24, np.int32))
    err = info.value
    assert err.core == 3
    assert err.line == line_of(core_oob, "S.vstore(v, b + cid * 8)")
    assert f"{HERE}:{err.line} (core 3): vstore: lane access `b[24]` is out of bounds: `b` has 24 elements" \
        in str(err)


def test_misaligned_vector_store_names_core_and_line():
    # core_fault's core 1 stores at b + 10: not 32-byte aligned, a fault on TC1 and in PySim.
    with pytest.raises(ValueError) as info:
        core_fault(np.zeros(32, np.int32), np.zeros(32, np.int32))
    assert info.value.core == 1
    assert "misaligned vstore: `b[10]`" in str(info.value)


def test_out_of_bounds_compiled_on_the_simulator():
    # TC1 faults on this store (misaligned for core 1, out of bounds for the last
    # cores); either way the error names the kernel's own source line.
    args = [np.zeros(32, np.int32), np.zeros(32, np.int32)]
    with pytest.raises(tilecore.TilecoreError) as info:
        run_compiled(core_fault, args)
    assert str(line_of(core_fault, "S.vstore(v, b + cid * 10)")) in str(info.value)


# --- a core that raises ------------------------------------------------------------
def checked_index(i):
    """A helper the kernel calls: fine at compile time, raises in PySim for i == 2."""
    if not hasattr(i, "node") and int(i) == 2:
        raise ZeroDivisionError("core two divides by zero")
    return i


@S.prim_func
def raising_core(a: S.ptr("int32", "global")):
    cid = S.get_local_id()
    S.barrier()
    a[cid] = checked_index(cid)
    S.barrier()


def test_core_exception_reaches_caller_with_core_and_line():
    a = np.zeros(4, np.int32)
    with pytest.raises(ZeroDivisionError) as info:
        raising_core(a)
    assert info.value.core == 2
    assert info.value.line == line_of(raising_core, "checked_index(cid)")
    assert "(core 2): core two divides by zero" in str(info.value)
    # The compile path accepts the kernel (the helper raises only at run time).
    assert "tir.barrier" in raising_core.script()


def test_single_thread_mode_runs_cores_in_turn_and_rejects_barriers(monkeypatch):
    @S.prim_func
    def no_barrier(a: S.ptr("int32", "global")):
        a[S.get_local_id()] = S.get_local_id() * 10

    monkeypatch.setenv("TILECORE_PYSIM_SINGLE_THREAD", "1")
    a = np.zeros(4, np.int32)
    no_barrier(a)
    np.testing.assert_array_equal(a, [0, 10, 20, 30])
    with pytest.raises(RuntimeError, match="TILECORE_PYSIM_SINGLE_THREAD=1") as info:
        raising_core(a)
    assert info.value.core == 0 and info.value.line == line_of(raising_core, "S.barrier()")


def test_argument_checks():
    with pytest.raises(TypeError, match=r"argument 1 \(`b`\) is S.ptr\('int32', 'global'\): expected an array of "
                                        r"int32, got int16"):
        core_fault(np.zeros(8, np.int32), np.zeros(16, np.int16))
    with pytest.raises(TypeError, match="takes 2 arguments"):
        core_fault(np.zeros(8, np.int32))


def test_unsupported_syntax_names_the_line():
    @S.prim_func
    def uses_break(a: S.ptr("int32", "global")):
        for i in range(4):
            break

    with pytest.raises(SyntaxError, match="`break` is not supported") as info:
        uses_break.prim_func  # noqa: B018
    assert info.value.line == line_of(uses_break, "  break")

    @S.prim_func
    def scoped(a: S.ptr("int32", "global"), n: S.int32):
        if n > 0:
            x = 1
        a[0] = x

    with pytest.raises(NameError, match="`x` is only assigned inside a loop or if"):
        scoped(np.zeros(1, np.int32), 1)


def test_dsl_call_outside_kernel():
    with pytest.raises(RuntimeError, match="can only be called inside a @S.prim_func kernel"):
        S.vload(None)
