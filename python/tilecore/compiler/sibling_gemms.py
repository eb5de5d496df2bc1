"""Sibling int8 Gemms in one (docs/compiler.md, the driver's step 5): Gemms with constant
weights that read the same int8 A (an attention's query, key and value projections)
become one Gemm whose weights are theirs side by side and whose columns go to their
outputs (``tc_split``, ``tc_split_heads``), each in its own layout. The column plan then
streams all their weights in one pass: each core's first mm waits for one piece of
weights, and the last block's epilogue and store end the step, once instead of once per
projection.

Each output keeps its requantisation: its ``x_scale / y_scale`` (the multiplier the
Gemm's epilogue applies with w_scale, rounded to float32 as the Gemm rounds it) is folded
into its columns' w_scale, f32(w_scale * f32(x_scale / y_scale)), which is the product
the unfused Gemm's kernel computes, so the bits are the same. The int32 biases are
already in the units of A times W and are placed side by side as they are.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .precision import ConstantValue, fresh_name

# what a sibling may carry besides the int8 form (the fused Gemm's epilogue has no room for
# a table, a Softmax, a power-of-two scale or the rows-first layout per output)
_OTHER_FORMS = ("tc_lut", "tc_softmax", "tc_out_scale", "tc_y_rows_first", "tc_residual", "tc_activation")


def _eligible(nd: Any, info: dict[str, tuple]) -> bool:
    a = nd.attrs
    return (nd.where == "npu" and nd.op == "Gemm" and a.get("tc_precision") == "int8" and len(nd.ins) == 4
            and len(nd.outs) == 1 and nd.ins[0] is not None and nd.ins[1] is not None and nd.ins[3] is not None
            and getattr(nd.ins[1], "data", None) is not None and getattr(nd.ins[3], "data", None) is not None
            and (nd.ins[2] is None or getattr(nd.ins[2], "data", None) is not None)
            and "tc_y_scale" in a and "tc_x_scale" in a and not any(k.startswith(_OTHER_FORMS) for k in a)
            and info.get(str(nd.ins[0].name), ((), ""))[1] == "int8"  # (the fused one quantises no A)
            and not int(a.get("transA", 0)) and not int(a.get("transB", 0))
            and info.get(str(nd.outs[0].name), ((), ""))[1] == "int8")


def _set_key(nd: Any) -> tuple:
    """What siblings fused into one Gemm share: K, A's scale and zero point, the outputs'
    zero point."""
    a = nd.attrs
    return (nd.ins[1].data.shape[0], a["tc_x_scale"], a.get("tc_x_zero_point", 0), a.get("tc_y_zero_point", 0))


def fuse(nodes: list[Any], info: dict[str, tuple], TensorSpec: Callable[..., Any],
         lowers: Callable[[Any], bool]) -> list[dict[str, Any]]:
    """Fuses each set of sibling int8 Gemms of ``nodes`` (in place: the first takes the
    others' outputs, which are dropped) when ``lowers(node)`` says the fused one has a
    kernel; returns the report entries ``{"node", "fused", "split"}``."""
    by_a: dict[str, list[Any]] = {}
    for nd in nodes:
        if _eligible(nd, info):
            by_a.setdefault(str(nd.ins[0].name), []).append(nd)
    out = []

    def fresh(base: str) -> str:  # a value name no other value has (node names may be empty)
        return fresh_name(base, info)

    for sibs in by_a.values():
        # the siblings that share K, scales and zero points make one set each
        sets: dict[tuple, list[Any]] = {}
        for s in sibs:
            sets.setdefault(_set_key(s), []).append(s)
        for same in sets.values():
            if len(same) >= 2:
                entry = _fuse_set(same, info, TensorSpec, lowers, fresh)
                if entry:
                    out.append(entry)
    return out


def _fuse_set(same: list[Any], info: dict[str, tuple], TensorSpec: Callable[..., Any],
              lowers: Callable[[Any], bool], fresh: Callable[[str], str]) -> dict[str, Any] | None:
    """The first of ``same`` computes all their outputs when it lowers so: its report entry,
    else None (nothing changed)."""
    first = same[0]
    ws, biases, scales, widths, heads = [], [], [], [], []
    for s in same:
        w = np.asarray(s.ins[1].data)
        n = w.shape[1]
        factor = np.float32(np.float64(s.attrs["tc_x_scale"]) / np.float64(s.attrs["tc_y_scale"]))
        ws.append(w)
        biases.append(np.zeros(n, np.int32) if s.ins[2] is None else np.asarray(s.ins[2].data, np.int32))
        scales.append((np.asarray(s.ins[3].data, np.float32) * factor).astype(np.float32))
        widths.append(int(n))
        heads.append(int(s.attrs.get("tc_y_heads", 0)))
    base = (first.name or f"{first.op}_{first.index}") + "/siblings"
    consts = [ConstantValue(fresh(f"{base}/int8"), np.concatenate(ws, axis=1)),
              ConstantValue(fresh(f"{base}/int32"), np.concatenate(biases)),
              ConstantValue(fresh(f"{base}/w_scale"), np.concatenate(scales))]
    attrs = {k: v for k, v in first.attrs.items() if k not in ("tc_y_heads",)}
    # (the requantisations are in w_scale: the epilogue's own multiplier is 1)
    attrs.update(tc_x_scale=1.0, tc_y_scale=1.0, tc_y_zero_point=int(first.attrs.get("tc_y_zero_point", 0)),
                 tc_split=widths, tc_split_heads=heads)
    saved = (first.ins, first.attrs, first.outs, first.in_specs)
    for v in consts:
        info[v.name] = (tuple(v.data.shape), str(v.data.dtype))
    first.ins = [first.ins[0], *consts]
    first.attrs, first.outs = attrs, [s.outs[0] for s in same]
    first.in_specs = [first.in_specs[0]] + [TensorSpec(*info[v.name]) for v in consts]
    if not lowers(first):
        first.ins, first.attrs, first.outs, first.in_specs = saved
        for v in consts:  # (fresh names: none of them was there before)
            del info[v.name]
        return None
    for s in same[1:]:
        s.where, s.reason = "dropped", f"fused into `{first.name}` (sibling Gemms of one A)"
    return {"node": first.name, "fused": [s.name for s in same[1:]], "split": widths}
