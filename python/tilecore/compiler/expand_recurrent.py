"""RNN, GRU and LSTM nodes unrolled over their (static) time steps into MatMul, Add, Mul,
Sigmoid, Tanh, ... so that the steps run on the npu (and the host where they must).

ONNX defines the three ops without a function body. The input projection of every time
step is one MatMul (X [T, B, I] by W^T [I, G*H]); each step then adds the recurrent
projection H_{t-1} R^T, splits the gates and applies the op's equations (docs of the ONNX
operators; the activations, their alpha/beta, ``clip``, ``linear_before_reset``,
``input_forget``, peepholes ``P``, ``initial_h``/``initial_c``, ``layout`` and
``direction``). With ``sequence_lens`` a step past a batch entry's length keeps the state
and writes zeros to Y, which gives ONNX's results for both directions.

A node whose X shape is not static, or that uses an activation not listed in
``_ACTIVATIONS``, is left as it is (the driver then reports it).
"""
from __future__ import annotations

from typing import Any, Callable

RECURRENT_OPS = ("RNN", "GRU", "LSTM")

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
# ONNX activation name -> (op type, attributes from (alpha, beta)); None: built from ops
_ACTIVATIONS = {
    "sigmoid": ("Sigmoid", lambda a, b: {}),
    "tanh": ("Tanh", lambda a, b: {}),
    "relu": ("Relu", lambda a, b: {}),
    "softsign": ("Softsign", lambda a, b: {}),
    "softplus": ("Softplus", lambda a, b: {}),
    "leakyrelu": ("LeakyRelu", lambda a, b: {"alpha": 0.01 if a is None else a}),
    "thresholdedrelu": ("ThresholdedRelu", lambda a, b: {"alpha": 1.0 if a is None else a}),
    "elu": ("Elu", lambda a, b: {"alpha": 1.0 if a is None else a}),
    "hardsigmoid": ("HardSigmoid", lambda a, b: {"alpha": 0.2 if a is None else a, "beta": 0.5 if b is None else b}),
    "affine": (None, None),
    "scaledtanh": (None, None),
}
_TAKES_ALPHA = frozenset({"leakyrelu", "thresholdedrelu", "elu", "hardsigmoid", "affine", "scaledtanh"})
_TAKES_BETA = frozenset({"hardsigmoid", "affine", "scaledtanh"})


class _Builder:
    """Appends nodes and constant initializers under one name prefix."""

    def __init__(self, prefix, dtype):
        self.prefix, self.dtype, self.nodes, self.inits, self.n = prefix, dtype, [], [], 0

    def name(self, hint):
        self.n += 1
        return f"{self.prefix}{hint}_{self.n}"

    def op(self, op_type, inputs, hint=None, outputs=None, **attrs):
        from onnx import helper

        outs = outputs or [self.name(hint or op_type.lower())]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=self.name(op_type), **attrs))
        return outs[0]

    def const(self, values, dtype, hint="c"):
        import numpy as np
        from onnx import numpy_helper

        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(values, dtype=dtype), name))
        return name

    def ints(self, values):
        return self.const(values, "int64", "i")

    def scalar(self, value):
        from onnx import helper

        return self.const(value, helper.tensor_dtype_to_np_dtype(self.dtype), "s")

    def slice(self, x, start, end, axis):
        return self.op("Slice", [x, self.ints([start]), self.ints([end]), self.ints([axis])], "slice")

    def activation(self, x, name, alpha, beta):
        kind = name.lower()
        op, attrs = _ACTIVATIONS[kind]
        if kind == "affine":  # alpha * x + beta
            alpha, beta = (1.0 if alpha is None else alpha), (0.0 if beta is None else beta)
            return self.op("Add", [self.op("Mul", [x, self.scalar(alpha)]), self.scalar(beta)])
        if kind == "scaledtanh":  # alpha * tanh(beta * x)
            alpha, beta = (1.0 if alpha is None else alpha), (1.0 if beta is None else beta)
            return self.op("Mul", [self.op("Tanh", [self.op("Mul", [x, self.scalar(beta)])]), self.scalar(alpha)])
        return self.op(op, [x], **attrs(alpha, beta))


def _attrs(node):
    from onnx import helper

    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, list):
            v = [x.decode() if isinstance(x, bytes) else x for x in v]
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


def _unroll(node, shapes, dtypes, prefix):
    """(nodes, initializers) computing ``node``; None when it cannot be unrolled."""
    import numpy as np

    op = node.op_type
    at = _attrs(node)
    ins = list(node.input) + [""] * (8 - len(node.input))
    x_name, w_name, r_name, b_name, lens_name, h0_name = ins[:6]
    c0_name = ins[6] if op == "LSTM" else ""
    p_name = ins[7] if op == "LSTM" else ""
    xs = shapes.get(x_name)
    if xs is None or len(xs) != 3 or any(not isinstance(d, int) or d <= 0 for d in xs):
        return None
    layout = int(at.get("layout", 0))
    T, B = (xs[0], xs[1]) if layout == 0 else (xs[1], xs[0])
    H = int(at["hidden_size"]) if "hidden_size" in at else None
    if H is None:
        ws = shapes.get(w_name)
        if ws is None:
            return None
        H = ws[1] // _GATES[op]
    direction = at.get("direction", "forward")
    dirs = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}.get(direction)
    if dirs is None:
        return None
    n_act = len(_DEFAULT_ACTS[op])
    acts = list(at.get("activations", [])) or _DEFAULT_ACTS[op] * len(dirs)
    if len(acts) == n_act and len(dirs) == 2:
        acts = acts * 2
    if len(acts) != n_act * len(dirs) or any(a.lower() not in _ACTIVATIONS for a in acts):
        return None
    # alpha and beta are taken in order by the activations that have them (as ONNX Runtime does)
    alphas, betas = list(at.get("activation_alpha", [])), list(at.get("activation_beta", []))
    per_act = ([], [])
    for a in acts:
        kind = a.lower()
        per_act[0].append(alphas.pop(0) if kind in _TAKES_ALPHA and alphas else None)
        per_act[1].append(betas.pop(0) if kind in _TAKES_BETA and betas else None)
    clip = at.get("clip")
    G = _GATES[op]
    b = _Builder(prefix, dtypes.get(x_name, 1))

    x = x_name if layout == 0 else b.op("Transpose", [x_name], perm=[1, 0, 2])  # [T, B, I]
    mask = None
    if lens_name:
        lens = b.op("Cast", [lens_name], to=7)  # int64 [B]
        mask = [b.op("Unsqueeze", [b.op("Less", [b.ints([t]), lens]), b.ints([1])]) for t in range(T)]
    zeros_bh = b.const(np.zeros((B, H)), _np_dtype(b.dtype), "zeros")
    y_dirs, h_last, c_last = [], [], []
    for d, reverse in enumerate(dirs):
        def pick(name, hint):  # row d of a [dirs, ...] input
            return b.op("Gather", [name, b.ints(d)], hint, axis=0)

        w_t = b.op("Transpose", [pick(w_name, "w")], perm=[1, 0])  # [I, G*H]
        r_t = b.op("Transpose", [pick(r_name, "r")], perm=[1, 0])  # [H, G*H]
        xw = b.op("MatMul", [x, w_t], "xw")  # [T, B, G*H]
        rb_h = None
        if b_name:
            bias = pick(b_name, "b")  # [2*G*H]
            wb, rb = b.slice(bias, 0, G * H, 0), b.slice(bias, G * H, 2 * G * H, 0)
            if op == "GRU" and at.get("linear_before_reset", 0):
                # Rb of the h gate stays inside r * (H R_h^T + Rb_h)
                rb_h = b.slice(rb, 2 * H, 3 * H, 0)
                rb = b.op("Concat", [b.slice(rb, 0, 2 * H, 0), b.const(np.zeros(H), _np_dtype(b.dtype))],
                          axis=0)
            xw = b.op("Add", [xw, b.op("Add", [wb, rb])])
        def pick_state(name, hint):  # [dirs, B, H], or [B, dirs, H] with layout 1
            return b.op("Gather", [name, b.ints(d)], hint, axis=layout)

        h = pick_state(h0_name, "h0") if h0_name else zeros_bh
        c = (pick_state(c0_name, "c0") if c0_name else zeros_bh) if op == "LSTM" else None
        peep = None
        if op == "LSTM" and p_name:
            pd = pick(p_name, "p")
            peep = [b.slice(pd, k * H, (k + 1) * H, 0) for k in range(3)]  # i, o, f
        act = acts[d * n_act:(d + 1) * n_act]
        alpha, beta = per_act[0][d * n_act:(d + 1) * n_act], per_act[1][d * n_act:(d + 1) * n_act]

        def f(k, v):
            if clip is not None:
                v = b.op("Clip", [v, b.scalar(-clip), b.scalar(clip)])
            return b.activation(v, act[k], alpha[k], beta[k])

        ys = [None] * T
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            xt = b.op("Gather", [xw, b.ints(t)], "xt", axis=0)  # [B, G*H]
            gate = lambda v, k: b.slice(v, k * H, (k + 1) * H, 1)  # noqa: E731
            if op == "RNN":
                hn = f(0, b.op("Add", [xt, b.op("MatMul", [h, r_t])]))
                cn = None
            elif op == "GRU":
                rz = b.op("Add", [b.slice(xt, 0, 2 * H, 1), b.op("MatMul", [h, b.slice(r_t, 0, 2 * H, 1)])])
                z, r = f(0, gate(rz, 0)), f(0, gate(rz, 1))
                r_h = b.slice(r_t, 2 * H, 3 * H, 1)
                if at.get("linear_before_reset", 0):
                    hr = b.op("MatMul", [h, r_h])
                    if rb_h is not None:
                        hr = b.op("Add", [hr, rb_h])
                    pre = b.op("Add", [gate(xt, 2), b.op("Mul", [r, hr])])
                else:
                    pre = b.op("Add", [gate(xt, 2), b.op("MatMul", [b.op("Mul", [r, h]), r_h])])
                hh = f(1, pre)
                # (1 - z) * hh + z * h = hh + z * (h - hh)
                hn = b.op("Add", [hh, b.op("Mul", [z, b.op("Sub", [h, hh])])])
                cn = None
            else:  # LSTM: gates i, o, f, c
                g = b.op("Add", [xt, b.op("MatMul", [h, r_t])])
                gi, go, gf, gc = (gate(g, k) for k in range(4))
                if peep is not None:
                    gi = b.op("Add", [gi, b.op("Mul", [peep[0], c])])
                    gf = b.op("Add", [gf, b.op("Mul", [peep[2], c])])
                i_ = f(0, gi)
                if at.get("input_forget", 0):
                    fg = b.op("Sub", [b.scalar(1.0), i_])
                else:
                    fg = f(0, gf)
                cn = b.op("Add", [b.op("Mul", [fg, c]), b.op("Mul", [i_, f(1, gc)])])
                if peep is not None:
                    go = b.op("Add", [go, b.op("Mul", [peep[1], cn])])
                o = f(0, go)
                hn = b.op("Mul", [o, b.activation(cn, act[2], alpha[2], beta[2])])
            if mask is not None:
                ys[t] = b.op("Where", [mask[t], hn, zeros_bh])
                hn = b.op("Where", [mask[t], hn, h])
                if cn is not None:
                    cn = b.op("Where", [mask[t], cn, c])
            else:
                ys[t] = hn
            h, c = hn, cn
        y_dirs.append(b.op("Concat", [b.op("Unsqueeze", [y, b.ints([0, 1])]) for y in ys], axis=0))  # [T,1,B,H]
        h_last.append(b.op("Unsqueeze", [h, b.ints([0])]))
        if c is not None:
            c_last.append(b.op("Unsqueeze", [c, b.ints([0])]))
    outs = list(node.output) + [""] * (3 - len(node.output))

    def emit(parts, axis, out):
        if len(parts) == 1:
            return b.op("Identity", parts, outputs=[out])
        return b.op("Concat", parts, outputs=[out], axis=axis)

    if outs[0]:
        if layout == 0:
            emit(y_dirs, 1, outs[0])
        else:  # [B, T, dirs, H]
            y = emit(y_dirs, 1, b.name("y"))
            b.op("Transpose", [y], outputs=[outs[0]], perm=[2, 0, 1, 3])
    for k, parts in ((1, h_last), (2, c_last)):
        if outs[k] and parts:
            if layout == 0:
                emit(parts, 0, outs[k])
            else:  # [B, dirs, H]
                v = emit(parts, 0, b.name("s"))
                b.op("Transpose", [v], outputs=[outs[k]], perm=[1, 0, 2])
    return b.nodes, b.inits


def _np_dtype(elem_type):
    from onnx import helper

    return helper.tensor_dtype_to_np_dtype(elem_type)


def expand_recurrent(graph: Any, unsupported: Callable[[str, str], bool]) -> Any:
    """``graph`` (a typed Graph) with its RNN/GRU/LSTM nodes for which ``unsupported(op_type,
    domain)`` is true unrolled; ``graph`` itself when none is."""
    from onnx import helper

    from .. import transform
    from ..frontend import onnx as fo
    from ..ir.graph import numpy_dtype

    shapes, dtypes, replacements = {}, {}, {}
    for k, node in enumerate(graph.nodes):
        if str(node.op_type) not in RECURRENT_OPS or str(node.domain) != "" or not unsupported(str(node.op_type), ""):
            continue
        for v in node.inputs:
            t = getattr(v, "type", None)
            if v is None or not getattr(t, "dtype", "") or not t.rank_known:
                continue
            shapes[str(v.name)] = [d if isinstance(d, int) else None for d in t.shape]
            try:
                dtypes[str(v.name)] = helper.np_dtype_to_tensor_dtype(numpy_dtype(str(t.dtype)))
            except Exception:  # noqa: BLE001 — not an ONNX element type: not unrolled
                continue
        try:
            proto = fo.onnx_node(node, graph.opsets)
        except Exception:  # noqa: BLE001 — attributes ONNX cannot hold: not unrolled, the driver lowers it as it is
            continue
        done = _unroll(proto, shapes, dtypes, f"{node.name or node.op_type}/unrolled{k}/")
        if done is not None:
            replacements[k] = done
    if not replacements:
        return graph
    return transform.InferTypes({})(fo.replace_nodes(graph, replacements))
