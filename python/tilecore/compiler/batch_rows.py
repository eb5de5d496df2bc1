"""Which axis of each value is the batch, and the proof that a graph keeps the rows of a
batch apart: what lets a run of a smaller batch take a larger bucket, padded with zeros
and cropped (docs/compiler.md, "Shape buckets").

``batch_axes(graph, {input: axis})`` follows the batch axis from the inputs through every
node of a typed graph with static shapes (one bucket's, folded) to the outputs. Each op
type it knows maps the axis from its inputs to its outputs when row ``i`` of every output
depends on row ``i`` of the inputs only; any other node on the batch's path (an unknown op,
a reduction or a softmax over the batch axis, a MatMul that sums over it, a Reshape that
splits it) is a :class:`BatchRowsError` naming the node. The analysis refuses what it
cannot show; it never guesses.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

# Ops whose output element depends on the inputs' elements at the same (broadcast) index.
ELEMENTWISE = frozenset({
    "Abs", "Acos", "Acosh", "Add", "And", "Asin", "Asinh", "Atan", "Atanh", "BitShift", "BitwiseAnd",
    "BitwiseNot", "BitwiseOr", "BitwiseXor", "Cast", "CastLike", "Ceil", "Celu", "Clip", "Cos", "Cosh", "Div",
    "Dropout", "Elu", "Equal", "Erf", "Exp", "Floor", "Gelu", "Greater", "GreaterOrEqual", "HardSigmoid",
    "HardSwish", "Identity", "IsInf", "IsNaN", "LeakyRelu", "Less", "LessOrEqual", "Log", "Max", "Mean", "Min",
    "Mish", "Mod", "Mul", "Neg", "Not", "Or", "PRelu", "Pow", "Reciprocal", "Relu", "Round", "Selu", "Shrink",
    "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Sub", "Sum", "Swish", "Tan", "Tanh",
    "ThresholdedRelu", "Where", "Xor",
})
# Ops over (N, C, spatial...) whose rows (axis 0) are computed apart.
PER_IMAGE = frozenset({
    "AveragePool", "BatchNormalization", "Conv", "ConvTranspose", "DepthToSpace", "GlobalAveragePool",
    "GlobalLpPool", "GlobalMaxPool", "GroupNormalization", "InstanceNormalization", "LpPool",
    "LRN", "MaxPool", "Resize", "SpaceToDepth", "Upsample",
})
VIEWS = frozenset({"Flatten", "Reshape", "Squeeze", "Unsqueeze"})
REDUCTIONS = frozenset({
    "ArgMax", "ArgMin", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
    "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare",
})


class BatchRowsError(ValueError):
    """A node on the batch's path that may mix the rows of a batch (or that the analysis
    does not know): padding a smaller batch into a larger bucket would change the result."""


def _shape(v) -> list[int]:
    return [int(d) for d in v.type.shape]


def _const(v) -> np.ndarray | None:
    return None if v is None or v.data is None else v.numpy()


def _rows_equal(v, axis: int) -> bool:
    """A constant whose slices along ``axis`` are all equal (a broadcast folded into it)."""
    a = _const(v)
    return a is not None and bool((a == np.take(a, [0], axis=axis)).all())


def _view_axis(src: list[int], dst: list[int], a: int, inner: int, batch: int) -> tuple[int, int] | None:
    """Where a view puts the batch: ``src``'s axis ``a`` holds the batch's rows as its outer
    factor (its length is ``batch`` x ``inner``); the axis of ``dst`` after the same elements
    whose length is a multiple of ``batch``, and its inner factor. A view may merge the batch
    with the axes after it (``[B, S] -> [B*S]``: rows stay whole blocks) and split it back,
    never merge it under another axis."""
    before = int(np.prod(src[:a], dtype=np.int64))
    for b in range(len(dst)):
        if int(np.prod(dst[:b], dtype=np.int64)) == before and dst[b] >= batch and dst[b] % batch == 0:
            if dst[b] // batch > inner * int(np.prod(src[a + 1:], dtype=np.int64)):
                return None
            return b, dst[b] // batch
    return None


def _norm(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _broadcast(node, axes: dict[str, int]) -> int:
    """The output axis of a broadcasting op: every batch-carrying input's axis lands there; the
    others are 1 (or absent) there, or a constant equal along it."""
    out_rank = len(_shape(node.outputs[0]))
    lands = set()
    for v in node.inputs:
        if v is not None and str(v.name) in axes:
            lands.add(axes[str(v.name)] + out_rank - len(_shape(v)))
    if len(lands) != 1:
        raise _refuse(node, "its inputs carry the batch on different axes")
    (a,) = lands
    for v in node.inputs:
        if v is None or str(v.name) in axes:
            continue
        s = _shape(v)
        at = a - (out_rank - len(s))
        if 0 <= at < len(s) and s[at] != 1 and not _rows_equal(v, at):
            raise _refuse(node, f"input `{v.name}` differs along the batch axis (size {s[at]})")
    return a


def _refuse(node, why: str) -> BatchRowsError:
    return BatchRowsError(f"node `{node.name}` ({node.op_type}): {why}; a smaller batch cannot run padded in a "
                          "larger bucket (compile without a batch declaration: buckets of exact shapes)")


def _axis_list(node, default_all_rank: int) -> list[int]:
    attrs = dict(node.attrs)
    if "axes" in attrs:
        axes = list(attrs["axes"])
    elif len(node.inputs) > 1 and node.inputs[1] is not None:
        c = _const(node.inputs[1])
        if c is None:
            raise _refuse(node, "its axes are computed while the model runs")
        axes = [int(x) for x in c.reshape(-1)]
    elif "axis" in attrs:
        axes = [int(attrs["axis"])]
    else:
        axes = []
    if not axes and not attrs.get("noop_with_empty_axes", 0):
        axes = list(range(default_all_rank))
    return [_norm(x, default_all_rank) for x in axes]


def _rows_of_indices(idx: np.ndarray | None, length: int, inner: int, batch: int) -> int | None:
    """The axis ``k`` of constant gather indices along which index ``i`` of the output takes
    elements of row ``i`` only (the rows are blocks of ``inner`` along an axis of ``length``),
    or None."""
    if idx is None:
        return None
    rows = np.where(idx < 0, idx + length, idx) // inner
    for k, n in enumerate(idx.shape):
        want = np.arange(batch).reshape([-1 if d == k else 1 for d in range(idx.ndim)])
        if n == batch and (rows == want).all():
            return k
    return None


class _Axes(dict):
    """Value name -> its batch axis; ``inner``: value name -> how many consecutive elements of
    that axis each row of the batch holds (1 but where a view merged the batch with the axes
    after it); ``batch``: the batch's size."""

    def __init__(self, batch: int) -> None:
        super().__init__()
        self.inner: dict[str, int] = {}
        self.batch = batch


def _step(node, axes: _Axes) -> int | tuple[int, int]:
    """The batch axis of the node's outputs (they all share it), with its inner factor when the
    node is a view (else the inputs'), or a BatchRowsError."""
    op = node.op_type
    attrs = dict(node.attrs)
    ins = [v for v in node.inputs if v is not None and str(v.name) in axes]
    first = node.inputs[0]
    a0 = axes.get(str(first.name)) if first is not None else None
    rank0 = len(_shape(first)) if first is not None else 0
    if op in ELEMENTWISE:
        return _broadcast(node, axes)
    if op in ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"):
        if a0 is None or len(ins) != 1:
            raise _refuse(node, "a scale or zero point carries the batch")
        per_axis = any(v is not None and len(_shape(v)) > 0 and int(np.prod(_shape(v))) > 1
                       for v in node.inputs[1:])
        if per_axis and _norm(int(attrs.get("axis", 1)), rank0) == a0:
            raise _refuse(node, "it quantises per channel along the batch axis")
        return a0
    if op in PER_IMAGE:
        if a0 != 0 or len(ins) != 1:
            raise _refuse(node, "only its data input's axis 0 may be the batch")
        if _shape(node.outputs[0])[0] != _shape(first)[0]:
            raise _refuse(node, "it resizes the batch axis")
        return 0
    if op in ("LayerNormalization", "RMSNormalization", "SkipLayerNormalization"):
        if a0 is None or any(str(v.name) != str(first.name) for v in ins):
            raise _refuse(node, "a scale or bias carries the batch")
        if a0 >= _norm(int(attrs.get("axis", -1)), rank0):
            raise _refuse(node, "it normalises over the batch axis")
        return a0
    if op in ("Softmax", "LogSoftmax", "Hardmax"):
        opset = int(attrs.get("_opset", 13))
        axis = _norm(int(attrs.get("axis", -1 if opset >= 13 else 1)), rank0)
        mixes = a0 >= axis if opset < 13 else a0 == axis
        if mixes:
            raise _refuse(node, "it normalises over the batch axis")
        return a0
    if op in REDUCTIONS:
        reduced = _axis_list(node, rank0)
        if a0 is None or a0 in reduced or len(ins) != 1:
            raise _refuse(node, "it reduces over the batch axis")
        keep = int(attrs.get("keepdims", 1))
        return a0 if keep else a0 - sum(1 for x in reduced if x < a0)
    if op in ("CumSum", "TopK", "Split", "Concat", "ReverseSequence", "LpNormalization"):
        axis = _norm(int(attrs.get("axis", 0)), len(_shape(node.outputs[0])))
        if op == "CumSum":
            c = _const(node.inputs[1])
            if c is None:
                raise _refuse(node, "its axis is computed while the model runs")
            axis = _norm(int(c.reshape(-1)[0]), rank0)
        if op == "Concat":
            a = _broadcast(node, axes)
            if a == axis:
                raise _refuse(node, "it concatenates along the batch axis")
            return a
        if a0 is None or len(ins) != 1 or a0 == axis:
            raise _refuse(node, "it works along the batch axis")
        return a0
    if op in VIEWS:
        if a0 is None:
            raise _refuse(node, "its shape input carries the batch")
        b = _view_axis(_shape(first), _shape(node.outputs[0]), a0, axes.inner.get(str(first.name), 1), axes.batch)
        if b is None:
            raise _refuse(node, f"it splits or merges the batch axis ({_shape(first)} -> {_shape(node.outputs[0])})")
        return b
    if op == "Transpose":
        perm = [int(p) for p in attrs.get("perm", list(range(rank0))[::-1])]
        return perm.index(a0)
    if op == "MatMul":
        A, B = node.inputs[0], node.inputs[1]
        ra, rb, ro = len(_shape(A)), len(_shape(B)), len(_shape(node.outputs[0]))
        aa, ab = axes.get(str(A.name)), axes.get(str(B.name))
        lands = set()
        if aa is not None:
            if ra == 1 or aa == ra - 1:
                raise _refuse(node, "it sums over the batch axis of its first input")
            lands.add(ro - 2 if aa == ra - 2 else aa + ro - ra)
        if ab is not None:
            if rb == 1 or ab == rb - 2:
                raise _refuse(node, "it sums over the batch axis of its second input")
            lands.add(ro - 1 if ab == rb - 1 else ab + ro - rb)
        if len(lands) != 1 or (aa is not None and ab is not None and (aa >= ra - 2 or ab >= rb - 2)):
            raise _refuse(node, "its inputs carry the batch on different axes")
        return lands.pop()
    if op == "Gemm":
        A, B = node.inputs[0], node.inputs[1]
        C = node.inputs[2] if len(node.inputs) > 2 else None
        if str(B.name) in axes or a0 != (1 if attrs.get("transA", 0) else 0):
            raise _refuse(node, "the batch is not the rows of its first input")
        if C is not None and str(C.name) in axes and axes[str(C.name)] != len(_shape(C)) - 2:
            raise _refuse(node, "its bias carries the batch on another axis")
        return 0
    if op == "Gather":
        data, idx = node.inputs[0], node.inputs[1]
        g = _norm(int(attrs.get("axis", 0)), len(_shape(data)))
        if str(data.name) in axes and str(idx.name) not in axes:
            a = axes[str(data.name)]
            if a == g:  # constant indices that take each output row's elements from that row
                k = _rows_of_indices(_const(idx), _shape(data)[a], axes.inner.get(str(data.name), 1), axes.batch)
                if k is None:
                    raise _refuse(node, "it gathers along the batch axis from other rows")
                return g + k, 1
            return a if a < g else a + len(_shape(idx)) - 1
        if str(idx.name) in axes and str(data.name) not in axes:
            return g + axes[str(idx.name)]
        raise _refuse(node, "both inputs carry the batch")
    if op in ("Pad", "Slice", "Expand", "Tile"):
        if a0 is None or len(ins) != 1:
            raise _refuse(node, "an input other than the data carries the batch")
        so = _shape(node.outputs[0])
        out = a0 + len(so) - rank0
        if so[out] != _shape(first)[a0]:
            raise _refuse(node, "it changes the batch axis's length")
        if op == "Slice":  # a whole, forward slice of the batch axis is no slice of it
            starts, ends = _const(node.inputs[1]), _const(node.inputs[2])
            sl_axes = _const(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] is not None else None
            steps = _const(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else None
            if starts is None or ends is None:
                raise _refuse(node, "its bounds are computed while the model runs")
            sl = list(range(len(starts))) if sl_axes is None else [_norm(int(x), rank0) for x in sl_axes]
            for i, x in enumerate(sl):
                if x == a0 and (int(starts[i]) not in (0, -_shape(first)[a0]) or
                                (steps is not None and int(steps[i]) != 1)):
                    raise _refuse(node, "it slices the batch axis")
        return out
    raise _refuse(node, "no rule shows that it keeps the rows of a batch apart")


def batch_axes(graph: Any, inputs: Mapping[str, int]) -> dict[str, int]:
    """The batch axis of every graph output, from each graph input's (``inputs``: name -> axis,
    every input). A BatchRowsError names the first node that may mix rows, or an output that
    does not carry the batch."""
    sizes = set()
    for v in graph.inputs:
        name = str(v.name)
        if name not in inputs:
            raise BatchRowsError(f"input `{name}` has no batch axis (every input needs one)")
        rank = len(_shape(v))
        a = _norm(int(inputs[name]), rank)
        if not 0 <= a < rank:
            raise BatchRowsError(f"input `{name}`: batch axis {inputs[name]} of rank {rank}")
        sizes.add(_shape(v)[a])
    if len(sizes) != 1:
        raise BatchRowsError(f"the inputs' batch axes have different lengths {sorted(sizes)}")
    axes = _Axes(sizes.pop())
    for v in graph.inputs:
        axes[str(v.name)] = _norm(int(inputs[str(v.name)]), len(_shape(v)))
    for node in graph.nodes:
        carried = [v for v in node.inputs if v is not None and str(v.name) in axes]
        if not carried:
            continue  # computed from constants alone: the same for every row
        res = _step(node, axes)
        if isinstance(res, tuple):
            a, inner = res
        else:
            a = res
            inners = {axes.inner.get(str(v.name), 1) for v in carried}
            if len(inners) != 1 or (inners != {1} and node.op_type in PER_IMAGE):
                raise _refuse(node, "its batch axis holds the batch merged with another axis")
            inner = inners.pop()
        for v in node.outputs:
            if str(v.name) and v.type is not None and getattr(v.type, "shape", None) is not None:
                if a < len(_shape(v)):
                    axes[str(v.name)] = a
                    axes.inner[str(v.name)] = inner
    out = {}
    for v in graph.outputs:
        name = str(v.name)
        if name not in axes or axes.inner.get(name, 1) != 1:
            raise BatchRowsError(f"output `{name}` does not carry the batch on an axis of its own"
                                 if name in axes else
                                 f"output `{name}` does not carry the batch (it does not depend on the inputs' rows)")
        out[name] = axes[name]
    return out
