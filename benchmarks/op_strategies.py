"""Op strategies: simulated cycles, MAC utilisation and the vector engine's busy share
of a few representative ops lowered by ``compiler.LowerOp`` for 4 TC1 cores (f32: 256
MAC/cycle/core).

    PYTHONPATH=python:<build>/python python benchmarks/op_strategies.py
"""
import sys
import time

import numpy as np

import tilecore
from tilecore import compiler
from tilecore.ir import ops

CASES = [
    ("MatMul 512x512x512", "MatMul", {}, [(512, 512), (512, 512)]),
    ("Gemm 256x1024x1000 transB + bias", "Gemm", {"transB": 1}, [(256, 1024), (1000, 1024), (1000,)]),
    ("Conv ResNet 3x3 56x56x64", "Conv", {"pads": [1, 1, 1, 1]}, [(1, 64, 56, 56), (64, 64, 3, 3), (64,)]),
    ("Conv 1x1 28x28 128->512", "Conv", {}, [(1, 128, 28, 28), (512, 128, 1, 1), (512,)]),
    ("Add 1x64x56x56", "Add", {}, [(1, 64, 56, 56), (1, 64, 56, 56)]),
    ("Sigmoid 1x64x56x56", "Sigmoid", {}, [(1, 64, 56, 56)]),
    ("MaxPool ResNet stem 3x3/2 64x112x112", "MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2],
                                                          "pads": [1, 1, 1, 1]}, [(1, 64, 112, 112)]),
    ("AveragePool 3x3 pad 1 64x56x56", "AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
     [(1, 64, 56, 56)]),
    ("GlobalAveragePool ResNet-50 2048x7x7", "GlobalAveragePool", {}, [(1, 2048, 7, 7)]),
    ("Softmax BERT 4x128x128", "Softmax", {"axis": -1}, [(1, 4, 128, 128)]),
    ("LayerNormalization 384x768", "LayerNormalization", {"epsilon": 1e-12}, [(1, 384, 768), (768,), (768,)]),
    ("ReduceMean 64x56x56 over H, W", "ReduceMean", {"axes": [2, 3], "_opset": 13}, [(1, 64, 56, 56)]),
    ("BatchNormalization 96x112x112", "BatchNormalization", {}, [(1, 96, 112, 112)] + [(96,)] * 4),
]


def macs(op, shapes, out):
    if op == "MatMul":
        return shapes[0][0] * shapes[0][1] * shapes[1][1]
    if op == "Gemm":
        return shapes[0][0] * shapes[0][1] * shapes[1][0]
    if op == "Conv":
        w = shapes[1]
        return int(np.prod(out.shape)) * int(np.prod(w[1:]))
    return 0


def main():
    cores = 4
    tilecore.runtime.npu_configure(0, "npu -cores=4 -ddr=256MiB")
    rng = np.random.default_rng(0)
    ok = True
    for label, op, attrs, shapes in CASES:
        inputs = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
        if op == "BatchNormalization":  # a positive variance
            inputs[4] = np.abs(inputs[4]) + 0.1
        ref = ops.get_op(op).reference(ops.get_op(op).fill_attrs(dict(attrs)), *inputs)
        ref = np.asarray(ref[0] if isinstance(ref, tuple) else ref)  # MaxPool's Indices, LayerNorm's statistics
        out = np.zeros(ref.shape, np.float32)
        t = time.perf_counter()
        f = compiler.LowerOp(op, attrs, inputs, [out], f"npu -cores={cores}")
        mod = tilecore.build(f, target=f"npu -cores={cores}")
        compile_s = time.perf_counter() - t
        mod[f.attrs["global_symbol"]](*inputs, out)
        st = tilecore.runtime.npu_simulator(0).stats()
        err = float(np.abs(out - ref).max())
        ok = ok and err < 1e-3
        m = macs(op, shapes, out)
        util = m / (st["cycles"] * cores * 256) if m else 0.0
        vec = sum(c["vec"]["busy"] for c in st["cores"]) / (st["cycles"] * cores)
        print(f"{label:38s} {st['cycles']:>10d} cycles  MAC util {util:6.1%}  vec busy {vec:6.1%}  max err {err:.2e}  "
              f"compile {compile_s * 1e3:6.0f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
