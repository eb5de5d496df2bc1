"""QDQ folding: a quantised ONNX model's Conv, MatMul and Gemm run int8 on the matrix
engine with the model's own scales (docs/precision.md, "Quantised models").

In a QDQ model (as ``onnxruntime.quantization.quantize_static`` writes it) a matrix node
reads ``DequantizeLinear(QuantizeLinear(x, s_a, z_a))`` as data and
``DequantizeLinear(W_q, s_w, 0)`` (int8, per tensor or per output channel) as weights,
and maybe ``DequantizeLinear(b_q int32, s_a * s_w)`` as bias. :func:`fold` rewrites such
a node into the quantised-node form: input 0 becomes ``x`` itself (quantised on load
with ``tc_x_scale = s_a`` and ``tc_x_zero_point = z_a``, uint8 zero points moved to
int8 by -128, which gives the same integers), input 1 the model's ``W_q``, input 2 the
int32 bias (the model's when its scale is ``s_a * s_w``, else the float bias
requantised) minus ``z_a * sum_k W_q[c, k]``, input 3 ``s_w`` per output channel.

int8 stays int8 where the model has it: a node reading ``DequantizeLinear(x)`` of an int8
``x`` (a QLinearMatMul's input, or a graph input) reads ``x`` as it is, and a node whose
only reader is a ``QuantizeLinear`` to int8 per tensor stores that int8 output itself,
requantised in its epilogue (``tc_y_scale``, ``tc_y_zero_point``), so int8 tensors cross
the DDR in int8 and no Q/DQ step runs.

The weights' DequantizeLinear is gone by then (constant folding makes it an f32
constant of the same name), so :func:`model_dequantized_constants` reads what it was from
the ONNX model first, and :func:`graph_dequantized_constants` from the Graph before it
is folded (a Graph the caller folded has only the dequantised values). A node the int8 strategy refuses stays in f32 on the dequantised
values, with the reason in the report; the QuantizeLinear/DequantizeLinear nodes left
without readers are dropped.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

import numpy as np

from ..runtime.files import file_contains
from .precision import ConstantValue, quantise_bias

MATRIX_OPS = ("Conv", "MatMul", "Gemm")


def model_dequantized_constants(model: Any) -> dict[str, tuple]:
    """:func:`dequantized_constants` of ``model`` (a path, bytes or ModelProto), read before
    the import folds them; {} when it is not an ONNX model (the importer reports that) or
    there is no onnx package."""
    try:
        import onnx
    except ImportError:
        return {}
    try:
        if isinstance(model, onnx.ModelProto):
            proto = model
        else:
            # (an op type is a string in the file: without this one, parsing it is not needed;
            # a file is searched in pieces, not read whole)
            if isinstance(model, (bytes, bytearray)):
                data = bytes(model)
                if b"DequantizeLinear" not in data:
                    return {}
            else:
                if not file_contains(str(model), b"DequantizeLinear"):
                    return {}
                with open(str(model), "rb") as f:
                    data = f.read()
            proto = onnx.load_from_string(data)
    except Exception:  # the importer reports a bad file with its own words
        return {}
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer) and \
            any(n.op_type == "DequantizeLinear" for n in proto.graph.node):
        proto = onnx.load(str(model))  # the weights are in the external data
    return dequantized_constants(proto)


def graph_dequantized_constants(graph: Any) -> dict[str, tuple]:
    """value name -> (q, scale, zero point or None, axis) of every DequantizeLinear of a
    constant still in the Graph ``graph`` (those a QOperator node became, qlinear.py)."""
    out = {}
    for n in graph.nodes:
        if str(n.op_type) != "DequantizeLinear" or str(n.domain) != "" or not _const(n.inputs[0]):
            continue
        ins = list(n.inputs) + [None]
        if not _const(ins[1]) or (ins[2] is not None and not _const(ins[2])):
            continue
        zp = ins[2].numpy() if ins[2] is not None else None
        out[str(n.outputs[0].name)] = (n.inputs[0].numpy(), np.asarray(ins[1].numpy(), np.float32), zp,
                                       int(n.attrs["axis"]) if "axis" in n.attrs else 1)
    return out


def dequantized_constants(proto: Any) -> dict[str, tuple]:
    """value name -> (q, scale, zero point or None, axis) of every DequantizeLinear of a
    constant in the ONNX ModelProto ``proto``."""
    from onnx import numpy_helper

    if not any(n.op_type == "DequantizeLinear" for n in proto.graph.node):
        return {}
    consts = {}
    for t in proto.graph.initializer:
        try:
            consts[t.name] = numpy_helper.to_array(t)
        except Exception:  # noqa: BLE001 — numpy cannot read it (external data): not folded, the importer names it
            continue
    for n in proto.graph.node:
        if n.op_type == "Constant" and n.output:
            for a in n.attribute:
                if a.name == "value":
                    consts[n.output[0]] = numpy_helper.to_array(a.t)
    out = {}
    for n in proto.graph.node:
        if n.op_type != "DequantizeLinear" or n.domain not in ("", "ai.onnx") or n.input[0] not in consts:
            continue
        scale = consts.get(n.input[1])
        zp = consts.get(n.input[2]) if len(n.input) > 2 and n.input[2] else None
        if scale is None or (len(n.input) > 2 and n.input[2] and zp is None):
            continue
        axis = next((a.i for a in n.attribute if a.name == "axis"), 1)
        out[n.output[0]] = (consts[n.input[0]], np.asarray(scale, np.float32), zp, axis)
    return out


def _const(v) -> bool:
    return v is not None and getattr(v, "data", None) is not None


def _scalar(v):
    a = np.asarray(v.numpy())
    return a.reshape(()) if a.size == 1 else None


def _per_tensor(node):
    """(scale, zero point array) of a QuantizeLinear/DequantizeLinear per tensor with
    constants, else a reason."""
    if len(node.ins) < 2 or not _const(node.ins[1]) or _scalar(node.ins[1]) is None:
        return f"`{node.name}` is not per tensor with a constant scale"
    zp = node.ins[2] if len(node.ins) > 2 else None
    if zp is not None and (not _const(zp) or _scalar(zp) is None):
        return f"`{node.name}` has a non-constant zero point"
    return float(_scalar(node.ins[1])), (_scalar(zp) if zp is not None else np.uint8(0))


def _activation(nd, producer, info):
    """(x, scale, int8 zero point, [the DQ node, the Q node]) when ``nd``'s input 0 is
    DQ(Q(x)) per tensor with the same scale and zero point on both (x is then quantised on
    load), or (x, scale, zero point, [the DQ node]) when it is DQ(x) of an int8 x (read as it
    is); else a reason."""
    a = nd.ins[0]
    dq = producer.get(str(a.name)) if a is not None else None
    if dq is None or dq.op != "DequantizeLinear":
        return "input 0 is not a DequantizeLinear"
    q = producer.get(str(dq.ins[0].name))
    if q is None or q.op != "QuantizeLinear":
        data = info.get(str(dq.ins[0].name), ((), ""))[1]
        if data != "int8":
            return (f"input 0's DequantizeLinear reads {data or 'untyped'} data "
                    "(neither a QuantizeLinear's output nor int8)")
        p = _per_tensor(dq)
        if isinstance(p, str):
            return p
        has_zp = len(dq.ins) > 2 and dq.ins[2] is not None
        if has_zp and p[1].dtype != np.int8:  # ONNX: an omitted zero point is 0 of x's type
            return f"int8 data with a zero point of dtype {p[1].dtype}"
        return dq.ins[0], p[0], int(p[1]) if has_zp else 0, [dq]
    params = []
    for node in (q, dq):
        p = _per_tensor(node)
        if isinstance(p, str):
            return p
        params.append(p)
    (s, z), (s2, z2) = params
    if s != s2 or int(z) != int(z2) or z.dtype != z2.dtype:
        return "QuantizeLinear and DequantizeLinear differ in scale or zero point"
    if z.dtype not in (np.int8, np.uint8):
        return f"activation zero point of dtype {z.dtype}"
    z8 = int(z) - 128 if z.dtype == np.uint8 else int(z)
    return q.ins[0], s, z8, [dq, q]


def _channel_axis(nd, w):
    if nd.op == "Conv":
        return 0
    if w.ndim != 2:
        return None
    if nd.op == "Gemm":
        if int(nd.attrs.get("transA", 0)):
            return None
        return 0 if int(nd.attrs.get("transB", 0)) else 1
    return 1


def _weights(nd, dq_consts):
    """(W_q int8, w_scale per channel, channel axis) of the weights, or a reason."""
    w = nd.ins[1]
    name = str(w.name) if _const(w) else ""
    rec = dq_consts.get(name)
    if rec is None and name.endswith("_T") and name[:-2] in dq_consts and dq_consts[name[:-2]][0].ndim == 2:
        q, scale, zp, axis = dq_consts[name[:-2]]  # Gemm(transB) became MatMul of the transposed constant
        rec = (q.T, scale, zp, 1 - axis % 2)
    if rec is None:
        return "the weights are not a DequantizeLinear of a constant"
    q, scale, zp, axis = rec
    if q.shape != tuple(np.shape(w.numpy())):
        return "the weights' shape differs from their DequantizeLinear's"
    if q.dtype != np.int8:
        return f"weights of dtype {q.dtype} (int8 only)"
    if zp is not None and np.any(np.asarray(zp) != 0):
        return "weights with a non-zero zero point"
    ch = _channel_axis(nd, q)
    if ch is None:
        return "no per-channel int8 form for these weights"
    n = q.shape[ch]
    if scale.size == 1:
        w_scale = np.full(n, float(scale.reshape(())), np.float32)
    elif scale.ndim == 1 and scale.size == n and axis % q.ndim == ch:
        w_scale = scale.astype(np.float32)
    else:
        return "the weights' scale is not per tensor or per output channel"
    shape = [1] * q.ndim
    shape[ch] = n
    deq = q.astype(np.float32) * w_scale.reshape(shape)
    if not np.allclose(deq, np.asarray(w.numpy(), np.float32), rtol=1e-6, atol=0):
        return "the weights differ from their DequantizeLinear's values"
    return q, w_scale, ch


def _bias(nd, dq_consts, x_scale, w_scale):
    """The int32 bias (before the zero-point term), None when there is none, or a reason."""
    if len(nd.ins) < 3 or nd.ins[2] is None:
        return None
    b = nd.ins[2]
    if not _const(b):
        return "a non-constant bias"
    rec = dq_consts.get(str(b.name))
    if rec is not None and rec[0].dtype == np.int32 and (rec[2] is None or not np.any(rec[2])):
        want = np.float32(x_scale) * w_scale
        if np.allclose(np.broadcast_to(rec[1], want.shape), want, rtol=1e-6, atol=0):
            return np.asarray(rec[0], np.int32).reshape(-1)
    return quantise_bias(np.asarray(b.numpy(), np.float32).reshape(-1), x_scale, w_scale)


def _fold_two_activations(nd, act, producer, info, TensorSpec, HasStrategy):
    """A MatMul of two QDQ activations (attention's Q·Kᵀ) to the int8 form with
    ``tc_x_scale`` (and ``tc_x_zero_point``) and ``tc_b_scale``; None when done, else the
    reason. B is symmetric (zero point 0); A's zero point is corrected with B's column
    sums (in int8 terms)."""
    if isinstance(act, str):
        return act
    from types import SimpleNamespace

    b = _activation(SimpleNamespace(ins=[nd.ins[1]]), producer, info)
    if isinstance(b, str):
        return "B: " + b
    (xa, sa, za, _), (xb, sb, zb, _) = act, b
    if zb != 0:
        return "a MatMul of two activations needs B's zero point 0 (in int8 terms)"
    saved = (nd.attrs, list(nd.ins), nd.in_specs)
    nd.attrs = dict(nd.attrs, tc_precision="int8", tc_x_scale=float(np.float32(sa)), tc_b_scale=float(np.float32(sb)))
    if za:
        nd.attrs["tc_x_zero_point"] = int(za)
    nd.ins = [xa, xb]
    nd.in_specs = [TensorSpec(*info[str(v.name)]) for v in nd.ins]
    why = str(HasStrategy(nd.op, nd.attrs, nd.in_specs))
    if why:
        nd.attrs, nd.ins, nd.in_specs = saved
        return why
    return None


def _fold_output(nd, readers, producer, graph_outputs, HasStrategy) -> bool:
    """When the folded ``nd``'s output is read only by a QuantizeLinear to int8 per tensor,
    ``nd`` stores that int8 value itself (``tc_y_scale`` / ``tc_y_zero_point``: the
    requantisation is its epilogue's) and the QuantizeLinear is dropped. True when done."""
    if len(nd.outs) != 1 or not str(nd.outs[0].name):
        return False
    y = str(nd.outs[0].name)
    rs = [r for r, _ in readers.get(y, []) if r.where != "dropped"]
    if y in graph_outputs or len(rs) != 1 or rs[0].op != "QuantizeLinear" or len(rs[0].outs) != 1:
        return False
    q = rs[0]
    p = _per_tensor(q)
    if isinstance(p, str) or p[1].dtype != np.int8 or not str(q.outs[0].name):
        return False
    saved = (nd.attrs, list(nd.outs))
    nd.attrs = dict(nd.attrs, tc_y_scale=float(np.float32(p[0])), tc_y_zero_point=int(p[1]))
    nd.outs = [q.outs[0]]
    if str(HasStrategy(nd.op, nd.attrs, nd.in_specs)):
        nd.attrs, nd.outs = saved
        return False
    q.where = "dropped"
    producer[str(q.outs[0].name)] = nd  # a reader's DQ now reads nd's int8 output as it is
    return True


def fold(nodes: list[Any], info: dict[str, Any], graph_outputs: Iterable[str], keep_intermediates: bool,
         HasStrategy: Callable[..., str], TensorSpec: type, dq_consts: Mapping[str, tuple]) -> dict[str, Any]:
    """Rewrites the npu matrix nodes of ``nodes`` (the driver's) that read QDQ-quantised
    data and weights into the quantised-node form, drops the Q/DQ nodes nobody reads
    any more (unless ``keep_intermediates``). Returns the report
    {"folded": [node names], "kept": [{node, op_type, reason}]}; ``nodes`` is changed
    in place (the dropped ones get ``where = "dropped"``). A folded node that reads DQ(x) of
    an int8 x reads x as it is; one whose only reader is a QuantizeLinear to int8 stores
    that int8 output itself, unless ``keep_intermediates`` (``"int8_outputs"``: their names)."""
    from .fuse_epilogue import value_readers

    report = {"folded": [], "kept": [], "int8_outputs": []}
    if not dq_consts:
        return report
    producer = {str(v.name): nd for nd in nodes for v in nd.outs if str(v.name)}
    readers = value_readers(nodes)

    def folded(nd):
        report["folded"].append(nd.name)
        if not keep_intermediates and _fold_output(nd, readers, producer, graph_outputs, HasStrategy):
            report["int8_outputs"].append(nd.name)

    used = set(info)
    for nd in nodes:
        if nd.where != "npu" or nd.op not in MATRIX_OPS or "tc_precision" in nd.attrs or len(nd.ins) < 2:
            continue
        act = _activation(nd, producer, info)
        if nd.op == "MatMul" and not _const(nd.ins[1]):
            why = _fold_two_activations(nd, act, producer, info, TensorSpec, HasStrategy)
            if why is None:
                folded(nd)
            elif not isinstance(act, str) or act != "input 0 is not a DequantizeLinear":
                report["kept"].append({"node": nd.name, "op_type": nd.op, "reason": why})
            continue
        why = act if isinstance(act, str) else None
        if why is None:
            x, x_scale, zp, _ = act
            wts = _weights(nd, dq_consts)
            why = wts if isinstance(wts, str) else None
        if why is None:
            q, w_scale, ch = wts
            if nd.op == "Gemm" and (float(nd.attrs.get("alpha", 1.0)) != 1.0 or float(nd.attrs.get("beta", 1.0)) != 1.0):
                why = "Gemm with alpha or beta other than 1"
        if why is None:
            bias = _bias(nd, dq_consts, x_scale, w_scale)
            why = bias if isinstance(bias, str) else None
        if why is not None:
            if not isinstance(act, str) or str(act) != "input 0 is not a DequantizeLinear":
                report["kept"].append({"node": nd.name, "op_type": nd.op, "reason": why})
            continue
        # the zero point's share of the accumulator, per output channel
        red = tuple(i for i in range(q.ndim) if i != ch)
        wsum = np.sum(q.astype(np.int64), axis=red)
        b = np.zeros(q.shape[ch], np.int64) if bias is None else np.asarray(bias, np.int64)
        if b.size == 1 and q.shape[ch] != 1:
            b = np.full(q.shape[ch], int(b.reshape(())), np.int64)
        b = np.clip(b - zp * wsum, -(2 ** 31), 2 ** 31 - 1).astype(np.int32)

        def fresh(base):
            name, k = base, 1
            while name in used:
                k += 1
                name = f"{base}_{k}"
            used.add(name)
            return name

        wname = str(nd.ins[1].name)
        new = [ConstantValue(fresh(wname + "/int8"), q), ConstantValue(fresh(wname + "/int32_bias"), b),
               ConstantValue(fresh(wname + "/w_scale"), w_scale)]
        for v in new:
            info[v.name] = (tuple(v.data.shape), str(v.data.dtype))
        saved = (nd.attrs, list(nd.ins), nd.in_specs)
        attrs = dict(nd.attrs)
        attrs.pop("alpha", None)
        attrs.pop("beta", None)
        attrs.update(tc_precision="int8", tc_x_scale=float(np.float32(x_scale)), tc_x_zero_point=int(zp))
        nd.attrs = attrs
        nd.ins = [x, new[0], new[1], new[2]]
        nd.in_specs = [TensorSpec(*info[str(v.name)]) for v in nd.ins]
        why = str(HasStrategy(nd.op, nd.attrs, nd.in_specs))
        if why:
            nd.attrs, nd.ins, nd.in_specs = saved
            report["kept"].append({"node": nd.name, "op_type": nd.op, "reason": why})
            continue
        folded(nd)
    if report["folded"] and not keep_intermediates:
        _drop_unread(nodes, graph_outputs)
    return report


def _drop_unread(nodes, graph_outputs) -> None:
    """Marks QuantizeLinear/DequantizeLinear nodes whose outputs nobody reads as dropped,
    until none is left (a DQ dropped can leave its Q unread)."""
    while True:
        read = set(graph_outputs)
        for nd in nodes:
            if nd.where != "dropped":
                read.update(str(v.name) for v in nd.ins if v is not None)
        gone = [nd for nd in nodes if nd.where != "dropped" and nd.op in ("QuantizeLinear", "DequantizeLinear")
                and not any(str(v.name) in read for v in nd.outs)]
        if not gone:
            return
        for nd in gone:
            nd.where = "dropped"
