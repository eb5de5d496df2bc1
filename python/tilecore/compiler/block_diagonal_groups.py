"""tilecore/compiler/block_diagonal_groups.py — an int8 grouped Conv of few channels a group
compiled as one of fewer, wider groups, its weights block-diagonal (docs/compiler.md,
"Groups as block-diagonal weights").

The Conv strategy's items are a group each (conv/direct.cc): over groups of 8 channels at
7 x 7 (RegNetY's 3x3 Convs) an item is one matrix command of some 90 cycles among some 200
front-end instructions, so the front end bounds the Conv. k groups taken as one issue a k-th
of the items, each k times the products: the weights of output channel m are W[m] at the
place of m's group among the k and zeros at the others',

    W'[m, j * Cg + c] = W[m, c] if j == (m // Mg) mod k, else 0,

and the Conv runs with groups / k groups of k * Cg input channels. The products the zeros add
are 0 and the sums int32: the same sums in any order, the same bits (not in f32 or a narrow
float, whose sums the plan's chunks of input channels would order otherwise). The int32
bias (its zero-point correction a sum over the row's weights) and the scales stay as they
are; ``tc_block_diagonal`` K tells the MAC count and the roofline the Conv's own.

The cost model decides: the Conv is priced alone with each k dividing the groups that keeps
k * Cg within ``MAX_CHANNELS`` (the products grow k times: a Conv the matrix engine bounds
loses), and the fastest is kept when it is ``GAIN`` faster than the Conv as it was.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .precision import ConstantValue, fresh_name

# the most input channels of a widened group (k * Cg): a 3x3 item of 32 x 9 rows of its
# column matrix still fills a few of the matrix engine's blocks
MAX_CHANNELS = 32
# the share of the Conv's cycles alone the widened groups save to be kept (a layer group
# hides part of each item's start, which the Conv alone pays)
GAIN = 0.05


def block_diagonal(w: np.ndarray, groups: int, k: int) -> np.ndarray:
    """The weights ``w`` [M, Cg, ...] of a Conv of ``groups`` groups as those of one of
    ``groups // k`` groups of ``k * Cg`` input channels: row m holds its Cg values at the
    place of its group among the k it is taken with, zeros elsewhere."""
    m, cg = w.shape[:2]
    if groups < 1 or m % groups or groups % k:
        raise ValueError(f"block_diagonal: {m} output channels, {groups} groups, {k} a group")
    place = np.arange(m) // (m // groups) % k
    out = np.zeros((m, k * cg, *w.shape[2:]), w.dtype)
    for j in range(k):
        out[place == j, j * cg:(j + 1) * cg] = w[place == j]
    return out


def widenings(groups: int, cg: int) -> list[int]:
    """The k priced for a Conv of ``groups`` groups of ``cg`` input channels: those dividing
    the groups, 2 or more, with k * cg within MAX_CHANNELS."""
    return [k for k in range(2, MAX_CHANNELS // max(cg, 1) + 1) if groups % k == 0]


def apply(nodes: list[Any], info: dict[str, tuple], TensorSpec: Callable[..., Any],
          cycles: Callable[[Any], int | None]) -> list[dict[str, Any]]:
    """Rewrites in place each int8 grouped (not depthwise) Conv whose widened groups the
    cost model finds ``GAIN`` faster (``cycles``: the cost model's cycles of a node's kernel,
    None when it has none); returns ``[{"node", "groups", "as"}]``: its groups before and
    after."""
    done = []
    for nd in nodes:
        a = nd.attrs
        groups = int(a.get("group", 1))
        if nd.op != "Conv" or nd.where != "npu" or a.get("tc_precision") != "int8" or groups == 1:
            continue
        w = nd.ins[1]
        wq = getattr(w, "data", None)
        if wq is None or np.asarray(wq).dtype != np.int8 or np.asarray(wq).shape[1] == 1:
            continue
        wq = np.asarray(wq)
        ks = widenings(groups, wq.shape[1])
        if not ks:
            continue
        before = cycles(nd)
        if before is None:
            continue
        saved = (list(nd.ins), dict(a), list(nd.in_specs))
        best, best_cycles = None, before * (1 - GAIN)
        name = fresh_name(f"{nd.name or 'Conv'}/block_diagonal_weights", info)
        for k in ks:
            wide = ConstantValue(name, block_diagonal(wq, groups, k))
            info[wide.name] = (tuple(wide.data.shape), "int8")
            nd.ins = [saved[0][0], wide, *saved[0][2:]]
            nd.attrs = {**saved[1], "group": groups // k, "tc_block_diagonal": k}
            nd.in_specs = [saved[2][0], TensorSpec(*info[wide.name]), *saved[2][2:]]
            got = cycles(nd)
            if got is not None and got < best_cycles:
                best, best_cycles = (k, wide, nd.ins, nd.attrs, nd.in_specs), got
        nd.ins, nd.attrs, nd.in_specs = saved
        if best is None:
            del info[name]
            continue
        k, wide, nd.ins, nd.attrs, nd.in_specs = best
        info[wide.name] = (tuple(wide.data.shape), "int8")
        done.append({"node": nd.name, "groups": groups, "as": groups // k})
    return done
