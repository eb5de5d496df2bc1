"""tilecore/script/api/tile.py — matrix-engine and vector-engine commands over L1 tiles.

Operands are regions or whole buffers in **local** memory (``S.alloc_buffer``);
shapes are compile-time constants. From the kernel's point of view a tile command
completes before the next statement (the compiler orders the engine queues); only
DMA is asynchronous (``S.async_dma_copy``).

Vector-engine semantics (TC1 ``t*`` commands): integers are computed exactly and
**saturate** to the dtype (unlike SIMD, which wraps); floats are computed in double
and rounded once to float32, then to the dtype. Math functions and ``tile_div`` are
float only. Reductions fold the innermost axis in index order into ``d[..., 0]``;
float sums accumulate in float32, integer sums saturate at the end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import frontend as fe
from .. import irvalues as irv
from .. import types as T
from ..numerics import convert, round_float, saturate, scalar_to_storage, storage, to_f64, wrap
from ..registry import api
from .operands import elem_of, ir_region, py_view, shape_of, tile_operand

if TYPE_CHECKING:
    from ..frontend import Plan
    from ..values import KernelValue

# ---------------------------------------------------------------------------
# Matrix engine
# ---------------------------------------------------------------------------


_F32_MAX = float(np.finfo(np.float32).max)


@api("mm")
def mm(c: KernelValue, a: KernelValue, b: KernelValue, accumulate: bool = False, *, bias: KernelValue = None,
       scale: KernelValue = None, zero_point: int = 0, residual: KernelValue = None, relu: bool = False,
       clamp: tuple[float, float] | None = None) -> Plan:
    """``c = (accumulate ? c : 0) + a @ b`` on the matrix engine (TC1 mm / mma), with an
    optional fused epilogue.

    :param c: ``[M, N]`` local tile. Without an epilogue: int32 for int8 inputs, float32
        otherwise (the accumulator). With one: the output, of any dtype but bool.
    :param a: ``[M, K]`` local tile of int8, float16, bfloat16 or float32.
    :param b: ``[K, N]`` local tile of a's dtype.
    :param accumulate: add to ``c`` (a literal or a scalar bool value); must be False
        with an epilogue (the output replaces the accumulator).
    :param bias: ``[N]`` local tile of the accumulator dtype (int32 / float32), added
        per output column before the scale; int32 additions wrap.
    :param scale: a float literal or float32 scalar (one scale), or an ``[N]`` local
        float32 tile (one scale per output column, "per-channel"). Default 1.0.
    :param zero_point: int literal or int32 scalar, added after the activation.
    :param residual: ``[M, N]`` local tile of any dtype but bool, converted to float32
        and added after the scale, before the activation.
    :param relu: apply ``max(v, 0)`` (a literal bool).
    :param clamp: ``(lo, hi)`` float literals, applied after the zero point
        (default: the float32 range).

    int8 accumulates in int32 and wraps; floats accumulate in float32 with one
    rounding per product and per sum, k ascending (float16/bfloat16 products are
    exact in float32).

    The epilogue is used when any of ``bias scale zero_point residual relu clamp`` is
    given or ``c`` is not the accumulator dtype. Each element then becomes, exactly as
    TC1's mm epilogue (docs/tc1.md)::

        v = f32(acc + bias[j])              # int32 wraps; int32 -> f32 rounds to nearest even
        v = v * scale[j]                    # every f32 operation rounds once, to nearest even
        v = v + f32(residual[i, j])
        v = max(v, 0)                       # relu
        v = v + f32(zero_point)
        v = min(max(v, lo), hi)             # clamp
        c[i, j] = cast(v)                   # integers: round half to even, saturate; floats: nearest even

    So an int8 requantisation with per-channel scales is
    ``mm(out_i8, x, w, bias=b, scale=s, zero_point=zp, relu=True)``, in one pass of the
    matrix engine (no separate vector-engine pass over the int32 accumulator).
    """
    ops = [tile_operand("mm", n, x) for n, x in (("c", c), ("a", a), ("b", b))]
    (sc, sa, sb) = (shape_of(x) for x in ops)
    fe.require(len(sc) == len(sa) == len(sb) == 2, "mm: c, a and b must be 2-D", ValueError)
    fe.require(sa[1] == sb[0] and sc == (sa[0], sb[1]),
               f"mm: shapes do not chain: c {list(sc)}, a {list(sa)}, b {list(sb)} (need c[M,N], a[M,K], b[K,N])",
               ValueError)
    ea, eb, ec = elem_of(ops[1]), elem_of(ops[2]), elem_of(ops[0])
    fe.require(ea == eb and ea in ("int8", "float16", "bfloat16", "float32"),
               f"mm: a and b must share one of int8, float16, bfloat16, float32; got {ea} and {eb}")
    acc = "int32" if ea == "int8" else "float32"
    epi = (bias is not None or scale is not None or residual is not None or clamp is not None or
           (fe.kind(relu) != "literal" or bool(relu)) or
           not (fe.kind(zero_point) == "literal" and zero_point == 0) or ec != acc)
    if not epi:
        accumulate = fe.condition("mm", accumulate)
        return fe.Plan(c=ops[0], a=ops[1], b=ops[2], elem=ea, accumulate=accumulate, epi=False)
    M, N = sc
    fe.require(ec != "bool", "mm: the epilogue output c must not be bool")
    fe.require(fe.kind(accumulate) == "literal" and not bool(accumulate),
               "mm: accumulate must be False with an epilogue (the output replaces the accumulator)")

    def vec_n(name, x, elem):
        op = tile_operand("mm", name, x)
        shp = shape_of(op)
        fe.require(len(shp) == 1 and shp[0] == N, f"mm: `{name}` must be a [{N}] tile, got {list(shp)}", ValueError)
        fe.require(elem_of(op) == elem, f"mm: `{name}` must be {elem}, got {elem_of(op)}")
        return op

    bias_op = vec_n("bias", bias, acc) if bias is not None else None
    if scale is None:
        scale = 1.0
    if fe.kind(scale) in ("region", "buffer"):
        scale = vec_n("scale", scale, "float32")
    elif fe.kind(scale) == "literal":
        scale = float(fe.literal_value(scale))
    else:
        fe.value_dtype("mm", "scale", scale, allowed=("float32",), vector=False)
    if fe.kind(zero_point) == "literal":
        zero_point = fe.const_int("mm", "zero_point", zero_point, -2 ** 31, 2 ** 31 - 1)
    else:
        fe.value_dtype("mm", "zero_point", zero_point, allowed=("int32",), vector=False)
    res_op = None
    if residual is not None:
        res_op = tile_operand("mm", "residual", residual)
        fe.require(shape_of(res_op) == (M, N), f"mm: `residual` must be [{M}, {N}], got {list(shape_of(res_op))}",
                   ValueError)
        fe.require(elem_of(res_op) != "bool", "mm: `residual` must not be bool")
    fe.require(fe.kind(relu) == "literal", "mm: `relu` must be a literal bool")
    lo, hi = -_F32_MAX, _F32_MAX
    if clamp is not None:
        fe.require(isinstance(clamp, (tuple, list)) and len(clamp) == 2 and
                   all(fe.kind(v) == "literal" for v in clamp), "mm: `clamp` must be a pair of literals (lo, hi)")
        lo, hi = (float(np.float32(fe.literal_value(v))) for v in clamp)
    return fe.Plan(c=ops[0], a=ops[1], b=ops[2], elem=ea, accumulate=False, epi=True, bias=bias_op, scale=scale,
                   zp=zero_point, residual=res_op, relu=bool(relu), lo=lo, hi=hi)


@mm.ir
def _mm_ir(p) -> None:
    acc = irv.const(p.accumulate, "bool") if isinstance(p.accumulate, bool) else p.accumulate.node
    args = [ir_region(p.c), ir_region(p.a), ir_region(p.b), acc]
    if p.epi:
        none = irv.const(0, "int32")
        if isinstance(p.scale, float):
            scale = irv.const(p.scale, "float32")
        elif fe.kind(p.scale) == "value":
            scale = p.scale.node
        else:
            scale = ir_region(p.scale)
        zp = irv.const(p.zp, "int32") if isinstance(p.zp, int) else p.zp.node
        args += [ir_region(p.bias) if p.bias is not None else none, scale, zp,
                 ir_region(p.residual) if p.residual is not None else none, irv.node("StringImm", "relu" if p.relu else "none"),
                 irv.const(p.lo, "float32"), irv.const(p.hi, "float32")]
    irv.emit(irv.call("tile.mm", *args))


def mm_epilogue_reference(acc: np.ndarray, elem_out: str, bias: np.ndarray | None = None, scale: float = 1.0,
                          zero_point: int = 0, residual: np.ndarray | None = None, res_elem: str | None = None,
                          relu: bool = False, lo: float = -_F32_MAX, hi: float = _F32_MAX) -> np.ndarray:
    """TC1's mm epilogue in numpy over an accumulator array (int32 or float32), as
    docs/tc1.md states it; returns the output in ``elem_out``'s storage."""
    with np.errstate(all="ignore"):
        if acc.dtype == np.int32:
            x = acc.astype(np.int64)
            if bias is not None:
                x = x + np.asarray(bias).astype(np.int64)[None, :]
            v = wrap(x, "int32").astype(np.float32)
        else:
            v = acc.astype(np.float32)
            if bias is not None:
                v = v + np.asarray(bias, np.float32)[None, :]
        s = np.asarray(scale, np.float32)
        v = v * (s[None, :] if s.ndim == 1 else s)
        if residual is not None:
            v = v + to_f64(residual, res_elem).astype(np.float32)
        if relu:
            v = np.where(v < np.float32(0), np.float32(0), v)
        v = v + np.float32(zero_point)
        v = np.where(v < np.float32(lo), np.float32(lo), v)
        v = np.where(v > np.float32(hi), np.float32(hi), v)
    return convert(v.astype(np.float32), "float32", elem_out)


@mm.py
def _mm_py(p) -> None:
    c, a, b = py_view("mm", p.c), py_view("mm", p.a), py_view("mm", p.b)
    accumulate = p.accumulate if isinstance(p.accumulate, bool) else bool(p.accumulate.data[0])
    if p.elem == "int8":
        r = a.astype(np.int64) @ b.astype(np.int64)
        if accumulate:
            r = r + c.astype(np.int64)
        acc = wrap(r, "int32")
    else:
        fa = to_f64(a, p.elem).astype(np.float32)
        fb = to_f64(b, p.elem).astype(np.float32)
        acc = c.astype(np.float32).copy() if accumulate else np.zeros(c.shape, np.float32)
        with np.errstate(all="ignore"):
            for k in range(fa.shape[1]):
                acc = acc + fa[:, k:k + 1] * fb[k:k + 1, :]
    if not p.epi:
        c[...] = acc
        return
    if isinstance(p.scale, float):
        scale = np.float32(p.scale)
    elif fe.kind(p.scale) == "value":
        scale = np.float32(p.scale.item())
    else:
        scale = py_view("mm", p.scale).astype(np.float32)
    zp = p.zp if isinstance(p.zp, int) else int(p.zp.item())
    c[...] = mm_epilogue_reference(
        acc, elem_of(p.c), bias=py_view("mm", p.bias).copy() if p.bias is not None else None, scale=scale,
        zero_point=zp, residual=py_view("mm", p.residual).copy() if p.residual is not None else None,
        res_elem=elem_of(p.residual) if p.residual is not None else None, relu=p.relu, lo=p.lo, hi=p.hi)


# ---------------------------------------------------------------------------
# Vector engine
# ---------------------------------------------------------------------------
def _same_dtype(op, names, ops, allowed):
    elems = [elem_of(x) for x in ops]
    for n, e in zip(names[1:], elems[1:]):
        if e != elems[0]:
            raise TypeError(f"{op}: operand dtypes differ: `{names[0]}` is {elems[0]}, `{n}` is {e}")
    if elems[0] not in allowed:
        raise TypeError(f"{op}: does not accept {elems[0]} (accepted: {' '.join(allowed)})")
    return elems[0]


def _same_shape(op, names, ops):
    shapes = [shape_of(x) for x in ops]
    for n, s in zip(names[1:], shapes[1:]):
        if s != shapes[0]:
            raise ValueError(f"{op}: `{n}` has shape {list(s)} but `{names[0]}` has {list(shapes[0])}")
    return shapes[0]


def _f64_op(fn, elem, *arrays):
    with np.errstate(all="ignore"):
        return round_float(fn(*[to_f64(a, elem) for a in arrays]), elem)


# PySim's element semantics of the table of tile operations (arch/tile_ops.def), by row
# name; the DSL's tile_<name> functions are made from the table's rows (see the end).
_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum, "div": np.divide,
    "adds": np.add, "muls": np.multiply, "maxs": np.maximum, "mins": np.minimum,
}


def _allowed(row):
    return T.FLOAT_DTYPES if row["types"] == "float" else T.NUMERIC_DTYPES


def _semantics(table, row):
    fe.require(row["name"] in table, f"tile operation `{row['name']}` (arch/tile_ops.def) has no PySim semantics "
               "in tilecore/script/api/tile.py", NotImplementedError)
    return table[row["name"]]


def _def_binary(row):
    name, what = row["name"], row["summary"]
    fn = _semantics(_BINARY, row)
    allowed = _allowed(row)
    api_name = f"tile_{name}"

    def front(d: KernelValue, a: KernelValue, b: KernelValue) -> Plan:
        ops = [tile_operand(api_name, n, x) for n, x in (("d", d), ("a", a), ("b", b))]
        elem = _same_dtype(api_name, "dab", ops, allowed)
        _same_shape(api_name, "dab", ops)
        return fe.Plan(d=ops[0], a=ops[1], b=ops[2], elem=elem)

    front.__name__ = api_name
    front.__doc__ = (f"Vector engine: {what} (TC1 {row['mnemonic']}).\n\n    :param d, a, b: local tiles of one "
                     f"shape and dtype: {' '.join(allowed)}.\n    Integers saturate; floats round once.\n")
    f = api(api_name)(front)
    f.ir(lambda p: irv.emit(irv.call(f"tile.vec_{name}", ir_region(p.d), ir_region(p.a), ir_region(p.b))))

    @f.py
    def _py(p) -> None:
        d, a, b = (py_view(api_name, x) for x in (p.d, p.a, p.b))
        if T.is_float(p.elem):
            d[...] = _f64_op(fn, p.elem, a, b)
        else:
            d[...] = saturate(fn(a.astype(np.int64), b.astype(np.int64)), p.elem)

    return f


def _scalar_for(op, s, elem):
    """The descriptor scalar: a literal or a scalar value, held as float32 and converted
    to the dtype (TC1 tadds/tmuls/tmaxs/tmins)."""
    if fe.kind(s) == "literal":
        return fe.literal_value(s)
    fe.require(fe.kind(s) == "value" and T.split(s.dtype)[1] == 1,
               f"{op}: `s` must be a scalar or a literal, got {fe.describe(s)}")
    return s


def _def_scalar(row):
    name, what = row["name"], row["summary"]
    fn = _semantics(_BINARY, row)
    api_name = f"tile_{name}"

    def front(d: KernelValue, a: KernelValue, s: KernelValue) -> Plan:
        ops = [tile_operand(api_name, n, x) for n, x in (("d", d), ("a", a))]
        elem = _same_dtype(api_name, "da", ops, T.NUMERIC_DTYPES)
        _same_shape(api_name, "da", ops)
        return fe.Plan(d=ops[0], a=ops[1], s=_scalar_for(api_name, s, elem), elem=elem)

    front.__name__ = api_name
    front.__doc__ = (f"Vector engine: {what} (TC1 {row['mnemonic']}).\n\n"
                     f"    :param d, a: local tiles of one shape and dtype (any numeric).\n"
                     f"    :param s: a literal or a scalar value; it travels as float32 and is converted to the "
                     f"dtype first (so large int32 values round to float32's precision).\n")
    f = api(api_name)(front)

    @f.ir
    def _ir(p) -> None:
        s = irv.const(float(p.s), "float32") if not hasattr(p.s, "node") else p.s.node
        irv.emit(irv.call(f"tile.vec_{name}", ir_region(p.d), ir_region(p.a), s))

    @f.py
    def _py(p) -> None:
        d, a = py_view(api_name, p.d), py_view(api_name, p.a)
        s = p.s if not hasattr(p.s, "data") else p.s.item()
        s32 = np.float32(s)
        sv = convert(np.array([s32]), "float32", p.elem)
        if T.is_float(p.elem):
            d[...] = _f64_op(fn, p.elem, a, np.broadcast_to(sv, a.shape))
        else:
            d[...] = saturate(fn(a.astype(np.int64), np.int64(sv[0])), p.elem)

    return f


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


_UNARY = {
    "exp": np.exp, "log": np.log, "recip": lambda x: 1.0 / x, "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "tanh": np.tanh, "sigmoid": _sigmoid, "relu": None,  # relu: below, exact on integers
}


def _def_unary(row):
    name = row["name"]
    fn = _semantics(_UNARY, row)
    api_name = f"tile_{name}"
    allowed = _allowed(row)

    def front(d: KernelValue, a: KernelValue) -> Plan:
        ops = [tile_operand(api_name, n, x) for n, x in (("d", d), ("a", a))]
        elem = _same_dtype(api_name, "da", ops, allowed)
        _same_shape(api_name, "da", ops)
        return fe.Plan(d=ops[0], a=ops[1], elem=elem)

    front.__name__ = api_name
    front.__doc__ = (f"Vector engine: {row['summary']} elementwise (TC1 {row['mnemonic']}).\n\n    :param d, a: local tiles of "
                     f"one shape and dtype: {' '.join(allowed)}.\n")
    f = api(api_name)(front)
    f.ir(lambda p: irv.emit(irv.call(f"tile.vec_{name}", ir_region(p.d), ir_region(p.a))))

    @f.py
    def _py(p) -> None:
        d, a = py_view(api_name, p.d), py_view(api_name, p.a)
        if name == "relu":
            if T.is_float(p.elem):
                d[...] = _f64_op(lambda x: np.maximum(x, 0.0), p.elem, a)
            else:
                d[...] = np.maximum(a, 0).astype(a.dtype)
            return
        d[...] = _f64_op(fn, p.elem, a)

    return f


@api("tile_copy")
def tile_copy(d: KernelValue, a: KernelValue) -> Plan:
    """Vector engine: ``d = convert(a)`` to d's dtype with TC1 rounding and saturation
    (a plain copy when the dtypes match) (TC1 tcvt).

    :param d, a: local tiles of one shape; any dtypes.
    """
    ops = [tile_operand("tile_copy", n, x) for n, x in (("d", d), ("a", a))]
    _same_shape("tile_copy", "da", ops)
    return fe.Plan(d=ops[0], a=ops[1])


tile_copy.ir(lambda p: irv.emit(irv.call("tile.vec_copy", ir_region(p.d), ir_region(p.a))))


@tile_copy.py
def _tile_copy_py(p) -> None:
    d, a = py_view("tile_copy", p.d), py_view("tile_copy", p.a)
    d[...] = convert(a, elem_of(p.a), elem_of(p.d))


@api("tile_requant")
def tile_requant(d: KernelValue, a: KernelValue, scale: KernelValue, zero_point: int = 0) -> Plan:
    """Vector engine: ``d = saturate(round_even(f32(a) * scale) + zero_point)`` (TC1 trequant).

    :param d: local tile of an integer dtype (int8 uint8 int16 uint16 int32 uint32).
    :param a: local tile of int32, same shape.
    :param scale: float literal or float32 scalar; the product is rounded to float32.
    :param zero_point: int literal or int32 scalar.
    """
    return _scaled_conversion("tile_requant", d, a, "int32", scale, zero_point)


def _scaled_conversion(name, d, a, source, scale, zero_point) -> Plan:
    """tile_requant's and tile_quant's plan: d an integer tile, a of `source`, the same
    shape; scale a float literal or f32 scalar, zero_point an int literal or i32 scalar."""
    ops = [tile_operand(name, n, x) for n, x in (("d", d), ("a", a))]
    _same_shape(name, "da", ops)
    fe.require(elem_of(ops[1]) == source, f"{name}: `a` must be {source}, got {elem_of(ops[1])}")
    fe.require(elem_of(ops[0]) in T.INT_DTYPES, f"{name}: `d` must be an integer tile, got {elem_of(ops[0])}")
    if fe.kind(scale) == "literal":
        scale = float(fe.literal_value(scale))
    else:
        fe.value_dtype(name, "scale", scale, allowed=("float32",), vector=False)
    if fe.kind(zero_point) == "literal":
        zero_point = fe.const_int(name, "zero_point", zero_point)
    else:
        fe.value_dtype(name, "zero_point", zero_point, allowed=("int32",), vector=False)
    return fe.Plan(d=ops[0], a=ops[1], scale=scale, zp=zero_point)


def _emit_scaled_conversion(intrinsic, p) -> None:
    scale = irv.const(p.scale, "float32") if isinstance(p.scale, float) else p.scale.node
    zp = irv.const(p.zp, "int32") if isinstance(p.zp, int) else p.zp.node
    irv.emit(irv.call(intrinsic, ir_region(p.d), ir_region(p.a), scale, zp))


@tile_requant.ir
def _requant_ir(p) -> None:
    _emit_scaled_conversion("tile.vec_requant", p)


def _scaled_conversion_py(name, p):
    """PySim's (d, a, f32 scale, zero point) of a tile_requant or tile_quant plan."""
    scale = np.float32(p.scale if isinstance(p.scale, float) else p.scale.item())
    return py_view(name, p.d), py_view(name, p.a), scale, (p.zp if isinstance(p.zp, int) else p.zp.item())


@tile_requant.py
def _requant_py(p) -> None:
    d, a, scale, zp = _scaled_conversion_py("tile_requant", p)
    with np.errstate(all="ignore"):
        prod = a.astype(np.float32) * scale
    r = np.rint(prod.astype(np.float64))
    r = np.where(np.isnan(r), 0, np.clip(r, -2.0 ** 62, 2.0 ** 62)).astype(np.int64) + zp
    d[...] = saturate(r, elem_of(p.d))


@api("tile_quant")
def tile_quant(d: KernelValue, a: KernelValue, scale: KernelValue, zero_point: int = 0) -> Plan:
    """Vector engine: ``d = convert(f32(f32(a * scale) + zero_point))`` (TC1 tquant): the
    quantisation ``tile_muls``, ``tile_adds`` and ``tile_copy`` make, in one pass.

    ``a`` is a float32 tile; the rest as tile_requant's; the zero point is added in float32,
    the sum converted as tcvt converts (half to even, saturated, NaN to 0).
    """
    return _scaled_conversion("tile_quant", d, a, "float32", scale, zero_point)


@tile_quant.ir
def _quant_ir(p) -> None:
    _emit_scaled_conversion("tile.vec_quant", p)


@tile_quant.py
def _quant_py(p) -> None:
    d, a, scale, zp = _scaled_conversion_py("tile_quant", p)
    with np.errstate(all="ignore"):
        y = (a.astype(np.float32) * scale).astype(np.float32) + np.float32(zp)
    d[...] = convert(y.astype(np.float32), "float32", elem_of(p.d))


@api("tile_lut")
def tile_lut(d: KernelValue, a: KernelValue, table: KernelValue) -> Plan:
    """Vector engine: ``d = table[a]`` (TC1 tlut), a lookup per element.

    :param d: local tile of any dtype.
    :param a: local tile of uint8 or int8, d's shape: each element's byte is the index
        (an int8 -1 reads entry 255).
    :param table: local tile of 256 elements of d's dtype.
    """
    ops = [tile_operand("tile_lut", n, x) for n, x in (("d", d), ("a", a), ("table", table))]
    _same_shape("tile_lut", "da", ops[:2])
    fe.require(elem_of(ops[1]) in ("uint8", "int8"), f"tile_lut: `a` must be uint8 or int8, got {elem_of(ops[1])}")
    fe.require(elem_of(ops[2]) == elem_of(ops[0]),
               f"tile_lut: `table` must be d's dtype {elem_of(ops[0])}, got {elem_of(ops[2])}")
    fe.require(int(np.prod(shape_of(ops[2]))) == 256,
               f"tile_lut: `table` must hold 256 elements, got {list(shape_of(ops[2]))}", ValueError)
    return fe.Plan(d=ops[0], a=ops[1], table=ops[2])


tile_lut.ir(lambda p: irv.emit(irv.call("tile.vec_lut", ir_region(p.d), ir_region(p.a), ir_region(p.table))))


@tile_lut.py
def _tile_lut_py(p) -> None:
    d, a, t = (py_view("tile_lut", x) for x in (p.d, p.a, p.table))
    d[...] = np.asarray(t).reshape(256)[np.asarray(a).view(np.uint8)]


_REDUCE = {"redsum": "sum", "redmax": "max", "redmin": "min"}


def _def_reduce(row):
    name = _semantics(_REDUCE, row)
    api_name = f"tile_{row['name']}"

    def front(d: KernelValue, a: KernelValue) -> Plan:
        ops = [tile_operand(api_name, n, x) for n, x in (("d", d), ("a", a))]
        elem = _same_dtype(api_name, "da", ops, T.NUMERIC_DTYPES)
        sd, sa = shape_of(ops[0]), shape_of(ops[1])
        fe.require(sd[:-1] == sa[:-1] and len(sd) == len(sa),
                   f"{api_name}: `d` {list(sd)} must match `a` {list(sa)} except in the innermost dimension",
                   ValueError)
        return fe.Plan(d=ops[0], a=ops[1], elem=elem)

    front.__name__ = api_name
    front.__doc__ = (f"Vector engine: ``d[..., 0] = {name}(a[..., :])`` over the innermost axis (TC1 {row['mnemonic']}).\n\n"
                     f"    :param d: local tile shaped like ``a`` except its innermost extent (only ``d[..., 0]`` "
                     f"is written).\n    :param a: local tile of the same numeric dtype.\n"
                     f"    Float sums accumulate in float32 in index order; integer sums saturate at the end.\n")
    f = api(api_name)(front)
    f.ir(lambda p: irv.emit(irv.call(f"tile.vec_{row['name']}", ir_region(p.d), ir_region(p.a))))

    @f.py
    def _py(p) -> None:
        d, a = py_view(api_name, p.d), py_view(api_name, p.a)
        if T.is_float(p.elem):
            fa = to_f64(a, p.elem).astype(np.float32)
            if name == "sum":
                acc = np.zeros(fa.shape[:-1], np.float32)
                with np.errstate(all="ignore"):
                    for k in range(fa.shape[-1]):
                        acc = acc + fa[..., k]
            else:
                with np.errstate(invalid="ignore"):
                    acc = fa.max(axis=-1) if name == "max" else fa.min(axis=-1)
            d[..., 0] = round_float(acc.astype(np.float64), p.elem)
        else:
            ia = a.astype(np.int64)
            r = ia.sum(axis=-1) if name == "sum" else ia.max(axis=-1) if name == "max" else ia.min(axis=-1)
            d[..., 0] = saturate(r, p.elem)

    return f


def _tile_op_rows():
    from ...ffi._base import _ffi_core

    return [dict(row.items()) for row in _ffi_core._get_global_func("arch.TileOps")()]


# One DSL function per row of the table of tile operations (arch/tile_ops.def) of an
# element-wise or reducing form; tile_copy (tcvt), tile_requant and tile_quant are written above.
_FORMS = {"binary": _def_binary, "scalar": _def_scalar, "unary": _def_unary, "reduce": _def_reduce}
TILE_OPS = {f"tile_{r['name']}": _FORMS[r["form"]](r) for r in _tile_op_rows() if r["form"] in _FORMS}
globals().update(TILE_OPS)

_unused = (scalar_to_storage, storage)
