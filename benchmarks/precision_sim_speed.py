"""Simulator speed and simulated cycles of the matrix ops per precision (docs/precision.md).

    PYTHONPATH=python:build-dev/python python benchmarks/precision_sim_speed.py [--runs 5]

For a MatMul 512x512x512 and a ResNet-style 3x3 Conv (64 channels, 56x56), compiled with
tilecore.compile in f32, f16, bf16 and int8: the simulated cycles, and the host wall time
of one simulated run (median of --runs after a warm-up) with its ratio to f32's.
"""
import argparse
import statistics

import numpy as np
from onnx import TensorProto, helper


def model(kind):
    rng = np.random.default_rng(0)
    if kind == "matmul":
        w = rng.standard_normal((512, 512)).astype(np.float32) * 0.05
        node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
        shape = [512, 512]
    else:
        w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32) * 0.05
        node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
        shape = [1, 64, 56, 56]
    g = helper.make_graph([node], kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel())])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), shape


def main():
    import tilecore

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    print(f"{'op':<8} {'precision':>9} {'cycles':>10} {'run ms':>8} {'vs f32':>7}")
    for kind in ("matmul", "conv"):
        m, shape = model(kind)
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        base = None
        for p in ("f32", "f16", "bf16", "int8"):
            exe = tilecore.compile(m, precision=p, calib={"x": float(np.abs(x).max())})
            exe.run({"x": x})
            times = []
            for _ in range(a.runs):
                exe.run({"x": x})
                times.append(exe.stats()["wall_seconds"])
            t = statistics.median(times)
            base = t if base is None else base
            print(f"{kind:<8} {p:>9} {exe.stats()['cycles']:>10} {t * 1e3:>8.1f} {t / base:>6.2f}x", flush=True)


if __name__ == "__main__":
    main()
