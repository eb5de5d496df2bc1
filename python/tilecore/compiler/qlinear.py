"""QOperator nodes (QLinearConv, QLinearMatMul, MatMulInteger, ...) of a Graph rewritten into
the QDQ form, so they take the QDQ path: Q/DQ on the vector engine, the matrix op folded
into the int8 quantised-node form with the model's scales (``qdq.py``).

    QLinearConv(x, xs, xz, w, ws, wz, ys, yz, B)
        -> QuantizeLinear(Conv(DQ(x, xs, xz), DQ(w, ws, wz), DQ(B, xs * ws, 0)), ys, yz)
    QLinearMatMul(a, as, az, b, bs, bz, ys, yz)
        -> QuantizeLinear(MatMul(DQ(a, as, az), DQ(b, bs, bz)), ys, yz)
    MatMulInteger(a, b, az, bz)
        -> Cast<int32>(MatMul(DQ(a, 1, az), DQ(b, 1, bz)))
    ConvInteger(x, w, xz, wz)
        -> Cast<int32>(Conv(DQ(x, 1, xz), DQ(w, 1, wz)))
    DynamicQuantizeLinear(x) -> y, s, z with
        s = (Max(ReduceMax(x), 0) - Min(ReduceMin(x), 0)) / 255,
        z = QuantizeLinear(-Min(ReduceMin(x), 0), s, uint8 0)    (= saturate(round(-min / s))),
        y = QuantizeLinear(x, s, z)

MatMulInteger's and ConvInteger's products are summed in f32 here: exact while every
partial sum stays below 2^24 in magnitude (K * 255 * 255 < 2^24, i.e. K <= 258, always;
beyond, only when the values allow). A float16 QLinear result is quantised from float32. The rewritten nodes keep the original node's name (the Conv or MatMul
gets it, the Q/DQ nodes a suffix).
"""

from __future__ import annotations

from typing import Any

import numpy as np

QLINEAR_OPS = ("QLinearConv", "QLinearMatMul", "MatMulInteger", "ConvInteger", "DynamicQuantizeLinear")


def has_qlinear(graph: Any) -> bool:
    """Whether the Graph ``graph`` holds a QOperator node."""
    return any(str(n.op_type) in QLINEAR_OPS and str(n.domain) == "" for n in graph.nodes)


def _dynamic_quantize(n, fresh, const, helper, onnx):
    """DynamicQuantizeLinear as reductions, arithmetic and two QuantizeLinear (whose
    round half to even and saturation give the zero point as ONNX defines it)."""
    x = n.input[0]
    y, s, z = (list(n.output) + ["", "", ""])[:3]
    s = s or fresh(f"{n.name}/scale")
    z = z or fresh(f"{n.name}/zero_point")
    zero = const(f"{n.name}/zero", np.array(0.0, np.float32))
    levels = const(f"{n.name}/levels", np.array(255.0, np.float32))
    zp0 = const(f"{n.name}/zp0", np.array(0, np.uint8))
    mx, mn, mx0, mn0, rng, neg = (fresh(f"{n.name}/{k}") for k in ("max", "min", "max0", "min0", "range", "neg_min"))
    nodes = [
        helper.make_node("ReduceMax", [x], [mx], name=f"{n.name}/max", keepdims=0),
        helper.make_node("ReduceMin", [x], [mn], name=f"{n.name}/min", keepdims=0),
        helper.make_node("Max", [mx, zero], [mx0], name=f"{n.name}/max0"),
        helper.make_node("Min", [mn, zero], [mn0], name=f"{n.name}/min0"),
        helper.make_node("Sub", [mx0, mn0], [rng], name=f"{n.name}/range"),
        helper.make_node("Div", [rng, levels], [s], name=f"{n.name}/scale"),
        helper.make_node("Neg", [mn0], [neg], name=f"{n.name}/neg_min"),
        helper.make_node("QuantizeLinear", [neg, s, zp0], [z], name=f"{n.name}/zero_point"),
    ]
    if y:
        nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [y], name=n.name))
    return nodes


def expand(graph: Any) -> Any:
    """``graph`` (a typed Graph) with its QOperator nodes in the QDQ form (``graph`` itself
    when it has none). Scales it needs to multiply (a bias's ``xs * ws``) must be constants."""
    import onnx
    from onnx import helper, numpy_helper

    from .. import transform
    from ..frontend import onnx as fo
    from ..ir.graph import numpy_dtype

    if not has_qlinear(graph):
        return graph
    consts, types, names = {}, {}, set()
    for v in list(graph.inputs) + [v for n in graph.nodes for v in list(n.inputs) + list(n.outputs)]:
        if v is None:
            continue
        names.add(str(v.name))
        if v.data is not None:
            consts[str(v.name)] = v.numpy()
        t = getattr(v, "type", None)
        if getattr(t, "dtype", ""):
            try:
                types[str(v.name)] = helper.np_dtype_to_tensor_dtype(numpy_dtype(str(t.dtype)))
            except Exception:  # noqa: BLE001 — not an ONNX element type
                pass
    inits = []  # the constants of the node being rewritten

    def fresh(base):
        name, k = base, 1
        while name in names:
            k += 1
            name = f"{base}_{k}"
        names.add(name)
        return name

    def const(name_hint, array):
        name = fresh(name_hint)
        inits.append(numpy_helper.from_array(array, name))
        return name

    def opt(n, i):
        return n.input[i] if len(n.input) > i and n.input[i] else ""

    def q_y(n, y, ys, yz):
        """QuantizeLinear of the float result; a float16 one (and its scale) quantised from
        float32, as QuantizeLinear's kernels take float32 scales (x / s is exact enough:
        both are float16 values)."""
        if types.get(ys) != onnx.TensorProto.FLOAT16:
            return [helper.make_node("QuantizeLinear", [y, ys, yz], [n.output[0]], name=f"{n.name}/q_y")]
        y32, s32 = fresh(f"{y}/f32"), fresh(f"{ys}/f32")
        return [helper.make_node("Cast", [y], [y32], name=f"{n.name}/y_f32", to=onnx.TensorProto.FLOAT),
                helper.make_node("Cast", [ys], [s32], name=f"{n.name}/scale_f32", to=onnx.TensorProto.FLOAT),
                helper.make_node("QuantizeLinear", [y32, s32, yz], [n.output[0]], name=f"{n.name}/q_y")]

    def dq(n, x, s, z, tag, axis=None):
        out = fresh(f"{x}/dequantized")
        ins = [x, s] + ([z] if z else [])
        kw = {} if axis is None else {"axis": axis}
        return out, helper.make_node("DequantizeLinear", ins, [out], name=f"{n.name}/{tag}", **kw)

    replacements = {}
    for index, node in enumerate(graph.nodes):
        if str(node.op_type) not in QLINEAR_OPS or str(node.domain) != "":
            continue
        n = fo.onnx_node(node, graph.opsets)
        inits = []
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        where = f"node `{n.name}` ({n.op_type})"
        if n.op_type == "QLinearConv":
            x, na = dq(n, n.input[0], n.input[1], n.input[2], "dq_x")
            w, nw = dq(n, n.input[3], n.input[4], n.input[5], "dq_w", axis=0)
            ins = [x, w]
            new = [na, nw]
            if opt(n, 8):
                if n.input[1] not in consts or n.input[4] not in consts:
                    raise ValueError(f"{where}: a bias needs constant x and w scales")
                bs = (consts[n.input[1]].astype(np.float32) *
                      consts[n.input[4]].astype(np.float32)).reshape(-1)
                b, nb = dq(n, n.input[8], const(f"{n.input[8]}_scale", bs), "", "dq_b", axis=0)
                ins.append(b)
                new.append(nb)
            y = fresh(f"{n.output[0]}/float")
            new.append(helper.make_node("Conv", ins, [y], name=n.name, **attrs))
            new.extend(q_y(n, y, n.input[6], n.input[7]))
        elif n.op_type == "QLinearMatMul":
            a, na = dq(n, n.input[0], n.input[1], n.input[2], "dq_a")
            b_axis = None
            if n.input[4] in consts and consts[n.input[4]].size > 1:
                b_axis = -1  # per column of B
            b, nb = dq(n, n.input[3], n.input[4], n.input[5], "dq_b", axis=b_axis)
            y = fresh(f"{n.output[0]}/float")
            new = [na, nb, helper.make_node("MatMul", [a, b], [y], name=n.name)] + q_y(n, y, n.input[6], n.input[7])
        elif n.op_type == "DynamicQuantizeLinear":
            new = _dynamic_quantize(n, fresh, const, helper, onnx)
        elif n.op_type == "ConvInteger":
            one = const(f"{n.name}/unit_scale", np.array(1.0, np.float32))
            x, na = dq(n, n.input[0], one, opt(n, 2), "dq_x")
            if opt(n, 3) and opt(n, 3) in consts and consts[n.input[3]].size > 1:
                ones = np.ones(consts[n.input[3]].size, np.float32)
                w, nw = dq(n, n.input[1], const(f"{n.name}/unit_scales", ones), n.input[3], "dq_w", axis=0)
            else:
                w, nw = dq(n, n.input[1], one, opt(n, 3), "dq_w")
            y = fresh(f"{n.output[0]}/float")
            new = [na, nw, helper.make_node("Conv", [x, w], [y], name=n.name, **attrs),
                   helper.make_node("Cast", [y], [n.output[0]], name=f"{n.name}/to_int32", to=onnx.TensorProto.INT32)]
        else:  # MatMulInteger
            one = const(f"{n.name}/unit_scale", np.array(1.0, np.float32))
            a, na = dq(n, n.input[0], one, opt(n, 2), "dq_a")
            b_axis = None
            if opt(n, 3) and opt(n, 3) in consts and consts[n.input[3]].size > 1:
                b_axis = -1
                ones = np.ones(consts[n.input[3]].size, np.float32)
                b, nb = dq(n, n.input[1], const(f"{n.name}/unit_scales", ones), n.input[3], "dq_b", axis=b_axis)
            else:
                b, nb = dq(n, n.input[1], one, opt(n, 3), "dq_b")
            y = fresh(f"{n.output[0]}/float")
            new = [na, nb, helper.make_node("MatMul", [a, b], [y], name=n.name),
                   helper.make_node("Cast", [y], [n.output[0]], name=f"{n.name}/to_int32", to=onnx.TensorProto.INT32)]
        replacements[index] = (new, inits)
    return transform.InferTypes({})(fo.replace_nodes(graph, replacements))
