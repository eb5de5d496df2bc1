"""Run-time checks of the inputs that set a node's output shape and are not constants.

Reshape's ``shape``, Expand's ``shape``, Squeeze's and Unsqueeze's ``axes``, Tile's
``repeats``, Split's ``split``, TopK's ``K``, OneHot's ``depth``, ConstantOfShape's
``input`` and Col2Im's ``image_shape`` set the output shape. When such an input is computed while the model runs, type
inference cannot find the shape; the model may declare it (value_info, a graph output's
type), but a declaration is not a fact the compiler may build on. For these ops the set of
values that give the declared shape is small and known (the shape itself, or the axes that
produce it), so the driver compiles the node for the declared shape and puts a
``CheckInput`` step (src/compiler/host_check.cc) before it: when the model runs, a value
that gives another shape fails the run with a ValueError naming the node and the value.

    check = input_check(nd, shapes)   # (input index, the CheckInput attributes), a reason, or None

Other ops whose shape only the declaration gives are refused by the driver.

Ops that run as their ONNX function bodies and whose output shape an input sets (the
window functions' ``size``, CenterCropPad's ``shape``, AffineGrid's ``size``:
``SPECIALISED_INPUTS``) have their body compiled for the one value that gives the declared
shape, checked by a ``CheckInput`` step when the input is a graph input.

One more check of inputs the kernels cannot take as they come: indices (Gather,
GatherElements, GatherND, Scatter, ScatterElements, ScatterND: ``INDEX_INPUTS``), which
ONNX makes an error out of range where the npu kernels would clamp them: constant ones checked when compiling
(``index_error``), others by a ``CheckIndices`` step before the node (``index_check``).
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Mapping, Sequence

# op -> the input whose value sets the output shape
SHAPE_INPUTS = {"Reshape": 1, "Expand": 1, "Squeeze": 1, "Unsqueeze": 1, "Tile": 1, "Split": 1, "TopK": 1,
                "OneHot": 1, "ConstantOfShape": 0, "Col2Im": 1}


def _values(per_element: Sequence[Sequence[int]]) -> dict[str, Any]:
    return {"tc_counts": [len(a) for a in per_element], "tc_allowed": [int(v) for a in per_element for v in a]}


def _axes(rank: int, k: int, fits: Callable[[tuple[int, ...]], bool]) -> dict[str, Any] | str:
    masks = [m for m in itertools.combinations(range(rank), k) if fits(m)]
    if not masks:
        return f"no {k} axes of {rank} give it"
    return {"tc_rank": rank, "tc_masks": [int(d in m) for m in masks for d in range(rank)]}


def _reshape(attrs, ins, outs, k):
    x, y = ins[0], outs[0]
    if k != len(y):
        return f"the shape input has {k} elements for an output of rank {len(y)}"
    zero = bool(attrs.get("allowzero", 0))
    allowed = []
    for j, d in enumerate(y):
        a = [d, -1]
        if (not zero and j < len(x) and x[j] == d) or (zero and d == 0):
            a.append(0)
        allowed.append(sorted(set(a), key=a.index))
    return {**_values(allowed), "tc_single": -1}


def _expand(attrs, ins, outs, k):
    x, y = ins[0], outs[0]
    r = len(y)
    if r != max(len(x), k):
        return f"an output of rank {r} from an input of rank {len(x)} and a shape of {k} elements"
    pad = [1] * (r - len(x)) + list(x)
    allowed = []
    for pos in range(r):
        if pad[pos] != y[pos] and pad[pos] != 1:
            return f"dimension {pos} of the input, {pad[pos]}, does not broadcast to {y[pos]}"
        if pos < r - k:
            if pad[pos] != y[pos]:
                return f"dimension {pos}, {y[pos]}, is not the input's"
            continue
        allowed.append([y[pos]] + ([1] if pad[pos] == y[pos] and y[pos] != 1 else []))
    return _values(allowed)


def _squeeze(attrs, ins, outs, k):
    x, y = ins[0], outs[0]
    return _axes(len(x), k, lambda m: all(x[d] == 1 for d in m) and
                 [x[d] for d in range(len(x)) if d not in m] == list(y))


def _unsqueeze(attrs, ins, outs, k):
    x, y = ins[0], outs[0]
    return _axes(len(y), k, lambda m: all(y[d] == 1 for d in m) and
                 [y[d] for d in range(len(y)) if d not in m] == list(x))


def _tile(attrs, ins, outs, k):
    x, y = ins[0], outs[0]
    if k != len(x) or len(y) != len(x):
        return f"repeats of {k} elements for an input of rank {len(x)} and an output of rank {len(y)}"
    allowed = []
    for a, b in zip(x, y):
        if a == 0:
            allowed.append([] if b == 0 else None)
        else:
            allowed.append([b // a] if b % a == 0 else None)
        if allowed[-1] is None:
            return f"{b} is no multiple of {a}"
    return _values(allowed)


def _along(axis_attr, default, rank_of):
    def derive(attrs, ins, outs, k):
        rank = len(rank_of(ins, outs))
        axis = int(attrs.get(axis_attr, default))
        axis = axis + rank if axis < 0 else axis
        if not 0 <= axis < rank or k != 1:
            return f"axis {axis} of rank {rank}, {k} values"
        return _values([[outs[0][axis]]])
    return derive


def _split(attrs, ins, outs, k):
    rank = len(ins[0])
    axis = int(attrs.get("axis", 0))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank or k != len(outs):
        return f"{k} split sizes for {len(outs)} outputs"
    return _values([[o[axis]] for o in outs])


def _constant_of_shape(attrs, ins, outs, k):
    if k != len(outs[0]):
        return f"a shape of {k} elements for an output of rank {len(outs[0])}"
    return _values([[d] for d in outs[0]])


def _col2im(attrs, ins, outs, k):
    if k != len(outs[0]) - 2:
        return f"an image shape of {k} elements for an output of rank {len(outs[0])}"
    return _values([[d] for d in outs[0][2:]])


_DERIVE = {
    "Reshape": _reshape, "Expand": _expand, "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Tile": _tile,
    "Split": _split, "TopK": _along("axis", -1, lambda i, o: i[0]), "OneHot": _along("axis", -1, lambda i, o: o[0]),
    "ConstantOfShape": _constant_of_shape, "Col2Im": _col2im,
}


def input_check(op: str, attrs: Mapping[str, Any], in_shapes: Sequence[Sequence[int] | None],
                out_shapes: Sequence[Sequence[int]]) -> tuple[int, dict[str, Any]] | str | None:
    """The check that makes the declared output shapes of a node safe to compile for.

    :param op: the node's op type.
    :param attrs: its attributes.
    :param in_shapes: the static shapes of its inputs (None for an omitted one).
    :param out_shapes: the static (declared) shapes of its outputs.
    :returns: ``(input index, CheckInput attributes)`` (without ``tc_what``/``tc_shape``);
        a string saying why no value of the input gives those shapes; None when the op
        has no such check (SHAPE_INPUTS).
    """
    i = SHAPE_INPUTS.get(op)
    if i is None or i >= len(in_shapes) or in_shapes[i] is None:
        return None
    k = 1
    for d in in_shapes[i]:
        k *= int(d)
    try:
        got = _DERIVE[op](attrs, list(in_shapes), list(out_shapes), k)
    except (IndexError, TypeError, ValueError, ZeroDivisionError) as e:
        return f"the shapes do not fit {op} ({e})"
    return (i, got) if isinstance(got, dict) else got


# ---- one value for an op run as its function body ----------------------------------------------
# op -> the input that sets the output shape, for ops that run as their ONNX function bodies
# (compiler/expand_functions.py): a body computes every later shape from that input's
# values, so the driver compiles the body for the one value that gives the declared output
# shape (``specialised_value``), and a ``CheckInput`` step fails a run that feeds another.
SPECIALISED_INPUTS = {"HannWindow": 0, "HammingWindow": 0, "BlackmanWindow": 0, "CenterCropPad": 1, "AffineGrid": 1}


def specialised_value(op: str, attrs: Mapping[str, Any], in_shapes: Sequence[Sequence[int] | None],
                      out_shapes: Sequence[Sequence[int]]) -> tuple[list[int], dict[str, Any]] | None:
    """For an op of SPECIALISED_INPUTS: ``(the input's value, CheckInput attributes without
    tc_what/tc_shape)`` that give ``out_shapes``; None when the shapes do not fit the op."""
    i = SPECIALISED_INPUTS.get(op)
    if i is None or i >= len(in_shapes) or in_shapes[i] is None or not out_shapes:
        return None
    k = 1
    for d in in_shapes[i]:
        k *= int(d)
    y = [int(d) for d in out_shapes[0]]
    if op.endswith("Window"):
        if k != 1 or len(y) != 1:
            return None
        value, allowed = [y[0]], [[y[0]]]
    elif op == "CenterCropPad":
        x = in_shapes[0]
        if x is None or len(x) != len(y):
            return None
        axes = [int(a) for a in attrs.get("axes") or range(len(x))]
        axes = [a + len(x) if a < 0 else a for a in axes]
        if k != len(axes) or any(not 0 <= a < len(x) for a in axes):
            return None
        value = [y[a] for a in axes]
        allowed = [[v] for v in value]
    else:  # AffineGrid: size (N, C, H, W) -> (N, H, W, 2); the channels do not shape the grid
        if k != len(y) or k < 4 or y[-1] != k - 2:
            return None
        value = [y[0], 1] + y[1:-1]
        allowed = [[y[0]], []] + [[d] for d in y[1:-1]]
    return value, _values(allowed)


# ---- indices -------------------------------------------------------------------------------
# op -> the input whose values index the data (input 0). ONNX makes an index outside
# [-n, n) an error; the npu kernels clamp such an index (or drop the update), so the driver
# checks constant indices when compiling (index_error) and puts a ``CheckIndices`` step
# (src/compiler/host_check.cc) before a node whose indices are computed while the model runs.
INDEX_INPUTS = {"Gather": 1, "GatherElements": 1, "GatherND": 1, "Scatter": 1, "ScatterElements": 1, "ScatterND": 1}


def index_bounds(op: str, attrs: Mapping[str, Any], data_shape: Sequence[int],
                 indices_shape: Sequence[int]) -> tuple[list[int], list[int]] | str:
    """The length of the data axis each index selects along, and that axis.

    :returns: ``(bounds, axes)``: element e of the indices must lie in
        ``[-bounds[e % len(bounds)], bounds[e % len(bounds)])``; or why the shapes do not fit.
    """
    rank = len(data_shape)
    if op in ("GatherND", "ScatterND"):
        b = int(attrs.get("batch_dims", 0)) if op == "GatherND" else 0
        k = int(indices_shape[-1]) if indices_shape else 0
        if not indices_shape or k < 1 or b + k > rank:
            return f"index tuples of {k} elements after {b} batch dims for data of rank {rank}"
        axes = list(range(b, b + k))
    else:
        axis = int(attrs.get("axis", 0))
        axis = axis + rank if axis < 0 else axis
        if not 0 <= axis < rank:
            return f"axis {attrs.get('axis', 0)} is out of range for data of rank {rank}"
        axes = [axis]
    return [int(data_shape[a]) for a in axes], axes


def index_error(op: str, attrs: Mapping[str, Any], data_shape: Sequence[int], indices: Any) -> str | None:
    """Why constant ``indices`` of ``op`` are out of range for data of ``data_shape``, or None."""
    import numpy as np

    a = np.asarray(indices)
    got = index_bounds(op, attrs, data_shape, a.shape)
    if isinstance(got, str):
        return got
    if a.size == 0:
        return None
    bounds, axes = got
    b = np.resize(np.asarray(bounds, np.int64), a.size).reshape(a.shape)
    bad = np.argwhere((a < -b) | (a >= b))
    if not len(bad):
        return None
    at = tuple(int(x) for x in bad[0])
    n, axis = int(b[at]), axes[at[-1] if len(axes) > 1 else 0]
    where = f" at ({', '.join(map(str, at))})" if at else ""
    return (f"index {int(a[at])}{where} is out of range: axis {axis} of the data has {n} elements, so an index "
            f"must be in [{-n}, {n - 1}]")


def index_check(op: str, attrs: Mapping[str, Any], data_shape: Sequence[int],
                indices_shape: Sequence[int]) -> dict[str, Any] | str:
    """The CheckIndices attributes (without ``tc_what``) for indices computed while the model runs."""
    got = index_bounds(op, attrs, data_shape, indices_shape)
    if isinstance(got, str):
        return got
    return {"tc_bounds": got[0], "tc_axes": got[1]}
