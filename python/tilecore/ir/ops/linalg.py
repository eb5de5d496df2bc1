"""tilecore/ir/ops/linalg.py — MatMul, Gemm and Einsum.

float16/bfloat16 products accumulate in float32 and are cast back (what ONNX
Runtime's kernels do); float32 and float64 compute in their own type; integer
MatMul in int64, cast back to the input type.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from . import precision_form
from ._conv import accum_dtype
from ._util import fail, is_int, tensor
from .infer import broadcast_shapes
from .precision_form import PRECISION_ATTRS, in_precision_form
from .registry import REQUIRED, Operand, Result, register_op


def _acc(*xs):
    return [x.astype(accum_dtype(x.dtype), copy=False) for x in xs]


def _matmul_shape(a, b):
    if a is None or b is None:
        return None
    if len(a) == 0 or len(b) == 0:
        raise fail("MatMul", "inputs must have rank >= 1")
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    k1, k2 = a2[-1], b2[-2]
    if is_int(k1) and is_int(k2) and k1 != k2:
        raise fail("MatMul", f"inner dims differ: {tuple(a)} x {tuple(b)}")
    batch = broadcast_shapes(a2[:-2], b2[:-2], where="MatMul")
    out = tuple(batch) + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _matmul_infer(attrs, inputs):
    a, b = inputs[0], inputs[1]
    return [tensor(_matmul_shape(a.shape, b.shape), a.dtype)]


@register_op("MatMul", attrs=dict(PRECISION_ATTRS), inputs=(2, 4), since_version=1, infer=_matmul_infer)
def matmul(attrs: dict[str, Any], a: Operand, b: Operand, bias: Operand = None, w_scale: Operand = None) -> Result:
    """numpy.matmul semantics (batch broadcasting, 1-D operands promoted then
    dropped); float16/32/64, bfloat16, int32/64, uint32/64. With ``tc_precision`` the
    precision form (precision_form.py): B may be int8 [K, N], inputs 2, 3 the int32 bias
    and w_scale."""
    if in_precision_form(attrs):
        return precision_form.reference("MatMul", attrs, lambda x, w, _: np.matmul(x, w), -1,
                                        lambda w: w.sum(axis=0), a, b, bias, w_scale)
    if bias is not None or w_scale is not None:
        raise fail("MatMul", "inputs 2 and 3 belong to the int8 form (tc_precision)")
    _matmul_shape(a.shape, b.shape)
    a2, b2 = _acc(a, b)
    return np.matmul(a2, b2).astype(a.dtype)


def _gemm_infer(attrs, inputs):
    a, b = inputs[0], inputs[1]
    c = inputs[2] if len(inputs) > 2 else None
    if a.shape is None or b.shape is None:
        return [tensor(None, a.dtype)]
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise fail("Gemm", f"A {a.shape} and B {b.shape} must be matrices")
    m, ka = (a.shape[1], a.shape[0]) if attrs["transA"] else a.shape
    kb, n = (b.shape[1], b.shape[0]) if attrs["transB"] else b.shape
    if is_int(ka) and is_int(kb) and ka != kb:
        raise fail("Gemm", f"inner dims differ: A' is ({m}, {ka}), B' is ({kb}, {n})")
    if c is not None and c.shape is not None:
        broadcast_shapes((m, n), c.shape, where="Gemm (C to (M, N))")
    return [tensor((m, n), a.dtype)]


@register_op("Gemm", attrs={"alpha": ("float", 1.0), "beta": ("float", 1.0), "transA": ("int", 0),
                            "transB": ("int", 0), "broadcast": ("int", 0), **PRECISION_ATTRS},
             inputs=(2, 4), since_version=1, infer=_gemm_infer)
def gemm(attrs: dict[str, Any], a: Operand, b: Operand, c: Operand = None, w_scale: Operand = None) -> Result:
    """Y = alpha * A' B' + beta * C, A' = A^T if transA, B' = B^T if transB, C
    broadcast to (M, N) (optional from opset 11); float and int32/64 types. With
    ``tc_precision`` the precision form (precision_form.py; int8: alpha = beta = 1)."""
    if in_precision_form(attrs):
        tb = attrs["transB"]
        if attrs["tc_precision"] == "int8" and (attrs["transA"] or attrs["alpha"] != 1.0 or attrs["beta"] != 1.0):
            raise fail("Gemm", "int8 takes transA = 0 and alpha = beta = 1")

        def compute(x, w, bias):
            x = x.T if attrs["transA"] else x
            y = np.matmul(x, w.T if tb else w) * attrs["alpha"]
            return y if bias is None else y + attrs["beta"] * bias

        return precision_form.reference("Gemm", attrs, compute, -1, lambda w: w.sum(axis=1 if tb else 0), a, b, c,
                                        w_scale)
    if w_scale is not None:
        raise fail("Gemm", "input 3 belongs to the int8 form (tc_precision)")
    a2, b2 = _acc(a, b)
    if attrs["transA"]:
        a2 = a2.T
    if attrs["transB"]:
        b2 = b2.T
    if a2.shape[1] != b2.shape[0]:
        raise fail("Gemm", f"inner dims differ: A' {a2.shape}, B' {b2.shape}")
    y = np.matmul(a2, b2)
    if attrs["alpha"] != 1.0:
        y = y * np.asarray(attrs["alpha"], y.dtype)
    if c is not None:
        c2 = c.astype(y.dtype)
        y = y + (c2 * np.asarray(attrs["beta"], y.dtype) if attrs["beta"] != 1.0 else c2)
    return y.astype(a.dtype)


def _parse_einsum(equation, n_inputs):
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) != n_inputs:
        raise fail("Einsum", f"equation '{equation}' has {len(terms)} operands, got {n_inputs} inputs")
    for t in terms + ([rhs] if rhs is not None else []):
        if not re.fullmatch(r"[A-Za-z]*(\.\.\.)?[A-Za-z]*", t):
            raise fail("Einsum", f"equation '{equation}' has an invalid term '{t}'")
    if rhs is None:
        letters = "".join(terms).replace(".", "")
        singles = sorted(ch for ch in set(letters) if letters.count(ch) == 1)
        rhs = ("..." if any("..." in t for t in terms) else "") + "".join(singles)
    return terms, rhs


def _einsum_infer(attrs, inputs):
    terms, rhs = _parse_einsum(attrs["equation"], len(inputs))
    dims = {}
    ell = []
    for t, x in zip(terms, inputs):
        if x.shape is None:
            return [tensor(None, inputs[0].dtype)]
        head, _, tail = t.partition("...")
        n_ell = len(x.shape) - len(head) - len(tail) if "..." in t else 0
        if n_ell < 0 or ("..." not in t and len(t) != len(x.shape)):
            raise fail("Einsum", f"term '{t}' does not match input shape {x.shape}")
        shape = list(x.shape)
        for ch, d in zip(head, shape[:len(head)]):
            dims.setdefault(ch, []).append(d)
        for ch, d in zip(tail, shape[len(shape) - len(tail):] if tail else []):
            dims.setdefault(ch, []).append(d)
        if "..." in t:
            ell.append(tuple(shape[len(head):len(head) + n_ell]))
    sizes = {}
    for ch, ds in dims.items():
        static = {int(d) for d in ds if is_int(d) and d != 1}
        if len(static) > 1:
            raise fail("Einsum", f"index '{ch}' has sizes {sorted(static)}")
        sizes[ch] = static.pop() if static else (1 if all(is_int(d) for d in ds) else ds[0])
    ell_shape = broadcast_shapes(*ell, where="Einsum") if ell else ()
    head, _, tail = rhs.partition("...")
    out = [sizes[ch] for ch in head] + (list(ell_shape) if "..." in rhs else []) + [sizes[ch] for ch in tail]
    return [tensor(out, inputs[0].dtype)]


@register_op("Einsum", attrs={"equation": ("string", REQUIRED)}, inputs=(1, -1), since_version=12, infer=_einsum_infer)
def einsum(attrs: dict[str, Any], *xs: Operand) -> Result:
    """Einstein summation by `equation` (explicit '->' or implicit output, '...'
    broadcasting); float and integer types."""
    _parse_einsum(attrs["equation"], len(xs))
    args = _acc(*xs)
    return np.asarray(np.einsum(attrs["equation"].replace(" ", ""), *args)).astype(xs[0].dtype)
