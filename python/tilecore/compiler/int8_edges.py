"""tilecore/compiler/int8_edges.py — int8 activations between ops (docs/precision.md,
"int8 between ops").

An int8 Conv, Gemm or MatMul (or a Conv in f16/bf16, mixed precision's wider nodes, when
its readers take it as data: the same bits) normally stores f32 and its int8 readers
quantise that on load (a Softmax stores f32 too). When every reader of its output is an int8 matrix op on the npu — reading it as
data (all with one ``tc_x_scale`` and zero point, or as a MatMul's B with
``tc_b_scale``, as they are: the scale is the tensor's calibrated threshold) or, after a
Conv, as a fused residual —, a view or a Transpose whose output is read so, a MaxPool
whose output is read so (after a Conv), or a unary op with a lookup-table form whose output is read
so, the output is stored in int8 instead (the MaxPool runs in int8: the max of quantised values is the
quantised max). A Concat whose output is read so, of such producers that only it reads, has them
all store int8 at that one scale:

- the producer gets ``tc_y_scale`` / ``tc_y_zero_point`` and quantises in its epilogue
  with the same operations its readers used on load, so the data readers see the same
  bits as before, from a quarter of the bytes;
- a residual reader gets ``tc_residual_scale`` / ``tc_residual_zero_point`` and
  dequantises on load: the one place the result changes (the residual is int8, as in
  any int8 engine, instead of f32). A value only residual readers read (a downsample
  branch) is quantised with its own calibrated threshold.
- a unary op with a lookup-table form (Gelu, Sigmoid, ...: ``lookup_table_ops()``) becomes one lookup per element
  (``tile.vec_lut``): ``tc_x_scale`` / ``tc_x_zero_point`` are its input's (the
  producer's), ``tc_y_scale`` / ``tc_y_zero_point`` its readers', and its 256-entry table
  is the op in double precision between the two. A producer that only such ops read is
  quantised with its own calibrated threshold.
- a global pooling or a ReduceMean/ReduceMax (a squeeze-excite's squeeze; a classifier's
  pooling), a LayerNormalization (ConvNeXt's, after its depthwise Conv and Transpose: it
  normalises the codes with epsilon / scale^2) or a Conv whose prologue multiplies its
  data by a per-channel scale (``tc_channel_scale``: the excite) takes the int8 value at
  its scale (``tc_x_scale`` / ``tc_x_zero_point``; the Conv's
  ``tc_channel_scale.tc_x_scale`` / ``.tc_x_zero_point``) and dequantises it on load: the
  result changes as with an int8 residual (the pooling averages, and the Conv scales, the
  quantised values). A value only such readers (and residual or table readers) read is
  quantised with its own calibrated threshold: a depthwise Conv's output in MobileNetV3,
  EfficientNet or RegNetY, stored in a quarter of the bytes, its SiLU or HardSwish then a
  table (``fold_conv_activations``).
"""

from __future__ import annotations

from typing import Any, Callable


PRODUCERS = ("Conv", "Gemm", "MatMul")
# readers that take an int8 value at its own scale and dequantise it (their output float32):
# a squeeze-excite's squeeze (torchvision's a global pooling, timm's a ReduceMean); a
# LayerNormalization after a Conv (ConvNeXt's, through its Transpose: it normalises the codes)
DEQUANTISING_OPS = ("GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceMax", "LayerNormalization")


def lookup_table_ops() -> frozenset[str]:
    """Unary ops the npu computes between int8 tensors through a 256-entry lookup table
    (strategy_elementwise.cc, LutOps): their input keeps its producer's scale, their
    output takes its readers'."""
    from . import _ffi

    return frozenset(str(name) for name in _ffi.LookupTableOps())


def assign(nodes: list[Any], info: dict[str, tuple], graph_outputs: set[str],
           HasStrategy: Callable[..., str], TensorSpec: Callable[..., Any],
           thresholds: dict[str, float] | None = None, dequantising_readers: bool = True) -> list[str]:
    """Makes the eligible Conv outputs int8 in place (``info``, attributes and input
    specs); returns their value names. A value read only as a residual takes its scale
    from its own calibrated threshold in ``thresholds`` (symmetric, zero point 0).
    ``dequantising_readers`` False: no global pooling or channel-scale prologue reads an
    int8 value (a QDQ model's quantisation points are its own)."""
    from .fuse_epilogue import value_readers
    from .precision import activation_scale, bounded_scale, degenerate_range, lower_bounds

    readers = value_readers(nodes)
    lut_ops = lookup_table_ops()
    bounds = lower_bounds(nodes)

    def int8_readers(name, depth=0, through_lut=True):
        """(data scales, residual readers, MaxPools, lookup tables, views, dequantising
        readers) when every reader of ``name`` takes it in int8 (a MaxPool or a view: through
        its output; a lookup table: at any scale, its output at the one scale of its own
        readers, found with them; a global pooling, or a Conv's channel-scale prologue: at
        any scale, dequantised), else None."""
        rs = readers.get(name, [])
        if name in graph_outputs or not rs or info[name][1] != "float32" or depth > 4:
            return None
        scales, residual, pools, luts, views, deq = set(), [], [], [], [], []
        for r, i in rs:
            moves = r.where == "view" or (r.where == "npu" and r.op == "Transpose")
            if moves and len(r.outs) == 1 and i == 0:  # Reshape, Transpose, ...: the same values
                sub = int8_readers(str(r.outs[0].name), depth + 1, through_lut)
                if sub is None:
                    return None
                scales |= sub[0]
                residual += sub[1]
                pools += sub[2]
                luts += sub[3]
                views += [r] + sub[4]
                deq += sub[5]
                continue
            if r.where != "npu":
                return None
            if r.op == "MaxPool" and len(r.outs) == 1:
                sub = int8_readers(str(r.outs[0].name), depth + 1, through_lut)
                if sub is None:
                    return None
                scales |= sub[0]
                residual += sub[1]
                pools += [r] + sub[2]
                luts += sub[3]
                views += sub[4]
                deq += sub[5]
            elif r.op in DEQUANTISING_OPS and i == 0 and len(r.outs) == 1 and dequantising_readers:
                deq.append((r, "tc_x_scale", "tc_x_zero_point"))
            elif r.op in lut_ops and through_lut and len(r.outs) == 1 and i == 0:
                sub = int8_readers(str(r.outs[0].name), depth + 1, False)
                if sub is None or len(sub[0]) != 1 or sub[2] or sub[5]:
                    return None
                luts.append((r, next(iter(sub[0])), sub[1]))
                views += sub[4]
            elif r.op not in PRODUCERS or r.attrs.get("tc_precision") != "int8":
                return None
            elif r.op == "Conv" and i == 0 and r.attrs.get("tc_channel_scale") and dequantising_readers:
                deq.append((r, "tc_channel_scale.tc_x_scale", "tc_channel_scale.tc_x_zero_point"))
            elif i == 0 and r.attrs.get("tc_x_scale"):
                scales.add((float(r.attrs["tc_x_scale"]), int(r.attrs.get("tc_x_zero_point", 0))))
            elif i == 1 and r.op == "MatMul" and r.attrs.get("tc_b_scale"):  # B of two activations
                scales.add((float(r.attrs["tc_b_scale"]), 0))
            elif r.op == "Conv" and r.attrs.get("tc_residual") and i == len(r.ins) - 1:
                residual.append(r)
            else:
                return None
        return scales, residual, pools, luts, views, deq

    def apply(values, touched, edits):
        """Stores ``values`` in int8 and sets ``edits`` (node -> attributes added) unless a
        strategy of a node in ``touched`` (or reading one of the values) refuses the int8
        form; whether it was kept."""
        touched = {id(x): x for x in touched}
        for v in values:
            touched.update({id(r): r for r, _ in readers.get(v, [])})
        saved = [(x, x.attrs, x.in_specs) for x in touched.values()]
        old = {v: info[v] for v in values}
        for v in values:
            info[v] = (info[v][0], "int8")
        for x, attrs in edits:
            x.attrs = dict(x.attrs, **attrs)
        for x, _, _ in saved:
            x.in_specs = [None if v is None else TensorSpec(*info[str(v.name)]) for v in x.ins]
            if HasStrategy(x.op, x.attrs, x.in_specs):  # the edges stay f32
                info.update(old)
                for y, attrs, specs in saved:
                    y.attrs, y.in_specs = attrs, specs
                return False
        return True

    def int8_producer(nd):
        """Whether ``nd`` can store its one output in int8 (quantised in its epilogue)."""
        prec = nd.attrs.get("tc_precision")
        return (nd.op in PRODUCERS and nd.where == "npu" and len(nd.outs) == 1 and not nd.attrs.get("tc_y_scale")
                and (prec == "int8" or (nd.op == "Conv" and prec in ("f16", "bf16"))))

    done = []
    # A Concat of int8 producers' outputs, each read by it alone, whose output only int8 data
    # readers read (an Inception block's or a Fire module's branches): every branch quantises
    # in its epilogue at the readers' one scale, and the Concat (and a MaxPool or view after
    # it) moves int8, the same bits the readers quantised on load.
    producer_of = {str(o.name): nd for nd in nodes if nd.where != "dropped" for o in nd.outs if o is not None}
    for cat in nodes:
        if cat.op != "Concat" or cat.where != "npu" or len(cat.outs) != 1:
            continue
        found = int8_readers(str(cat.outs[0].name), through_lut=False)
        if found is None or len(found[0]) != 1 or found[1] or found[3] or found[5]:
            continue
        producers = []
        for v in cat.ins:
            rs = readers.get(str(v.name), []) if v is not None else []
            p = producer_of.get(str(v.name)) if v is not None else None
            if p is None or not int8_producer(p) or len(rs) != 1 or str(v.name) in graph_outputs:
                break
            producers.append(p)
        else:
            (scale, zero_point), pools, views = next(iter(found[0])), found[2], found[4]
            values = [str(p.outs[0].name) for p in producers] + [str(x.outs[0].name) for x in [cat] + pools + views]
            if len(set(values)) == len(values) and apply(
                    values, producers + [cat] + pools,
                    [(p, {"tc_y_scale": scale, "tc_y_zero_point": zero_point}) for p in producers]):
                done += values

    for nd in nodes:
        softmax = nd.op == "Softmax" and nd.where == "npu"  # probabilities, quantised on store
        # (a Conv in f16/bf16 quantises its f32 result as well: mixed precision's wider nodes)
        prec = nd.attrs.get("tc_precision")
        if not (int8_producer(nd) or (softmax and len(nd.outs) == 1 and not nd.attrs.get("tc_y_scale"))):
            continue
        y = str(nd.outs[0].name)
        found = int8_readers(y)
        if softmax and found is not None and (found[1] or found[2] or found[3] or found[5]):
            continue  # data readers only
        if (found is not None and not found[0] and (found[1] or found[3] or found[5]) and not found[2]
                and y in (thresholds or {}) and not degenerate_range(y, thresholds[y])):
            # residual readers, lookup tables or dequantising readers only: the value's own
            # threshold (with dequantising readers, from its lower bound up when it has one:
            # a SiLU's output takes twice the codes of [-threshold, threshold])
            lo = bounds.get(y) if found[5] else None
            if lo is not None and lo >= 0:
                found[0].add((activation_scale(thresholds[y], True), -128))
            elif lo is not None and -lo < thresholds[y]:
                found[0].add(bounded_scale(thresholds[y], lo))
            else:
                found[0].add((activation_scale(thresholds[y]), 0))
        if found is None or len(found[0]) != 1 or (nd.op != "Conv" and (found[1] or found[2] or found[5])):
            continue
        if prec != "int8" and (found[1] or found[3] or found[5]):
            continue  # a wider node's value as an int8 residual, table or pooling input: not the same bits
        (scale, zero_point), residual_readers, pools, luts = found[0].pop(), found[1], found[2], found[3]
        views, deq = found[4], found[5]
        residual_readers = residual_readers + [r for _, _, lut_residual in luts for r in lut_residual]
        values = [y] + [str(x.outs[0].name) for x in pools + views] + [str(t.outs[0].name) for t, _, _ in luts]
        edits = [(nd, {"tc_y_scale": scale, "tc_y_zero_point": zero_point})]
        edits += [(r, {"tc_residual_scale": scale, "tc_residual_zero_point": zero_point}) for r in found[1]]
        edits += [(r, {s_key: scale, z_key: zero_point}) for r, s_key, z_key in deq]
        for lut, (lut_scale, lut_zero_point), lut_residual in luts:
            edits.append((lut, {"tc_x_scale": scale, "tc_x_zero_point": zero_point, "tc_y_scale": lut_scale,
                                "tc_y_zero_point": lut_zero_point}))
            edits += [(r, {"tc_residual_scale": lut_scale, "tc_residual_zero_point": lut_zero_point})
                      for r in lut_residual]
        if apply(values, [nd] + pools + residual_readers + [t for t, _, _ in luts] + [r for r, _, _ in deq], edits):
            done += values
    return done


FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")


def stored_codes(nodes: list[Any], info: dict[str, tuple], model_dtypes: dict[str, str]) -> dict[str, tuple[float, int]]:
    """Value name -> (scale, zero point) of each value the model has in floating point that
    is stored in int8 (an int8 edge's, a MaxPool's or a view's of one, a lookup table's):
    the stored q stands for ``(q - zero_point) * scale``. Read right after :func:`assign`,
    before the folds move outputs between nodes (they keep each value's own scale). The
    debuggers and ``verify`` dequantise so to compare such a value with another program's
    or the reference's."""
    codes: dict[str, tuple[float, int]] = {}
    for nd in nodes:
        outs = [str(v.name) for v in nd.outs if v is not None and str(v.name)]
        if len(outs) != 1:
            continue
        y = outs[0]
        if info.get(y, ((), ""))[1] != "int8" or model_dtypes.get(y) not in FLOAT_DTYPES:
            continue
        if "tc_y_scale" in nd.attrs:
            codes[y] = (float(nd.attrs["tc_y_scale"]), int(nd.attrs.get("tc_y_zero_point", 0)))
        elif nd.ins and nd.ins[0] is not None and str(nd.ins[0].name) in codes:  # MaxPool, a view
            codes[y] = codes[str(nd.ins[0].name)]
    return codes


def dequantise(q: Any, code: tuple[float, int]) -> Any:
    """The f32 values the int8 codes ``q`` of a value with ``code`` (:func:`stored_codes`'s
    scale and zero point) stand for: ``(q - zero_point) * scale``."""
    import numpy as np

    scale, zero_point = code
    return ((np.asarray(q).astype(np.float64) - zero_point) * scale).astype(np.float32)


def fold_lookup_tables(nodes: list[Any], info: dict[str, tuple], graph_outputs: set[str],
                       HasStrategy: Callable[..., str]) -> list[dict[str, Any]]:
    """An int8 MatMul or Gemm whose int8 output only a lookup-table op reads (a transformer's
    GELU) applies the table in its epilogue: ``tc_lut`` names the op, its attributes follow
    as ``tc_lut.<name>``, and the MatMul takes over the op's output. The same table on the
    same int8 values: the same bits, without the op's pass over the data. Returns
    ``[{"node": matmul, "fused": [op]}, ...]``."""
    from .fuse_epilogue import value_readers

    readers = value_readers(nodes)
    lut_ops = lookup_table_ops()
    out = []
    for nd in nodes:
        if (nd.op not in ("MatMul", "Gemm") or nd.where != "npu" or len(nd.outs) != 1
                or "tc_lut" in nd.attrs or "tc_y_scale" not in nd.attrs):
            continue
        # the table op, maybe behind views (a Reshape of the bias fold) that only it reads
        y, views = str(nd.outs[0].name), []
        while True:
            rs = readers.get(y, [])
            if y in graph_outputs or len(rs) != 1 or rs[0][1] != 0:
                break
            r = rs[0][0]
            if r.where != "view" or len(r.outs) != 1:
                break
            views.append(r)
            y = str(r.outs[0].name)
        rs = readers.get(y, [])
        if y in graph_outputs or len(rs) != 1:
            continue
        lut, i = rs[0]
        if (lut.op not in lut_ops or lut.where != "npu" or i != 0 or len(lut.outs) != 1
                or "tc_y_scale" not in lut.attrs):
            continue
        z = str(lut.outs[0].name)
        if info[y] != info[z] or info[y][1] != "int8":
            continue
        attrs = dict(nd.attrs, tc_lut=lut.op, **{f"tc_lut.{k}": v for k, v in lut.attrs.items()})
        if HasStrategy(nd.op, attrs, nd.in_specs):
            continue
        nd.attrs = attrs
        # the last of the chain now yields the op's output: the values it read, looked up
        (views[-1] if views else nd).outs = list(lut.outs)
        lut.where, lut.reason = "dropped", f"fused into `{nd.name}`"
        out.append({"node": nd.name, "fused": [lut.name]})
    return out


def fold_conv_activations(nodes: list[Any], thresholds: dict[str, float] | None,
                          HasStrategy: Callable[..., str]) -> list[dict[str, Any]]:
    """An int8 Conv with a fused SiLU or HardSwish and an int8 output applies the activation
    as its 256-entry table (``tc_lut``) instead of in f32: its result is quantised with the
    activation input's own calibrated threshold (``tc_y_scale``), then looked up into the
    readers' scale (``tc_lut.tc_y_scale``). The same bits as the Conv and the table op apart
    (the Conv's int8 output read only by the table takes that threshold too), where the f32
    activation is several vector passes of a transcendental. Returns
    ``[{"node": conv, "fused": [activation]}, ...]``."""
    from .precision import activation_scale, degenerate_range

    lut_ops = lookup_table_ops()
    fused_into = {}
    for x in nodes:
        if x.where == "dropped" and x.ins and x.ins[0] is not None:
            fused_into.setdefault(x.reason, []).append(x)
    out = []
    for nd in nodes:
        act = nd.attrs.get("tc_activation")
        if (nd.op != "Conv" or nd.where != "npu" or act not in ("SiLU", "HardSwish") or act not in lut_ops
                or nd.attrs.get("tc_precision") != "int8" or "tc_y_scale" not in nd.attrs or "tc_lut" in nd.attrs):
            continue
        # the activation's input: the Conv's result as the graph had it (after a fused Add)
        dropped = [x for x in fused_into.get(f"fused into `{nd.name}`", []) if x.op == act]
        if len(dropped) != 1:
            continue
        pre = str(dropped[0].ins[0].name)
        if pre not in (thresholds or {}) or degenerate_range(pre, thresholds[pre]):
            continue  # no calibrated range: the activation stays in f32
        scale = activation_scale(thresholds[pre])
        attrs = {k: v for k, v in nd.attrs.items() if k != "tc_activation"}
        attrs.update({"tc_lut": act, "tc_lut.tc_x_scale": scale, "tc_lut.tc_x_zero_point": 0,
                      "tc_lut.tc_y_scale": nd.attrs["tc_y_scale"],
                      "tc_lut.tc_y_zero_point": nd.attrs.get("tc_y_zero_point", 0),
                      "tc_y_scale": scale, "tc_y_zero_point": 0})
        if HasStrategy(nd.op, attrs, nd.in_specs):
            continue
        nd.attrs = attrs
        out.append({"node": nd.name, "fused": [dropped[0].name]})
    return out


def fold_softmax(nodes: list[Any], info: dict[str, tuple], graph_outputs: set[str],
                 HasStrategy: Callable[..., str], TensorSpec: Callable[..., Any]) -> list[dict[str, Any]]:
    """An int8 MatMul of two activations whose f32 output only a Softmax over the last
    axis reads (attention's scores, the division by sqrt(d) already in its scale) computes
    the probabilities itself (``tc_softmax``; the Softmax's output scale and zero point as
    ``tc_softmax.tc_y_scale`` / ``tc_softmax.tc_y_zero_point``) and takes over the Softmax's
    output: the scores stay in L1, and the mm of the next rows runs beside the exponentials
    of these. An Add of a constant f32 mask [.., M, N] (one matrix for every head: a causal
    mask) between them goes with it (``tc_softmax.tc_mask``, the mask appended as input 2).
    The same epilogue, sums and passes: the same bits. Returns
    ``[{"node": matmul, "fused": [(add,) softmax]}, ...]``."""
    from .fuse_epilogue import value_readers

    readers = value_readers(nodes)

    def sole(name):  # the node that alone reads `name`, as input 0 or 1, and that index
        rs = readers.get(name, [])
        return rs[0] if name not in graph_outputs and len(rs) == 1 else (None, -1)

    out = []
    for nd in nodes:
        if (nd.op != "MatMul" or nd.where != "npu" or len(nd.outs) != 1 or "tc_softmax" in nd.attrs
                or not nd.attrs.get("tc_b_scale") or "tc_y_scale" in nd.attrs or "tc_lut" in nd.attrs
                or len(nd.ins) != 2):
            continue
        y = str(nd.outs[0].name)
        if info[y][1] != "float32":
            continue
        shape = tuple(info[y][0])
        sm, i = sole(y)
        chain, mask = [], None
        if sm is not None and sm.op == "Add" and sm.where == "npu" and len(sm.ins) == 2 and len(sm.outs) == 1:
            m = sm.ins[1 - i]
            ms = tuple(info[str(m.name)][0]) if m is not None else ()
            if (m is not None and m.data is not None and info[str(m.name)][1] == "float32" and len(ms) >= 2
                    and ms[-2:] == shape[-2:] and all(d == 1 for d in ms[:-2])
                    and tuple(info[str(sm.outs[0].name)][0]) == shape):
                chain, mask = [sm], m
                sm, i = sole(str(sm.outs[0].name))
            else:
                continue
        rank = len(shape)
        if (sm is None or sm.op != "Softmax" or sm.where != "npu" or i != 0 or len(sm.outs) != 1
                or int(sm.attrs.get("_opset", 13)) < 13 or sm.attrs.get("axis", -1) not in (-1, rank - 1)):
            continue
        if tuple(info[str(sm.outs[0].name)][0]) != shape:
            continue
        attrs = dict(nd.attrs, tc_softmax=1)
        if "tc_y_scale" in sm.attrs:
            attrs["tc_softmax.tc_y_scale"] = sm.attrs["tc_y_scale"]
            attrs["tc_softmax.tc_y_zero_point"] = sm.attrs.get("tc_y_zero_point", 0)
        ins, specs = list(nd.ins), list(nd.in_specs)
        if mask is not None:
            attrs["tc_softmax.tc_mask"] = 1
            ins.append(mask)
            specs.append(TensorSpec(*info[str(mask.name)]))
        if HasStrategy(nd.op, attrs, specs):
            continue
        nd.ins, nd.in_specs, nd.attrs, nd.outs = ins, specs, attrs, list(sm.outs)
        for x in chain + [sm]:
            x.where, x.reason = "dropped", f"fused into `{nd.name}`"
        out.append({"node": nd.name, "fused": [x.name for x in chain + [sm]]})
    return out


def fold_key_transpose(nodes: list[Any], info: dict[str, tuple], graph_outputs: set[str],
                       HasStrategy: Callable[..., str], TensorSpec: Callable[..., Any]) -> list[dict[str, Any]]:
    """A ``tc_softmax`` MatMul whose int8 B is a Transpose's output only it reads, the
    Transpose turning [.., N, H, K] into [.., H, K, N] (attention's keys: [1, M, H, D] ->
    [1, H, D, M]), reads the Transpose's input instead (``tc_b_heads``): each item loads its
    head's [N, K] rows as they lie and the vector engine turns them in L1, beside the
    Softmax's passes. The same bytes in B: the same bits, without the Transpose's step.
    Returns ``[{"node": matmul, "fused": [transpose]}, ...]``."""
    from .fuse_epilogue import value_producers, value_readers

    readers = value_readers(nodes)
    producer = value_producers(nodes)
    out = []
    for nd in nodes:
        if (nd.op != "MatMul" or nd.where != "npu" or "tc_softmax" not in nd.attrs or "tc_b_heads" in nd.attrs
                or len(nd.ins) < 2 or nd.ins[1] is None):
            continue
        b = str(nd.ins[1].name)
        t = producer.get(b)
        if (t is None or t.op != "Transpose" or t.where != "npu" or len(t.outs) != 1 or b in graph_outputs
                or readers.get(b, []) != [(nd, 1)] or info[b][1] != "int8" or t.ins[0] is None):
            continue
        s = tuple(info[str(t.ins[0].name)][0])
        lead = len(s) - 3
        if lead < 0 or any(d != 1 for d in s[:lead]) or list(t.attrs.get("perm", [])) != list(range(lead)) + [
                lead + 1, lead + 2, lead]:
            continue
        attrs = dict(nd.attrs, tc_b_heads=1)
        specs = [nd.in_specs[0], TensorSpec(*info[str(t.ins[0].name)])] + list(nd.in_specs[2:])
        if HasStrategy(nd.op, attrs, specs):
            continue
        nd.ins, nd.attrs, nd.in_specs = [nd.ins[0], t.ins[0]] + list(nd.ins[2:]), attrs, specs
        t.where, t.reason = "dropped", f"fused into `{nd.name}`"
        out.append({"node": nd.name, "fused": [t.name]})
    return out


def fold_context(nodes: list[Any], info: dict[str, tuple], graph_outputs: set[str],
                 HasStrategy: Callable[..., str], TensorSpec: Callable[..., Any]) -> list[dict[str, Any]]:
    """A ``tc_softmax`` MatMul whose int8 probabilities only an int8 MatMul reads, as its A
    (attention's context: P times V), computes that product too (``tc_context``, V
    appended as its input 2, the context MatMul's scales, zero point and layout under
    ``tc_context.``) and takes over its output: the probabilities never leave L1, and the
    matrix engine, idle while the vector engine takes the exponentials, multiplies them
    by V there. The context MatMul's epilogue: the same bits. Returns
    ``[{"node": scores, "fused": [context]}, ...]``."""
    from .fuse_epilogue import value_producers, value_readers

    readers = value_readers(nodes)
    position = {id(nd): k for k, nd in enumerate(nodes)}
    producer = value_producers(nodes)
    out = []
    for nd in nodes:
        if (nd.op != "MatMul" or nd.where != "npu" or "tc_softmax" not in nd.attrs or "tc_context" in nd.attrs
                or len(nd.outs) != 1 or "tc_softmax.tc_y_scale" not in nd.attrs):
            continue
        p = str(nd.outs[0].name)
        rs = readers.get(p, [])
        if p in graph_outputs or len(rs) != 1 or rs[0][1] != 0 or info[p][1] != "int8":
            continue
        c = rs[0][0]
        a = c.attrs
        if (c.op != "MatMul" or c.where != "npu" or len(c.ins) != 2 or c.ins[1] is None or len(c.outs) != 1
                or a.get("tc_precision") != "int8" or not a.get("tc_b_scale")
                or int(a.get("tc_x_zero_point", 0)) != int(nd.attrs.get("tc_softmax.tc_y_zero_point", 0))
                or any(k in a for k in ("tc_lut", "tc_y_heads", "tc_softmax", "tc_split"))):
            continue
        v = c.ins[1]
        made = producer.get(str(v.name))
        if made is not None and position[id(made)] > position[id(nd)]:
            continue  # V is made after the scores: the node could not read it
        attrs = dict(nd.attrs, tc_context=1)
        for k in ("tc_x_scale", "tc_x_zero_point", "tc_b_scale", "tc_y_scale", "tc_y_zero_point", "tc_out_scale",
                  "tc_y_rows_first"):
            if k in a:
                attrs["tc_context." + k] = a[k]
        specs = list(nd.in_specs) + [TensorSpec(*info[str(v.name)])]
        if HasStrategy(nd.op, attrs, specs):
            continue
        nd.ins, nd.in_specs, nd.attrs, nd.outs = list(nd.ins) + [v], specs, attrs, list(c.outs)
        c.where, c.reason = "dropped", f"fused into `{nd.name}`"
        out.append({"node": nd.name, "fused": [c.name]})
    return out
