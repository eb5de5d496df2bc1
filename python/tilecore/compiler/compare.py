"""Every named tensor of a compiled model next to ONNX Runtime's (``tilecore compare``).

    report = compare_with_onnxruntime("model.onnx", {"input": x})
    report["first_divergent"]        # None, or the first value (topological order) below the threshold
    report["tensors"]                # per value: name, node, op_type, cosine, max_abs_error, sqnr_db

The model is compiled with ``keep_intermediates=True`` (every value its own buffer and an
extra output), run on the simulator, and run by ONNX Runtime with every intermediate
value added as a graph output. Values the graph passes removed (a Conv's output before
the BatchNorm folded into it, say) have no tilecore counterpart and are listed as
``not_compared``.
"""
import time

import numpy as np

# Below these cosines a tensor has diverged, per precision.
THRESHOLDS = {"f32": 0.999}


def metrics(ours, ref):
    """cosine, max abs error and SQNR (dB) of ``ours`` against ``ref`` (in float64)."""
    a = np.asarray(ours, dtype=np.float64).ravel()
    r = np.asarray(ref, dtype=np.float64).ravel()
    if a.shape != r.shape:
        return {"cosine": float("nan"), "max_abs_error": float("inf"), "sqnr_db": float("-inf"),
                "shape_mismatch": True}
    err = a - r
    na, nr = np.linalg.norm(a), np.linalg.norm(r)
    if na == 0 and nr == 0:
        cos = 1.0
    elif na == 0 or nr == 0:
        cos = 0.0
    else:
        cos = float(np.dot(a, r) / (na * nr))
    noise = float(np.dot(err, err))
    signal = float(np.dot(r, r))
    if noise == 0:
        sqnr = float("inf")
    elif signal == 0:
        sqnr = float("-inf")
    else:
        sqnr = 10.0 * np.log10(signal / noise)
    return {"cosine": cos, "max_abs_error": float(np.max(np.abs(err))) if err.size else 0.0, "sqnr_db": sqnr}


def _load_model(model):
    import onnx

    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    return onnx.load(str(model))


def onnxruntime_with_intermediates(model, inputs, names):
    """ONNX Runtime's values of ``names`` (a dict name -> (shape, dtype)) and its outputs;
    returns ({name: array}, seconds of the run)."""
    import onnx
    import onnxruntime as ort
    from onnx import helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for name, (shape, dtype) in names.items():
        if name in have:
            continue
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        m.graph.output.append(helper.make_tensor_value_info(name, elem, list(shape)))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    out_names = [o.name for o in sess.get_outputs()]
    t0 = time.perf_counter()
    res = sess.run(out_names, inputs)
    return dict(zip(out_names, res)), time.perf_counter() - t0


def compare_with_onnxruntime(model, inputs, target="npu -cores=4", precision="f32", threshold=None,
                             progress=None):
    """Compiles ``model`` with every intermediate kept, runs it and ONNX Runtime on ``inputs``
    and compares each tensor both have. Returns the report (a JSON-able dict)."""
    from .driver import compile as _compile

    proto = _load_model(model)
    threshold = THRESHOLDS.get(precision, 0.99) if threshold is None else float(threshold)
    shapes = {k: tuple(np.shape(v)) for k, v in inputs.items()}
    exe = _compile(proto, target=target, precision=precision, input_shapes=shapes, keep_intermediates=True,
                   progress=progress)
    expected = exe.outputs
    producer = {}
    order = []
    for node in proto.graph.node:
        for o in node.output:
            if o:
                producer[o] = node
                order.append(o)
    t0 = time.perf_counter()
    ours = exe.run(inputs)
    sim_seconds = time.perf_counter() - t0
    common = {n: expected[n] for n in order if n in ours}
    ref, ort_seconds = onnxruntime_with_intermediates(proto, inputs, common)
    rows, first = [], None
    for name in order:
        if name not in common or name not in ref:
            continue
        node = producer[name]
        row = {"name": name, "node": node.name, "op_type": node.op_type}
        row.update(metrics(ours[name], ref[name]))
        row["diverged"] = bool(not row["cosine"] >= threshold)
        if row["diverged"] and first is None:
            first = row
        rows.append(row)
    outputs = [o.name for o in proto.graph.output]
    return {
        "model": proto.graph.name,
        "precision": precision,
        "threshold": threshold,
        "tensors": rows,
        "outputs": [r for r in rows if r["name"] in outputs],
        "first_divergent": first,
        "not_compared": [n for n in order if n not in common],
        "simulated_run_seconds": sim_seconds,
        "onnxruntime_seconds": ort_seconds,
        "cycles": exe.stats()["cycles"],
    }
