"""tilecore/compiler/fuse_epilogue.py — epilogue fusion (docs/compiler.md, "Epilogue
fusion").

A Conv on the npu whose output only an Add reads (a residual connection: the other
operand has the Conv's shape, float32), and then, or directly, only a Relu, a Clip
with constant bounds, a Sigmoid, a SiLU, a HardSwish or a HardSigmoid, computes them in
its epilogue: the Conv gets ``tc_residual = 1``
(the other operand appended as its last input) and ``tc_activation`` (``tc_clip_min``,
``tc_clip_max``), takes over the last node's output, and the fused nodes are dropped.
An activation whose output only such an Add reads (YOLO's Conv -> SiLU -> Add) is fused
with it too, the residual added after it (``tc_residual_last = 1``), where the strategy
takes that form (f32 residual, a Conv not in int8).
The result is bit-identical (the same f32 operations in the same order), and the
Add's and the activation's DDR round trips are gone. Before that, a squeeze-excite's
per-channel Mul that only a Conv reads moves into that Conv (``tc_channel_scale``).

The fused Conv runs where the last fused node stood, so the residual's producer (a
downsample Conv exported after the main branch) has run by then.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

# the Conv input count before an appended residual: X, W, B (f32/f16/bf16) or X, W,
# int32 bias, w_scale (int8; docs/precision.md)
_OPERANDS = {"int8": 4}


def _const_scalar(v) -> float | None:
    if v is None or v.data is None:
        return None
    a = np.asarray(v.numpy())
    return float(a.ravel()[0]) if a.size == 1 else None


def _activation(nd) -> dict[str, Any] | None:
    """The fused-epilogue attributes of a Relu, a constant-bounded Clip, a Sigmoid, a SiLU
    (recognised from x * Sigmoid(x)), a HardSwish or a HardSigmoid, else None."""
    if nd.op in ("Relu", "Sigmoid", "SiLU", "HardSwish"):
        return {"tc_activation": nd.op}
    if nd.op == "HardSigmoid":
        return {"tc_activation": "HardSigmoid",
                "tc_activation_alpha": float(np.float32(nd.attrs.get("alpha", 0.2))),
                "tc_activation_beta": float(np.float32(nd.attrs.get("beta", 0.5)))}
    if nd.op != "Clip":
        return None
    attrs = {"tc_activation": "Clip"}
    for i, key, name in ((1, "min", "tc_clip_min"), (2, "max", "tc_clip_max")):
        if i < len(nd.ins) and nd.ins[i] is not None:
            value = _const_scalar(nd.ins[i])
            if value is None:
                return None  # a bound computed at run time
            attrs[name] = float(np.float32(value))
        elif key in nd.attrs:
            attrs[name] = float(np.float32(nd.attrs[key]))
    return attrs


def _residual_of(add, y: str, info) -> Any:
    """The other operand of ``add`` when it is an Add of ``y`` and a float32 value of its
    shape (a residual connection), else None."""
    if add is None or add.op != "Add" or len(add.ins) != 2 or any(v is None for v in add.ins):
        return None
    names = [str(v.name) for v in add.ins]
    if names.count(y) != 1:
        return None
    other = add.ins[1] if names[0] == y else add.ins[0]
    return other if info.get(str(other.name)) == info[y] and info[y][1] == "float32" else None


def _power_of_two(x: float) -> bool:
    m, _ = np.frexp(x)
    return bool(np.isfinite(x) and x > 0 and m == 0.5)


def take_over(nd: Any, attrs: dict[str, Any], fused: list[Any], HasStrategy: Callable[..., str]) -> dict[str, Any] | None:
    """``nd`` with ``attrs`` computes the chain ``fused`` (dropped) and yields the last one's
    outputs, when its strategy takes that form: the report entry, else None (nothing
    changed)."""
    if HasStrategy(nd.op, attrs, nd.in_specs):
        return None
    nd.attrs, nd.outs = attrs, list(fused[-1].outs)
    for x in fused:
        x.where, x.reason = "dropped", f"fused into `{nd.name}`"
    return {"node": nd.name, "fused": [x.name for x in fused]}


def _fold_channel_scales(nodes, info, graph_outputs, HasStrategy, TensorSpec) -> list[dict[str, Any]]:
    """A Mul of an activation [N, C, ...] by a per-channel tensor [1, C, 1, ...] (a
    squeeze-excite's scale) whose product only a Conv reads, as its data, is done by the
    Conv on each loaded patch (``tc_channel_scale = 1``, the per-channel tensor appended
    after the operands): the same f32 products, without the Mul's pass over the tensor and
    its round trip through memory."""
    readers = value_readers(nodes)
    producer = value_producers(nodes)
    out = []
    for nd in nodes:
        if (nd.op != "Conv" or nd.where != "npu" or len(nd.outs) != 1 or nd.attrs.get("tc_channel_scale")
                or nd.attrs.get("tc_residual") or not nd.ins or nd.ins[0] is None):
            continue
        x = str(nd.ins[0].name)
        mul = producer.get(x)
        if (mul is None or mul.op != "Mul" or mul.where != "npu" or len(mul.ins) != 2 or None in mul.ins
                or x in graph_outputs or len(readers.get(x, [])) != 1):
            continue
        full = tuple(info[x][0])
        act = scale = None
        for a, b in (mul.ins, mul.ins[::-1]):
            sa, sb = tuple(info[str(a.name)][0]), tuple(info[str(b.name)][0])
            if (sa == full and len(sb) == len(full) >= 3 and sb[0] == 1 and sb[1] == full[1]
                    and all(d == 1 for d in sb[2:])):
                act, scale = a, b
                break
        if act is None or info[str(act.name)][1] != "float32" or info[str(scale.name)][1] != "float32":
            continue
        n_operands = _OPERANDS.get(nd.attrs.get("tc_precision", "f32"), 3)
        if len(nd.ins) > n_operands:
            continue
        ins = [act] + list(nd.ins[1:]) + [None] * (n_operands - len(nd.ins)) + [scale]
        attrs = dict(nd.attrs, tc_channel_scale=1)
        specs = [None if v is None else TensorSpec(*info[str(v.name)]) for v in ins]
        if HasStrategy(nd.op, attrs, specs):
            continue  # the strategy refuses this form: the Mul stays
        nd.ins, nd.attrs, nd.in_specs = ins, attrs, specs
        mul.where, mul.reason = "dropped", f"fused into `{nd.name}`"
        out.append({"node": nd.name, "fused": [mul.name]})
    return out


def _fold_divisions(nodes, only_reader, info, HasStrategy, TensorSpec) -> list[dict[str, Any]]:
    """An int8 MatMul or Gemm whose output only a Div by a constant power of two reads
    (attention's scores over sqrt(d)) takes the division into its epilogue scale
    (``tc_out_scale``): exact, as scaling by a power of two is."""
    out = []
    for nd in nodes:
        if (nd.op not in ("MatMul", "Gemm") or nd.where != "npu" or len(nd.outs) != 1
                or nd.attrs.get("tc_precision") != "int8" or "tc_out_scale" in nd.attrs):
            continue
        div = only_reader(str(nd.outs[0].name))
        if div is None or div.op != "Div" or len(div.ins) != 2 or div.ins[0] is None \
                or str(div.ins[0].name) != str(nd.outs[0].name):
            continue
        c = _const_scalar(div.ins[1])
        if c is None or not _power_of_two(abs(c)) or c < 0 or info[str(div.outs[0].name)] != info[str(nd.outs[0].name)]:
            continue
        entry = take_over(nd, dict(nd.attrs, tc_out_scale=1.0 / c), [div], HasStrategy)
        if entry:
            out.append(entry)
    return out


def _fold_operand_scales(nodes, info, graph_outputs, HasStrategy, TensorSpec) -> list[dict[str, Any]]:
    """An int8 MatMul of two activations whose operand only a Mul (or Div) by a positive
    constant makes (attention's queries and keys each scaled by d^-1/4 before their
    product) reads that Mul's input instead: the operand's quantisation scale is divided
    by the constant and the product multiplied by it (``tc_out_scale``), without the Mul's
    pass, and the Transpose before it can then be fused into the MatMul. Exact for a power
    of two (the same int8 codes, int32 sums and epilogue scale); another constant can move
    a code by one step where the two roundings fall on either side of a half, as an int8
    edge's codes can (docs/compiler.md, "Epilogue fusion")."""
    readers = value_readers(nodes)
    producer = value_producers(nodes)
    out = []
    for nd in nodes:
        if (nd.op != "MatMul" or nd.where != "npu" or len(nd.ins) != 2 or None in nd.ins
                or nd.attrs.get("tc_precision") != "int8" or "tc_b_scale" not in nd.attrs):
            continue
        attrs, fused, ins = dict(nd.attrs), [], list(nd.ins)
        for i, key in ((0, "tc_x_scale"), (1, "tc_b_scale")):
            x = str(ins[i].name)
            mul = producer.get(x)
            if (mul is None or mul.op not in ("Mul", "Div") or mul.where != "npu" or len(mul.ins) != 2
                    or None in mul.ins or x in graph_outputs or len(readers.get(x, [])) != 1):
                continue
            pairs = [(mul.ins[0], mul.ins[1])] + ([(mul.ins[1], mul.ins[0])] if mul.op == "Mul" else [])
            for act, const in pairs:
                c = _const_scalar(const)
                if (c is None or not (c > 0 and np.isfinite(c)) or act.data is not None
                        or info[str(act.name)] != info[x]):
                    continue
                c = 1.0 / c if mul.op == "Div" else c
                attrs[key] = float(attrs[key]) / c
                attrs["tc_out_scale"] = float(attrs.get("tc_out_scale", 1.0)) * c
                ins[i] = act
                fused.append(mul)
                break
        specs = [TensorSpec(*info[str(v.name)]) for v in ins]
        if not fused or HasStrategy(nd.op, attrs, specs):
            continue
        nd.ins, nd.attrs, nd.in_specs = ins, attrs, specs
        for m in fused:
            m.where, m.reason = "dropped", f"fused into `{nd.name}`"
        out.append({"node": nd.name, "fused": [m.name for m in fused]})
    return out


# a bound on an int8 MatMul's scores below which adding any finite float32 constant, and
# then subtracting a row's maximum, stays finite (a sum rounds to an infinity only past
# FLT_MAX plus half its ulp, 2^103 or about 1e31)
_FINITE_SCORES = 1e30


def _drop_nan_masks(nodes, only_reader, info, producer) -> list[dict[str, Any]]:
    """A ReplaceNaN after a Softmax whose input cannot hold NaN or an infinity (attention's
    scores: an int8 MatMul of two activations, whose results the codes and scales bound,
    plus a constant causal mask of finite values, float32's lowest where masked) is the
    identity: the Softmax takes over its output and it is dropped. (Every row then has a
    finite maximum, so no exp(x - max) is NaN and every sum is at least 1.)"""
    out = []
    for rn in nodes:
        if rn.op != "ReplaceNaN" or rn.where != "npu" or len(rn.ins) != 1 or rn.ins[0] is None:
            continue
        sm = producer.get(str(rn.ins[0].name))
        if sm is None or sm.op != "Softmax" or sm.where != "npu" or only_reader(str(sm.outs[0].name)) is not rn:
            continue
        x = sm.ins[0]
        add = producer.get(str(x.name)) if x is not None else None
        if add is not None and add.op == "Add" and add.where == "npu" and len(add.ins) == 2 and None not in add.ins:
            consts = [v for v in add.ins if v.data is not None]
            if len(consts) != 1 or not np.all(np.isfinite(np.asarray(consts[0].numpy(), np.float64))):
                continue
            x = next(v for v in add.ins if v.data is None)
        mm = producer.get(str(x.name))
        a = mm.attrs if mm is not None else {}
        if (mm is None or mm.op != "MatMul" or mm.where != "npu" or a.get("tc_precision") != "int8"
                or "tc_b_scale" not in a or "tc_y_scale" in a or len(mm.ins) < 2 or mm.ins[0] is None):
            continue
        k = int(info[str(mm.ins[0].name)][0][-1])
        scale = abs(float(a["tc_x_scale"]) * float(a["tc_b_scale"]) * float(a.get("tc_out_scale", 1.0)))
        if 256.0 * 256.0 * k * scale >= _FINITE_SCORES:  # (a finite mask plus such a score rounds finite)
            continue
        sm.outs = list(rn.outs)
        rn.where, rn.reason = "dropped", f"`{sm.name}`'s input holds no NaN or infinity: the identity"
        out.append({"node": sm.name, "fused": [rn.name]})
    return out


def _fold_norm_activations(nodes, only_reader, HasStrategy) -> list[dict[str, Any]]:
    """A BatchNormalization (inference) whose output only a Relu or a Clip with constant
    bounds reads applies it to each tile before its store (``tc_activation``): a
    pre-activation block's BatchNormalization -> Relu (DenseNet) in one pass, without the
    Relu's round trip through memory; the same max and min, so the same bits."""
    out = []
    for nd in nodes:
        if nd.op != "BatchNormalization" or nd.where != "npu" or len(nd.outs) != 1 or "tc_activation" in nd.attrs:
            continue
        act_node = only_reader(str(nd.outs[0].name))
        act = _activation(act_node) if act_node is not None else None
        if act is None or act["tc_activation"] not in ("Relu", "Clip") \
                or str(act_node.ins[0].name) != str(nd.outs[0].name):
            continue
        entry = take_over(nd, dict(nd.attrs, **act), [act_node], HasStrategy)
        if entry:
            out.append(entry)
    return out


def _fold_skip_adds(nodes, only_reader, info, HasStrategy, TensorSpec) -> list[dict[str, Any]]:
    """A LayerNormalization whose input is an Add of two f32 tensors of its shape that only it
    reads (a transformer's residual connection) adds them itself (``tc_skip``, the Add's
    second operand appended as input 3): bit for bit the Add's sum."""
    producer = value_producers(nodes)
    out = []
    for ln in nodes:
        if ln.op != "LayerNormalization" or ln.where != "npu" or len(ln.ins) < 2 or ln.attrs.get("tc_skip"):
            continue
        add = producer.get(str(ln.ins[0].name)) if ln.ins[0] is not None else None
        if (add is None or add.op != "Add" or add.where != "npu" or len(add.ins) != 2
                or only_reader(str(add.outs[0].name)) is not ln or any(v is None for v in add.ins)):
            continue
        y = info[str(add.outs[0].name)]
        if any(info[str(v.name)] != y for v in add.ins) or y[1] != "float32":
            continue
        ins = [add.ins[0], ln.ins[1], ln.ins[2] if len(ln.ins) > 2 else None, add.ins[1]]
        attrs = dict(ln.attrs, tc_skip=1)
        specs = [None if v is None else TensorSpec(*info[str(v.name)]) for v in ins]
        if HasStrategy(ln.op, attrs, specs):
            continue
        ln.ins, ln.attrs, ln.in_specs = ins, attrs, specs
        add.where, add.reason = "dropped", f"fused into `{ln.name}`"
        out.append({"node": ln.name, "fused": [add.name]})
    return out


def _fold_head_transposes(nodes, info, graph_outputs, HasStrategy) -> list[dict[str, Any]]:
    """A MatMul or Gemm whose [M, N] output only views read, down to a [.., M, H, D] that
    only a Transpose putting the heads before the rows reads (attention's query and value
    projections: [1, M, H, D] -> [1, H, M, D]), stores its tiles straight into the
    transposed layout (``tc_y_heads = D``) and takes over the Transpose's output; a batched
    MatMul whose output only the Transpose back reads (attention's context: [1, H, M, D] ->
    [1, M, H, D]) stores its rows interleaved (``tc_y_rows_first``). The same values,
    without the Transposes' steps."""
    readers = value_readers(nodes)

    def sole_reader(name):
        return sole_data_reader(readers, graph_outputs, name)

    out = []
    for nd in nodes:
        if (nd.op not in ("MatMul", "Gemm") or nd.where != "npu" or len(nd.outs) != 1
                or "tc_y_heads" in nd.attrs or "tc_y_rows_first" in nd.attrs):
            continue
        y = str(nd.outs[0].name)
        shape = tuple(info[y][0])
        # a batched MatMul [.., B, M, N] whose output only a Transpose to [.., M, B, N] reads
        # (attention's context: heads, then rows), through views that keep its shape,
        # stores its tiles in that layout
        same, t = [], sole_reader(y)
        while (t is not None and t.where == "view" and len(t.outs) == 1
               and tuple(info[str(t.outs[0].name)][0]) == shape):
            same.append(t)
            t = sole_reader(str(t.outs[0].name))
        if (nd.op == "MatMul" and t is not None and t.op == "Transpose" and t.where == "npu"
                and len(t.outs) == 1 and len(shape) >= 3 and all(d == 1 for d in shape[:-3])):
            r = len(shape)
            if list(t.attrs.get("perm", [])) == list(range(r - 3)) + [r - 2, r - 3, r - 1]:
                entry = take_over(nd, dict(nd.attrs, tc_y_rows_first=1), same + [t], HasStrategy)
                if entry:
                    out.append(entry)
                    continue
        if len(shape) < 2 or any(d != 1 for d in shape[:-2]):
            continue
        m, n = shape[-2], shape[-1]
        chain, v = [], y
        while True:
            r = sole_reader(v)
            if r is None or r.where != "view" or len(r.outs) != 1:
                break
            chain.append(r)
            v = str(r.outs[0].name)
        t = sole_reader(v)
        if not chain or t is None or t.op != "Transpose" or t.where != "npu" or len(t.outs) != 1:
            continue
        s = tuple(info[v][0])
        lead = len(s) - 3
        perm = list(t.attrs.get("perm", []))
        if (lead < 0 or any(d != 1 for d in s[:lead]) or s[lead] != m or s[lead + 1] * s[lead + 2] != n
                or perm != list(range(lead)) + [lead + 1, lead, lead + 2]):
            continue
        entry = take_over(nd, dict(nd.attrs, tc_y_heads=int(s[lead + 2])), chain + [t], HasStrategy)
        if entry:
            out.append(entry)
    return out


def value_producers(nodes: list[Any]) -> dict[str, Any]:
    """Value name -> the node not dropped that writes it."""
    return {str(v.name): nd for nd in nodes if nd.where != "dropped" for v in nd.outs if v is not None}


def sole_data_reader(readers: dict[str, list[tuple[Any, int]]], graph_outputs: set[str], name: str) -> Any:
    """The view or npu node that alone reads ``name`` (``readers``: value_readers), as its
    data (input 0); None when there is none, or ``name`` is a graph output."""
    r = readers.get(name, [])
    if name in graph_outputs or len(r) != 1 or r[0][1] != 0 or r[0][0].where not in ("npu", "view"):
        return None
    return r[0][0]


def value_readers(nodes: list[Any]) -> dict[str, list[tuple[Any, int]]]:
    """Value name -> ``(node, input index)`` of every read by a node not dropped."""
    readers: dict[str, list[tuple[Any, int]]] = {}
    for nd in nodes:
        if nd.where == "dropped":
            continue
        for i, v in enumerate(nd.ins):
            if v is not None:
                readers.setdefault(str(v.name), []).append((nd, i))
    return readers


def fuse(nodes: list[Any], info: dict[str, tuple], graph_outputs: set[str],
         HasStrategy: Callable[..., str], TensorSpec: Callable[..., Any]) -> list[dict[str, Any]]:
    """Fuses in place (``nodes`` reordered, the fused ones ``where = "dropped"``); returns
    ``[{"node": conv, "fused": [add, relu]}, ...]``."""
    readers = {k: [nd for nd, _ in v] for k, v in value_readers(nodes).items()}

    def only_reader(name: str):
        r = readers.get(name, [])
        if name in graph_outputs or len(r) != 1 or r[0].where != "npu":
            return None
        return r[0]

    fused, place = _fold_channel_scales(nodes, info, graph_outputs, HasStrategy, TensorSpec), {}
    # (place: id(last fused node) -> the Conv that runs there)
    for nd in nodes:
        if nd.op != "Conv" or nd.where != "npu" or len(nd.outs) != 1:
            continue
        y = str(nd.outs[0].name)
        attrs, chain, residual = {}, [], None
        nxt = only_reader(y)
        other = _residual_of(nxt, y, info)
        if other is not None:
            residual, attrs["tc_residual"] = other, 1
            chain.append(nxt)
            nxt = only_reader(str(nxt.outs[0].name))
        act = _activation(nxt) if nxt is not None else None
        if act is not None:
            attrs.update(act)
            chain.append(nxt)
        forms = [(attrs, chain, residual)]
        if act is not None and residual is None:  # Conv -> activation -> Add (YOLO's bottleneck)
            add = only_reader(str(nxt.outs[0].name))
            other = _residual_of(add, str(nxt.outs[0].name), info)
            if other is not None:
                forms.insert(0, (dict(attrs, tc_residual=1, tc_residual_last=1), chain + [add], other))
        n_operands = _OPERANDS.get(nd.attrs.get("tc_precision", "f32"), 3) + int(bool(nd.attrs.get("tc_channel_scale")))
        if not chain or len(nd.ins) > n_operands:
            continue
        for attrs, chain, residual in forms:  # the longest the strategy takes
            ins = list(nd.ins) + [None] * (n_operands - len(nd.ins))
            if residual is not None:
                ins.append(residual)
            new_attrs = dict(nd.attrs, **attrs)
            specs = [None if v is None else TensorSpec(*info[str(v.name)]) for v in ins]
            if not HasStrategy(nd.op, new_attrs, specs):
                break
        else:
            continue  # the strategy refuses every form: the nodes stay separate
        nd.attrs, nd.ins, nd.in_specs = new_attrs, ins, specs
        nd.outs = list(chain[-1].outs)
        for c in chain:
            c.where, c.reason = "dropped", f"fused into `{nd.name}`"
        place[id(chain[-1])] = nd
        fused.append({"node": nd.name, "fused": [c.name for c in chain]})
    fused += _fold_divisions(nodes, only_reader, info, HasStrategy, TensorSpec)
    fused += _fold_operand_scales(nodes, info, graph_outputs, HasStrategy, TensorSpec)
    fused += _drop_nan_masks(nodes, only_reader, info, value_producers(nodes))
    fused += _fold_skip_adds(nodes, only_reader, info, HasStrategy, TensorSpec)
    fused += _fold_norm_activations(nodes, only_reader, HasStrategy)
    fused += _fold_head_transposes(nodes, info, graph_outputs, HasStrategy)
    move_to_place(nodes, place)
    return fused


def move_to_place(nodes: list[Any], place: dict[int, Any]) -> None:
    """Moves each node of ``place`` (``id(last fused node) -> fused node``) to where that last
    fused node stood, in place: what it took over is computed where its output was."""
    if not place:
        return
    moved = {id(nd) for nd in place.values()}
    order = []
    for nd in nodes:
        if id(nd) not in moved:
            order.append(nd)
        if id(nd) in place:
            order.append(place[id(nd)])
    nodes[:] = order

