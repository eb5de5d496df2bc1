"""A normalisation in its Gemm's epilogue (docs/compiler.md, "Gemm and norm").

An int8 Gemm (or 2-D MatMul) of an int8 A (a transformer's attention output or second FFN
projection) whose f32 output only a LayerNormalization or RMSNormalization over its N columns reads
(through views: FoldMatMulBias's Reshapes) computes the norm itself (``tc_row_norm``): the
norm's Scale, B and skip (its fused residual Add, ``tc_skip``) are appended as inputs 4-6,
its attributes become ``tc_norm_epsilon`` (and ``tc_norm_q_scale`` /
``tc_norm_q_zero_point`` for its int8 second output), and the Gemm takes over the norm's
outputs. Each core then holds all of the weights and owns whole rows: the vector engine
normalises one chunk of rows while the matrix engine multiplies the next, and the Gemm's
output never crosses L2. The passes are the norm strategy's, in the same order, on the
same f32 sums: the bits do not change.

The fused Gemm runs where the norm ran, so the skip's producer has run by then.
"""

from __future__ import annotations

from typing import Any, Callable

NORMS = ("LayerNormalization", "RMSNormalization")


def _eligible(nd: Any, info: dict[str, tuple]) -> bool:
    a = nd.attrs
    # (a 2-D MatMul's int8 form is a Gemm's: X, W, bias omitted, w_scale)
    two_d = nd.op == "MatMul" and all(v is not None and len(info[str(v.name)][0]) == 2 for v in nd.ins[:2])
    return (nd.where == "npu" and (nd.op == "Gemm" or two_d) and a.get("tc_precision") == "int8" and len(nd.ins) == 4
            and len(nd.outs) == 1 and nd.ins[0] is not None and nd.ins[3] is not None
            and info.get(str(nd.ins[0].name), ((), ""))[1] == "int8"
            and info.get(str(nd.outs[0].name), ((), ""))[1] == "float32"
            and not any(k in a for k in ("tc_y_scale", "tc_split", "tc_y_heads", "tc_y_rows_first", "tc_lut"))
            and not int(a.get("transA", 0)) and not int(a.get("transB", 0)))


def _norm_over_columns(norm: Any, info: dict[str, tuple], n: int) -> bool:
    """Whether ``norm`` normalises each row of N columns alone: over the last axis only, Y
    (and its int8 copy) and no Mean or InvStdDev."""
    shape = info[str(norm.ins[0].name)][0]
    axis = int(norm.attrs.get("axis", -1))
    axis = axis + len(shape) if axis < 0 else axis
    outs = 2 if "tc_q_scale" in norm.attrs else 1
    return (len(shape) >= 1 and axis == len(shape) - 1 and int(shape[-1]) == n and len(norm.outs) == outs
            and int(norm.attrs.get("stash_type", 1)) == 1)


def fuse(nodes: list[Any], info: dict[str, tuple], graph_outputs: set[str], TensorSpec: Callable[..., Any],
         cycles: Callable[[Any], int | None]) -> list[dict[str, Any]]:
    """Fuses each eligible Gemm -> norm in place (the Gemm moved to the norm's place, the
    views and the norm dropped) when ``cycles(node)`` (the cost model's estimate of a node's
    kernel, None when it has none) finds the fused Gemm faster than the two apart: each core
    then reads all of the weights, which a wide K makes the slower plan; returns the report
    entries ``{"node", "fused"}``."""
    from .fuse_epilogue import move_to_place, sole_data_reader, value_readers

    readers = value_readers(nodes)

    def sole_reader(name):
        return sole_data_reader(readers, graph_outputs, name)

    out, place = [], {}  # place: id(norm) -> the Gemm that runs there
    for nd in nodes:
        if not _eligible(nd, info):
            continue
        chain, v = [], str(nd.outs[0].name)
        r = sole_reader(v)
        while r is not None and r.where == "view" and len(r.outs) == 1:
            chain.append(r)
            r = sole_reader(str(r.outs[0].name))
        n = int(info[str(nd.outs[0].name)][0][-1])
        if r is None or r.where != "npu" or r.op not in NORMS or not _norm_over_columns(r, info, n):
            continue
        norm = r
        skip = norm.ins[3] if norm.attrs.get("tc_skip") and len(norm.ins) > 3 else None
        bias = norm.ins[2] if len(norm.ins) > 2 else None
        if norm.op == "RMSNormalization":
            bias, skip = None, None
        attrs = dict(nd.attrs, tc_row_norm=norm.op, tc_norm_epsilon=float(norm.attrs.get("epsilon", 1e-5)))
        if "tc_q_scale" in norm.attrs:
            attrs.update(tc_norm_q_scale=norm.attrs["tc_q_scale"],
                         tc_norm_q_zero_point=int(norm.attrs.get("tc_q_zero_point", 0)))
        apart = [cycles(nd), cycles(norm)]
        if None in apart:
            continue
        saved = (nd.op, nd.ins, nd.attrs, nd.outs, nd.in_specs)
        nd.op = "Gemm"
        nd.ins = list(nd.ins) + [norm.ins[1], bias, skip]
        nd.attrs, nd.outs = attrs, list(norm.outs)
        nd.in_specs = [None if x is None else TensorSpec(*info[str(x.name)]) for x in nd.ins]
        together = cycles(nd)
        if together is None or together >= sum(apart):
            nd.op, nd.ins, nd.attrs, nd.outs, nd.in_specs = saved
            continue
        for x in chain + [norm]:
            x.where, x.reason = "dropped", f"fused into `{nd.name}` (its norm in the epilogue)"
        place[id(norm)] = nd
        out.append({"node": nd.name, "fused": [x.name for x in chain + [norm] if x.name != nd.name]})
    move_to_place(nodes, place)
    return out
