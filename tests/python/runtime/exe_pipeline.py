"""A small executable built by hand for the executable tests (not a test module itself).

    y   = x (int8 64x64, input) @ w (int8 64x64, constant)      npu, int8 GEMM on 4 cores
    z   = max(y, 0)                                               host, a `c` kernel
    out = z + bias (int32 64x64, constant)                        npu, element-wise
`out` reuses the DDR bytes of `y`, which is dead after the host step.
"""
import numpy as np

import tilecore
from tilecore import ir
from tilecore.runtime import ExecutableBuilder

M = N = K = 64


def gemm_i8_kernel(M, N, K, TN, cores=4):
    """C (i32) = A (i8) x B (i8): each core a quarter of M rows, B column blocks of TN."""
    MC, NB = M // cores, N // TN
    ib = ir.IRBuilder("gemm_i8")
    A = ib.buffer_param("A", (M, K), "int8")
    B = ib.buffer_param("B", (K, N), "int8")
    C = ib.buffer_param("C", (M, N), "int32")
    with ib.for_range(0, cores, name="c", kind="cores") as c:
        Al = ib.allocate("int8", (MC, K), name="Al")
        Bl = ib.allocate("int8", (1, K, TN), name="Bl")
        Cl = ib.allocate("int32", (1, MC, TN), name="Cl")
        row = c * MC
        ib.call("tile.dma_copy", Al[0:MC, 0:K], A[row:row + MC, 0:K], 0)
        ib.call("tile.wait", 0)
        with ib.for_range(0, NB, name="j") as j:
            ib.call("tile.dma_copy", Bl[0:1, 0:K, 0:TN], B[0:K, j * TN:(j + 1) * TN], 1)
            ib.call("tile.wait", 1)
            ib.call("tile.mm", Cl[0:1, 0:MC, 0:TN], Al[0:MC, 0:K], Bl[0:1, 0:K, 0:TN], False)
            ib.call("tile.dma_copy", C[row:row + MC, j * TN:(j + 1) * TN], Cl[0:1, 0:MC, 0:TN], 2)
            ib.call("tile.wait", 2)
    return ib.get()


def relu_kernel(n):
    ib = ir.IRBuilder("relu_i32")
    A = ib.buffer_param("A", (n,), "int32")
    B = ib.buffer_param("B", (n,), "int32")
    with ib.for_range(0, n, name="i") as i:
        B[i] = ir.Max(A[i], ir.const(0, "int32"))
    return ib.get()


def add_kernel(n):
    ib = ir.IRBuilder("add_i32")
    A = ib.buffer_param("A", (n,), "int32")
    B = ib.buffer_param("B", (n,), "int32")
    C = ib.buffer_param("C", (n,), "int32")
    with ib.for_range(0, n, name="i") as i:
        C[i] = A[i] + B[i]
    return ib.get()


_MODULES = {}


def modules():
    """The three compiled modules (built once per process)."""
    if not _MODULES:
        _MODULES["gemm"] = tilecore.build(gemm_i8_kernel(M, N, K, TN=32), target="npu -cores=4")
        _MODULES["relu"] = tilecore.build(relu_kernel(M * N), target="c")
        _MODULES["add"] = tilecore.build(add_kernel(M * N), target="npu -cores=1")
    return _MODULES


def weights(seed=3):
    rng = np.random.default_rng(seed)
    w = rng.integers(-128, 128, (K, N)).astype("int8")
    bias = rng.integers(-5000, 5000, (M, N)).astype("int32")
    return w, bias


def reference(x, w, bias):
    y = x.astype(np.int32) @ w.astype(np.int32)
    return np.maximum(y, 0) + bias


def build(y_offset=None, out_offset=None, w=None, bias=None):
    """The pipeline; `out_offset` defaults to y's offset (the reuse)."""
    mods = modules()
    if w is None:
        w, bias = weights()
    b = ExecutableBuilder(precision="int8")
    x = b.add_buffer("x", (M, K), "int8")
    wb = b.add_constant("w", w)
    bb = b.add_constant("bias", bias)
    y = b.add_buffer("y", (M, N), "int32", offset=y_offset)
    z = b.add_buffer("z", (M, N), "int32")
    out = b.add_buffer("out", (M, N), "int32", offset=b._buffers[y]["offset"] if out_offset is None else out_offset)
    b.add_input("x", x)
    b.add_output("out", out)
    b.add_step("npu", mods["gemm"], "gemm_i8", [x, wb, y], node="gemm0", op_type="MatMulInteger", macs=M * N * K,
               source_node="/layer/MatMul", debug={"layout": "row-major"})
    b.add_step("host", mods["relu"], "relu_i32", [y, z], node="relu0", op_type="Relu", source_node="/layer/Relu")
    b.add_step("npu", mods["add"], "add_i32", [z, bb, out], node="add0", op_type="Add", source_node="/layer/Add")
    return b.build()
