"""tilecore/script/parser.py — a kernel's Python AST -> Kernel IR, with spans on every node.

The parser walks the kernel's statements and evaluates its expressions itself:

- Plain Python (constants, arithmetic on them, lookup tables, helper calls on
  Python values) is evaluated at **compile time**, as Python would.
- Kernel values (parameters, loads, ``S.*`` results, loop variables) are IR: their
  operators and the ``S.*`` APIs run their IR implementations (registry.py), which
  share the front end with PySim.
- ``for ... in range(...)``, ``while`` and ``if`` on kernel values become IR loops and
  branches; over Python values they are unrolled / decided while parsing.
- A name bound once (per iteration) becomes an immutable ``LetStmt`` variable; a
  name that is reassigned inside a loop or branch that runs on the NPU becomes a
  one-element local buffer (the IR has no mutable scalars), typed by its first value.
  ``x: S.int8 = 0`` declares such a variable with an explicit dtype.

The body runs on every core: the function is ``for cid in cores(0, num_cores): body``,
and ``S.get_local_id()`` is ``cid``. Pointer parameters become 1-D buffers of
symbolic extent ``<name>_len``. Every statement's span (file, line, column) is
given to every node built for it; any error is re-raised as a KernelError naming
the kernel's file, line and source text.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import operator
import textwrap
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .. import ir
from ..ir import _ffi_api
from . import frontend as fe
from . import registry
from . import types as T
from .control import static_range, unroll
from .errors import KernelError, located
from .irvalues import IRBuffer, IRPointer, IRValue, cur_span, imm

if TYPE_CHECKING:
    from ..ir.expr import Buffer, PrimExpr
    from ..ir.stmt import PrimFunc, Stmt
    from .values import KernelValue


class MutVar:
    """A name that changes at run time: a one-element (or one-vector) local buffer."""

    __slots__ = ("name", "dtype", "buffer")

    def __init__(self, name: str, dtype: str, buffer: Buffer) -> None:
        self.name = name
        self.dtype = dtype
        self.buffer = buffer


_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
    ast.Pow: operator.pow,
}
_CMPOPS = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq,
    ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_STATIC_WHILE_LIMIT = 100000
_STATIC_UNROLL_LIMIT = 100000


def _is_dsl(x) -> bool:
    return fe.kind(x) in ("value", "pointer", "buffer", "region")


def _assigned_names(stmts):
    """Names assigned anywhere in ``stmts`` (targets of =, +=, annotated =)."""
    names = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    for leaf in ast.walk(t):
                        if isinstance(leaf, ast.Name) and isinstance(leaf.ctx, ast.Store):
                            names.add(leaf.id)
    return names


class _Block:
    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items = []


class KernelSource:
    """The kernel function's source, AST and location."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func
        try:
            lines, first = inspect.getsourcelines(func)
            self.file = inspect.getsourcefile(func) or func.__code__.co_filename
        except (OSError, TypeError) as e:
            raise OSError(f"S.prim_func: cannot read the source of `{func.__name__}` ({e}); kernels must be "
                          "defined in a file") from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        self.indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        self.tree = ast.parse(dedented)
        self.first = first
        self.lines = lines
        fdef = self.tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            raise TypeError(f"S.prim_func: `{func.__name__}` is not a plain function")
        self.fdef = fdef

    def line(self, node: ast.AST) -> int:
        return self.first + node.lineno - 1

    def text(self, node: ast.AST) -> str:
        i = node.lineno - 1
        return self.lines[i].rstrip("\n") if 0 <= i < len(self.lines) else ""

    def short_file(self) -> str:
        return self.file


class Parser:
    """Parses one kernel; the context of mode "ir" (see registry.py)."""

    def __init__(self, source: KernelSource, params: Sequence[Any], num_cores: int, name: str) -> None:
        self.src = source
        self.params = params  # [(name, annotation object)]
        self.num_cores = num_cores
        self.name = name
        self.func = source.func
        self.globals = self.func.__globals__
        self.closure = {}
        if self.func.__closure__:
            for n, cell in zip(self.func.__code__.co_freevars, self.func.__closure__):
                try:
                    self.closure[n] = cell.cell_contents
                except ValueError:
                    pass
        self.vars = {}
        self.scoped_out = {}
        self.blocks = [_Block()]
        self.hoisted = []
        self.span = None
        self.core_var = None
        self.names = {}
        self.cur_node = None

    # -- context protocol used by the IR implementations -------------------------
    def emit(self, stmt_or_expr: Stmt | PrimExpr) -> None:
        if stmt_or_expr is None:
            return
        if isinstance(stmt_or_expr, ir.PrimExpr):
            stmt_or_expr = _ffi_api.Evaluate(stmt_or_expr, self.span)
        self.blocks[-1].items.append(stmt_or_expr)

    def allocate(self, buf: Buffer) -> None:
        self.blocks[-1].items.append(("alloc", buf, self.span))

    def fresh_name(self, prefix: str) -> str:
        n = self.names.get(prefix, 0)
        self.names[prefix] = n + 1
        return prefix if n == 0 else f"{prefix}_{n}"

    # -- blocks --------------------------------------------------------------------
    def _push(self) -> None:
        self.blocks.append(_Block())

    def _pop(self):
        return self._seal(self.blocks.pop().items)

    def _seal(self, items):
        rest = []
        for item in reversed(items):
            if isinstance(item, tuple):
                inner = _ffi_api.SeqStmtFlatten(list(reversed(rest))) if rest else \
                    _ffi_api.Evaluate(imm(0, "int32"), item[-1])
                if item[0] == "let":
                    _, v, value, span = item
                    body = _ffi_api.LetStmt(v, value, inner, span)
                else:
                    _, buf, span = item
                    body = _ffi_api.Allocate(buf, inner, span)
                rest = [body]
            else:
                rest.append(item)
        if not rest:
            return _ffi_api.Evaluate(imm(0, "int32"), self.span)
        return _ffi_api.SeqStmtFlatten(list(reversed(rest)))

    # -- entry -------------------------------------------------------------------------
    def parse(self) -> PrimFunc:
        with registry.mode("ir", self):
            return self._parse()

    def _parse(self):
        fdef = self.src.fdef
        self.span = self._span(fdef)
        params, buffer_map = [], {}
        for name, ann in self.params:
            if isinstance(ann, T.PointerType):
                length = _ffi_api.Var(f"{name}_len", "int32", self.span)
                data = _ffi_api.Var(name, ir.pointer_type(ann.dtype, ann.scope, self.span), self.span)
                buf = _ffi_api.Buffer(data, ann.dtype, [length], [], imm(0, "int32"), ann.scope, name,
                                      self.span)
                params.append(data)
                buffer_map[data] = buf
                self.vars[name] = IRPointer(buf, 0)
            else:
                v = _ffi_api.Var(name, ann.name, self.span)
                params.append(v)
                self.vars[name] = IRValue(v)
        self.core_var = _ffi_api.Var("cid", "int32", self.span)
        if True:
            body_stmts = fdef.body
            if body_stmts and isinstance(body_stmts[0], ast.Expr) and isinstance(body_stmts[0].value, ast.Constant) \
                    and isinstance(body_stmts[0].value.value, str):
                body_stmts = body_stmts[1:]
            self._push()
            self.stmts(body_stmts, top=True)
            inner = self._pop()
            self.span = self._span(fdef)
            for buf in reversed(self.hoisted):
                inner = _ffi_api.Allocate(buf, inner, buf.span)
            body = _ffi_api.For(self.core_var, imm(0, "int32"),
                                imm(self.num_cores, "int32"), "cores", inner, None, self.span)
        attrs = {"global_symbol": self.name, "num_cores": self.num_cores}
        return _ffi_api.PrimFunc(params, body, buffer_map, attrs, self._span(fdef))

    def _span(self, node):
        return ir.span(self.src.file, self.src.line(node), getattr(node, "col_offset", 0) + 1 + self.src.indent)

    # -- statements ---------------------------------------------------------------------
    def stmts(self, stmts: Sequence[ast.stmt], top: bool = False) -> None:
        for i, s in enumerate(stmts):
            if top and isinstance(s, ast.Return) and i == len(stmts) - 1 and s.value is None:
                continue
            self.stmt(s)

    def _fail(self, node, exc):
        if isinstance(exc, KernelError):
            return exc
        return located(exc, self.src.short_file(), self.src.line(node), self.src.text(node))

    def stmt(self, node: ast.stmt) -> None:
        old = self.span, self.cur_node
        self.span = self._span(node)
        self.cur_node = node
        try:
            method = getattr(self, "s_" + type(node).__name__, None)
            if method is None:
                raise SyntaxError(f"`{type(node).__name__}` statements are not supported in kernels")
            method(node)
        except KernelError:
            raise
        except Exception as e:  # noqa: BLE001  (every error gets the kernel's line)
            raise self._fail(node, e) from e
        finally:
            self.span, self.cur_node = old

    def s_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant):
            return
        v = self.ev(node.value)
        if isinstance(v, IRValue):
            self.emit(_ffi_api.Evaluate(v.node, self.span))

    def s_Pass(self, node: ast.Pass) -> None:
        pass

    def s_Assign(self, node: ast.Assign) -> None:
        value = self.ev(node.value)
        for t in node.targets:
            self.assign(t, value)

    def s_AugAssign(self, node: ast.AugAssign) -> None:
        op = _BINOPS[type(node.op)]
        t = node.target
        if isinstance(t, ast.Name):
            self.bind(t.id, op(self.lookup(t.id, t), self.ev(node.value)))
        elif isinstance(t, ast.Subscript):
            obj, idx = self.ev(t.value), self.ev_index(t.slice)
            obj[idx] = op(obj[idx], self.ev(node.value))
        else:
            raise SyntaxError("augmented assignment to this target is not supported")

    def s_AnnAssign(self, node: ast.AnnAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise SyntaxError("annotated assignment needs a plain name")
        ann = self.ev(node.annotation)
        dtype = T.dtype_name(ann)
        name = node.target.id
        fe.require(name not in self.vars or not isinstance(self.vars[name], MutVar),
                   f"`{name}` is already declared")
        mv = self._new_mutvar(name, dtype)
        self.vars[name] = mv
        if node.value is not None:
            self.store_mut(mv, self.ev(node.value))

    def s_Return(self, node: ast.Return) -> None:
        raise SyntaxError("kernels return nothing; `return` is allowed only as the last statement, without a value")

    def s_Break(self, node: ast.Break) -> None:
        raise SyntaxError("`break` is not supported in kernels (use a while loop with a condition)")

    def s_Continue(self, node: ast.Continue) -> None:
        raise SyntaxError("`continue` is not supported in kernels (use if)")

    def s_Assert(self, node: ast.Assert) -> None:
        test = self.ev(node.test)
        fe.require(not _is_dsl(test), "assert: only compile-time conditions can be asserted in kernels")
        if not test:
            msg = self.ev(node.msg) if node.msg is not None else "assertion failed"
            raise AssertionError(msg)

    def s_If(self, node: ast.If) -> None:
        cond = self.ev(node.test)
        if not _is_dsl(cond):
            self.stmts(node.body if cond else node.orelse)
            return
        cond = fe.condition("if", cond)
        self._promote(_assigned_names(node.body + node.orelse), "an if")
        span = self.span
        then = self._scoped(node.body)
        other = self._scoped(node.orelse) if node.orelse else None
        self.emit(_ffi_api.IfThenElse(cond.node, then, other, span))

    def s_While(self, node: ast.While) -> None:
        if node.orelse:
            raise SyntaxError("`while ... else` is not supported in kernels")
        self._promote(_assigned_names(node.body), "a while loop")
        cond = self.ev(node.test)
        if not _is_dsl(cond):
            n = 0
            while cond:
                n += 1
                if n > _STATIC_WHILE_LIMIT:
                    raise RuntimeError(f"a compile-time while loop ran more than {_STATIC_WHILE_LIMIT} times")
                self.stmts(node.body)
                cond = self.ev(node.test)
            return
        cond = fe.condition("while", cond)
        span = self.span
        body = self._scoped(node.body)
        self.emit(_ffi_api.While(cond.node, body, span))

    def s_For(self, node: ast.For) -> None:
        if node.orelse:
            raise SyntaxError("`for ... else` is not supported in kernels")
        it = node.iter
        kind = None
        if isinstance(it, ast.Call):
            f = self.ev(it.func)
            if f is builtins.range:
                kind = "serial"
            elif f is unroll:
                kind = "unrolled"
            elif f is static_range:
                kind = None
        if kind is None:
            seq = self.ev(it)
            fe.require(not _is_dsl(seq), "for: cannot iterate over a kernel value (use range)")
            if hasattr(seq, "__len__") and len(seq) > _STATIC_UNROLL_LIMIT:
                raise RuntimeError(f"a compile-time for loop (S.static_range or a Python sequence) would unroll "
                                   f"{len(seq)} iterations, more than the limit of {_STATIC_UNROLL_LIMIT}; "
                                   "use range() for a loop that runs on the NPU")
            for n, item in enumerate(seq):
                if n >= _STATIC_UNROLL_LIMIT:
                    raise RuntimeError(f"a compile-time for loop unrolled more than {_STATIC_UNROLL_LIMIT} "
                                       "iterations; use range() for a loop that runs on the NPU")
                self.assign(node.target, item)
                self.stmts(node.body)
            return
        fe.require(isinstance(node.target, ast.Name), "for: the loop variable must be a plain name")
        fe.require(not it.keywords, "range: takes no keyword arguments")
        args = [self.ev(a) for a in it.args]
        fe.require(1 <= len(args) <= 3, f"range: expected 1 to 3 arguments, got {len(args)}")
        start, stop = (0, args[0]) if len(args) == 1 else (args[0], args[1])
        step = fe.const_int("range", "step", args[2], lo=1) if len(args) == 3 else 1
        for b in (start, stop):
            fe.require(fe.kind(b) == "literal" or (fe.kind(b) == "value" and b.dtype == "int32"),
                       f"range: bounds must be int32 scalars or literals, got {fe.describe(b)}")
        from .irvalues import index, node as mk

        self._promote(_assigned_names(node.body), "a loop")
        span = self.span
        if fe.kind(start) == "literal" and fe.kind(stop) == "literal":
            extent = max(0, -(-(int(stop) - int(start)) // step))
            extent_e = imm(extent, "int32")
        else:
            diff = mk("Sub", index(stop), index(start))
            if step != 1:
                diff = mk("FloorDiv", mk("Add", diff, index(step - 1)), index(step))
            extent_e = diff
        name = node.target.id
        if step == 1:
            v = _ffi_api.Var(name, "int32", span)
            loop_min = index(start)
            loop_value = IRValue(v)
        else:
            v = _ffi_api.Var(f"{name}_iter", "int32", span)
            loop_min = imm(0, "int32")
            loop_value = None
        saved = dict(self.vars)
        self._push()
        if loop_value is None:
            lv = _ffi_api.Var(name, "int32", span)
            self.blocks[-1].items.append(("let", lv, mk("Add", index(start), mk("Mul", v, index(step))), span))
            loop_value = IRValue(lv)
        self.vars[name] = loop_value
        self.stmts(node.body)
        body = self._pop()
        self._restore(saved)
        self.emit(_ffi_api.For(v, loop_min, extent_e, kind, body, None, span))

    def s_FunctionDef(self, node: ast.FunctionDef) -> None:
        raise SyntaxError("nested function definitions are not supported in kernels (define helpers outside)")

    # -- scoping and variables --------------------------------------------------------
    def _scoped(self, stmts):
        saved = dict(self.vars)
        self._push()
        self.stmts(stmts)
        body = self._pop()
        self._restore(saved)
        return body

    def _restore(self, saved) -> None:
        for n in list(self.vars):
            if n not in saved:
                del self.vars[n]
                self.scoped_out[n] = self.src.line(self.cur_node) if self.cur_node is not None else 0
            elif self.vars[n] is not saved[n]:
                self.vars[n] = saved[n]

    def _new_mutvar(self, name, dtype):
        elem, lanes = T.split(dtype)
        buf = _ffi_api.DeclBuffer([imm(lanes, "int32")], elem, self.fresh_name(name), "local", self.span)
        self.hoisted.append(buf)
        return MutVar(name, dtype, buf)

    def _promote(self, names, where):
        for n in sorted(names):
            if n not in self.vars or isinstance(self.vars[n], MutVar):
                continue
            v = self.vars[n]
            if fe.kind(v) == "value":
                dtype = v.dtype
            elif fe.kind(v) == "literal":
                lv = fe.literal_value(v)
                dtype = "bool" if isinstance(lv, bool) else "int32" if isinstance(lv, int) else "float32"
            else:
                raise TypeError(f"`{n}` ({fe.describe(v)}) is reassigned inside {where} that runs on the NPU; "
                                "only numbers and kernel values can change at run time")
            mv = self._new_mutvar(n, dtype)
            self.store_mut(mv, v)
            self.vars[n] = mv

    def store_mut(self, mv: MutVar, value: KernelValue) -> None:
        k = fe.kind(value)
        if k == "literal":
            value = fe.check_literal(f"assignment to `{mv.name}`", value, T.split(mv.dtype)[0])
            from .irvalues import const

            node = const(value, mv.dtype)
        else:
            fe.require(k == "value", f"`{mv.name}` holds {mv.dtype} values; cannot assign {fe.describe(value)}")
            fe.require(value.dtype == mv.dtype, f"`{mv.name}` holds {mv.dtype} values (its first value); cannot "
                                                f"assign a {value.dtype} value (use S.cast)")
            node = value.node
        self.emit(_ffi_api.BufferStore(mv.buffer, node, [self._mut_index(mv)], None, self.span))

    def _mut_index(self, mv):
        lanes = T.split(mv.dtype)[1]
        if lanes == 1:
            return imm(0, "int32")
        return _ffi_api.Ramp(imm(0, "int32"), imm(1, "int32"), lanes, self.span)

    def bind(self, name: str, value: Any) -> None:
        cur = self.vars.get(name)
        if isinstance(cur, MutVar):
            self.store_mut(cur, value)
            return
        if isinstance(value, IRValue):
            n = value.node
            if not isinstance(n, (ir.Var, ir.IntImm, ir.FloatImm)):
                v = _ffi_api.Var(name, value.dtype, self.span)
                self.blocks[-1].items.append(("let", v, n, self.span))
                value = IRValue(v)
        self.vars[name] = value

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            fe.require(not _is_dsl(value), "cannot unpack a kernel value")
            items = list(value)
            fe.require(len(items) == len(target.elts), f"cannot unpack {len(items)} values into {len(target.elts)}")
            for t, v in zip(target.elts, items):
                self.assign(t, v)
        elif isinstance(target, ast.Subscript):
            obj = self.ev(target.value)
            obj[self.ev_index(target.slice)] = value
        else:
            raise SyntaxError("this assignment target is not supported in kernels")

    def lookup(self, name: str, node: ast.AST) -> Any:
        if name in self.vars:
            v = self.vars[name]
            if isinstance(v, MutVar):
                from ..ir import _ffi_api as f

                return IRValue(f.BufferLoad(v.buffer, [self._mut_index(v)], self.span))
            return v
        if name in self.scoped_out:
            raise NameError(f"`{name}` is only assigned inside a loop or if that runs on the NPU; assign it "
                            f"before that block (e.g. `{name} = 0`) to use it afterwards")
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise NameError(f"name `{name}` is not defined")

    # -- expressions ----------------------------------------------------------------------
    def ev_index(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Slice):
            return slice(None if node.lower is None else self.ev(node.lower),
                         None if node.upper is None else self.ev(node.upper),
                         None if node.step is None else self.ev(node.step))
        if isinstance(node, ast.Tuple):
            return tuple(self.ev_index(e) for e in node.elts)
        return self.ev(node)

    def ev(self, node: ast.expr) -> Any:
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            return self._fallback(node)
        return method(node)

    def _fallback(self, node):
        """Evaluates an expression the parser does not handle itself with Python's eval."""
        ns = dict(self.globals)
        ns.update(self.closure)
        for n in self.vars:
            ns[n] = self.lookup(n, node)
        code = compile(ast.Expression(body=node), self.src.file, "eval")
        return eval(code, ns)  # noqa: S307  (the kernel's own source)

    def e_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def e_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id, node)

    def e_Attribute(self, node: ast.Attribute) -> Any:
        return getattr(self.ev(node.value), node.attr)

    def e_Subscript(self, node: ast.Subscript) -> Any:
        return self.ev(node.value)[self.ev_index(node.slice)]

    def e_BinOp(self, node: ast.BinOp) -> Any:
        return _BINOPS[type(node.op)](self.ev(node.left), self.ev(node.right))

    def e_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.ev(node.operand)
        if isinstance(node.op, ast.Not):
            return registry.get("logical_not")(v) if _is_dsl(v) else (not v)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
        return ~v

    def e_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        result = self.ev(node.values[0])
        for vnode in node.values[1:]:
            if not _is_dsl(result):
                if is_and and not result or not is_and and result:
                    return result
                result = self.ev(vnode)
                continue
            other = self.ev(vnode)
            result = registry.get("logical_and" if is_and else "logical_or")(result, other)
        return result

    def e_Compare(self, node: ast.Compare) -> Any:
        left = self.ev(node.left)
        result = None
        for op, rnode in zip(node.ops, node.comparators):
            right = self.ev(rnode)
            r = _CMPOPS[type(op)](left, right)
            if result is None:
                result = r
            elif _is_dsl(result) or _is_dsl(r):
                result = registry.get("logical_and")(result, r)
            else:
                result = result and r
            left = right
        return result

    def e_IfExp(self, node: ast.IfExp) -> Any:
        c = self.ev(node.test)
        if not _is_dsl(c):
            return self.ev(node.body if c else node.orelse)
        return registry.get("select")(c, self.ev(node.body), self.ev(node.orelse))

    def e_Call(self, node: ast.Call) -> Any:
        f = self.ev(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.ev(a.value))
            else:
                args.append(self.ev(a))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.ev(kw.value))
            else:
                kwargs[kw.arg] = self.ev(kw.value)
        if f in (builtins.range, unroll):
            raise SyntaxError("range() is only supported as the iterable of a for loop in kernels")
        if f in (builtins.min, builtins.max) and any(_is_dsl(a) for a in args) and not kwargs:
            api = registry.get("min" if f is builtins.min else "max")
            items = list(args[0]) if len(args) == 1 else args
            acc = items[0]
            for x in items[1:]:
                acc = api(acc, x)
            return acc
        if f is builtins.print:
            raise SyntaxError("print() does not run on the NPU; use S.printf(fmt, *values)")
        from .kernel import Kernel

        if isinstance(f, Kernel):
            raise SyntaxError(f"kernels cannot call kernels (a call of `{f.name}` inside a kernel; recursion "
                              "and nested launches are not supported)")
        return f(*args, **kwargs)

    def e_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.ev(e) for e in node.elts)

    def e_List(self, node: ast.List) -> list:
        return [self.ev(e) for e in node.elts]

    def e_Dict(self, node: ast.Dict) -> dict:
        return {self.ev(k): self.ev(v) for k, v in zip(node.keys, node.values)}


def _simplify(e):
    from .api.memory import _simplify as s

    return s(e)


def parse(func: Callable[..., Any], params: Sequence[Any], num_cores: int, name: str) -> PrimFunc:
    """Parses kernel function ``func`` into a PrimFunc (see the module docstring)."""
    src = KernelSource(func)
    return Parser(src, params, num_cores, name).parse()


__all__ = ["parse", "Parser", "KernelSource", "cur_span", "IRBuffer"]
