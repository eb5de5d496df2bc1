"""tilecore/compiler/shared_quantise.py — one quantisation for an activation several int8
matrix ops read (docs/precision.md, "One quantisation for several readers").

An int8 MatMul, Gemm or Conv quantises its f32 data input on load. When two or more of
them read the same value with the same scale and zero point (a transformer's query, key
and value projections of one input), the value is quantised once instead: a
QuantizeLinear node on the npu writes it in int8 with the readers' own steps
(``tc_load_scale``: ``x * f32(1 / scale) + zero_point``, converted), and the readers
load those bytes as they are: the same bits they made on load — a quarter of the f32
bytes, read once from the DDR and, inside a layer group, three times from L2.

When the value is a LayerNormalization's or RMSNormalization's (a transformer's first FFN
reads one), the norm writes the int8 bytes itself as a second output (``tc_q_scale``,
``tc_q_zero_point``), one reader or several: the quantisation costs no step of its own and
the reader loads int8 instead of quantising on load. When nothing then reads the norm's f32
Y, the int8 copy is its only output (``tc_q_alone``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .precision import INT8_OPS, ConstantValue


class _Value:
    """An intermediate the driver adds (what it reads of a graph value: name, data)."""

    __slots__ = ("data", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.data = None


NORMS = ("LayerNormalization", "RMSNormalization")


def _view_roots(nodes: list[Any]) -> dict[str, str]:
    """Each view's output -> the value whose bytes it reads, through chains of views."""
    root = {}
    for nd in nodes:
        if nd.where == "view" and nd.ins and nd.ins[0] is not None:
            src = str(nd.ins[0].name)
            root[str(nd.outs[0].name)] = root.get(src, src)
    return root


def share(nodes: list[Any], info: dict[str, tuple], make_node: Callable[..., Any], HasStrategy: Callable[..., str],
          TensorSpec: Callable[..., Any], lowers: Callable[[Any], bool] | None = None) -> list[str]:
    """Inserts the QuantizeLinear nodes in place (``nodes``, ``info``); returns the values
    now quantised once. ``make_node(name, op, ins, outs, attrs)`` makes a driver node;
    ``lowers(node)``, when given, says whether a node lowers on the npu: a norm producing
    the value then quantises it as its second output when it lowers so."""
    from .fuse_epilogue import value_producers, value_readers

    producer = value_producers(nodes)

    # readers of one value's bytes in one shape: a view (FoldMatMulBias's Reshape to 2-D,
    # one per MatMul) reads its input's bytes
    root = _view_roots(nodes)
    groups = {}  # (root value, shape) -> [(reader, its input value)]
    for name, rs in value_readers(nodes).items():
        if name not in info or info[name][1] != "float32":
            continue
        for r, i in rs:
            if (i == 0 and r.where == "npu" and r.op in INT8_OPS and r.attrs.get("tc_precision") == "int8"
                    and r.attrs.get("tc_x_scale") and not r.attrs.get("tc_b_scale")):
                groups.setdefault((root.get(name, name), info[name][0]), []).append((r, r.ins[0]))
    used = set(info)
    done, insert = [], {}  # id(first reader) -> the QuantizeLinear node before it
    position = {id(nd): k for k, nd in enumerate(nodes)}
    for (name, _), pairs in groups.items():
        data = [r for r, _ in pairs]
        norm = producer.get(name)
        if not (lowers and norm is not None and norm.where == "npu" and norm.op in NORMS
                and len(norm.outs) == 1 and "tc_q_scale" not in norm.attrs):
            norm = None
        if len(data) < 2 and norm is None:
            continue
        first = min(data, key=lambda r: position[id(r)])
        src = next(v for r, v in pairs if r is first)
        params = {(float(r.attrs["tc_x_scale"]), int(r.attrs.get("tc_x_zero_point", 0))) for r in data}
        if len(params) != 1:
            continue
        (scale, zero_point), = params
        base, k = f"{name}/int8", 1
        while base in used:
            k += 1
            base = f"{name}/int8_{k}"
        used.update((base, base + "/scale", base + "/zero_point"))
        q = _Value(base)
        info[base] = (info[str(src.name)][0], "int8")
        s = ConstantValue(base + "/scale", np.array(np.float32(scale)))
        z = ConstantValue(base + "/zero_point", np.array(zero_point, np.int8))
        info[s.name], info[z.name] = ((), "float32"), ((), "int8")
        # the readers' own steps (tc_load_scale: x * f32(1 / scale) + zero point,
        # converted), so they read the bits they made on load; the scale and zero point
        # inputs say the same for a reader of the graph
        ins = [src, s, z]
        quant = make_node(base, "QuantizeLinear", ins, [q],
                          {"tc_load_scale": scale, "tc_load_zero_point": zero_point})
        quant.in_specs = [TensorSpec(*info[str(v.name)]) for v in ins]
        new_specs = [[TensorSpec(*info[base])] + list(r.in_specs[1:]) for r in data]
        if any(HasStrategy(r.op, r.attrs, spec) for r, spec in zip(data, new_specs)):
            continue
        folded = None
        if norm is not None:  # the norm's second output, when it lowers so
            folded = make_node(norm.name, norm.op, norm.ins, list(norm.outs) + [q],
                               {**norm.attrs, "tc_q_scale": scale, "tc_q_zero_point": zero_point})
            folded.in_specs = norm.in_specs
            if not lowers(folded):
                folded = None
        if folded is None and (len(data) < 2 or HasStrategy(quant.op, quant.attrs, quant.in_specs)):
            continue
        for r, spec in zip(data, new_specs):
            r.ins = [q] + list(r.ins[1:])
            r.in_specs = spec
        if folded is not None:
            norm.outs, norm.attrs = folded.outs, folded.attrs
        else:
            insert.setdefault(id(first), []).append(quant)
        done.append(name)
    if insert:
        order = []
        for nd in nodes:
            order.extend(insert.get(id(nd), []))
            order.append(nd)
        nodes[:] = order
    return done


def copy_inputs(nodes: list[Any], info: dict[str, tuple], TensorSpec: Callable[..., Any],
                lowers: Callable[[Any], bool]) -> list[str]:
    """Each QuantizeLinear ``share`` inserted whose f32 input (or the value that input views)
    other npu nodes read as well (a transformer's residual, read again by the norm after the
    attention) writes that input a second time, as it loaded it (``tc_copy_input``: the
    output ``<value>/copy``), and those nodes read the copy: inside a layer group it is in
    L2, so the value crosses the DDR once. Done when the QuantizeLinear and every such
    reader still lower (``lowers``); returns the values copied."""
    from .fuse_epilogue import value_producers, value_readers

    producer, readers, roots = value_producers(nodes), value_readers(nodes), _view_roots(nodes)
    done = []
    for ql in nodes:
        if (ql.where != "npu" or ql.op != "QuantizeLinear" or "tc_load_scale" not in ql.attrs
                or len(ql.outs) != 1 or ql.ins[0] is None):
            continue
        root = roots.get(str(ql.ins[0].name), str(ql.ins[0].name))  # (FoldMatMulBias's Reshape)
        others = [(r, i) for r, i in readers.get(root, []) if r.where == "npu" and r is not ql]
        if not others or root in producer and producer[root].where == "npu":
            continue  # (a value an npu node makes: a layer group has it in L2 already)
        name, k = f"{root}/copy", 1
        while name in info:
            k += 1
            name = f"{root}/copy_{k}"
        info[name] = info[root]
        copy = _Value(name)
        saved = [(r, list(r.ins), list(r.in_specs)) for r, _ in others]
        ql.outs, ql.attrs = [ql.outs[0], copy], {**ql.attrs, "tc_copy_input": 1}
        for r, i in others:
            r.ins[i] = copy
        if lowers(ql) and all(lowers(r) for r, _ in others):
            done.append(root)
            continue
        ql.outs = ql.outs[:1]
        ql.attrs = {a: v for a, v in ql.attrs.items() if a != "tc_copy_input"}
        for r, ins, specs in saved:
            r.ins, r.in_specs = ins, specs
        del info[name]
    return done


def drop_unread_floats(nodes: list[Any], graph_outputs: set[str], lowers: Callable[[Any], bool]) -> list[str]:
    """Each norm that writes its int8 copy (``tc_q_scale``) and whose f32 Y nothing reads (a
    pre-norm transformer's: only the int8 projections read it) keeps the int8 output alone
    (``tc_q_alone``): Y's tiles are not stored. Done when the norm still lowers; returns the
    norms' names."""
    from .fuse_epilogue import value_readers

    readers = value_readers(nodes)

    def read(name: str) -> bool:  # (through views: the projections' Reshapes stay behind)
        return name in graph_outputs or any(
            r.where != "view" or any(read(str(o.name)) for o in r.outs if o is not None)
            for r, _ in readers.get(name, []))

    done = []
    for norm in nodes:
        if (norm.where != "npu" or norm.op not in NORMS or "tc_q_scale" not in norm.attrs
                or norm.attrs.get("tc_q_alone") or len(norm.outs) != 2 or read(str(norm.outs[0].name))):
            continue
        saved = (list(norm.outs), norm.attrs)
        y = str(norm.outs[0].name)
        norm.outs, norm.attrs = [norm.outs[1]], {**norm.attrs, "tc_q_alone": 1}
        if not lowers(norm):
            norm.outs, norm.attrs = saved
            continue
        done.append(norm.name)
        views = [r for r, _ in readers.get(y, [])]  # (views nothing reads: of a value now gone)
        while views:
            v = views.pop()
            v.where, v.reason = "dropped", f"a view of `{y}`, which `{norm.name}` no longer writes"
            views += [r for o in v.outs if o is not None for r, _ in readers.get(str(o.name), [])]
    return done
