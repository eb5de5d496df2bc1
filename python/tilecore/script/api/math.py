"""tilecore/script/api/math.py — scalar float math: exp, log, sqrt, rsqrt, recip, tanh, sigmoid.

TC1 computes transcendentals on the vector engine over tiles (``S.tile_exp`` ...),
not in SIMD registers; these scalar forms exist for the front end (loop-invariant
constants, per-row factors). Each is computed in double and rounded once to the
dtype (float32, then float16/bfloat16), as the simulator does.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import frontend as fe
from .. import irvalues as irv
from .. import types as T
from ..numerics import round_float, to_f64
from ..pysim import semantics as sem
from ..registry import api

if TYPE_CHECKING:
    from ..frontend import Plan
    from ..values import KernelValue


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


_FUNCS = {
    "exp": (np.exp, "e to the x"),
    "log": (np.log, "natural logarithm (log 0 = -Inf, log of a negative number = NaN)"),
    "sqrt": (np.sqrt, "square root (negative gives NaN)"),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), "1 / sqrt(x)"),
    "recip": (lambda x: 1.0 / x, "1 / x"),
    "tanh": (np.tanh, "hyperbolic tangent"),
    "sigmoid": (_sigmoid, "1 / (1 + exp(-x))"),
}


def _def(name):
    fn, what = _FUNCS[name]

    def front(x: KernelValue) -> Plan:
        if fe.kind(x) == "value" and T.split(x.dtype)[1] > 1:
            raise TypeError(f"{name}: TC1 has no SIMD {name}; compute it over a tile on the vector engine "
                            f"(S.tile_{name}), got {x.dtype}")
        dt = fe.value_dtype(name, "x", x, allowed=T.FLOAT_DTYPES, vector=False)
        return fe.Plan(x=x, dtype=dt)

    front.__name__ = name
    front.__doc__ = (f"{what[0].upper() + what[1:]} of a float scalar.\n\n    :param x: float16, bfloat16 or "
                     f"float32 scalar.\n    :returns: the same dtype, computed in double and rounded once.\n")
    f = api(name)(front)
    f.ir(lambda p: irv.wrap(irv.call(f"tir.{name}", p.x.node)))

    @f.py
    def _py(p):
        with np.errstate(all="ignore"):
            r = fn(to_f64(p.x.data, p.dtype))
        return sem.value(round_float(r, p.dtype), p.dtype)

    return f


exp = _def("exp")
log = _def("log")
sqrt = _def("sqrt")
rsqrt = _def("rsqrt")
recip = _def("recip")
tanh = _def("tanh")
sigmoid = _def("sigmoid")

__all__ = ["exp", "log", "sqrt", "rsqrt", "recip", "tanh", "sigmoid", "math"]
