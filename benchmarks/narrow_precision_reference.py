"""An independent reference for the f16/bf16 accuracy of the zoo: the same ONNX model run by
ONNX Runtime with the narrow operands emulated in the graph, next to tilecore's compiled run.

    PYTHONPATH=python:build-dev/python python benchmarks/narrow_precision_reference.py
        [--models resnet50,mobilenet_v2] [--precision bf16,f16] [--eval 8] [--no-tilecore] [--keep-f32 NODES]

The emulation is what TC1 computes in f16/bf16 (docs/precision.md): BatchNormalization
folded into the Conv before it (f64, then f32), the weights of every Conv (depthwise too),
MatMul and Gemm rounded to the narrow type (nearest even, ml_dtypes), the data inputs of
those ops rounded by an ONNX Cast to the narrow type and back (ONNX Runtime's Cast rounds
to nearest even), everything computed in f32 by ONNX Runtime with its graph optimisations
off (so that nothing removes the casts). Output: the lowest cosine over --eval samples
(zoo.sample_inputs seed 1) against ONNX Runtime f32 on the original model, for the
emulation and for tilecore's compilation in the same precision (the gate's figure of
benchmarks/model_zoo.py). When the two agree, the error is what the precision costs on this
model, not a defect of the compiler.

--keep-f32 takes a comma list of ONNX node names left in f32 in the emulation. tilecore is
compiled without calibration samples (no bias correction), as the emulation does not
correct its biases either.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NARROW_ONNX = {"bf16": TensorProto.BFLOAT16, "f16": TensorProto.FLOAT16}


def _narrow(a, precision):
    import ml_dtypes

    t = ml_dtypes.bfloat16 if precision == "bf16" else np.float16
    return np.asarray(a, np.float32).astype(t).astype(np.float32)


def fold_batchnorm(model):
    """Conv -> BatchNormalization (the Conv's output read by the BN only) folded into the Conv."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    readers = {}
    for nd in g.node:
        for i in nd.input:
            readers.setdefault(i, []).append(nd)
    producer = {o: nd for nd in g.node for o in nd.output}
    drop = []
    for bn in g.node:
        if bn.op_type != "BatchNormalization":
            continue
        conv = producer.get(bn.input[0])
        if conv is None or conv.op_type != "Conv" or len(readers.get(bn.input[0], [])) != 1:
            continue
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        scale, beta, mean, var = (numpy_helper.to_array(inits[n]).astype(np.float64) for n in bn.input[1:5])
        w = numpy_helper.to_array(inits[conv.input[1]]).astype(np.float64)
        b = numpy_helper.to_array(inits[conv.input[2]]).astype(np.float64) if len(conv.input) > 2 and conv.input[2] \
            else np.zeros(w.shape[0])
        k = scale / np.sqrt(var + eps)
        w = (w * k.reshape(-1, *[1] * (w.ndim - 1))).astype(np.float32)
        b = ((b - mean) * k + beta).astype(np.float32)
        wn, bn_name = conv.input[1] + "/folded", conv.output[0] + "/folded_bias"
        g.initializer.extend([numpy_helper.from_array(w, wn), numpy_helper.from_array(b, bn_name)])
        data = conv.input[0]
        del conv.input[:]
        conv.input.extend([data, wn, bn_name])
        conv.output[0] = bn.output[0]
        drop.append(bn)
    for nd in drop:
        g.node.remove(nd)
    return model


def emulate(model, precision, keep_f32=()):
    """The model with the narrow operands of each matrix op emulated (see the module doc)."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    new_nodes = []
    for nd in g.node:
        op = nd.op_type
        narrow = op in ("Conv", "MatMul", "Gemm", "ConvTranspose") and nd.name not in keep_f32
        if narrow:
            for pos in (0, 1):
                name = nd.input[pos]
                if name in inits:
                    a = _narrow(numpy_helper.to_array(inits[name]), precision)
                    nn = f"{name}/{precision}/{nd.name}"
                    g.initializer.append(numpy_helper.from_array(a, nn))
                    inits[nn] = g.initializer[-1]
                    nd.input[pos] = nn
                else:
                    t = f"{name}/{precision}_cast/{nd.name}"
                    new_nodes += [helper.make_node("Cast", [name], [t + "_n"], to=NARROW_ONNX[precision]),
                                  helper.make_node("Cast", [t + "_n"], [t], to=TensorProto.FLOAT)]
                    nd.input[pos] = t
        new_nodes.append(nd)
    del g.node[:]
    g.node.extend(new_nodes)
    return model


def main():
    import onnxruntime as ort

    from tilecore import zoo
    from tilecore.compiler.compare import metrics

    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet18,resnet50,mobilenet_v2,bert_layer,yolo_like")
    ap.add_argument("--precision", default="bf16,f16")
    ap.add_argument("--eval", type=int, default=8)
    ap.add_argument("--no-tilecore", action="store_true", help="the emulation only")
    ap.add_argument("--keep-f32", default="", help="comma list of node names kept f32 in the emulation")
    a = ap.parse_args()
    keep = {s for s in a.keep_f32.split(",") if s}
    print(f"{'model':<14} {'prec':>4} {'emulation':>10} {'tilecore':>10}")
    for name in a.models.split(","):
        path = zoo.export(name)
        ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        outs = [o.name for o in ref.get_outputs()]
        ev = zoo.sample_inputs(name, a.eval, seed=1)
        feeds = [{k: v[i] for k, v in ev.items()} for i in range(a.eval)]
        want = [ref.run(outs, f) for f in feeds]
        for prec in a.precision.split(","):
            m = onnx.load(path)
            m = emulate(fold_batchnorm(m), prec, keep)
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            so.log_severity_level = 3  # the replaced initializers are left unused
            emu = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
            cos_e = min(metrics(g, w)["cosine"] for f, ws in zip(feeds, want) for g, w in zip(emu.run(outs, f), ws))
            cos_t = float("nan")
            if not a.no_tilecore:
                import tilecore

                exe = tilecore.compile(path, precision=prec)
                cos_t = min(metrics(exe.run(f)[n], w)["cosine"] for f, ws in zip(feeds, want) for n, w in zip(outs, ws))
            print(f"{name:<14} {prec:>4} {cos_e:>10.7f} {cos_t:>10.7f}", flush=True)


if __name__ == "__main__":
    main()
