"""benchmarks/mm_epilogue.py — the matrix engine's fused epilogue against a separate
vector-engine pass, in simulated TC1 cycles.

The kernel: an int8 convolution written as a GEMM over im2col rows (M output pixels x
K = kh*kw*Cin, times K x N weights), then bias + per-output-channel requantisation +
ReLU to int8 — optionally with an int8 residual added before the ReLU. One core:
DMA A, W, bias, scales (and the residual) from DDR into L1, compute, DMA the int8
result back.

- fused:   one `mm` with the epilogue (bias, scales=, zp, relu[, res=]): the int32
           accumulator never reaches L1.
- unfused: `mm` to an int32 tile, then the vector engine: tadd (bias, broadcast),
           tcvt to f32, tmul (scales, broadcast)[, tcvt + tadd of the residual],
           trelu, tadds (zero point), tcvt to int8 — the same numerics (docs/tc1.md).
- compiled: the fused kernel written in the DSL (S.mm(..., bias=, scale=, ...)) and
           compiled for npu (when the npu code generator emits the epilogue).

All results are checked bit for bit against numpy. Figures: cycles of each, and the
ratio unfused / fused.

    PYTHONPATH=python:<build>/python python benchmarks/mm_epilogue.py [--m 256] [--k 288] [--n 64]
"""
import argparse
import sys

import numpy as np

import tilecore
from tilecore import script as S

A_L1, W_L1, BIAS_L1, SC_L1, C_L1, F_L1, O_L1, R_L1, RF_L1 = (0x00000, 0x20000, 0x30000, 0x30400, 0x40000,
                                                            0x80000, 0x60000, 0x70000, 0xC0000)
A_DDR, W_DDR, BIAS_DDR, SC_DDR, R_DDR, O_DDR = 0x100000, 0x200000, 0x300000, 0x301000, 0x400000, 0x500000
ZP = -3


def program(m, k, n, fused, residual):
    d = f"""
.data l1, 0xF0000
dA: .dmadesc dtype=i8 shape=[{m}, {k}]
dW: .dmadesc dtype=i8 shape=[{k}, {n}]
dB: .dmadesc dtype=i32 shape=[{n}]
dS: .dmadesc dtype=f32 shape=[{n}]
dR: .dmadesc dtype=i8 shape=[{m}, {n}]
dO: .dmadesc dtype=i8 shape=[{m}, {n}]
mF: .mmdesc m={m} n={n} k={k} out=i8 bias={BIAS_L1} scales={SC_L1} zp={ZP} act=relu""" + (
        f" res={R_L1} res_dtype=i8" if residual else "") + f"""
mU: .mmdesc m={m} n={n} k={k}
vBc: .vecdesc shape=[{m}, {n}] b_stride=[0, 1]
vEw: .vecdesc shape=[{m}, {n}]
vZp: .vecdesc shape=[{m}, {n}] scalar={ZP}
.text
        li x1, {A_L1}
        li x2, {A_DDR}
        dma.in l1:x1, ddr:x2, [x0 + dA]
        li x3, {W_L1}
        li x4, {W_DDR}
        dma.in l1:x3, ddr:x4, [x0 + dW]
        li x5, {BIAS_L1}
        li x6, {BIAS_DDR}
        dma.in l1:x5, ddr:x6, [x0 + dB]
        li x7, {SC_L1}
        li x8, {SC_DDR}
        dma.in l1:x7, ddr:x8, [x0 + dS]
        li x9, {R_L1}
        li x10, {R_DDR}
"""
    ndma = 4
    if residual:
        d += "        dma.in l1:x9, ddr:x10, [x0 + dR]\n"
        ndma = 5
    d += f"""        li x11, {O_L1}
        li x12, {C_L1}
        li x13, {F_L1}
        li x14, {RF_L1}
        li x15, {O_DDR}
        wait mm, din, {ndma}
"""
    if fused:
        d += """        mm.i8 x11, x1, x3, [x0 + mF]
        wait dout, mm, 1
"""
        nvec = 0
    else:
        d += """        mm.i8 x12, x1, x3, [x0 + mU]
        wait vec, mm, 1
        tadd.i32 x12, x12, x5, [x0 + vBc]
        tcvt.f32.i32 x13, x12, [x0 + vEw]
        tmul.f32 x13, x13, x7, [x0 + vBc]
"""
        nvec = 3
        if residual:
            d += """        tcvt.f32.i8 x14, x9, [x0 + vEw]
        tadd.f32 x13, x13, x14, [x0 + vEw]
"""
            nvec += 2
        d += """        trelu.f32 x13, x13, [x0 + vEw]
        tadds.f32 x13, x13, [x0 + vZp]
        tcvt.i8.f32 x11, x13, [x0 + vEw]
"""
        nvec += 3
        d += f"        wait dout, vec, {nvec}\n"
    d += """        dma.out ddr:x15, l1:x11, [x0 + dO]
        wait sc, dout, 1
        halt
"""
    return d


def reference(a, w, bias, scales, res):
    """docs/tc1.md's epilogue in numpy: wrap to int32, f32 steps rounded once, rint = half to even."""
    acc = (a.astype(np.int64) @ w.astype(np.int64) + bias.astype(np.int64)).astype(np.int32)
    v = acc.astype(np.float32) * scales[None, :]
    if res is not None:
        v = (v + res.astype(np.float32)).astype(np.float32)
    v = (np.maximum(v, np.float32(0)) + np.float32(ZP)).astype(np.float32)
    return np.clip(np.rint(v.astype(np.float64)), -128, 127).astype(np.int8)


def run_asm(m, k, n, fused, residual, inputs):
    a, w, bias, scales, res = inputs
    sim = tilecore.sim.Simulator(target="npu -cores=1")
    sim.write("ddr", A_DDR, a)
    sim.write("ddr", W_DDR, w)
    sim.write("ddr", BIAS_DDR, bias)
    sim.write("ddr", SC_DDR, scales)
    if res is not None:
        sim.write("ddr", R_DDR, res)
    sim.load(program(m, k, n, fused, residual))
    sim.run()
    out = sim.read("ddr", O_DDR, (m, n), "int8")
    return out, sim.stats()


def compiled_kernel(m, k, n):
    @S.prim_func(num_cores=1)
    def conv_epilogue(a: S.ptr("int8", "global"), w: S.ptr("int8", "global"), bias: S.ptr("int32", "global"),
                      scales: S.ptr("float32", "global"), out: S.ptr("int8", "global")):
        A = S.alloc_buffer((m, k), "int8")
        W = S.alloc_buffer((k, n), "int8")
        Bias = S.alloc_buffer((n,), "int32")
        Sc = S.alloc_buffer((n,), "float32")
        O = S.alloc_buffer((m, n), "int8")
        S.dma_copy(A, S.view(a, (m, k))[0:m, 0:k])
        S.dma_copy(W, S.view(w, (k, n))[0:k, 0:n])
        S.dma_copy(Bias, bias, n)
        S.dma_copy(Sc, scales, n)
        S.mm(O, A, W, bias=Bias, scale=Sc, zero_point=ZP, relu=True)
        S.dma_copy(S.view(out, (m, n))[0:m, 0:n], O)

    return conv_epilogue


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--m", type=int, default=256, help="output pixels (im2col rows)")
    p.add_argument("--k", type=int, default=288, help="kh * kw * Cin (3 x 3 x 32)")
    p.add_argument("--n", type=int, default=64, help="output channels")
    args = p.parse_args()
    m, k, n = args.m, args.k, args.n
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    w = rng.integers(-128, 128, (k, n)).astype(np.int8)
    bias = rng.integers(-20000, 20000, n).astype(np.int32)
    scales = (rng.random(n) * 0.002 + 0.0002).astype(np.float32)
    res = rng.integers(-128, 128, (m, n)).astype(np.int8)
    ok = True
    print(f"int8 conv-like GEMM {m} x {k} x {n}, bias + per-channel requant + relu, one TC1 core")
    for residual in (False, True):
        want = reference(a, w, bias, scales, res if residual else None)
        cycles = {}
        for fused in (True, False):
            out, st = run_asm(m, k, n, fused, residual, (a, w, bias, scales, res if residual else None))
            good = np.array_equal(out, want)
            ok &= good
            cycles[fused] = st["cycles"]
            print(f"  {'with residual, ' if residual else ''}{'fused epilogue  ' if fused else 'separate vector pass'}:"
                  f" {st['cycles']:7d} cycles, vec commands {st['cores'][0]['vec']['commands']}, "
                  f"result {'bit-exact' if good else 'WRONG'}")
        print(f"  -> separate / fused = {cycles[False] / cycles[True]:.3f}")
    try:
        kern = compiled_kernel(m, k, n)
        mod = tilecore.build(kern, target="npu -cores=1")
        tilecore.runtime.npu_configure(0, "npu -cores=1 -ddr=256MiB")
        out = np.zeros((m, n), np.int8)
        mod[kern.name](a, w, bias, scales, out)
        st = tilecore.runtime.npu_simulator(0).stats()
        good = np.array_equal(out, reference(a, w, bias, scales, None))
        ok &= good
        print(f"  compiled DSL kernel (S.mm with epilogue, npu): {st['cycles']:7d} cycles, "
              f"result {'bit-exact' if good else 'WRONG'}")
    except Exception as e:  # noqa: BLE001 — report, the assembly figures stand on their own
        print(f"  compiled DSL kernel: not available ({type(e).__name__}: {str(e).splitlines()[0]})")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
