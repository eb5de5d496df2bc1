"""Copy-shaped op strategies (layout, gather, resize) and ConvTranspose: simulated
cycles of representative shapes lowered by ``compiler.LowerOp`` for 4 TC1 cores,
with the output bytes per cycle (the DMA engines move 64 B/cycle each) and, for
ConvTranspose, the MAC utilisation (f32: 256 MAC/cycle/core).

    PYTHONPATH=python:<build>/python python benchmarks/layout_strategies.py
"""
import sys
import time

import numpy as np

import tilecore
from tilecore import compiler
from tilecore.ir import ops

F = np.float32
COMPILE_TIME = {"starts", "ends", "axes", "steps", "pads", "scales", "sizes"}
# label, op, attrs (with the compile-time values), data inputs, compile-time inputs (for the reference)
CASES = [
    ("Concat 2x(1,128,40,40) axis 1", "Concat", {"axis": 1}, [(1, 128, 40, 40), (1, 128, 40, 40)], []),
    ("Transpose (1,3,85,20,20) -> (0,1,3,4,2)", "Transpose", {"perm": [0, 1, 3, 4, 2]}, [(1, 3, 85, 20, 20)], []),
    ("Slice (1,32,160,160) [::2, ::2]", "Slice", {"starts": [0, 0], "ends": [160, 160], "axes": [2, 3],
                                                  "steps": [2, 2]}, [(1, 32, 160, 160)],
     [np.array([0, 0]), np.array([160, 160]), np.array([2, 3]), np.array([2, 2])]),
    ("Pad reflect (1,64,56,56) by 1", "Pad", {"mode": "reflect", "pads": [0, 0, 1, 1, 0, 0, 1, 1]},
     [(1, 64, 56, 56)], [np.array([0, 0, 1, 1, 0, 0, 1, 1])]),
    ("Gather 128 rows of (8192,768)", "Gather", {"axis": 0}, [(8192, 768), "ids"], []),
    ("Resize nearest x2 (1,128,40,40)", "Resize", {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                                   "nearest_mode": "floor", "scales": [1.0, 1.0, 2.0, 2.0]},
     [(1, 128, 40, 40)], [np.zeros(0, F), np.array([1, 1, 2, 2], F)]),
    ("Resize linear x2 (1,64,40,40)", "Resize", {"mode": "linear", "scales": [1.0, 1.0, 2.0, 2.0]},
     [(1, 64, 40, 40)], [np.zeros(0, F), np.array([1, 1, 2, 2], F)]),
    ("ConvTranspose 2x2 s2 (1,128,32,32)->64", "ConvTranspose", {"strides": [2, 2]},
     [(1, 128, 32, 32), (128, 64, 2, 2)], []),
    ("ConvTranspose 3x3 s2 p1 op1 (1,64,28,28)->64", "ConvTranspose",
     {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}, [(1, 64, 28, 28), (64, 64, 3, 3)], []),
]


def main():
    cores = 4
    tilecore.runtime.npu_configure(0, "npu -cores=4 -ddr=256MiB")
    rng = np.random.default_rng(0)
    ok = True
    for label, op, attrs, shapes, consts in CASES:
        inputs = []
        for s in shapes:
            if s == "ids":
                inputs.append(rng.integers(0, 8192, (128,)).astype(np.int32))
            else:
                inputs.append(rng.uniform(-1, 1, s).astype(F))
        schema = ops.get_op(op)
        # the reference takes the compile-time values as inputs
        ref_attrs = {k: v for k, v in attrs.items() if not consts or k not in COMPILE_TIME}
        ref = np.asarray(schema.reference(schema.fill_attrs(ref_attrs), *inputs, *consts))
        out = np.zeros(ref.shape, ref.dtype)
        specs = [compiler.TensorSpec(x.shape, x.dtype) for x in inputs + [np.asarray(c) for c in consts]]
        t = time.perf_counter()
        f = compiler.LowerOp(op, attrs, specs, [compiler.TensorSpec(out.shape, out.dtype)], f"npu -cores={cores}")
        mod = tilecore.build(f, target=f"npu -cores={cores}")
        compile_s = time.perf_counter() - t
        mod[f.attrs["global_symbol"]](*inputs, out)
        st = tilecore.runtime.npu_simulator(0).stats()
        err = float(np.abs(out.astype(np.float64) - ref).max())
        ok = ok and err < 1e-3
        extra = ""
        if op == "ConvTranspose":
            w = shapes[1]
            m = int(np.prod(shapes[0])) * int(np.prod(w[1:]))
            extra = f"  MAC util {m / (st['cycles'] * cores * 256):6.1%}"
        print(f"{label:46s} {st['cycles']:>9d} cycles  {out.nbytes / st['cycles']:6.1f} B/cycle{extra}  "
              f"max err {err:.1e}  compile {compile_s * 1e3:5.0f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
