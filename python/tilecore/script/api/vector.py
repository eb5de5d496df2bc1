"""tilecore/script/api/vector.py — the SIMD API: one 256-bit register per vector.

Vector types hold ``256 / bits`` lanes: int8x32, uint8x32, int16x16, uint16x16,
int32x8, uint32x8, float16x16, bfloat16x16, float32x8. Masks are bool vectors of
the same lane count (``boolx8`` governs ``int32x8``); they come from comparisons,
``S.tail_mask`` and ``& | ^ ~`` on masks.

Common rules (each function's docstring lists its dtypes):

- **Operands.** Two vectors of one dtype; or a vector and a scalar of its element
  dtype (broadcast); or a vector and a literal that fits the dtype (a float literal
  next to an integer vector is an error). Nothing converts implicitly: ``S.cast``.
- **Masks.** With ``mask=m`` only active lanes compute; an inactive lane of the
  result takes the lane of ``r`` (default 0). Comparisons leave inactive lanes false.
- **Integers** wrap (two's complement) unless ``saturate=True`` clamps to the dtype's
  range (``vadd vsub vshl vabs``; TC1's vadds / vsubs).
- **Floats** are computed exactly and rounded once to float32, then to the dtype
  (round to nearest even); ``vmax``/``vmin`` return NaN if either input is NaN.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import frontend as fe
from .. import irvalues as irv
from .. import types as T
from ..numerics import convert, storage
from ..pysim import semantics as sem
from ..registry import api

if TYPE_CHECKING:
    from ..frontend import Plan
    from ..types import DSLType
    from ..values import KernelValue


def _vec_binary(op, a, b, allowed, mask, r, saturate: bool = False, saturate_ok: bool = False):
    p = fe.binary(op, a, b, allowed=allowed)
    if p.lanes == 1:
        raise TypeError(f"{op}: needs a vector operand, got {p.dtype} (use the operator for scalars)")
    if saturate:
        fe.require(saturate_ok, f"{op}: saturate=True is not available (TC1 saturates vadd, vsub, vshl, vabs)",
                   ValueError)
        fe.require(T.is_int(p.dtype), f"{op}: saturate=True needs an integer dtype, got {p.dtype}")
    p.mask = fe.mask_for(op, mask, p.lanes)
    p.r = _r_for(op, r, p.dtype)
    p.saturate = bool(saturate)
    return p


def _r_for(op, r, dtype):
    if r is None:
        return None
    if fe.kind(r) == "literal":
        return fe.check_literal(op, r, T.split(dtype)[0])
    fe.require(fe.kind(r) == "value" and r.dtype == dtype, f"{op}: `r` must be {dtype}, got {fe.describe(r)}")
    return r


def _ir_masked(p, node):
    if p.mask is None:
        return irv.wrap(node)
    other = irv.operand(p.r if p.r is not None else 0, p.dtype)
    return irv.wrap(irv.node("Select", p.mask.node, node, other))


def _py_masked(p, data):
    if p.mask is not None:
        other = sem.lanes_of(p.r if p.r is not None else 0, p.dtype)
        data = np.where(p.mask.data, data, other)
    return sem.value(data, p.dtype)


def _operands_ir(p):
    return irv.operand(p.a, p.dtype), irv.operand(p.b, p.dtype)


def _operands_py(p):
    return sem.lanes_of(p.a, p.dtype), sem.lanes_of(p.b, p.dtype)


_DTYPES_DOC = {
    "numeric": "int8 uint8 int16 uint16 int32 uint32 float16 bfloat16 float32",
    "integer": "int8 uint8 int16 uint16 int32 uint32",
    "bits": "int8 uint8 int16 uint16 int32 uint32, and bool masks",
}


def _doc(what, dtypes, extra="") -> str:
    return (f"{what}\n\n    :param a, b: vectors (or one vector and a scalar / literal, broadcast); element "
            f"dtypes: {_DTYPES_DOC[dtypes]}.\n"
            f"    :param mask: optional bool vector; inactive lanes of the result take ``r`` (default 0).\n"
            f"    {extra}\n    :returns: a vector of the operands' dtype.\n")


def _def_arith(name, sem_op, node_name, intrin_sat=None, doc=""):
    def front(a: KernelValue, b: KernelValue, mask: KernelValue = None, r: KernelValue = None,
              saturate: bool = False) -> Plan:
        return _vec_binary(name, a, b, fe.NUMERIC, mask, r, saturate, saturate_ok=intrin_sat is not None)

    front.__name__ = name
    front.__doc__ = doc
    f = api(name)(front)

    @f.ir
    def _ir(p):
        a, b = _operands_ir(p)
        n = irv.call(intrin_sat, a, b) if p.saturate else irv.node(node_name, a, b)
        return _ir_masked(p, n)

    f.py(lambda p: _py_masked(p, sem.arith(sem_op, *_operands_py(p), p.elem, saturating=p.saturate)))
    return f


vadd = _def_arith("vadd", "add", "Add", "tc1.vadds", _doc(
    "Lane-wise ``a + b`` (TC1 vadd; vadds with ``saturate=True``).", "numeric",
    ":param saturate: integers only: clamp to the dtype's range instead of wrapping."))
vsub = _def_arith("vsub", "sub", "Sub", "tc1.vsubs", _doc(
    "Lane-wise ``a - b`` (TC1 vsub; vsubs with ``saturate=True``).", "numeric",
    ":param saturate: integers only: clamp to the dtype's range instead of wrapping."))
vmul = _def_arith("vmul", "mul", "Mul", None, _doc(
    "Lane-wise ``a * b``; integers keep the low bits (TC1 vmul).", "numeric"))
vmax = _def_arith("vmax", "max", "Max", None, _doc("Lane-wise maximum (float: NaN if either is NaN).", "numeric"))
vmin = _def_arith("vmin", "min", "Min", None, _doc("Lane-wise minimum (float: NaN if either is NaN).", "numeric"))

_BIT = {"vand": ("and", "tir.bitwise_and", "And"), "vor": ("or", "tir.bitwise_or", "Or"),
        "vxor": ("xor", "tir.bitwise_xor", "NE")}


def _def_bitwise(name):
    op, intrin, bool_node = _BIT[name]

    def front(a: KernelValue, b: KernelValue, mask: KernelValue = None, r: KernelValue = None) -> Plan:
        return _vec_binary(name, a, b, fe.INTEGER + ("bool",), mask, r)

    front.__name__ = name
    front.__doc__ = _doc(f"Lane-wise bitwise {op} of integers; logical {op} of masks (TC1 v{op} / p{op}).",
                         "bits")
    f = api(name)(front)

    @f.ir
    def _ir(p):
        a, b = _operands_ir(p)
        return _ir_masked(p, irv.node(bool_node, a, b) if p.elem == "bool" else irv.call(intrin, a, b))

    f.py(lambda p: _py_masked(p, sem.bitwise(op, *_operands_py(p), p.elem)))
    return f


vand = _def_bitwise("vand")
vor = _def_bitwise("vor")
vxor = _def_bitwise("vxor")


@api("vnot")
def vnot(a: KernelValue, mask: KernelValue = None, r: KernelValue = None) -> Plan:
    """Lane-wise bitwise not of an integer vector, logical not of a mask.

    :param a: vector; element dtypes: int8 uint8 int16 uint16 int32 uint32, bool.
    """
    dt = fe.value_dtype("vnot", "a", a, allowed=fe.INTEGER + ("bool",), vector=True)
    elem, lanes = T.split(dt)
    return fe.Plan(a=a, dtype=dt, elem=elem, mask=fe.mask_for("vnot", mask, lanes), r=_r_for("vnot", r, dt))


@vnot.ir
def _vnot_ir(p):
    n = irv.node("Not", p.a.node) if p.elem == "bool" else irv.call("tir.bitwise_not", p.a.node)
    return _ir_masked(p, n)


vnot.py(lambda p: _py_masked(p, np.logical_not(p.a.data) if p.elem == "bool" else np.invert(p.a.data)))


def _def_shift(name, op):
    def front(a: KernelValue, b: KernelValue, mask: KernelValue = None, r: KernelValue = None,
              saturate: bool = False) -> Plan:
        return _vec_binary(name, a, b, fe.INTEGER, mask, r, saturate, saturate_ok=(op == "shl"))

    front.__name__ = name
    what = ("Lane-wise left shift ``a << (b & (bits - 1))``, keeping the low bits; with ``saturate=True`` "
            "the result is clamped to the dtype's range." if op == "shl" else
            "Lane-wise right shift ``a >> (b & (bits - 1))``: arithmetic for signed dtypes, logical for "
            "unsigned.")
    front.__doc__ = _doc(what + " The shift amount is taken modulo the element width, as TC1's "
                         "scalar shifts take it modulo 32.", "integer")
    f = api(name)(front)

    @f.ir
    def _ir(p):
        a, b = _operands_ir(p)
        intrin = "tc1.vshls" if p.saturate else ("tir.shift_left" if op == "shl" else "tir.shift_right")
        return _ir_masked(p, irv.call(intrin, a, b))

    f.py(lambda p: _py_masked(p, sem.shift(op, *_operands_py(p), p.elem, saturating=p.saturate)))
    return f


vshl = _def_shift("vshl", "shl")
vshr = _def_shift("vshr", "shr")


@api("vabs")
def vabs(a: KernelValue, mask: KernelValue = None, r: KernelValue = None, saturate: bool = False) -> Plan:
    """Lane-wise absolute value: ``max(a, 0 - a)``. Integers wrap (``|INT_MIN|`` is
    INT_MIN) unless ``saturate=True`` (then INT_MAX); unsigned values are unchanged.

    :param a: vector; element dtypes: int8 uint8 int16 uint16 int32 uint32 float16 bfloat16 float32.
    """
    dt = fe.value_dtype("vabs", "a", a, allowed=fe.NUMERIC, vector=True)
    if saturate:
        fe.require(T.is_int(dt), f"vabs: saturate=True needs an integer dtype, got {dt}")
    elem, lanes = T.split(dt)
    return fe.Plan(a=a, dtype=dt, elem=elem, mask=fe.mask_for("vabs", mask, lanes), r=_r_for("vabs", r, dt),
                   saturate=bool(saturate))


@vabs.ir
def _vabs_ir(p):
    a = p.a.node
    if p.elem.startswith("u"):
        return _ir_masked(p, a)
    zero = irv.operand(0, p.dtype)
    negated = irv.call("tc1.vsubs", zero, a) if p.saturate else irv.node("Sub", zero, a)
    return _ir_masked(p, irv.node("Max", a, negated))


@vabs.py
def _vabs_py(p):
    a = p.a.data
    if p.elem.startswith("u"):
        return _py_masked(p, a)
    zero = sem.lanes_of(0, p.dtype)
    negated = sem.arith("sub", zero, a, p.elem, saturating=p.saturate)
    return _py_masked(p, sem.arith("max", a, negated, p.elem))


_CMP = {"vceq": ("eq", "EQ"), "vcne": ("ne", "NE"), "vclt": ("lt", "LT"), "vcle": ("le", "LE"),
        "vcgt": ("gt", "GT"), "vcge": ("ge", "GE")}


def _def_compare(name):
    op, node_name = _CMP[name]

    def front(a: KernelValue, b: KernelValue, mask: KernelValue = None) -> Plan:
        allowed = fe.ANY if op in ("eq", "ne") else fe.NUMERIC
        p = fe.binary(name, a, b, allowed=allowed, result="bool")
        fe.require(p.lanes > 1, f"{name}: needs a vector operand, got {p.dtype}")
        p.mask = fe.mask_for(name, mask, p.lanes)
        return p

    front.__name__ = name
    front.__doc__ = (f"Lane-wise ``a {dict(eq='==', ne='!=', lt='<', le='<=', gt='>', ge='>=')[op]} b`` as a mask "
                     f"(NaN compares false; ``!=`` of NaN is true). Inactive lanes (``mask``) are false.\n\n"
                     f"    :param a, b: vectors of one dtype (or a scalar / literal, broadcast); element dtypes: "
                     f"{_DTYPES_DOC['numeric']}{', bool' if op in ('eq', 'ne') else ''}.\n"
                     f"    :returns: a bool vector with the operands' lane count.\n")
    f = api(name)(front)

    @f.ir
    def _ir(p):
        n = irv.node(node_name, *_operands_ir(p))
        return irv.wrap(n if p.mask is None else irv.node("And", p.mask.node, n))

    @f.py
    def _py(p):
        m = sem.compare(op, *_operands_py(p), p.elem)
        if p.mask is not None:
            m = m & p.mask.data
        return sem.value(m, p.result)

    return f


vceq = _def_compare("vceq")
vcne = _def_compare("vcne")
vclt = _def_compare("vclt")
vcle = _def_compare("vcle")
vcgt = _def_compare("vcgt")
vcge = _def_compare("vcge")


@api("vsel")
def vsel(a: KernelValue, b: KernelValue, mask: KernelValue) -> Plan:
    """Lane-wise ``mask ? a : b`` (TC1 vsel).

    :param a, b: vectors of one dtype (or a scalar / literal, broadcast); any element dtype.
    :param mask: a bool vector with the same lane count.
    """
    p = fe.binary("vsel", a, b, allowed=fe.ANY)
    fe.require(p.lanes > 1, f"vsel: needs a vector operand, got {p.dtype}")
    fe.require(mask is not None, "vsel: needs a mask")
    p.mask = fe.mask_for("vsel", mask, p.lanes)
    return p


vsel.ir(lambda p: irv.wrap(irv.node("Select", p.mask.node, *_operands_ir(p))))
vsel.py(lambda p: sem.value(np.where(p.mask.data, *_operands_py(p)), p.dtype))

_RED = {"vredsum": "sum", "vredmax": "max", "vredmin": "min"}


def _identity(op, elem):
    if op == "sum":
        return 0.0 if T.is_float(elem) else 0
    if T.is_float(elem):
        return float("-inf") if op == "max" else float("inf")
    lo, hi = T.int_range(elem)
    return lo if op == "max" else hi


def _def_reduce(name):
    op = _RED[name]

    def front(a: KernelValue, mask: KernelValue = None) -> Plan:
        dt = fe.value_dtype(name, "a", a, allowed=fe.NUMERIC, vector=True)
        elem, lanes = T.split(dt)
        return fe.Plan(a=a, dtype=dt, elem=elem, mask=fe.mask_for(name, mask, lanes), result=elem)

    front.__name__ = name
    front.__doc__ = (f"The {op} of the active lanes, as a scalar of the element dtype (TC1 {name}). Lanes "
                     f"are combined in lane order; integer sums wrap; float sums accumulate in float32. "
                     f"Inactive lanes count as the identity ({'0' if op == 'sum' else 'lowest' if op == 'max' else 'highest'} value).\n\n"
                     f"    :param a: vector; element dtypes: {_DTYPES_DOC['numeric']}.\n")
    f = api(name)(front)

    @f.ir
    def _ir(p):
        a = p.a.node
        if p.mask is not None:
            a = irv.node("Select", p.mask.node, a, irv.operand(_identity(op, p.elem), p.dtype))
        return irv.wrap(irv.call(f"tc1.{name}", a))

    @f.py
    def _py(p):
        a = p.a.data
        if p.mask is not None:
            a = np.where(p.mask.data, a, sem.lanes_of(_identity(op, p.elem), p.dtype))
        return sem.value(sem.reduce(op, a, p.elem), p.result)

    return f


vredsum = _def_reduce("vredsum")
vredmax = _def_reduce("vredmax")
vredmin = _def_reduce("vredmin")


@api("vload")
def vload(ptr: KernelValue, mask: KernelValue = None, lanes: int | None = None, stride: KernelValue = 1) -> Plan:
    """Loads one vector register from memory (TC1 vld).

    :param ptr: a pointer (or buffer: its first element); its element dtype gives the
        vector type (``int8`` -> ``int8x32``, ``float32`` -> ``float32x8``, ...).
    :param mask: optional bool vector: inactive lanes are not read and are 0.
    :param lanes: optional compile-time count: read only lanes ``0 .. lanes-1`` (the
        rest are 0), the same as a ``S.tail_mask(lanes, ...)`` mask.
    :param stride: element distance between lanes (literal or int scalar; default 1).
    :returns: lane ``i`` = ``ptr[i * stride]``.
    """
    if fe.kind(ptr) not in ("pointer", "buffer"):
        raise TypeError(f"vload: `ptr` must be a pointer, got {fe.describe(ptr)}")
    if fe.kind(ptr) == "buffer":
        ptr = ptr + 0
    elem = ptr.elem
    fe.require(elem != "bool", "vload: bool memory holds no vectors (masks come from comparisons)")
    dtype = T.vector_of(elem)
    n = T.split(dtype)[1]
    if lanes is not None:
        lanes = fe.const_int("vload", "lanes", lanes, lo=1, hi=n)
    if fe.kind(stride) == "literal":
        stride = fe.const_int("vload", "stride", stride)
    else:
        if fe.kind(stride) != "value" or stride.dtype != "int32":
            raise TypeError(f"vload: `stride` must be an int32 scalar or a literal, got {fe.describe(stride)}")
    return fe.Plan(ptr=ptr, dtype=dtype, elem=elem, lanes=n, mask=fe.mask_for("vload", mask, n),
                   count=lanes, stride=stride)


def _ramp_ir(p):
    stride = irv.index(p.stride)
    return irv.node("Ramp", irv.index(p.ptr.offset), stride, p.lanes)


def _active_ir(p):
    """The mask of active lanes (mask and lanes=), or None."""
    m = p.mask.node if p.mask is not None else None
    if p.count is not None and p.count < p.lanes:
        tail = irv.node("LT", irv.node("Ramp", irv.index(0), irv.index(1), p.lanes),
                        irv.node("Broadcast", irv.index(p.count), p.lanes))
        m = tail if m is None else irv.node("And", m, tail)
    return m


def _active_py(p):
    m = np.ones(p.lanes, dtype=bool) if p.mask is None else p.mask.data.astype(bool)
    if p.count is not None:
        m = m & (np.arange(p.lanes) < p.count)
    return m


def _indices_py(op, p):
    if p.mask is None and p.count is None and type(p.stride) is int:
        # Fast path (every lane active, a literal stride): bounds from the two ends.
        first, last = p.ptr.offset, p.ptr.offset + p.stride * (p.lanes - 1)
        if 0 <= min(first, last) and max(first, last) < p.ptr.mem.extent:
            return first + p.stride * _LANE_INDEX[p.lanes], _ALL_ACTIVE[p.lanes]
    stride = p.stride if isinstance(p.stride, int) else int(p.stride.data[0])
    idx = p.ptr.offset + stride * np.arange(p.lanes)
    active = _active_py(p)
    if active.any():
        act = idx[active]
        lo, hi = int(act.min()), int(act.max())
        if lo < 0 or hi >= p.ptr.mem.extent:
            bad = int(act[(act < 0) | (act >= p.ptr.mem.extent)][0])
            raise IndexError(f"{op}: lane access `{p.ptr.mem.name}[{bad}]` is out of bounds: `{p.ptr.mem.name}` "
                             f"has {p.ptr.mem.extent} elements ({p.ptr.mem.scope}); the vector covers "
                             f"[{int(idx.min())}, {int(idx.max()) + 1}) with stride {stride}")
    return idx, active


def _check_aligned(op, p, offsets):
    """TC1's vld/vst read 32 contiguous bytes at a 32-byte aligned address (docs/tc1.md);
    a contiguous (literal stride 1) vector access compiles to one of them, so PySim refuses
    the misaligned ones the machine faults on. Buffers start aligned, so the element offset
    decides."""
    if type(p.stride) is not int or p.stride != 1:
        return  # strided: gathered one element at a time
    step = 32 // np.dtype(storage(p.elem)).itemsize
    bad = np.asarray(offsets) % step
    if bad.any():
        off = int(np.asarray(offsets).reshape(-1)[np.argmax(bad.reshape(-1) != 0)])
        raise ValueError(f"misaligned {op}: `{p.ptr.mem.name}[{off}]` is not 32-byte aligned (TC1's vld/vst need "
                         f"an element offset that is a multiple of {step} for {p.elem}; the compiled kernel faults)")


@vload.ir
def _vload_ir(p):
    load = irv.node("BufferLoad", p.ptr.buffer, [_ramp_ir(p)])
    m = _active_ir(p)
    if m is not None:
        load = irv.node("Select", m, load, irv.operand(0, p.dtype))
    return irv.wrap(load)


_LANE_INDEX = {n: np.arange(n) for n in (8, 16, 32)}
_ALL_ACTIVE = {n: np.ones(n, dtype=bool) for n in (8, 16, 32)}


@vload.py
def _vload_py(p):
    _check_aligned("vload", p, p.ptr.offset)
    if p.mask is None and p.count is None and type(p.stride) is int and p.stride == 1:
        off = p.ptr.offset
        if 0 <= off and off + p.lanes <= p.ptr.mem.extent:  # contiguous, in bounds: one slice copy
            return sem.value(p.ptr.mem.array[off:off + p.lanes].copy(), p.dtype)
    idx, active = _indices_py("vload", p)
    out = np.zeros(p.lanes, dtype=storage(p.elem))
    out[active] = p.ptr.mem.array[idx[active]]
    return sem.value(out, p.dtype)


@api("vstore")
def vstore(value: KernelValue, ptr: KernelValue, mask: KernelValue = None, lanes: int | None = None,
           stride: KernelValue = 1) -> Plan:
    """Stores the active lanes of a vector to memory (TC1 vst); inactive lanes leave
    memory untouched (and are not bounds-checked).

    :param value: a vector whose element dtype is the pointer's.
    :param ptr: a pointer (or buffer); lane ``i`` goes to ``ptr[i * stride]``.
    :param mask: optional bool vector of active lanes.
    :param lanes: optional compile-time count of leading lanes to store.
    :param stride: element distance between lanes (literal or int scalar; default 1).
    """
    p = vload.front(ptr, mask=mask, lanes=lanes, stride=stride)
    if fe.kind(value) != "value" or value.dtype != p.dtype:
        raise TypeError(f"vstore: the value must be {p.dtype} to store through a pointer to {p.elem}, got "
                        f"{fe.describe(value)}")
    p.value = value
    return p


@vstore.ir
def _vstore_ir(p) -> None:
    from ...ir import _ffi_api

    irv.emit(_ffi_api.BufferStore(p.ptr.buffer, p.value.node, [_ramp_ir(p)], _active_ir(p), irv.cur_span()))


@vstore.py
def _vstore_py(p) -> None:
    _check_aligned("vstore", p, p.ptr.offset)
    if p.mask is None and p.count is None and type(p.stride) is int and p.stride == 1:
        off = p.ptr.offset
        if 0 <= off and off + p.lanes <= p.ptr.mem.extent:
            p.ptr.mem.array[off:off + p.lanes] = p.value.data
            return
    idx, active = _indices_py("vstore", p)
    p.ptr.mem.array[idx[active]] = p.value.data[active]


@api("vbcast")
def vbcast(x: KernelValue, dtype: str | DSLType | None = None) -> Plan:
    """A vector with every lane equal to the scalar ``x`` (TC1 vsplat); ``S.int32x8(x)``.

    :param x: a scalar kernel value or a literal.
    :param dtype: the vector type (``"int32x8"``) or its element dtype; defaults to the
        register vector of ``x``'s dtype. A scalar value must have that element dtype.
    """
    if dtype is not None:
        d = T.dtype_name(dtype)
        elem, lanes = T.split(d)
        if lanes == 1:
            lanes = T.register_lanes(elem) if elem != "bool" else 8
        fe.require(elem == "bool" or lanes == T.register_lanes(elem),
                   f"vbcast: {T.join(elem, lanes)} is not a register vector type (use {T.vector_of(elem)})",
                   ValueError)
        d = T.join(elem, lanes)
    else:
        fe.require(fe.kind(x) == "value", "vbcast: a literal needs a dtype")
        d = T.vector_of(x.dtype)
    elem = T.split(d)[0]
    if fe.kind(x) == "literal":
        x = fe.check_literal("vbcast", x, elem)
    else:
        fe.value_dtype("vbcast", "x", x, vector=False)
        fe.require(x.dtype == elem, f"vbcast: the scalar is {x.dtype}, the vector {d} (use S.cast)")
    return fe.Plan(x=x, dtype=d)


vbcast.ir(lambda p: irv.wrap(irv.operand(p.x, p.dtype)))
vbcast.py(lambda p: sem.value(sem.lanes_of(p.x, p.dtype).copy(), p.dtype))


@api("tail_mask")
def tail_mask(n: KernelValue, lanes: int | None) -> Plan:
    """The mask whose lanes ``0 .. n-1`` are active (TC1 pwhile): ``n`` an int scalar or
    literal (clamped to 0 .. lanes), ``lanes`` a compile-time lane count (8, 16, 32) or a
    vector type."""
    if not isinstance(lanes, int):
        lanes = T.split(T.dtype_name(lanes))[1]
    fe.require(lanes in (8, 16, 32), f"tail_mask: lanes must be 8, 16 or 32, got {lanes}", ValueError)
    if fe.kind(n) != "literal":
        fe.require(fe.kind(n) == "value" and n.dtype == "int32",
                   f"tail_mask: `n` must be an int32 scalar or a literal, got {fe.describe(n)}")
    else:
        n = fe.const_int("tail_mask", "n", n)
    return fe.Plan(n=n, lanes=lanes, dtype=f"boolx{lanes}")


tail_mask.ir(lambda p: irv.wrap(irv.node("LT", irv.node("Ramp", irv.index(0), irv.index(1), p.lanes),
                                         irv.node("Broadcast", irv.index(p.n), p.lanes))))
tail_mask.py(lambda p: sem.value(np.arange(p.lanes) < (p.n if isinstance(p.n, int) else int(p.n.data[0])),
                                 p.dtype))


@api("cast")
def cast(x: KernelValue, dtype: str | DSLType, part: str = "low") -> Plan:
    """Converts a scalar or a vector with TC1's rules: float to int rounds to nearest
    even and saturates (NaN gives 0); int to int saturates; float to float rounds to
    nearest even; to bool is ``x != 0``.

    :param x: a scalar or vector kernel value (or a literal, giving a typed constant).
    :param dtype: the target element dtype (or vector type). A vector becomes the register
        vector of that dtype.
    :param part: for vectors whose lane count changes (TC1 vcvt): ``"low"`` (0), ``"high"``
        (1) or a chunk index. Widening (e.g. int8x32 -> int32x8, L result lanes) converts
        source lanes ``[part*L, part*L + L)``; narrowing (int32x8 -> int8x32) puts the 8
        converted lanes at ``[part*8, part*8 + 8)`` of the result; other lanes are 0.
    """
    target = T.dtype_name(dtype)
    telem, tlanes = T.split(target)
    if fe.kind(x) == "literal":
        return fe.Plan(x=x, src=None, dtype=target, part=0)
    fe.require(fe.kind(x) == "value", f"cast: cannot convert {fe.describe(x)}")
    selem, slanes = T.split(x.dtype)
    if slanes == 1:
        fe.require(tlanes == 1, f"cast: a scalar ({x.dtype}) converts to a scalar dtype, not {target}")
        return fe.Plan(x=x, src=x.dtype, dtype=telem, part=0, selem=selem, telem=telem, lanes=1)
    dlanes = T.register_lanes(telem) if telem != "bool" else slanes
    fe.require(tlanes in (1, dlanes), f"cast: {target} is not a register vector type (use {telem})", ValueError)
    part = {"low": 0, "high": 1}.get(part, part) if isinstance(part, str) else part
    part = fe.const_int("cast", "part", part, lo=0)
    chunks = max(slanes, dlanes) // min(slanes, dlanes)
    fe.require(part < chunks, f"cast: part {part} is out of range: {x.dtype} -> {T.join(telem, dlanes)} has "
                              f"{chunks} part(s)", ValueError)
    return fe.Plan(x=x, src=x.dtype, dtype=T.join(telem, dlanes), part=part, selem=selem, telem=telem,
                   slanes=slanes, lanes=dlanes)


def _literal_converted(p):
    from ..numerics import scalar_to_storage

    v = scalar_to_storage(p.x, T.split(p.dtype)[0])
    return bool(v) if T.is_bool(p.dtype) else (float(v) if T.is_float(p.dtype) and p.dtype != "bfloat16"
                                               else int(v) if not T.is_float(p.dtype) else v)


@cast.ir
def _cast_ir(p):
    if p.src is None:
        return irv.wrap(irv.const(_literal_converted(p), p.dtype))
    if p.src == p.dtype:
        return p.x
    if p.lanes == 1 or p.lanes == p.slanes:
        return irv.wrap(irv.node("Cast", p.dtype, p.x.node))
    return irv.wrap(irv.call("tc1.vcvt", p.x.node, irv.index(p.part), dtype=p.dtype))


@cast.py
def _cast_py(p):
    if p.src is None:
        return sem.value(np.array([_literal_converted(p)]), p.dtype)
    if p.src == p.dtype:
        return p.x
    conv = convert(p.x.data, p.selem, p.telem)
    if p.lanes == 1 or p.lanes == p.slanes:
        return sem.value(conv, p.dtype)
    out = np.zeros(p.lanes, dtype=storage(p.telem))
    if p.lanes <= p.slanes:
        out[:] = conv[p.part * p.lanes:(p.part + 1) * p.lanes]
    else:
        out[p.part * p.slanes:(p.part + 1) * p.slanes] = conv
    return sem.value(out, p.dtype)
