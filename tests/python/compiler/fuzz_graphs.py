"""Random valid ONNX graphs over the ops tilecore lowers, and the check of one graph:
compiled with the default options, run on the simulator and compared with ONNX Runtime.

The graph fuzzer's shared part: `test_graph_fuzz.py` draws graphs with Hypothesis (which
shrinks a failing one), `benchmarks/graph_fuzz.py` draws many from a seeded numpy
generator and shrinks a failure with :func:`shrink`. Both drive one generator,
:func:`generate`, through a `Draw`: every decision is an integer in a range, the lowest
value the simplest (stop adding nodes, the first op of a list, the smallest size), so
that a shorter or smaller choice sequence is a smaller graph.

A graph is an input (an image [N, C, H, W], a sequence [N, C, L] or rows [M, K] or
[B, M, K]; mostly float32, some float16 and int32) and a chain of *blocks*, each reading
one of the values so far (the latest most often, so values get two readers): a Conv
(grouped, depthwise, strided, padded, dilated), a Conv + residual Add + activation (the
epilogue fusion), a squeeze-excitation block, an element-wise op with a constant, an
input or an earlier value broadcast in either direction, activations, pooling,
reductions, Softmax, the normalisations, the layout ops, Resize, Pad, MatMul/Gemm,
attention-like MatMul + Softmax + MatMul, and chains of MatMuls or Convs with 64 KiB
and more of weights each (prefetched into L2 inside a layer group). The values nothing
reads are the outputs, and now and then a value that is also read.

    case = generate(RngDraw(seed))
    result = check(case)          # outcome: invalid, refused, matched, mismatched, crashed
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 21
# f32 outputs: the cosine and allclose bounds of the brief (atol relative to the output's scale)
F32_COSINE, F32_RTOL, F32_ATOL = 0.9999, 1e-3, 1e-4
# f16 graphs compute in f16 in ONNX Runtime and in f32 on tilecore's host kernels
F16_COSINE, F16_RTOL, F16_ATOL = 0.999, 1e-2, 1e-2
ONNX_TYPE = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "int32": TensorProto.INT32}
# an output whose largest magnitude is below this is judged with this as its scale
SCALE_FLOOR = 1e-2
# the relative perturbation of inputs and weights that measures an output's conditioning,
# and how many times the spread it causes a mismatch may reach
PERTURBATION, SPREAD_FACTOR = 1e-5, 10.0
# a normalised group whose standard deviation is below this times its magnitude is constant
# up to f32 rounding
DEGENERATE_STD = 1e-3
MAX_ELEMENTS = 1 << 16  # a block that would make a larger value draws a smaller form


# ---- drawing decisions ------------------------------------------------------------------

class Draw:
    """The source of the generator's decisions; `integer(lo, hi)` (inclusive) is the one
    primitive, shrinking toward `lo`."""

    def integer(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def choice(self, options: Sequence[Any]) -> Any:
        """One of ``options``; the first is the simplest."""
        return options[self.integer(0, len(options) - 1)]

    def boolean(self) -> bool:
        return self.integer(0, 1) == 1


class RngDraw(Draw):
    """Decisions from a seeded numpy generator, recorded (as offsets from each range's
    low end) in ``choices``; given ``replay``, those are taken instead (clamped to the
    range; past its end, 0), which is how :func:`shrink` tries a smaller sequence."""

    def __init__(self, seed: int | Sequence[int] = 0, replay: Sequence[int] | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.replay = None if replay is None else list(replay)
        self.choices: list[int] = []

    def integer(self, lo: int, hi: int) -> int:
        if self.replay is None:
            v = int(self.rng.integers(0, hi - lo + 1))
        else:
            i = len(self.choices)
            v = min(self.replay[i], hi - lo) if i < len(self.replay) else 0
        self.choices.append(v)
        return lo + v


class HypothesisDraw(Draw):
    """Decisions drawn from Hypothesis' ``st.data()``, so that it shrinks a failing graph."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))


# ---- the graph being built --------------------------------------------------------------

@dataclass
class Val:
    name: str
    shape: tuple
    dtype: str = "float32"

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass
class Case:
    """A generated graph: the model, its inputs, the blocks it was built of."""

    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    blocks: list[str]
    choices: list[int] = field(default_factory=list)

    @property
    def op_types(self) -> list[str]:
        return sorted({n.op_type for n in self.model.graph.node})


class _Builder:
    def __init__(self, d: Draw, wseed: int) -> None:
        self.d = d
        self.rng = np.random.default_rng(wseed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[Val] = []
        self.values: list[Val] = []  # every value a block may read, in order of creation
        self.readers: dict[str, int] = {}
        self.n = 0

    def fresh(self, stem: str) -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def const(self, arr: np.ndarray, stem: str = "w") -> str:
        name = self.fresh(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def ints(self, vals: Sequence[int]) -> str:
        return self.const(np.asarray(vals, np.int64), "k")

    def weight(self, shape: Sequence[int], fan_in: int, dtype: str = "float32") -> str:
        w = self.rng.standard_normal(shape) / np.sqrt(max(fan_in, 1))
        return self.const(w.astype(dtype))

    def add_input(self, shape: Sequence[int], dtype: str) -> Val:
        v = Val(self.fresh("x"), tuple(int(s) for s in shape), dtype)
        self.inputs.append(v)
        self.values.append(v)
        return v

    def node(self, op: str, ins: Sequence[str | Val], shape: Sequence[int], dtype: str | None = None,
             keep: bool = True, **attrs: Any) -> Val:
        names = [i.name if isinstance(i, Val) else i for i in ins]
        for i in ins:
            if isinstance(i, Val):
                self.readers[i.name] = self.readers.get(i.name, 0) + 1
        if dtype is None:
            dtype = next(i.dtype for i in ins if isinstance(i, Val))
        out = Val(self.fresh("v"), tuple(int(s) for s in shape), dtype)
        self.nodes.append(helper.make_node(op, names, [out.name], name=f"{op}_{len(self.nodes)}", **attrs))
        if keep:
            self.values.append(out)
        return out

    def node_multi(self, op: str, ins: Sequence[str | Val], shapes: Sequence[Sequence[int]], **attrs: Any) -> list[Val]:
        names = [i.name if isinstance(i, Val) else i for i in ins]
        src = next(i for i in ins if isinstance(i, Val))
        self.readers[src.name] = self.readers.get(src.name, 0) + 1
        outs = [Val(self.fresh("v"), tuple(int(s) for s in sh), src.dtype) for sh in shapes]
        self.nodes.append(helper.make_node(op, names, [o.name for o in outs], name=f"{op}_{len(self.nodes)}",
                                           **attrs))
        self.values.extend(outs)
        return outs


# ---- blocks -----------------------------------------------------------------------------
# Each takes the builder and the value it reads and returns the value it made, or None
# when the value does not suit it (the generator then adds nothing).

FLOAT_UNARY = ["Relu", "Sigmoid", "Tanh", "LeakyRelu", "Clip", "HardSigmoid", "HardSwish", "Gelu", "Elu", "Softplus",
               "Softsign", "Neg", "Abs", "Erf", "Mish", "Selu", "Celu", "Exp", "Identity"]
INT_UNARY = ["Neg", "Abs", "Relu", "Identity"]
F16_UNARY = ["Relu", "Sigmoid", "Tanh", "LeakyRelu", "Clip", "HardSigmoid", "HardSwish", "Elu", "Softplus", "Neg", "Abs",
             "Exp", "Identity"]


def _unary(b: _Builder, v: Val, op: str | None = None) -> Val:
    d = b.d
    if op is None:
        op = d.choice({"float32": FLOAT_UNARY, "float16": F16_UNARY, "int32": INT_UNARY}[v.dtype])
    attrs: dict[str, Any] = {}
    ins: list[Any] = [v]
    if op == "LeakyRelu":
        attrs["alpha"] = d.choice([0.01, 0.1, 0.2])
    elif op == "HardSigmoid":
        attrs.update(alpha=d.choice([0.2, 1 / 6]), beta=0.5)
    elif op == "Gelu":
        attrs["approximate"] = d.choice(["none", "tanh"])
    elif op == "Elu" or op == "Celu":
        attrs["alpha"] = d.choice([1.0, 0.5])
    elif op == "Clip":
        lo, hi = d.choice([(0.0, 6.0), (-1.0, 1.0), (None, 0.5), (-0.5, None)])
        ins += ["" if lo is None else b.const(np.array(lo, v.dtype), "c"),
                "" if hi is None else b.const(np.array(hi, v.dtype), "c")]
        while ins[-1] == "":
            ins.pop()
    elif op == "Exp":  # keep it finite: exp of a bounded value
        v = b.node("Tanh", [v], v.shape)
        ins = [v]
    return b.node(op, ins, v.shape, **attrs)


def _positive_unary(b: _Builder, v: Val) -> Val | None:
    """Sqrt, Log or Reciprocal of |v| + c, the argument kept away from zero."""
    if v.dtype != "float32":
        return None
    a = b.node("Abs", [v], v.shape)
    p = b.node("Add", [a, b.const(np.array(b.d.choice([0.5, 1.0]), np.float32), "c")], v.shape)
    return b.node(b.d.choice(["Sqrt", "Log", "Reciprocal"]), [p], v.shape)


def _broadcast_shape(b: _Builder, v: Val) -> tuple:
    """A shape that broadcasts with ``v``'s: per channel, per row, per column, scalar, the
    same, fewer dims, or larger where ``v`` has ones (the other direction)."""
    d = b.d
    kind = d.choice(["same", "channel", "last", "scalar", "one", "random", "wider"])
    s = list(v.shape)
    if kind == "same":
        return tuple(s)
    if kind == "scalar":
        return ()
    if kind == "one":
        return (1,)
    if kind == "channel" and v.rank >= 2:
        out = [1] * v.rank
        out[1] = s[1]
        return tuple(out[1:]) if d.boolean() else tuple(out)  # [C, 1, 1] or [1, C, 1, 1]
    if kind == "last":
        return (s[-1],) if d.boolean() or v.rank < 2 else tuple([1] * (v.rank - 2) + [s[-2], 1])
    out = []
    for dim in s:
        if dim == 1 and kind == "wider":
            out.append(d.choice([1, 2, 3, 4]))
        else:
            out.append(dim if d.boolean() else 1)
    drop = d.integer(0, v.rank)
    while drop and len(out) > 0 and out[0] in (1, s[0]) and kind != "wider":
        out.pop(0)
        drop -= 1
    return tuple(out)


BINARY = ["Add", "Mul", "Sub", "Div", "Max", "Min", "Pow", "PRelu"]


def _binary(b: _Builder, v: Val) -> Val | None:
    d = b.d
    op = d.choice(BINARY if v.dtype != "int32" else ["Add", "Mul", "Sub", "Max", "Min"])
    # the other operand: an earlier value that broadcasts with v, else a constant or an input
    other = None
    exponent = 2.0
    src = d.choice(["const", "value", "input"])
    if src == "value":
        cands = [u for u in b.values if u.name != v.name and u.dtype == v.dtype and _bcast(u.shape, v.shape)
                 and np.prod(_bcast(u.shape, v.shape)) <= MAX_ELEMENTS]
        if cands:
            other = cands[-1 - d.integer(0, len(cands) - 1)]
    if op in ("Div", "Pow", "PRelu") and (other is None or op != "Div"):
        other = None  # Div by a value near 0 and Pow of one are ill-conditioned: constants
    if other is None:
        shape = _broadcast_shape(b, v)
        if op == "PRelu":  # the slope broadcasts to x (unidirectional)
            shape = tuple(shape[-v.rank:]) if len(shape) <= v.rank else tuple([1] * v.rank)
            shape = tuple(1 if sv != ss else ss for sv, ss in zip(v.shape[-len(shape):], shape)) if shape else ()
        if v.dtype == "int32":
            arr = b.rng.integers(-5, 6, shape).astype(np.int32)
        elif op == "Div":
            arr = (b.rng.uniform(0.5, 2.0, shape) * b.rng.choice([-1, 1], shape)).astype(v.dtype)
        elif op == "Pow":
            exponent = d.choice([2.0, 3.0, 1.0])
            arr = np.array(exponent, v.dtype)
            shape = ()
        else:
            arr = b.rng.standard_normal(shape).astype(v.dtype)
        if src == "input" and op not in ("Div", "Pow", "PRelu"):
            other = b.add_input(shape, v.dtype)
        else:
            other = Val(b.const(arr, "c"), tuple(shape), v.dtype)
    out_shape = _bcast(v.shape, other.shape)
    if op in ("Pow", "PRelu", "Div") or d.boolean():
        ins = [v, other]
    else:
        ins = [other, v]
    if op == "Pow" and exponent != 2.0:
        ins[0] = b.node("Tanh", [v], v.shape)  # a bounded base for an odd power
    return b.node(op, ins, out_shape, dtype=v.dtype)


def _bcast(a: Sequence[int], c: Sequence[int]) -> tuple | None:
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(c)))
    except ValueError:
        return None


def _conv_out(n: int, k: int, s: int, dil: int, pb: int, pe: int) -> int:
    return (n + pb + pe - dil * (k - 1) - 1) // s + 1


def _conv(b: _Builder, v: Val, cout: int | None = None, kernel: int | None = None, act: bool = False) -> Val | None:
    if v.dtype == "int32" or v.rank not in (3, 4) or v.shape[1] > 256:
        return None
    d = b.d
    c = v.shape[1]
    spatial = v.shape[2:]
    form = d.choice(["dense", "depthwise", "grouped"]) if cout is None else "dense"
    if form == "depthwise":
        group, cout = c, c * d.choice([1, 2])
    elif form == "grouped" and c % 2 == 0:
        group = d.choice([g for g in (2, 4, 8) if c % g == 0] or [1])
        cout = group * d.choice([1, 2, 3])
    else:
        group = 1
        cout = cout or d.choice([4, 8, 1, 3, 16, c, 32])
    attrs: dict[str, Any] = {}
    ks, ss, ds, pads_b, pads_e, outs = [], [], [], [], [], []
    auto = d.choice(["explicit", "explicit", "SAME_UPPER", "SAME_LOWER", "VALID"])
    for n in spatial:
        k = kernel or d.choice([1, 3, 5, 2])
        s = d.choice([1, 2])
        dil = d.choice([1, 1, 2])
        if dil * (k - 1) + 1 > n + 2 * (k // 2):
            k, dil = 1, 1
        if auto == "explicit":
            pb, pe = d.integer(0, k // 2 * dil), d.integer(0, k // 2 * dil)
        else:
            pb = pe = 0
        ks.append(k), ss.append(s), ds.append(dil), pads_b.append(pb), pads_e.append(pe)
        if auto.startswith("SAME"):
            if dil != 1:
                ds[-1] = dil = 1
            outs.append(-(-n // s))
        else:
            outs.append(_conv_out(n, k, s, dil, pb, pe))
    if min(outs) < 1:
        return None
    attrs["kernel_shape"] = ks
    if any(s != 1 for s in ss) or d.boolean():
        attrs["strides"] = ss
    if any(x != 1 for x in ds):
        attrs["dilations"] = ds
    if auto == "explicit":
        if any(pads_b + pads_e) or d.boolean():
            attrs["pads"] = pads_b + pads_e
    else:
        attrs["auto_pad"] = auto
    if group != 1:
        attrs["group"] = group
    fan_in = c // group * int(np.prod(ks))
    ins = [v, b.weight([cout, c // group, *ks], fan_in, v.dtype)]
    if d.boolean():
        ins.append(b.const((b.rng.standard_normal(cout) * 0.1).astype(v.dtype), "bias"))
    y = b.node("Conv", ins, (v.shape[0], cout, *outs), **attrs)
    if act:
        y = _activation(b, y)
    return y


def _activation(b: _Builder, v: Val) -> Val:
    op = b.d.choice(["Relu", "Clip", "none", "HardSwish", "Sigmoid", "LeakyRelu"])
    return v if op == "none" else _unary(b, v, op)


def _conv_residual(b: _Builder, v: Val) -> Val | None:
    """Conv (same shape) -> Add(residual) -> Relu/Clip: the epilogue fusion's pattern."""
    if v.dtype != "float32" or v.rank != 4 or v.shape[1] > 64:
        return None
    d = b.d
    c = v.shape[1]
    k = d.choice([3, 1])
    ins = [v, b.weight([c, c, k, k], c * k * k)]
    if d.boolean():
        ins.append(b.const((b.rng.standard_normal(c) * 0.1).astype(np.float32), "bias"))
    y = b.node("Conv", ins, v.shape, pads=[k // 2] * 4, kernel_shape=[k, k])
    y = b.node("Add", [y, v] if d.boolean() else [v, y], v.shape)
    op = d.choice(["Relu", "Clip", "none"])
    return y if op == "none" else _unary(b, y, op)


def _se_block(b: _Builder, v: Val) -> Val | None:
    """x * sigmoid(conv(relu(conv(gap(x)))))."""
    if v.dtype != "float32" or v.rank != 4 or v.shape[1] > 128:
        return None
    d = b.d
    c = v.shape[1]
    r = max(1, c // d.choice([4, 2, 8]))
    if d.boolean():
        g = b.node("ReduceMean", [v, b.ints([2, 3])], (v.shape[0], c, 1, 1), keepdims=1)
    else:
        g = b.node("GlobalAveragePool", [v], (v.shape[0], c, 1, 1))
    h = b.node("Conv", [g, b.weight([r, c, 1, 1], c), b.const(np.zeros(r, np.float32), "bias")],
               (v.shape[0], r, 1, 1), kernel_shape=[1, 1])
    h = _unary(b, h, d.choice(["Relu", "HardSwish"]))
    s = b.node("Conv", [h, b.weight([c, r, 1, 1], r), b.const(np.zeros(c, np.float32), "bias")],
               (v.shape[0], c, 1, 1), kernel_shape=[1, 1])
    s = _unary(b, s, d.choice(["Sigmoid", "HardSigmoid"]))
    return b.node("Mul", [v, s] if d.boolean() else [s, v], v.shape)


def _pool(b: _Builder, v: Val) -> Val | None:
    if v.dtype != "float32" or v.rank not in (3, 4):
        return None
    d = b.d
    op = d.choice(["MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"])
    if op.startswith("Global"):
        return b.node(op, [v], v.shape[:2] + (1,) * (v.rank - 2))
    attrs: dict[str, Any] = {}
    ks, ss, pb, pe, outs = [], [], [], [], []
    ceil = d.integer(0, 3) == 3
    dil = d.choice([1, 1, 2]) if op == "MaxPool" else 1
    for n in v.shape[2:]:
        k = min(d.choice([2, 3, 1]), n)
        s = d.choice([2, 1])
        a, e = d.integer(0, k - 1), d.integer(0, k - 1)
        if dil * (k - 1) + 1 > n + a + e:
            a = e = 0
            k = 1
        ks.append(k), ss.append(s), pb.append(a), pe.append(e)
        span = n + a + e - dil * (k - 1) - 1
        outs.append(span // s + 1)
        if -(-span // s) * s >= n + a:  # a last window starting in the padding: ONNX's shape
            ceil = False                # inference and its text disagree there
    if ceil:
        outs = [-(-(n + a + e - dil * (k - 1) - 1) // s) + 1 for n, k, s, a, e in zip(v.shape[2:], ks, ss, pb, pe)]
    if min(outs) < 1:
        return None
    attrs.update(kernel_shape=ks, strides=ss)
    if any(pb + pe):
        attrs["pads"] = pb + pe
    if ceil:
        attrs["ceil_mode"] = 1
    if dil != 1:
        attrs["dilations"] = [dil] * len(ks)
    if op == "AveragePool" and any(pb + pe) and d.boolean():
        attrs["count_include_pad"] = 1
    return b.node(op, [v], v.shape[:2] + tuple(outs), **attrs)


REDUCE = ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp",
          "ReduceL1"]


def _reduce(b: _Builder, v: Val) -> Val | None:
    d = b.d
    op = d.choice(REDUCE if v.dtype == "float32" else ["ReduceSum", "ReduceMax", "ReduceMin"])
    axes = sorted({d.integer(0, v.rank - 1) for _ in range(d.integer(1, 2))})
    keep = d.choice([1, 0])
    if not keep and len(axes) == v.rank:
        keep = 1
    shape = [1 if i in axes else s for i, s in enumerate(v.shape)] if keep else \
        [s for i, s in enumerate(v.shape) if i not in axes]
    neg = d.boolean()
    ax = [a - v.rank if neg else a for a in axes]
    return b.node(op, [v, b.ints(ax)], shape, keepdims=keep)


def _softmax(b: _Builder, v: Val) -> Val | None:
    if v.dtype != "float32":
        return None
    axis = b.d.integer(-v.rank, v.rank - 1)
    return b.node(b.d.choice(["Softmax", "LogSoftmax"]), [v], v.shape, axis=axis)


def _norm(b: _Builder, v: Val) -> Val | None:
    if v.dtype != "float32":
        return None
    d = b.d
    op = d.choice(["LayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization"])
    eps = d.choice([1e-5, 1e-3])
    if op == "LayerNormalization":
        axis = d.choice([-1, 1, -2, 0]) if v.rank > 1 else -1
        axis = max(-v.rank, min(axis, v.rank - 1))
        ns = v.shape[axis:]
        ins = [v, b.const((1 + 0.1 * b.rng.standard_normal(ns)).astype(np.float32), "g")]
        if d.boolean():
            ins.append(b.const((0.1 * b.rng.standard_normal(ns)).astype(np.float32), "beta"))
        return b.node(op, ins, v.shape, axis=axis, epsilon=eps)
    if v.rank < 2:
        return None
    c = v.shape[1]
    if op == "BatchNormalization":
        r = b.rng
        ins = [v] + [b.const(a.astype(np.float32), "bn") for a in
                     (1 + 0.1 * r.standard_normal(c), 0.1 * r.standard_normal(c), 0.1 * r.standard_normal(c),
                      r.uniform(0.5, 2.0, c))]
        return b.node(op, ins, v.shape, epsilon=eps)
    if v.rank < 3:
        return None
    if op == "InstanceNormalization":
        return b.node(op, [v, b.const(np.ones(c, np.float32), "g"), b.const(np.zeros(c, np.float32), "beta")],
                      v.shape, epsilon=eps)
    groups = d.choice([g for g in (1, 2, 4) if c % g == 0])
    return b.node(op, [v, b.const((1 + 0.1 * b.rng.standard_normal(c)).astype(np.float32), "g"),
                       b.const((0.1 * b.rng.standard_normal(c)).astype(np.float32), "beta")],
                  v.shape, epsilon=eps, num_groups=groups)


def _layout(b: _Builder, v: Val) -> Val | None:
    d = b.d
    op = d.choice(["Transpose", "Reshape", "Slice", "Concat", "Split", "Pad", "Flatten", "Unsqueeze", "Squeeze",
                   "Tile", "Expand"])
    r, s = v.rank, list(v.shape)
    if op == "Transpose":
        perm = list(range(r))
        for i in range(r - 1, 0, -1):
            j = d.integer(0, i)
            perm[i], perm[j] = perm[j], perm[i]
        return b.node(op, [v], [s[p] for p in perm], perm=perm)
    if op == "Reshape":
        form = d.choice(["merge", "split", "flat2d", "flat"])
        if form == "merge" and r >= 2:
            i = d.integer(0, r - 2)
            new = s[:i] + [s[i] * s[i + 1]] + s[i + 2:]
        elif form == "split":
            i = d.integer(0, r - 1)
            f = next((f for f in (2, 3, 4) if s[i] % f == 0 and s[i] > f), None)
            if f is None:
                return None
            new = s[:i] + [f, s[i] // f] + s[i + 1:]
        elif form == "flat2d" and r >= 2:
            new = [s[0], int(np.prod(s[1:]))]
        else:
            new = [int(np.prod(s))]
        spec = list(new)
        if d.boolean():
            spec[d.integer(0, len(spec) - 1)] = -1
        return b.node(op, [v, b.ints(spec)], new)
    if op == "Flatten":
        axis = d.integer(0, r)
        return b.node(op, [v], [int(np.prod(s[:axis])), int(np.prod(s[axis:]))], axis=axis)
    if op == "Unsqueeze":
        ax = d.integer(0, r)
        return b.node(op, [v, b.ints([ax])], s[:ax] + [1] + s[ax:])
    if op == "Squeeze":
        ones = [i for i, x in enumerate(s) if x == 1]
        if not ones or r == 1:
            return None
        ax = d.choice(ones)
        return b.node(op, [v, b.ints([ax])], s[:ax] + s[ax + 1:])
    if op == "Slice":
        n = d.integer(1, min(2, r))
        axes = sorted({d.integer(0, r - 1) for _ in range(n)})
        starts, ends, steps, new = [], [], [], list(s)
        for a in axes:
            dim = s[a]
            step = d.choice([1, 2, -1, 3])
            lo = d.integer(0, max(dim - 1, 0))
            hi = d.integer(lo + 1, dim)
            if step > 0:
                starts.append(lo), ends.append(hi)
                new[a] = len(range(lo, hi, step))
            else:
                starts.append(hi - 1), ends.append(lo - 1 if lo > 0 else -dim - 1)
                new[a] = len(range(hi - 1, lo - 1, step))
            steps.append(step)
        return b.node(op, [v, b.ints(starts), b.ints(ends), b.ints(axes), b.ints(steps)], new)
    if op == "Concat":
        axis = d.integer(0, r - 1)
        parts = [v]
        for _ in range(d.integer(1, 2)):
            shape = list(s)
            shape[axis] = d.choice([s[axis], 1, 2, 3])
            src = d.choice(["self", "const", "unary"])
            if src == "self":
                parts.append(v)
            elif src == "unary" and v.dtype != "int32":
                parts.append(_unary(b, v))
            elif v.dtype == "int32":
                parts.append(Val(b.const(b.rng.integers(-5, 6, shape).astype(np.int32), "c"), tuple(shape), "int32"))
            else:
                parts.append(Val(b.const(b.rng.standard_normal(shape).astype(v.dtype), "c"), tuple(shape), v.dtype))
        new = list(s)
        new[axis] = sum(p.shape[axis] for p in parts)
        return b.node(op, parts, new, axis=axis - r if d.boolean() else axis)
    if op == "Split":
        axis = d.integer(0, r - 1)
        dim = s[axis]
        if dim < 2:
            return None
        k = d.integer(2, min(3, dim))
        if d.boolean() and dim % k == 0:
            sizes = [dim // k] * k
            ins = [v]
            attrs = {"num_outputs": k}
        else:
            cut = sorted({d.integer(1, dim - 1) for _ in range(k - 1)})
            sizes = [e - a for a, e in zip([0] + cut, cut + [dim])]
            ins = [v, b.ints(sizes)]
            attrs = {}
        shapes = [s[:axis] + [z] + s[axis + 1:] for z in sizes]
        outs = b.node_multi(op, ins, shapes, axis=axis, **attrs)
        return outs[d.integer(0, len(outs) - 1)]
    if op == "Pad":
        mode = d.choice(["constant", "reflect", "edge"])
        pads = [0] * (2 * r)
        for a in sorted({d.integer(0, r - 1) for _ in range(d.integer(1, 2))}):
            lim = s[a] - 1 if mode == "reflect" else 3
            pads[a], pads[r + a] = d.integer(0, max(lim, 0)), d.integer(0, max(min(lim, 3), 0))
        new = [x + pads[i] + pads[r + i] for i, x in enumerate(s)]
        ins = [v, b.ints(pads)]
        if mode == "constant" and d.boolean():
            ins.append(b.const(np.array(d.choice([0.5, -1.0]), v.dtype) if v.dtype != "int32" else
                               np.array(3, np.int32), "c"))
        return b.node(op, ins, new, mode=mode)
    if op == "Tile":
        reps = [d.choice([1, 2]) for _ in s]
        return b.node(op, [v, b.ints(reps)], [x * t for x, t in zip(s, reps)])
    # Expand: ones of v to a size, maybe one more leading dim
    new = [d.choice([2, 3]) if x == 1 else x for x in s]
    if d.boolean():
        new = [2] + new
    spec = [1 if (i >= len(new) - r and s[i - len(new) + r] == x and d.boolean()) else x for i, x in enumerate(new)]
    return b.node(op, [v, b.ints(spec)], new)


def _resize(b: _Builder, v: Val) -> Val | None:
    if v.rank != 4 or v.dtype == "int32":
        return None
    d = b.d
    mode = d.choice(["nearest", "linear"])
    ctm = d.choice(["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"])
    attrs: dict[str, Any] = {"mode": mode, "coordinate_transformation_mode": ctm}
    if mode == "nearest":
        attrs["nearest_mode"] = d.choice(["round_prefer_floor", "floor", "ceil", "round_prefer_ceil"])
    if d.boolean():
        sc = d.choice([2.0, 0.5, 1.5, 3.0])
        out = [int(np.floor(x * sc)) for x in v.shape[2:]]
        if min(out) < 1:
            return None
        scales = b.const(np.array([1, 1, sc, sc], np.float32), "sc")
        return b.node("Resize", [v, "", scales], v.shape[:2] + tuple(out), **attrs)
    out = [d.choice([x * 2, x + 1, max(1, x // 2), 7]) for x in v.shape[2:]]
    return b.node("Resize", [v, "", "", b.ints(list(v.shape[:2]) + out)], v.shape[:2] + tuple(out), **attrs)


def _matmul(b: _Builder, v: Val, n: int | None = None) -> Val | None:
    if v.dtype == "int32" or v.rank < 1:
        return None
    d = b.d
    k = v.shape[-1]
    n = n or d.choice([8, 16, 4, 1, 32, 64, 128, 3])
    form = d.choice(["matmul", "gemm", "bias"]) if v.rank == 2 else d.choice(["matmul", "bias"])
    if form == "gemm":
        tb = d.boolean()
        w = b.weight([n, k] if tb else [k, n], k, v.dtype)
        attrs: dict[str, Any] = {}
        if tb:
            attrs["transB"] = 1
        if d.boolean():
            attrs["alpha"] = d.choice([0.5, 2.0])
        ins = [v, w]
        if d.boolean():
            cshape = d.choice([(n,), (1, n), (v.shape[0], n), (v.shape[0], 1), ()])
            ins.append(b.const((0.1 * b.rng.standard_normal(cshape)).astype(v.dtype), "bias"))
            if d.boolean():
                attrs["beta"] = d.choice([0.5, 1.0])
        return b.node("Gemm", ins, (v.shape[0], n), **attrs)
    w = b.weight([k, n], k, v.dtype)
    y = b.node("MatMul", [v, w], v.shape[:-1] + (n,))
    if form == "bias":
        y = b.node("Add", [y, b.const((0.1 * b.rng.standard_normal(n)).astype(v.dtype), "bias")], y.shape)
    return y


def _attention(b: _Builder, v: Val) -> Val | None:
    """softmax(v W_q (v W_k)^T / sqrt(d)) v: two MatMuls of values, a Transpose, a Softmax."""
    if v.dtype != "float32" or v.rank not in (2, 3) or v.shape[-1] > 128 or v.shape[-2] > 128:
        return None
    d = b.d
    m, k = v.shape[-2], v.shape[-1]
    q = _matmul(b, v, k) if d.boolean() else v
    perm = list(range(v.rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    kt = b.node("Transpose", [v], v.shape[:-2] + (k, m), perm=perm)
    s = b.node("MatMul", [q, kt], v.shape[:-2] + (m, m))
    s = b.node("Div", [s, b.const(np.array(np.sqrt(k), np.float32), "c")], s.shape)
    p = b.node("Softmax", [s], s.shape, axis=-1)
    return b.node("MatMul", [p, v], v.shape)


def _heavy(b: _Builder, v: Val) -> Val | None:
    """Consecutive npu ops with 64 KiB or more of weights each (weight prefetch into L2)."""
    if v.dtype != "float32":
        return None
    d = b.d
    if v.rank == 4 and v.shape[2] * v.shape[3] <= 256:
        c = d.choice([64, 96])
        y = v
        for i in range(d.integer(2, 3)):
            y = _conv_fixed(b, y, c, d.choice([3, 1]) if i else 3)
            y = _activation(b, y)
        return y
    if v.rank in (2, 3) and int(np.prod(v.shape[:-1])) <= 256:
        y = v
        widths = [d.choice([128, 256]) for _ in range(d.integer(2, 3))]
        for n in widths:
            y = _matmul_fixed(b, y, n)
            op = d.choice(["Relu", "Gelu", "none", "LayerNormalization"])
            if op == "LayerNormalization":
                y = b.node(op, [y, b.const(np.ones(n, np.float32), "g"), b.const(np.zeros(n, np.float32), "beta")],
                           y.shape, axis=-1)
            elif op != "none":
                y = _unary(b, y, op)
        return y
    return None


def _prefetch(b: _Builder, v: Val) -> Val | None:
    """A Conv the matrix engines bound, then a strided 1x1 Conv and a 1x1 Conv with 64 KiB
    or more of weights over few positions, which the DDR bounds: a layer group fetches the
    last one's weights into L2 during the first (docs/compiler.md, "Weight prefetch")."""
    if v.dtype != "float32" or v.rank != 4 or min(v.shape[2:]) < 16 or v.shape[1] > 64:
        return None
    d = b.d
    n, _, h, w = v.shape
    c0 = d.choice([64, 32])
    y = _activation(b, _conv_fixed(b, v, c0, 3))
    st = d.choice([8, 4])
    cmid = d.choice([64, 128])
    hw = ((h - 1) // st + 1, (w - 1) // st + 1)
    y = b.node("Conv", [y, b.weight([cmid, c0, 1, 1], c0)], (n, cmid) + hw, kernel_shape=[1, 1], strides=[st, st])
    cw = d.choice([256, 128])
    y = b.node("Conv", [y, b.weight([cw, cmid, 1, 1], cmid),
                        b.const((0.1 * b.rng.standard_normal(cw)).astype(np.float32), "bias")], (n, cw) + hw,
               kernel_shape=[1, 1])
    return _activation(b, y)


def _conv_fixed(b: _Builder, v: Val, cout: int, k: int) -> Val:
    c = v.shape[1]
    return b.node("Conv", [v, b.weight([cout, c, k, k], c * k * k),
                           b.const((0.1 * b.rng.standard_normal(cout)).astype(np.float32), "bias")],
                  (v.shape[0], cout) + v.shape[2:], kernel_shape=[k, k], pads=[k // 2] * 4)


def _matmul_fixed(b: _Builder, v: Val, n: int) -> Val:
    k = v.shape[-1]
    y = b.node("MatMul", [v, b.weight([k, n], k)], v.shape[:-1] + (n,))
    return b.node("Add", [y, b.const((0.1 * b.rng.standard_normal(n)).astype(np.float32), "bias")], y.shape)


def _conv_transpose(b: _Builder, v: Val) -> Val | None:
    if v.dtype != "float32" or v.rank != 4 or v.shape[1] > 64:
        return None
    d = b.d
    c = v.shape[1]
    group = c if d.integer(0, 3) == 3 else 1
    cout = c if group != 1 else d.choice([4, 8, c, 1])
    k, s = d.choice([2, 3, 4, 1]), d.choice([2, 1])
    pb, pe = d.integer(0, k - 1), d.integer(0, k - 1)
    op = d.integer(0, s - 1)
    outs = [(n - 1) * s + k - pb - pe + op for n in v.shape[2:]]
    if min(outs) < 1:
        return None
    attrs: dict[str, Any] = {"kernel_shape": [k, k], "strides": [s, s], "pads": [pb, pb, pe, pe]}
    if op:
        attrs["output_padding"] = [op, op]
    if group != 1:
        attrs["group"] = group
    ins = [v, b.weight([c, cout // group, k, k], c * k * k // max(s * s, 1))]
    if d.boolean():
        ins.append(b.const((0.1 * b.rng.standard_normal(cout)).astype(np.float32), "bias"))
    return b.node("ConvTranspose", ins, (v.shape[0], cout, *outs), **attrs)


def _misc(b: _Builder, v: Val) -> Val | None:
    """DepthToSpace/SpaceToDepth, Gather of constant indices, variadic Sum/Mean/Max/Min,
    Where with a constant condition, CumSum."""
    d = b.d
    op = d.choice(["Gather", "Sum", "Where", "CumSum", "DepthToSpace", "SpaceToDepth", "Mean", "Max", "Min"])
    s = list(v.shape)
    if op == "Gather":
        axis = d.integer(0, v.rank - 1)
        n = s[axis]
        idx = b.rng.integers(-n, n, d.choice([(3,), (), (2, 2)])).astype(np.int64)
        return b.node(op, [v, b.const(idx, "i")], s[:axis] + list(idx.shape) + s[axis + 1:], axis=axis)
    if op in ("Sum", "Mean", "Max", "Min"):
        if v.dtype == "int32" and op in ("Mean", "Sum"):
            return None
        parts = [v, _unary(b, v) if v.dtype == "float32" else v]
        shape = _broadcast_shape(b, v)
        arr = b.rng.integers(-5, 6, shape) if v.dtype == "int32" else b.rng.standard_normal(shape)
        parts.append(Val(b.const(arr.astype(v.dtype), "c"), shape, v.dtype))
        return b.node(op, parts, _bcast(v.shape, shape))
    if op == "Where":
        shape = _broadcast_shape(b, v)
        cond = b.const(b.rng.integers(0, 2, shape).astype(bool), "cond")
        arr = b.rng.integers(-5, 6, s) if v.dtype == "int32" else b.rng.standard_normal(s)
        other = b.const(arr.astype(v.dtype), "c")
        return b.node(op, [cond, v, other] if d.boolean() else [cond, other, v], _bcast(v.shape, shape),
                      dtype=v.dtype)
    if op == "CumSum":
        if v.dtype == "float16":
            return None
        axis = d.integer(-v.rank, v.rank - 1)
        return b.node(op, [v, b.const(np.array(axis, np.int64), "k")], s, exclusive=d.integer(0, 1),
                      reverse=d.integer(0, 1))
    if v.rank != 4:
        return None
    if op == "DepthToSpace":
        if s[1] % 4:
            return None
        return b.node(op, [v], [s[0], s[1] // 4, s[2] * 2, s[3] * 2], blocksize=2, mode=d.choice(["DCR", "CRD"]))
    if s[2] % 2 or s[3] % 2:
        return None
    return b.node(op, [v], [s[0], s[1] * 4, s[2] // 2, s[3] // 2], blocksize=2)


BLOCKS: list[tuple[str, Callable[[_Builder, Val], Val | None]]] = [
    ("unary", _unary), ("binary", _binary), ("conv", lambda b, v: _conv(b, v, act=b.d.boolean())),
    ("conv_residual", _conv_residual), ("matmul", _matmul), ("layout", _layout), ("pool", _pool),
    ("reduce", _reduce), ("softmax", _softmax), ("norm", _norm), ("se_block", _se_block), ("resize", _resize),
    ("attention", _attention), ("positive_unary", _positive_unary), ("heavy", _heavy),
    ("conv_transpose", _conv_transpose), ("misc", _misc), ("prefetch", _prefetch),
]


def _first_input(b: _Builder) -> Val:
    d = b.d
    dtype = d.choice(["float32"] * 8 + ["float16", "int32"])
    form = d.choice(["image", "rows", "seq", "batched_rows", "big_image", "big_rows", "large_image", "large_rows",
                     "prefetch_image"])
    if form == "image":
        shape = [d.choice([1, 2]), d.choice([3, 4, 8, 1, 2, 16, 5]), d.choice([8, 4, 5, 7, 12, 16]),
                 d.choice([8, 4, 5, 7, 12, 16])]
    elif form == "rows":
        shape = [d.choice([4, 8, 1, 3, 16, 33]), d.choice([16, 8, 32, 5, 64, 128])]
    elif form == "seq":
        shape = [1, d.choice([4, 8, 3, 16]), d.choice([16, 8, 10, 32])]
    elif form == "batched_rows":
        shape = [d.choice([2, 3]), d.choice([4, 8, 5]), d.choice([16, 8, 32])]
    elif form == "big_image":
        shape = [1, d.choice([32, 64]), d.choice([8, 4]), d.choice([8, 4])]
    elif form == "big_rows":
        shape = [d.choice([16, 32, 8]), d.choice([128, 256])]
    elif form == "large_image":  # more than one tile of rows, odd sizes
        shape = [1, d.choice([16, 8, 24]), d.choice([33, 17, 40]), d.choice([33, 19, 40])]
    elif form == "large_rows":
        shape = [d.choice([130, 200, 257]), d.choice([300, 129, 64])]
    else:  # room for a matrix-bound Conv before a DDR-bound one
        shape = [1, d.choice([16, 32, 64]), 32, d.choice([32, 16])]
    return b.add_input(shape, dtype)


def generate(d: Draw, max_blocks: int = 6) -> Case:
    """A random valid graph drawn from ``d``: an input, up to ``max_blocks`` blocks, the
    values nothing reads as outputs."""
    b = _Builder(d, d.integer(0, 1 << 16))
    _first_input(b)
    names = []
    for _ in range(max_blocks):
        if names and d.integer(0, 3) == 0:  # the first block always, then each further one at 3 to 1
            break
        name, fn = d.choice(BLOCKS)
        v = b.values[-1 - min(d.integer(0, 3) if d.boolean() else 0, len(b.values) - 1)]
        if v.rank == 0:
            continue
        if v.dtype != "float32" and name not in ("unary", "binary", "layout", "reduce", "conv", "matmul", "pool",
                                                 "misc"):
            name, fn = "unary", _unary
        before = (len(b.nodes), len(b.inits), len(b.values), len(b.inputs), dict(b.readers))
        out = fn(b, v)
        if out is None or any(u.size > MAX_ELEMENTS or 0 in u.shape for u in b.values[before[2]:]):
            b.nodes, b.inits = b.nodes[:before[0]], b.inits[:before[1]]
            b.values, b.inputs, b.readers = b.values[:before[2]], b.inputs[:before[3]], before[4]
            continue
        names.append(name)
    if not b.nodes:  # every block refused the input: one Relu
        _unary(b, b.values[-1], "Relu" if b.values[-1].dtype != "int32" else "Abs")
        names.append("unary")
    produced = [u for u in b.values if u not in b.inputs]
    outs = [u for u in produced if b.readers.get(u.name, 0) == 0]
    read = [u for u in produced if b.readers.get(u.name, 0) > 0]
    if read and d.integer(0, 3) == 3:  # a value that later nodes read is an output too
        outs.insert(0, read[d.integer(0, len(read) - 1)])
    used = {i for nd in b.nodes for i in nd.input}
    graph_inputs = [u for u in b.inputs if u.name in used]
    graph = helper.make_graph(
        b.nodes, "fuzz", [helper.make_tensor_value_info(u.name, ONNX_TYPE[u.dtype], u.shape) for u in graph_inputs],
        [helper.make_tensor_value_info(u.name, ONNX_TYPE[u.dtype], u.shape) for u in outs], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    rng = np.random.default_rng(d.integer(0, 1 << 16))
    feeds = {u.name: (rng.integers(-8, 9, u.shape) if u.dtype == "int32" else rng.standard_normal(u.shape))
             .astype(u.dtype) for u in graph_inputs}
    return Case(model, feeds, names, list(getattr(d, "choices", [])))


# ---- checking one graph -----------------------------------------------------------------

def _norm_reason(text: str) -> str:
    text = re.sub(r"`[^`]*`", "`…`", text)
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return text.strip()[:160]


def refusal_reasons(message: str) -> list[tuple[str, str]]:
    """(op type, reason) of each node a CompileError names, the reason with names and
    numbers blanked so that refusals group."""
    out = []
    for m in re.finditer(r"node `[^`]*` \((\w+)\)(?: on the \w+)?:?\s*(.*)", message):
        out.append((m.group(1), _norm_reason(m.group(2))))
    return out or [("", _norm_reason(message.splitlines()[0] if message else ""))]


def compare(got: np.ndarray, want: np.ndarray, spread: float = 0.0, spread_cosine: float = 1.0) -> str | None:
    """None when ``got`` matches ONNX Runtime's ``want``, else what differs: allclose with
    rtol and atol x the output's scale (its largest magnitude, at least SCALE_FLOOR: the
    inputs are standard normal, so an output smaller than that is a cancellation whose
    digits are rounding), and the cosine (judged when the scale is above the floor).
    ``spread`` (the largest change of ``want`` when the inputs and weights move by
    PERTURBATION) widens atol, and ``spread_cosine`` (the cosine of the moved output to
    ``want``) lowers the cosine bound, by SPREAD_FACTOR: an ill-conditioned output is
    judged by how far rounding can move it."""
    from tilecore.compiler.verify import cosine

    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} vs {want.shape}"
    if want.dtype.kind in "iub":
        bad = int(np.count_nonzero(got != want))
        return f"{bad} of {want.size} elements differ" if bad else None
    cos_min, rtol, atol = (F16_COSINE, F16_RTOL, F16_ATOL) if want.dtype == np.float16 else \
        (F32_COSINE, F32_RTOL, F32_ATOL)
    g, w = got.astype(np.float64), want.astype(np.float64)
    scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=0.0))
    close = np.isclose(g, w, rtol=rtol, atol=atol * max(scale, SCALE_FLOOR) + SPREAD_FACTOR * spread, equal_nan=True)
    c = cosine(g, w)
    cos_bound = 1 - max(1 - cos_min, SPREAD_FACTOR * (1 - spread_cosine))
    if close.all() and (c >= cos_bound or scale < SCALE_FLOOR):
        return None
    err = float(np.max(np.abs(g - w)[~close], initial=0.0))
    return (f"cosine {c:.6f}, {int((~close).sum())} of {w.size} elements off (max abs error {err:.3g}, "
            f"scale {scale:.3g}" + (f", spread {spread:.3g}" if spread else "") + ")")


NORMS = ("LayerNormalization", "InstanceNormalization", "GroupNormalization", "RMSNormalization",
         "MeanVarianceNormalization")


def degenerate_norms(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[str]:
    """The normalisation nodes of ``model`` that normalise a (nearly) constant group: its
    standard deviation below DEGENERATE_STD x its largest magnitude, so that the output is
    the rounding of its mean divided by sqrt(epsilon), noise in any f32 implementation."""
    norms = [nd for nd in model.graph.node if nd.op_type in NORMS]
    if not norms:
        return []
    m = onnx.ModelProto()
    m.CopyFrom(model)
    typed = {vi.name: vi for vi in onnx.shape_inference.infer_shapes(model).graph.value_info}
    outs = {o.name for o in m.graph.output} | {i.name for i in m.graph.input}
    for nd in norms:
        if nd.input[0] not in outs and nd.input[0] in typed:
            m.graph.output.append(typed[nd.input[0]])
            outs.add(nd.input[0])
    try:
        vals = {**feeds, **ort_outputs(m, feeds)}
    except Exception:  # noqa: BLE001
        return []
    bad = []
    for nd in norms:
        x = vals.get(nd.input[0])
        if x is None or x.ndim < 2:
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in nd.attribute}
        if nd.op_type in ("LayerNormalization", "RMSNormalization"):
            axis = attrs.get("axis", -1) % x.ndim
            groups = x.reshape(int(np.prod(x.shape[:axis])), -1)
        elif nd.op_type == "GroupNormalization":
            groups = x.reshape(x.shape[0] * attrs["num_groups"], -1)
        else:
            groups = x.reshape(x.shape[0] * x.shape[1], -1)
        g = groups.astype(np.float64)
        if np.any(g.std(axis=1) <= DEGENERATE_STD * np.abs(g).max(axis=1)):
            bad.append(nd.name)
    return bad


def spread(model: onnx.ModelProto, feeds: dict[str, np.ndarray], want: dict[str, np.ndarray],
           trials: int = 2) -> dict[str, tuple[float, float]]:
    """Per output, (the largest change, the lowest cosine to ``want``) of ONNX Runtime's
    output when the float inputs and the weights of Conv, ConvTranspose, MatMul and Gemm
    are multiplied by 1 + PERTURBATION x N(0, 1): how far rounding of that size moves it."""
    from tilecore.compiler.verify import cosine

    rng = np.random.default_rng(1)
    weights = {nd.input[1] for nd in model.graph.node if nd.op_type in ("Conv", "ConvTranspose", "MatMul", "Gemm")
               and len(nd.input) > 1}
    out = {k: (0.0, 1.0) for k in want}
    for _ in range(trials):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        for t in m.graph.initializer:
            if t.name in weights and t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16):
                a = numpy_helper.to_array(t)
                t.CopyFrom(numpy_helper.from_array(
                    (a * (1 + PERTURBATION * rng.standard_normal(a.shape))).astype(a.dtype), t.name))
        f = {k: (v * (1 + PERTURBATION * rng.standard_normal(v.shape))).astype(v.dtype) if v.dtype.kind == "f" else v
             for k, v in feeds.items()}
        try:
            moved = ort_outputs(m, f)
        except Exception:  # noqa: BLE001 - no spread: the plain bounds judge
            return {k: (0.0, 1.0) for k in want}
        for k, w in want.items():
            if w.dtype.kind != "f":
                continue
            d = float(np.max(np.abs(moved[k].astype(np.float64) - w), initial=0.0))
            out[k] = (max(out[k][0], d), min(out[k][1], cosine(moved[k], w)))
    return out


def ort_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """ONNX Runtime's outputs (one thread, the CPU provider); the model checked first."""
    import onnxruntime as ort

    onnx.checker.check_model(model, full_check=True)
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def check(case: Case, verify: bool = True, on_stage: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """Compiles ``case`` with the default options, runs it on the simulator and compares
    it with ONNX Runtime. Returns ``outcome`` (``invalid``: ONNX Runtime or the checker
    rejects the graph or its outputs are not finite; ``refused``: a CompileError, with
    ``reasons`` as (op type, reason); ``matched``; ``ill-conditioned``: outputs differ
    but a normalisation in the graph normalises a constant group (rounding noise in any
    f32 implementation); ``mismatched``; ``crashed``: any other exception), ``detail``
    and, for a mismatch with ``verify``, ``verify``: what ``tilecore.compile(...,
    verify=)`` names (the layer group, fused node or node). ``on_stage`` is told each
    stage as it starts (``onnxruntime``, ``compile``, ``run``), so that a caller whose
    process dies knows whose crash it was."""
    import tilecore
    from tilecore.compiler import CompileError

    stage = on_stage or (lambda name: None)
    stage("onnxruntime")
    try:
        want = ort_outputs(case.model, case.feeds)
    except Exception as e:  # noqa: BLE001 - a graph the generator got wrong
        return {"outcome": "invalid", "detail": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
    if not all(np.all(np.isfinite(w)) for w in want.values() if w.dtype.kind == "f"):
        return {"outcome": "invalid", "detail": "ONNX Runtime's outputs are not finite"}
    data = case.model.SerializeToString()
    stage("compile")
    try:
        exe = tilecore.compile(data)
    except CompileError as e:
        return {"outcome": "refused", "detail": str(e).splitlines()[0][:300], "reasons": refusal_reasons(str(e))}
    except Exception as e:  # noqa: BLE001 - anything else is a defect
        return {"outcome": "crashed", "detail": f"compile: {type(e).__name__}: {_first_line(e)}"}
    stage("run")
    try:
        got = exe.run(dict(case.feeds))
    except Exception as e:  # noqa: BLE001
        return {"outcome": "crashed", "detail": f"run: {type(e).__name__}: {_first_line(e)}"}
    diffs = [name for name, w in want.items() if name not in got or compare(got[name], w)]
    if not diffs:
        return {"outcome": "matched", "detail": ""}
    moved = spread(case.model, case.feeds, want)
    diffs = []
    for name, w in want.items():
        why = compare(got[name], w, *moved[name]) if name in got else "missing"
        if why:
            diffs.append(f"output `{name}`: {why}")
    if not diffs:
        return {"outcome": "matched", "detail": "within the spread of ONNX Runtime's outputs under perturbation"}
    degenerate = degenerate_norms(case.model, case.feeds)
    if degenerate:
        return {"outcome": "ill-conditioned", "detail": f"{', '.join(degenerate)} normalise a constant group: "
                + "; ".join(diffs)}
    res: dict[str, Any] = {"outcome": "mismatched", "detail": "; ".join(diffs)}
    if verify:
        res["verify"] = verify_culprit(data, case.feeds)
    return res


def verify_culprit(data: bytes, feeds: dict[str, np.ndarray]) -> str:
    """What ``tilecore.compile(..., verify=feeds)`` says about a model (the first line of its
    VerifyError, or that it passes)."""
    import tilecore
    from tilecore.compiler.verify import VerifyError

    try:
        tilecore.compile(data, verify=dict(feeds))
    except VerifyError as e:
        return _first_line(e)
    except Exception as e:  # noqa: BLE001
        return f"verify raised {type(e).__name__}: {_first_line(e)}"
    return "verify passes"


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return (s.splitlines()[0] if s else "")[:300]


def signature(result: dict[str, Any]) -> str:
    """A failure's kind, for grouping: the outcome and the normalised first line of the
    error (a crash) or of what verify names (a mismatch)."""
    text = result.get("verify", "") if result["outcome"] == "mismatched" else result.get("detail", "")
    text = re.sub(r"cosine -?[\d.]+", "cosine C", text)
    return f"{result['outcome']}: {_norm_reason(text)}"


# ---- shrinking --------------------------------------------------------------------------

def shrink(choices: Sequence[int], fails: Callable[[Case], bool], budget: int = 200) -> tuple[Case, list[int]]:
    """The smallest choice sequence found whose graph still ``fails`` (tried at most
    ``budget`` times): blocks of choices deleted, then each choice set to 0, halved and
    decremented, until a pass changes nothing."""
    best = list(choices)
    best_case = generate(RngDraw(replay=best))
    tries = [0]

    def attempt(cand: list[int]) -> bool:
        nonlocal best, best_case
        if tries[0] >= budget:
            return False
        case = generate(RngDraw(replay=cand))
        used = case.choices
        if _key(used) >= _key(best):
            return False
        tries[0] += 1
        if fails(case):
            best, best_case = used, case
            return True
        return False

    changed = True
    while changed and tries[0] < budget:
        changed = False
        for size in (8, 4, 2, 1):
            i = len(best) - size
            while i >= 0:
                if attempt(best[:i] + best[i + size:]):
                    changed = True
                i -= 1
        i = 0
        while i < len(best):
            for smaller in (0, best[i] // 2, best[i] - 1):
                if i < len(best) and 0 <= smaller < best[i] and attempt(best[:i] + [smaller] + best[i + 1:]):
                    changed = True
                    break
            i += 1
    return best_case, best


def _key(choices: Sequence[int]) -> tuple:
    return (len(choices), list(choices))


def _pruned(model: onnx.ModelProto, outputs: Sequence[str], new_inputs: Sequence[onnx.ValueInfoProto] = ()) \
        -> onnx.ModelProto:
    """``model`` with only ``outputs``, the nodes they need, ``new_inputs`` added as graph
    inputs (the nodes that made them dropped) and unused inputs and initializers removed."""
    g = model.graph
    cut = {vi.name for vi in new_inputs}
    known = {vi.name: vi for vi in list(g.value_info) + list(g.output) + list(g.input)}
    need, keep = set(outputs), []
    for nd in reversed(g.node):
        if any(o in need for o in nd.output) and not any(o in cut for o in nd.output):
            keep.append(nd)
            need.update(i for i in nd.input if i)
    keep.reverse()
    inputs = [vi for vi in g.input if vi.name in need] + [vi for vi in new_inputs if vi.name in need]
    graph = helper.make_graph(keep, g.name, inputs, [known[o] for o in outputs],
                              [t for t in g.initializer if t.name in need])
    m = helper.make_model(graph, opset_imports=model.opset_import)
    m.ir_version = model.ir_version
    return m


def reduce_graph(case: Case, fails: Callable[[Case], bool], budget: int = 60) -> Case:
    """A smaller graph than ``case`` that still ``fails``, by graph surgery the choice
    sequence cannot express: one output kept, and a value cut into a graph input (seeded
    standard normal), so that the nodes before it go."""
    model = onnx.shape_inference.infer_shapes(case.model)
    typed = {vi.name: vi for vi in list(model.graph.value_info) + list(model.graph.output)}
    rng = np.random.default_rng(0)
    best, tries = case, 0

    def feeds_for(m: onnx.ModelProto) -> dict[str, np.ndarray]:
        out = {}
        for vi in m.graph.input:
            if vi.name in best.feeds:
                out[vi.name] = best.feeds[vi.name]
            else:
                t = vi.type.tensor_type
                shape = [d.dim_value for d in t.shape.dim]
                dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
                out[vi.name] = (rng.integers(-8, 9, shape) if dtype.kind == "i" else rng.standard_normal(shape)) \
                    .astype(dtype)
        return out

    changed = True
    while changed and tries < budget:
        changed = False
        outs = [o.name for o in best.model.graph.output]
        cands = [[o] for o in outs] if len(outs) > 1 else []
        for nd in best.model.graph.node:
            for o in nd.output:
                if o in typed and o not in outs and typed[o].type.tensor_type.HasField("shape"):
                    cands.append((outs, typed[o]))
        for cand in cands:
            if tries >= budget:
                break
            if isinstance(cand, tuple):
                m = _pruned(best.model, cand[0], [cand[1]])
            else:
                m = _pruned(best.model, cand)
            if len(m.graph.node) >= len(best.model.graph.node) and len(m.graph.output) >= len(outs):
                continue
            c = Case(m, feeds_for(m), best.blocks, best.choices)
            tries += 1
            if fails(c):
                best, changed = c, True
                break
    return best


# ---- failures already recorded ----------------------------------------------------------
# A graph with one of these patterns fails for a defect kept as a reproducer in
# test_graph_fuzz_cases.py (strict xfail); the seeded slice in test_graph_fuzz.py lets such
# a failure pass, and any other fails it. Remove an entry when its defect is fixed.

KNOWN_DEFECTS: list[tuple[str, Callable[[onnx.ModelProto], bool]]] = []


def known_defect(case: Case) -> str | None:
    """The reproducer of a recorded defect whose pattern ``case``'s graph has, or None."""
    for name, has in KNOWN_DEFECTS:
        if has(case.model):
            return name
    return None
