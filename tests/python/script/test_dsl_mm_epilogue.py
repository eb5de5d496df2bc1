"""The matrix engine's fused epilogue from the DSL (``S.mm(..., bias=, scale=, zero_point=,
residual=, relu=, clamp=)``): PySim, the compiled kernels (c target, npu target) and a numpy
reference written here from docs/tc1.md, bit for bit.

The reference follows the table in docs/tc1.md ("Matrix engine"): int32 accumulator
(+ bias, wrapping) -> float32 -> x scale (per channel) -> + residual -> relu -> + zero
point -> clamp -> round half to even and saturate; every float32 step rounds once.
"""
import numpy as np
import pytest

import tilecore
from tilecore import script as S

F32_MAX = float(np.finfo(np.float32).max)


def reference(acc, out_dtype, bias=None, scale=1.0, zp=0, residual=None, relu=False, lo=-F32_MAX, hi=F32_MAX):
    """docs/tc1.md's epilogue, step by step, in numpy (independent of tilecore)."""
    x = acc.astype(np.int64)
    if bias is not None:
        x = x + bias.astype(np.int64)[None, :]
    x = ((x + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)  # int32 wraps
    v = x.astype(np.float32)                                   # nearest even
    s = np.asarray(scale, np.float32)
    v = (v * (s[None, :] if s.ndim else s)).astype(np.float32)
    if residual is not None:
        v = (v + residual.astype(np.float64).astype(np.float32)).astype(np.float32)
    if relu:
        v = np.maximum(v, np.float32(0))
    v = (v + np.float32(zp)).astype(np.float32)
    v = np.minimum(np.maximum(v, np.float32(lo)), np.float32(hi))
    info = np.iinfo(out_dtype)
    return np.clip(np.rint(v.astype(np.float64)), info.min, info.max).astype(out_dtype)  # rint: half to even


def im2col(x, kh, kw):
    """NHWC (N=1) int8 image -> [out_h * out_w, kh * kw * C] rows (stride 1, no padding)."""
    _, h, w, c = x.shape
    oh, ow = h - kh + 1, w - kw + 1
    cols = np.empty((oh * ow, kh * kw * c), x.dtype)
    for i in range(oh):
        for j in range(ow):
            cols[i * ow + j] = x[0, i:i + kh, j:j + kw, :].reshape(-1)
    return cols


M, K, N = 16, 72, 32  # a 6x6x8 image, 3x3 kernel, 32 output channels -> 4x4 outputs


@S.prim_func(num_cores=1)
def conv_requant(a: S.ptr("int8", "global"), w: S.ptr("int8", "global"), bias: S.ptr("int32", "global"),
                 scales: S.ptr("float32", "global"), out: S.ptr("int8", "global")):
    A = S.alloc_buffer((16, 72), "int8")
    W = S.alloc_buffer((72, 32), "int8")
    Bias = S.alloc_buffer((32,), "int32")
    Sc = S.alloc_buffer((32,), "float32")
    O = S.alloc_buffer((16, 32), "int8")
    S.dma_copy(A, S.view(a, (16, 72))[0:16, 0:72])
    S.dma_copy(W, S.view(w, (72, 32))[0:72, 0:32])
    S.dma_copy(Bias, bias, 32)
    S.dma_copy(Sc, scales, 32)
    S.mm(O, A, W, bias=Bias, scale=Sc, zero_point=-3, relu=True)
    S.dma_copy(S.view(out, (16, 32))[0:16, 0:32], O)


@S.prim_func(num_cores=1)
def conv_requant_residual(a: S.ptr("int8", "global"), w: S.ptr("int8", "global"), bias: S.ptr("int32", "global"),
                          scales: S.ptr("float32", "global"), res: S.ptr("int8", "global"),
                          out: S.ptr("int8", "global")):
    A = S.alloc_buffer((16, 72), "int8")
    W = S.alloc_buffer((72, 32), "int8")
    Bias = S.alloc_buffer((32,), "int32")
    Sc = S.alloc_buffer((32,), "float32")
    R = S.alloc_buffer((16, 32), "int8")
    O = S.alloc_buffer((16, 32), "int8")
    S.dma_copy(A, S.view(a, (16, 72))[0:16, 0:72])
    S.dma_copy(W, S.view(w, (72, 32))[0:72, 0:32])
    S.dma_copy(Bias, bias, 32)
    S.dma_copy(Sc, scales, 32)
    S.dma_copy(R, S.view(res, (16, 32))[0:16, 0:32])
    S.mm(O, A, W, bias=Bias, scale=Sc, zero_point=5, residual=R, relu=True, clamp=(-100.0, 110.0))
    S.dma_copy(S.view(out, (16, 32))[0:16, 0:32], O)


def conv_inputs(seed):
    rng = np.random.default_rng(seed)
    img = rng.integers(-128, 128, (1, 6, 6, 8)).astype(np.int8)
    wt = rng.integers(-128, 128, (3, 3, 8, N)).astype(np.int8)
    a = im2col(img, 3, 3)
    w = wt.reshape(K, N)
    bias = rng.integers(-20000, 20000, N).astype(np.int32)
    scales = (rng.random(N) * 0.002 + 0.0002).astype(np.float32)
    return a, w, bias, scales


def run(kernel, leg, args):
    if leg == "pysim":
        kernel(*args)
    else:
        tilecore.build(kernel, target=leg)[kernel.name](*args)


LEGS = ["pysim", "c", "npu"]


@pytest.mark.parametrize("leg", LEGS)
def test_conv_bias_per_channel_requant_relu(leg):
    a, w, bias, scales = conv_inputs(1)
    acc = a.astype(np.int64) @ w.astype(np.int64)
    want = reference(acc, np.int8, bias=bias, scale=scales, zp=-3, relu=True)
    # the data exercise what they should: saturation at both ends is possible, relu zeroes some
    assert (want == 127).any() and (want == -3).any() and len(np.unique(want)) > 50
    out = np.zeros((M, N), np.int8)
    run(conv_requant, leg, [a, w, bias, scales, out])
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("leg", LEGS)
def test_conv_requant_with_residual_add(leg):
    a, w, bias, scales = conv_inputs(2)
    res = np.random.default_rng(3).integers(-128, 128, (M, N)).astype(np.int8)
    acc = a.astype(np.int64) @ w.astype(np.int64)
    want = reference(acc, np.int8, bias=bias, scale=scales, zp=5, residual=res, relu=True, lo=-100.0, hi=110.0)
    assert (want == 110).any() and (want == 5).any()
    out = np.zeros((M, N), np.int8)
    run(conv_requant_residual, leg, [a, w, bias, scales, res, out])
    np.testing.assert_array_equal(out, want)


# Every combination on a small tile: bias x scale kind x residual x relu, int8 and int16 outputs
# (scale 0.5 on odd sums makes exact .5 ties, which round to even).
def make_combo(has_bias, scale_kind, has_res, relu, out_dtype):
    scalar = {"none": None, "scalar": 0.5, "channel": None}[scale_kind]
    per_channel = scale_kind == "channel"

    @S.prim_func(num_cores=1)
    def combo(a: S.ptr("int8", "global"), w: S.ptr("int8", "global"), bias: S.ptr("int32", "global"),
              scales: S.ptr("float32", "global"), res: S.ptr("int16", "global"), out: S.ptr(out_dtype, "global")):
        A = S.alloc_buffer((8, 12), "int8")
        W = S.alloc_buffer((12, 16), "int8")
        Bias = S.alloc_buffer((16,), "int32")
        Sc = S.alloc_buffer((16,), "float32")
        R = S.alloc_buffer((8, 16), "int16")
        O = S.alloc_buffer((8, 16), out_dtype)
        S.dma_copy(A, S.view(a, (8, 12))[0:8, 0:12])
        S.dma_copy(W, S.view(w, (12, 16))[0:12, 0:16])
        S.dma_copy(Bias, bias, 16)
        S.dma_copy(Sc, scales, 16)
        S.dma_copy(R, S.view(res, (8, 16))[0:8, 0:16])
        S.mm(O, A, W, bias=Bias if has_bias else None, scale=Sc if per_channel else scalar,
             residual=R if has_res else None, relu=relu, zero_point=1)
        S.dma_copy(S.view(out, (8, 16))[0:8, 0:16], O)

    return combo


COMBOS = [(b, s, r, relu, o) for b in (False, True) for s in ("none", "scalar", "channel") for r in (False, True)
          for relu in (False, True) for o in ("int8", "int16")]
# Compiled legs build one kernel per combination: a slice in which every option value occurs
# (the simulator's gtest covers the full product at the ISA level).
COMBOS_COMPILED = [(False, "none", False, False, "int8"), (True, "scalar", True, True, "int16"),
                   (True, "channel", False, True, "int8"), (False, "channel", True, False, "int16"),
                   (True, "none", True, False, "int8"), (False, "scalar", False, True, "int8"),
                   (True, "channel", True, True, "int8")]


@pytest.mark.parametrize("leg", LEGS)
def test_every_epilogue_combination(leg):
    rng = np.random.default_rng(4)
    a = rng.integers(-128, 128, (8, 12)).astype(np.int8)
    w = rng.integers(-128, 128, (12, 16)).astype(np.int8)
    bias = rng.integers(-3000, 3000, 16).astype(np.int32)
    scales = (rng.random(16) * 0.05 + 0.001).astype(np.float32)
    res = rng.integers(-300, 300, (8, 16)).astype(np.int16)
    acc = a.astype(np.int64) @ w.astype(np.int64)
    ties = 0
    for has_bias, scale_kind, has_res, relu, out_dtype in (COMBOS if leg == "pysim" else COMBOS_COMPILED):
        scale = {"none": 1.0, "scalar": 0.5, "channel": scales}[scale_kind]
        want = reference(acc, np.dtype(out_dtype), bias=bias if has_bias else None, scale=scale, zp=1,
                         residual=res if has_res else None, relu=relu)
        if scale_kind == "scalar":
            ties += int(((acc + (bias if has_bias else 0)) % 2 != 0).sum())
        out = np.zeros((8, 16), out_dtype)
        run(make_combo(has_bias, scale_kind, has_res, relu, out_dtype), leg, [a, w, bias, scales, res, out])
        np.testing.assert_array_equal(out, want, err_msg=f"{(has_bias, scale_kind, has_res, relu, out_dtype)}")
    assert ties > 0


def test_epilogue_errors_name_the_argument():
    @S.prim_func(num_cores=1)
    def bad_bias(out: S.ptr("int8", "global")):
        A = S.alloc_buffer((8, 12), "int8")
        W = S.alloc_buffer((12, 16), "int8")
        Bias = S.alloc_buffer((8,), "int32")
        O = S.alloc_buffer((8, 16), "int8")
        S.mm(O, A, W, bias=Bias)

    with pytest.raises(ValueError, match=r"mm: `bias` must be a \[16\] tile, got \[8\]"):
        tilecore.build(bad_bias, target="c")

    @S.prim_func(num_cores=1)
    def bad_acc(out: S.ptr("int8", "global")):
        A = S.alloc_buffer((8, 12), "int8")
        W = S.alloc_buffer((12, 16), "int8")
        O = S.alloc_buffer((8, 16), "int8")
        S.mm(O, A, W, True, relu=True)

    with pytest.raises(TypeError, match="accumulate must be False with an epilogue"):
        bad_acc(np.zeros((8, 16), np.int8))


def test_ir_checks_the_epilogue_block():
    from tilecore import ir

    ib = ir.IRBuilder("epi_checks")
    A = ib.allocate("int8", (8, 12), name="A", scope="local")
    W = ib.allocate("int8", (12, 16), name="W", scope="local")
    O = ib.allocate("int8", (8, 16), name="O", scope="local")
    Bf = ib.allocate("float32", (16,), name="Bf", scope="local")
    Sc = ib.allocate("int32", (16,), name="Sc", scope="local")
    zero = ir.const(0, "int32")
    f32 = lambda v: ir.const(v, "float32")  # noqa: E731
    ok = [O[0:8, 0:16], A[0:8, 0:12], W[0:12, 0:16], ir.const(False, "bool"), zero, f32(0.5), zero, zero,
          ir.StringImm("relu"), f32(-128.0), f32(127.0)]
    ir.call("tile.mm", *ok)  # the full block is accepted
    with pytest.raises(TypeError, match="expected 4 or 11 arguments, got 6"):
        ir.call("tile.mm", *ok[:6])
    with pytest.raises(TypeError, match="bias must be int32"):
        ir.call("tile.mm", *ok[:4], Bf[0:16], *ok[5:])
    with pytest.raises(TypeError, match="per-channel scale must be float32"):
        ir.call("tile.mm", *ok[:5], Sc[0:16], *ok[6:])
    with pytest.raises(ValueError, match='act must be "none" or "relu"'):
        ir.call("tile.mm", *ok[:8], ir.StringImm("gelu"), *ok[9:])
    ir.call("tile.mm", *ok[:3], ir.const(True, "bool"), *ok[4:])  # from the sums stored at O
    with pytest.raises(TypeError, match="accumulate must be a constant with an epilogue"):
        ir.call("tile.mm", *ok[:3], ir.Var("acc", "bool"), *ok[4:])
    with pytest.raises(TypeError, match=r"argument 4 \(bias\) must be region or 0"):
        ir.call("tile.mm", *ok[:4], ir.const(3, "int32"), *ok[5:])
