"""MAC utilisation of an ONNX MatMul (constant B) compiled by the model compiler, next to the
hand-written int8 GEMM kernel (benchmarks/kernel_gemm.py) measured in the same run.

    PYTHONPATH=python:build-dev/python python benchmarks/matmul_utilisation.py
        [--shapes 1024x1024x1024,128x768x768,128x768x3072] [--precision qlinear,int8,f16,f32]
        [--calib 2]

Per shape (M x K x N) and precision: simulated cycles of the MatMul step, MAC utilisation
against the precision's peak on 4 cores (int8 2048, f16 1024, f32 256 MACs/cycle/core),
the cost model's estimate (compiler.estimate_cost) beside the simulated cycles, the step's
DDR bytes against the lower bound (A, B and Y moved once), the ceiling that lower bound
puts on the utilisation (the DDR moves 64 B/cycle for all cores: MAC cycles at peak over
the larger of those and the lower bound's DDR cycles) and the cosine of the output
against numpy's f32 product. The hand-written kernel's figure uses int8 A and B in the
DDR and an int32 C, the model's int8 MatMul an f32 A and Y (quantised on load,
dequantised in the epilogue), so its DDR lower bound is higher. `qlinear` is an ONNX
QLinearMatMul with int8 A and Y (its input and output): A is read as it is and Y
requantised in the epilogue, so A, B and Y cross the DDR in int8; its cosine is against
ONNX Runtime's run of the same model, and `exact` is the share of outputs equal to it.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python", "codegen"))

PEAK = {"qlinear": 2048, "int8": 2048, "f16": 1024, "bf16": 1024, "f32": 256}


def matmul_model(m, k, n, seed=0):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                          [numpy_helper.from_array(w, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString(), w


def qlinear_model(m, k, n, seed=0):
    """An ONNX QLinearMatMul: int8 x [m, k] in, int8 y [m, n] out, int8 weights."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    consts = {"xs": np.float32(0.02), "xz": np.int8(0), "w": rng.integers(-127, 128, (k, n), dtype=np.int8),
              "ws": np.float32(0.01), "wz": np.int8(0), "ys": np.float32(0.02 * 0.01 * np.sqrt(k) * 40),
              "yz": np.int8(0)}
    node = helper.make_node("QLinearMatMul", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="mm")
    g = helper.make_graph([node], "mm", [helper.make_tensor_value_info("x", TensorProto.INT8, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.INT8, [m, n])],
                          [numpy_helper.from_array(np.asarray(v), name) for name, v in consts.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def run_matmul(m, k, n, precision, n_calib):
    import tilecore
    from tilecore.compiler import estimate_cost

    rng = np.random.default_rng(1)
    kw = {}
    if precision == "qlinear":
        import onnxruntime as ort

        model = qlinear_model(m, k, n)
        x = rng.integers(-128, 128, (m, k), dtype=np.int8)
        ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    else:
        model, w = matmul_model(m, k, n)
        x = rng.standard_normal((m, k)).astype(np.float32)
        ref = x @ w
        if precision == "int8":
            kw["calib_samples"] = {"x": rng.standard_normal((n_calib, m, k)).astype(np.float32)}
    report = {}
    # a quantised model runs int8 with its own scales whatever the precision of float nodes
    exe = tilecore.compile(model, precision="f32" if precision == "qlinear" else precision, report=report,
                           **kw)
    y = exe.run({"x": x})["y"]
    st = exe.stats()
    op = [o for o in st["ops"] if o["where"] == "npu"][0]
    est = estimate_cost(report["npu_funcs"][op["node"]])
    exact = f"{np.mean(y == ref):.1%}" if precision == "qlinear" else "-"
    y, ref = y.astype(np.float64), ref.astype(np.float64)
    cos = float(np.dot(y.ravel(), ref.ravel()) / (np.linalg.norm(y) * np.linalg.norm(ref)))
    ddr = op["bytes"]["ddr_read"] + op["bytes"]["ddr_written"]
    io = 1 if precision == "qlinear" else 4
    wbytes = 1 if precision in ("int8", "qlinear") else 2 if precision in ("f16", "bf16") else 4
    lower = m * k * io + k * n * wbytes + m * n * io
    mac_cycles = m * k * n / (4 * PEAK[precision])
    return {"cycles": op["cycles"], "util": mac_cycles / op["cycles"], "est": est["cycles"], "ddr": ddr,
            "ddr_lower": lower, "ceiling": mac_cycles / max(mac_cycles, lower / 64), "cos": cos, "exact": exact}


def hand_written(n):
    import tilecore
    from test_npu_kernels import gemm_i8_kernel

    tilecore.runtime.npu_configure(0, "npu -cores=4 -ddr=256MiB")
    mod = tilecore.build(gemm_i8_kernel(n, n, n, 128), target="npu -cores=4")
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (n, n), dtype=np.int8)
    b = rng.integers(-128, 128, (n, n), dtype=np.int8)
    c = np.zeros((n, n), np.int32)
    mod["gemm_i8"](a, b, c)
    assert np.array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
    cycles = tilecore.runtime.npu_simulator(0).stats()["cycles"]
    return cycles, n * n * n / (cycles * 4 * 2048)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="1024x1024x1024,128x768x768,128x768x3072")
    ap.add_argument("--precision", default="qlinear,int8,f16,f32")
    ap.add_argument("--calib", type=int, default=2)
    a = ap.parse_args()
    cycles, util = hand_written(1024)
    print(f"hand-written int8 GEMM 1024x1024x1024 (benchmarks/kernel_gemm.py): {cycles} cycles, "
          f"MAC utilisation {util:.1%}")
    print(f"{'M x K x N':<16} {'prec':>7} {'cycles':>10} {'MAC util':>8} {'estimate':>10} {'est/sim':>7} "
          f"{'DDR MiB':>8} {'lower MiB':>9} {'ceiling':>7} {'cosine':>9} {'exact':>6}")
    for shape in a.shapes.split(","):
        m, k, n = (int(v) for v in shape.split("x"))
        for prec in a.precision.split(","):
            r = run_matmul(m, k, n, prec, a.calib)
            print(f"{shape:<16} {prec:>7} {r['cycles']:>10} {r['util']:>7.1%} {r['est']:>10} "
                  f"{r['est'] / r['cycles']:>7.3f} {r['ddr'] / 2**20:>8.2f} {r['ddr_lower'] / 2**20:>9.2f} "
                  f"{r['ceiling']:>6.1%} {r['cos']:>9.6f} {r['exact']:>6}", flush=True)


if __name__ == "__main__":
    main()
