"""tilecore/compiler/scaled_weights.py — a squeeze-excite's channel scale on an int8 Conv's
weights instead of its input (docs/compiler.md, "Channel scale on the weights").

An int8 Conv with ``tc_channel_scale`` (FuseEpilogue: the excite's Mul, X * s per input
channel) whose X is stored int8 by its producer (Int8Edges: its code in
``tc_channel_scale.tc_x_scale`` / ``.tc_x_zero_point``) dequantises every loaded patch,
multiplies it by s and quantises it again: four vector passes over X. When the weights are
fewer than X's elements (EfficientNet's early projections: 24 x 144 weights against
144 x 56 x 56 inputs), the product goes onto the weights instead, W x (s * X) = (W * s) x X:
a ``ChannelScaledWeights`` step (strategy_scaled_weights.cc) writes W' = i8(W * s) and its
bias B' for X's zero point per image, and the Conv reads X as its producer stored it.

It applies where s is known to lie in [0, 1] (a Sigmoid's or a HardSigmoid's output, the
excite's gate, through views), so that W * s keeps W's per-channel scale: W' is W rounded
once more, and the activations are not rounded again (the one-node-a-step program quantises
s * X at its calibrated threshold instead). The Conv's bias moves to the units of X's code.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..arch import params as _params
from .precision import ConstantValue, fresh_name
from .shared_quantise import _Value

# ops whose output lies in [0, 1]: the excite's gate
_GATES = ("Sigmoid", "HardSigmoid")
# the vector engine's bytes an element costs: the patch's four f32 passes (widen, less the
# zero point, scale, quantise) against the weights' five (widen, scale, convert, widen, sum)
_PATCH_BYTES, _WEIGHT_BYTES = 16, 20
# the cycles a step of its own costs beyond its passes: a layer group member's start
# (its loads' latency, its commands' pipeline fills, the barrier; 800 to 1,000 cycles
# measured for the smallest weights)
_STEP_CYCLES = 1000
# the cycles of the step's own start and end (its first loads' DDR latency, its stores'
# drain, the barrier) that its layer group hides: a ChannelScaledWeights member took 750 to
# 1,030 fewer cycles than the cost model's estimate of the step alone (timm/regnety_002's
# and EfficientNet-B0's), the least of them here
_GROUP_HIDES = 750
# |B| after the move stays this far inside int32: the zero point's correction is below 2^23
_BIAS_LIMIT = 2 ** 31 - 2 ** 24


def _gate(name: str, producer: dict[str, Any]) -> bool:
    """Whether value ``name`` is a gate in [0, 1]: a Sigmoid's or HardSigmoid's output, the
    activation fused into a matrix op's epilogue, through views."""
    nd = producer.get(name)
    while nd is not None and nd.where == "view" and nd.ins and nd.ins[0] is not None:
        nd = producer.get(str(nd.ins[0].name))
    if nd is None or nd.where != "npu":
        return False
    return nd.op in _GATES or nd.attrs.get("tc_activation") in _GATES and "tc_y_scale" not in nd.attrs


def worth_it(weights: int, inputs: int, cores: int) -> bool:
    """Whether scaling ``weights`` elements once saves more vector-engine cycles than
    scaling the ``inputs`` elements of X it replaces costs, on ``cores`` cores."""
    per_cycle = _params()["vec_bytes_per_cycle"] * cores
    return (_PATCH_BYTES * inputs - _WEIGHT_BYTES * weights) / per_cycle > _STEP_CYCLES


def apply(nodes: list[Any], info: dict[str, tuple], make_node: Callable[..., Any], HasStrategy: Callable[..., str],
          TensorSpec: Callable[..., Any], lowers: Callable[[Any], bool], cores: int,
          cycles: Callable[[Any], int | None] | None = None) -> list[dict[str, Any]]:
    """Rewrites each eligible Conv in place and inserts its ``ChannelScaledWeights`` step
    before it; returns ``[{"node", "step"}]``. A Conv is left as it was when the new step or
    the Conv does not lower (``lowers``), or when the step would cost more than it saves:
    :func:`worth_it` by the vector passes alone, or else, with ``cycles`` (the cost model's
    cycles of a node's kernel, None when it has none) and fewer weights than X's elements,
    when the step (less the start and end its layer group hides, ``_GROUP_HIDES``) and the
    Conv reading X as stored take no fewer cycles than the Conv that scales X (whose plans
    may differ: a Conv that scales its patches has no transposed plan, MobileNetV3-Small's
    first projection of 16 x 16 weights over 16 x 56 x 56 inputs)."""
    from .fuse_epilogue import value_producers

    producer = value_producers(nodes)
    insert, done = {}, []
    for nd in nodes:
        a = nd.attrs
        if (nd.op != "Conv" or nd.where != "npu" or a.get("tc_precision") != "int8" or not a.get("tc_channel_scale")
                or "tc_channel_scale.tc_x_scale" not in a or int(a.get("group", 1)) != 1):
            continue
        w, b = nd.ins[1], nd.ins[2] if len(nd.ins) > 2 else None
        s = nd.ins[len(nd.ins) - (2 if a.get("tc_residual") else 1)]
        if getattr(w, "data", None) is None or b is not None and getattr(b, "data", None) is None or s is None:
            continue
        if not _gate(str(s.name), producer):
            continue
        wq = np.asarray(w.data)
        inputs = int(np.prod(info[str(nd.ins[0].name)][0]))
        if wq.dtype != np.int8:
            continue
        priced = not worth_it(wq.size, inputs, cores)
        if priced and (cycles is None or wq.size >= inputs):
            continue
        before = cycles(nd) if priced else None
        if priced and before is None:
            continue
        m = wq.shape[0]
        # the bias without its zero-point correction, in the units of X's code (the Conv's
        # code is s * X's: W x (q' - zp') = B' - zp' sum W  ~  (x_scale / x_scale') W x (s * (q - zp)))
        scale_q, zp_q = float(a["tc_x_scale"]), int(a.get("tc_x_zero_point", 0))
        scale_x, zp_x = float(a["tc_channel_scale.tc_x_scale"]), int(a.get("tc_channel_scale.tc_x_zero_point", 0))
        old = np.zeros(m, np.int64) if b is None else np.asarray(b.data).astype(np.int64).reshape(-1)
        plain = old + zp_q * wq.astype(np.int64).reshape(m, -1).sum(1)
        bias = np.clip(np.rint(plain * (scale_q / scale_x)), -_BIAS_LIMIT, _BIAS_LIMIT).astype(np.int32)
        base = f"{nd.name or 'Conv'}/scaled_weights"
        bias_in = ConstantValue(fresh_name(base + "/bias", info), bias)
        info[bias_in.name] = ((m,), "int32")  # (held before the next name is made)
        w_out = _Value(fresh_name(base + "/weights", info))
        info[w_out.name] = (tuple(wq.shape), "int8")
        b_out = _Value(fresh_name(base + "/bias_x", info))
        info[b_out.name] = ((m,), "int32")
        step = make_node(base, "ChannelScaledWeights", [w, s, bias_in], [w_out, b_out], {"zero_point": zp_x})
        step.in_specs = [TensorSpec(*info[str(v.name)]) for v in step.ins]
        saved = (list(nd.ins), dict(a), list(nd.in_specs))
        ins = [nd.ins[0], w_out, b_out, nd.ins[3]] + ([nd.ins[-1]] if a.get("tc_residual") else [])
        attrs = {k: v for k, v in a.items() if not k.startswith("tc_channel_scale")}
        attrs["tc_x_scale"] = scale_x
        attrs.pop("tc_x_zero_point", None)
        if zp_x:
            attrs["tc_x_zero_point"] = zp_x
        nd.ins, nd.attrs = ins, attrs
        nd.in_specs = [TensorSpec(*info[str(v.name)]) for v in ins]
        if priced:
            after = [cycles(step), None]
            after[1] = cycles(nd) if after[0] is not None else None
            keep = None not in after and max(0, after[0] - _GROUP_HIDES) + after[1] < before
        else:
            keep = not HasStrategy(step.op, step.attrs, step.in_specs) and lowers(step) and lowers(nd)
        if not keep:
            nd.ins, nd.attrs, nd.in_specs = saved
            for k in (bias_in.name, w_out.name, b_out.name):
                del info[k]
            continue
        insert[id(nd)] = step
        done.append({"node": nd.name, "step": base})
    if insert:
        nodes[:] = [x for nd in nodes for x in ([insert[id(nd)]] if id(nd) in insert else []) + [nd]]
    return done
