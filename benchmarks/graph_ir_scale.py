"""benchmarks/graph_ir_scale.py — the Graph IR on a long chain of nodes (Swin-T
exports about 6,000 nodes): build, print, JSON save and load, structural equality,
type inference and evaluation, median seconds over repeats, next to ONNX Runtime's
session creation for the same graph as an ONNX model (a peer that must also parse and
check the whole graph).

    python benchmarks/graph_ir_scale.py --nodes 20000 --repeat 3
"""
import argparse

import numpy as np
from timing import timed


def chain(n):
    from tilecore.ir.graph import GraphBuilder

    b = GraphBuilder()
    x = b.input("x", ("N", 4))
    v = x
    for i in range(n):
        (v,) = b.add("Relu" if i % 2 else "Neg", [v])
    b.output(v)
    return b.build()


def onnx_chain(n):
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu" if i % 2 else "Neg", [f"v{i}"], [f"v{i + 1}"], name=f"n{i}") for i in range(n)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("v0", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info(f"v{n}", TensorProto.FLOAT, ["N", 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import tilecore
    import tilecore.frontend as fe

    n, r = args.nodes, args.repeat
    t_build, g = timed(lambda: chain(n), r)
    t_print, _ = timed(lambda: g.text(), r)
    t_save, js = timed(lambda: tilecore.save_json(g), r)
    t_load, g2 = timed(lambda: tilecore.load_json(js), r)
    t_eq, same = timed(lambda: tilecore.structural_equal(g, g2), r)
    assert same
    model = onnx_chain(n)
    t_import, imported = timed(lambda: fe.from_onnx(model, input_shapes={"v0": (2, 4)}), r)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    t_eval, out = timed(lambda: fe.evaluate(imported, {"v0": x}), r)
    rows = [("build (Python builder)", t_build), ("print", t_print), ("save JSON", t_save), ("load JSON", t_load),
            ("structural_equal", t_eq), ("from_onnx (import + InferTypes + fold)", t_import), ("evaluate", t_eval)]
    try:
        import onnxruntime as ort

        bytes_ = model.SerializeToString()
        t_ort, _ = timed(lambda: ort.InferenceSession(bytes_, providers=["CPUExecutionProvider"]), r)
        rows.append(("onnxruntime.InferenceSession (peer)", t_ort))
    except ImportError:
        t_ort = None
    print(f"{n} chained nodes, median of {r}")
    for name, t in rows:
        print(f"  {name:42s} {t * 1e3:9.1f} ms")
    if t_ort:
        print(f"  from_onnx / onnxruntime session: {t_import / t_ort:.2f}x")


if __name__ == "__main__":
    main()
