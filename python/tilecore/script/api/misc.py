"""tilecore/script/api/misc.py — typed constants and printf.

``S.printf`` prints from PySim, prefixed with the core (``[core 1] ...``). Compiled
kernels print too: the call becomes ``tir.call_packed("tilecore.printf:<format>", core,
values...)``, which the runtime services on the host (npu: ``hcall``; c: a direct call).
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

import numpy as np

from .. import frontend as fe
from .. import irvalues as irv
from .. import types as T
from ..numerics import scalar_to_storage, to_f64
from ..pysim import semantics as sem
from ..registry import api

if TYPE_CHECKING:
    from ..frontend import Plan
    from ..types import DSLType
    from ..values import KernelValue


@api("const")
def const(value: KernelValue, dtype: str | DSLType) -> Plan:
    """A typed scalar constant: ``S.const(3, "int8")``, also written ``S.int8(3)``.
    Literals are converted with TC1's rules (float to int rounds to nearest even and
    saturates); a kernel value is converted like ``S.cast``."""
    d = T.dtype_name(dtype)
    fe.require(T.split(d)[1] == 1, f"const: {d} is not a scalar dtype (vector types broadcast: S.{d}(x))")
    if fe.kind(value) == "value":
        from .vector import cast

        return fe.Plan(value=value, dtype=d, cast=cast)
    fe.require(fe.kind(value) == "literal", f"const: expected a number, got {fe.describe(value)}")
    stored = scalar_to_storage(fe.literal_value(value), d)
    return fe.Plan(value=stored, dtype=d, cast=None)


def _python_number(stored, dtype):
    if dtype == "bool":
        return bool(stored)
    if dtype == "bfloat16":
        return float(to_f64(np.array([stored], np.uint16), "bfloat16")[0])
    return float(stored) if T.is_float(dtype) else int(stored)


@const.ir
def _const_ir(p):
    if p.cast is not None:
        return p.cast(p.value, p.dtype)
    return irv.wrap(irv.const(_python_number(p.value, p.dtype), p.dtype))


@const.py
def _const_py(p):
    if p.cast is not None:
        return p.cast(p.value, p.dtype)
    return sem.value(np.array([p.value]), p.dtype)


def _fmt_value(v):
    if fe.kind(v) == "value":
        return v.item() if T.split(v.dtype)[1] == 1 else v.values()
    return v


@api("printf")
def printf(fmt: str, *args: KernelValue) -> Plan:
    """Prints ``fmt % args`` (C-style ``%d %u %x %f %s``), prefixed with the core id, from
    PySim and from compiled kernels (one line each). Vectors print as lists in PySim and
    as their type in compiled code."""
    fe.require(isinstance(fmt, str), f"printf: the format must be a string, got {fe.describe(fmt)}")
    for a in args:
        fe.require(fe.kind(a) in ("value", "literal", "python"), f"printf: cannot print {fe.describe(a)}")
    return fe.Plan(fmt=fmt, args=args)


# The host-call name of a compiled printf: PRINTF_PREFIX + the format with every character
# that is not printable ASCII, `"`, `\\` or `~` written as ~XX (hex). The runtime decodes it.
PRINTF_PREFIX = "tilecore.printf:"
_SPEC = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?[diouxXeEfFgGcs%]")


def _printf_name(fmt):
    out = []
    for ch in fmt:
        if 32 <= ord(ch) < 127 and ch not in '"\\~':
            out.append(ch)
        else:
            out.extend(f"~{b:02X}" for b in ch.encode())
    return PRINTF_PREFIX + "".join(out)


@printf.ir
def _printf_ir(p) -> None:
    # Literals are formatted now; kernel values travel to the host. A vector prints as
    # its type (its lanes print in PySim only).
    from .. import registry

    fmt, values, args = "[core %d] ", [registry.context().core_var], list(p.args)
    pos = 0
    for m in _SPEC.finditer(p.fmt):
        fmt += p.fmt[pos:m.start()].replace("%", "%%")
        pos = m.end()
        spec = m.group(0)
        if spec == "%%" or not args:
            fmt += spec
            continue
        a = args.pop(0)
        if fe.kind(a) != "value":
            fmt += (spec.replace("%u", "%d") % _fmt_value(a)).replace("%", "%%")
        elif T.split(a.dtype)[1] != 1:
            fmt += f"<{a.dtype}>".replace("%", "%%")
        else:
            fmt += spec
            values.append(a.node)
    fmt += p.fmt[pos:].replace("%", "%%")
    name = _printf_name(fmt)
    fe.require(len(name) <= 255, f"printf: the format is too long for compiled code ({len(name)} bytes with its "
               "prefix; at most 255)", ValueError)
    irv.emit(irv.call("tir.call_packed", irv.node("StringImm", name), *values))


@printf.py
def _printf_py(p) -> None:
    from .. import registry

    core = registry.context()
    text = p.fmt.replace("%u", "%d") % tuple(_fmt_value(a) for a in p.args) if p.args else p.fmt
    core.output(f"[core {core.core}] {text}")
    sys.stdout.flush()


@api("call_packed")
def call_packed(name: str, *args: KernelValue) -> Plan:
    """Calls the registered global function ``name`` on the host (IR ``tir.call_packed``).

    :param name: a string literal: the name given to ``tilecore.register_func``.
    :param args: regions or whole buffers (of any memory scope, at most 4-D), passed as
        NDArray views of their memory, which the function may read and write; and
        scalars (literals or int/float kernel values), passed as int or float.

    The call is synchronous: tile commands and DMA issued before it have completed
    when the function runs, and its writes are visible to what follows. An exception
    raised by the function fails the kernel call with that exception. On the c target
    it is a direct call through the global registry; on npu, ``fence`` then ``hcall``,
    serviced by the simulator's host (tensors copied out and back); in PySim, a
    Python call.
    """
    fe.require(isinstance(name, str) and name != "", f"call_packed: `name` must be a string literal, got {name!r}")
    items = []
    for i, x in enumerate(args):
        k = fe.kind(x)
        if k in ("region", "buffer"):
            fe.require(len(x.shape) <= 4, f"call_packed: argument {i + 1} has more than 4 dimensions")
            items.append(("tensor", x))
        elif k == "literal":
            items.append(("float" if isinstance(fe.literal_value(x), float) else "int", fe.literal_value(x)))
        elif k == "value":
            fe.value_dtype("call_packed", f"argument {i + 1}", x, vector=False)
            items.append(("value", x))
        else:
            raise TypeError(f"call_packed: argument {i + 1} must be a region, a buffer or a scalar, got "
                            f"{fe.describe(x)}")
    return fe.Plan(name=name, items=items)


@call_packed.ir
def _call_packed_ir(p) -> None:
    from .operands import ir_region

    nodes = [irv.node("StringImm", p.name)]
    for kind, x in p.items:
        if kind == "tensor":
            nodes.append(ir_region(x))
        elif kind == "value":
            nodes.append(x.node)
        else:
            nodes.append(irv.const(x, "float32" if kind == "float" else "int32"))
    irv.emit(irv.call("tir.call_packed", *nodes))


@call_packed.py
def _call_packed_py(p):
    import tilecore

    from .operands import py_view

    f = tilecore.get_global_func(p.name, allow_missing=True)
    if f is None:
        raise ValueError(f"call_packed: no global function `{p.name}` is registered "
                         "(register it with tilecore.register_func)")
    values = []
    for kind, x in p.items:
        if kind == "tensor":
            values.append(tilecore.nd.from_dlpack(py_view("call_packed", x)))
        elif kind == "value":
            values.append(x.item())
        else:
            values.append(x)
    f(*values)
