"""The model compiler's driver: a Graph (or an ONNX model) to a ``.tcx`` Executable.

    exe = tilecore.compile("model.onnx", target="npu -cores=4", precision="f32")
    outs = exe.run({"input": x})              # keyed by the ONNX input and output names

The steps, in order (docs/compiler.md, "The driver"):

1. import (``tilecore.frontend.from_onnx``; a Graph is taken as it is), then, on the
   Graph whatever came in, QOperator nodes in their QDQ form (``qlinear.py``),
   RNN/GRU/LSTM unrolled over their time steps (``expand_recurrent.py``), nodes with
   neither an npu strategy nor a host kernel replaced by their ONNX function bodies
   (``expand_functions.py``: Attention, SoftmaxCrossEntropyLoss, ...), and the graph
   passes (``CanonicalizeGraph``: constants and BatchNorm folded, Gemm as MatMul + Add,
   activations recognised);
2. static shapes: every value a step touches must have one (``input_shapes`` binds the
   symbolic dimensions), found by inference: a shape only the model declares is refused
   unless a kernel checks it when the model runs (a reduction's axes read on the host,
   a ``CheckInput`` step for a shape input, ``input_checks.py``); indices not constant
   get a ``CheckIndices`` step (an index out of range fails the run), constant ones are
   checked now;
3. partition: each node runs on the npu (``compiler.HasStrategy`` is ""), on the host
   (``compiler.HasHostKernel`` is "", the npu's reason recorded), is a free view
   (Reshape, Flatten, Squeeze, Unsqueeze, Identity: its output aliases its input's
   bytes, no step) or is unsupported — then compiling fails with one error naming
   every such node, its op type and both reasons;
   then a quantised model's matrix nodes are folded into the int8 quantised-node form
   (``qdq.py``; QOperator models were imported in their QDQ form, ``qlinear.py``) and
   the precision pass assigns the others (``precision.py``);
4. lowering and building, one kernel per distinct (op, attributes, shapes, dtypes);
5. the DDR memory plan (``compiler.PlanMemory``, C++): buffers whose live ranges do not
   meet share bytes, 64-byte aligned; constants are constant buffers;
6. the Executable, with one step per npu or host node carrying the node's name, op
   type, MAC count and debug info (the host reason, the values it reads and writes, the
   free views before it).

``keep_intermediates=True`` gives every value its own bytes (views become copy steps)
and makes every intermediate value an extra output named by its value name, for
``tilecore compare``.
"""

from __future__ import annotations

import contextvars
import itertools
import json
import os
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from ..ffi._base import _ffi_core
from . import compile_cache as _compile_cache
from .input_checks import INDEX_INPUTS, SHAPE_INPUTS
from .pipeline import raise_if_defect as _raise_if_defect

if TYPE_CHECKING:
    from ..runtime import Executable
    from .pipeline import PipelineOptions
    from ..target import Target


# Ops whose output, in the row-major layout every buffer has, is the input's bytes.
VIEW_OPS = frozenset({"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"})
PRECISIONS = ("f32", "f16", "bf16", "int8")
ALIGNMENT = 64
# the rows per chunk a Gemm with its norm (tc_row_norm) is planned with in a layer group
ROW_NORM_ROWS = (8, 16, 32)


class CompileError(ValueError):
    """A model the driver cannot compile: the message names every node at fault."""


def _plan_choices(nd):
    """The (attribute, values) a layer group plans a member with, besides what it chose alone."""
    if nd.op == "Gemm" and "tc_row_norm" in nd.attrs:
        return [("tc_row_norm_rows", ROW_NORM_ROWS)]
    return []


def _itemsize(dtype):
    if str(dtype) in ("bfloat16",) or str(dtype).startswith("float8_"):  # numpy has these only via ml_dtypes
        return 2 if str(dtype) == "bfloat16" else 1
    return np.dtype(dtype).itemsize


def _host_api():
    """(HasHostKernel, LowerHostOp) when this build has host kernels, else None."""
    has = _ffi_core._get_global_func("compiler.HasHostKernel")
    lower = _ffi_core._get_global_func("compiler.LowerHostOp")
    return (has, lower) if has is not None and lower is not None else None


def _specialise_shape_inputs(graph, shape_checks):
    """``graph`` with the shape input of each node of SPECIALISED_INPUTS that is a graph
    input replaced by the one value that gives the node's declared output shape
    (input_checks.specialised_value); ``shape_checks`` gets ``(graph input, CheckInput
    attributes)`` for each, the step that fails a run feeding another value."""
    from ..frontend import static_shape
    from ..ir.graph import Graph, Node, TensorType, Value, _text_of_type, numpy_dtype
    from .input_checks import SPECIALISED_INPUTS, specialised_value

    graph_inputs = {str(v.name) for v in graph.inputs}
    nodes, changed = [], False
    for k, n in enumerate(graph.nodes):
        op = str(n.op_type)
        i = SPECIALISED_INPUTS.get(op) if str(n.domain) in ("", "ai.onnx") else None
        ins = list(n.inputs)
        v = ins[i] if i is not None and i < len(ins) else None
        if v is None or v.data is not None or str(v.name) not in graph_inputs:
            nodes.append(n)
            continue
        outs = [static_shape(o) for o in n.outputs if str(o.name)]
        got = None if any(o is None for o in outs) else specialised_value(
            op, {str(a): _py(x) for a, x in n.attrs.items()},
            [None if x is None else static_shape(x) for x in ins], outs)
        dtype = numpy_dtype(str(v.type.dtype)) if v.type is not None and str(v.type.dtype) else None
        if got is None or dtype is None:
            nodes.append(n)
            continue
        value = np.asarray(got[0], dtype).reshape(static_shape(v))
        ins[i] = Value(f"{v.name}/declared{k}", TensorType(list(value.shape), str(v.type.dtype)), value)
        nodes.append(Node(op, ins, list(n.outputs), dict(n.attrs), str(n.name), str(n.domain)))
        changed = True
        what = f"node `{n.name or f'{op}_{k}'}` ({op}): input {i} `{v.name}`"
        shape_checks.append((v, {**got[1], "tc_what": what,
                                 "tc_shape": ", ".join(_text_of_type(o.type) for o in n.outputs if str(o.name))}))
    if not changed:
        return graph
    return Graph(str(graph.name), list(graph.inputs), list(graph.outputs), nodes,
                 {str(a): int(b) for a, b in graph.opsets.items()})


def _load_graph(model, input_shapes, shape_checks=None):
    """The Graph of ``model`` (a Graph, a path, bytes or an ONNX ModelProto), typed, with the
    nodes that run nowhere expanded (_expand_unsupported): every entry point goes on from
    the same Graph. With a list ``shape_checks``, nodes whose shape input is a graph input
    are compiled for the declared shape first (_specialise_shape_inputs)."""
    return _expand_unsupported(_import_graph(model, input_shapes, shape_checks))


def _import_graph(model, input_shapes, shape_checks=None):
    """_load_graph before _expand_unsupported."""
    from .. import frontend
    from ..ir.graph import Graph

    if isinstance(model, Graph):
        from .. import transform

        shapes = {k: [int(d) for d in v] for k, v in (input_shapes or {}).items()}
        graph = transform.InferTypes(shapes)(model)
    else:
        graph = frontend.from_onnx(os.fspath(model) if isinstance(model, os.PathLike) else model,
                                   input_shapes=input_shapes)
    if shape_checks is not None:
        graph = _specialise_shape_inputs(graph, shape_checks)
    return graph


def _fold_to_fixed_point(graph, rounds=256, pipe=None):
    """FoldConstants and InferTypes again while nodes fold: values the passes learnt late
    (a Shape folded by type inference) make their users constant (Slice's starts from
    Shape - 1, ConstantOfShape of a computed shape), and those make static shapes. InferTypes
    computes the nodes of constant inputs as it types them, so that a chain (a Swin
    Transformer's window shapes, computed block after block from the one before) is learnt
    in one sweep; the rounds go on until nothing folds (an If whose condition folds is
    replaced by the branch it takes, compiler/inline_if.py, and its body may fold more)."""
    from .. import transform
    from .inline_if import inline_constant_ifs

    for _ in range(rounds):
        n = len(graph.nodes)
        graph = transform.FoldConstants()(transform.InferTypes({}, fold_constants=True)(graph))
        if pipe is None:
            graph = inline_constant_ifs(graph)
        elif not pipe.disabled("InlineConstantIfs"):
            with pipe.step("InlineConstantIfs", lambda: graph.text(), lambda: graph):
                graph = inline_constant_ifs(graph)
        if len(graph.nodes) == n:
            break
    return transform.InferTypes({})(graph)


def _runs_nowhere(op_type, domain):
    """True when ``op_type`` has neither an npu strategy nor a host kernel at all."""
    from . import HasStrategy, strategy_name

    op = strategy_name(op_type, domain)
    host = _host_api()
    return (str(HasStrategy(op, {}, [])).startswith("no npu strategy for") and
            (host is None or str(host[0](op, {}, [])).startswith("no npu strategy and no host kernel for")))


def _refused_everywhere(node, opsets) -> bool:
    """True when neither an npu strategy nor a host kernel takes ``node`` as it is typed (its
    inputs' static shapes and dtypes, the attributes the partition gives them): an op that
    runs for other shapes or attributes (MeanVarianceNormalization over axes that are not
    the trailing ones) then runs as its ONNX function body."""
    from . import HasStrategy, TensorSpec

    nd = _Node(-1, node, opsets)
    try:
        nd.in_specs = [None if v is None else TensorSpec(*_shape_dtype(v, "")) for v in nd.ins]
    except Exception:  # noqa: BLE001 — not static, or not a tensor: the partition reports it
        return False
    _fold_constant_inputs(nd)
    _scalar_attrs(nd)
    if not str(HasStrategy(nd.op, nd.attrs, nd.in_specs)):
        return False
    host = _host_api()
    return host is None or bool(str(host[0](nd.op, nd.attrs, nd.in_specs)))


def _expand_unsupported(graph):
    """``graph`` with QOperator nodes in their QDQ form (compiler/qlinear.py), RNN/GRU/LSTM
    that run nowhere unrolled over their time steps (compiler/expand_recurrent.py), the
    other nodes that run nowhere replaced by their ONNX function bodies
    (compiler/expand_functions.py) and Scan unrolled over its iterations
    (compiler/expand_scan.py); ``graph`` itself when none is."""
    from . import qlinear
    from .expand_functions import expand_functions
    from .expand_recurrent import expand_recurrent
    from .expand_scan import expand_scan

    graph = expand_functions(expand_recurrent(qlinear.expand(graph), _runs_nowhere), _runs_nowhere,
                             refused=_refused_everywhere)
    unrolled = expand_scan(graph, _runs_nowhere)  # (a function body may hold a Scan, a Scan body such nodes)
    return graph if unrolled is graph else expand_functions(unrolled, _runs_nowhere)


# Constant inputs whose values a strategy needs when compiling, read from attributes of
# these names (the older opsets' form): op -> ((input index, attribute, kind), ...).
_REDUCE_OPS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
               "ReduceL2", "ReduceLogSum", "ReduceLogSumExp")
CONSTANT_INPUT_ATTRS = {
    "Slice": ((1, "starts", "ints"), (2, "ends", "ints"), (3, "axes", "ints"), (4, "steps", "ints")),
    "Pad": ((1, "pads", "ints"), (2, "value", "float"), (3, "axes", "ints")),
    "Split": ((1, "split", "ints"),),
    "Tile": ((1, "repeats", "ints"),),
    "Resize": ((1, "roi", "floats"), (2, "scales", "floats"), (3, "sizes", "ints")),
    "Upsample": ((1, "scales", "floats"),),
    "CumSum": ((1, "axis", "int"),),
    "CumProd": ((1, "axis", "int"),),
    "Pow": ((1, "tc_exponent", "scalar"),),  # a one-element exponent (2: x * x)
    "Dropout": ((1, "ratio", "float"), (2, "training_mode", "int")),
    **{op: ((1, "axes", "ints"),) for op in _REDUCE_OPS},
}


def _scalar_attrs(nd) -> None:
    """ConstantOfShape's ``value`` (a one-element tensor in ONNX) as the number the kernels take."""
    v = nd.attrs.get("value") if nd.op == "ConstantOfShape" else None
    if v is not None and not isinstance(v, (int, float)):
        a = np.asarray(v.numpy() if hasattr(v, "numpy") else v)
        if a.size == 1:
            x = a.reshape(-1)[0]
            nd.attrs["value"] = float(x) if a.dtype.kind in "fc" or a.dtype.kind == "V" else int(x)


def _fold_constant_inputs(nd) -> None:
    """Copies the values of ``nd``'s constant inputs listed in CONSTANT_INPUT_ATTRS into its
    attributes (an attribute already set wins; empty tensors mean "not given"; "scalar": a one-element tensor only)."""
    for index, attr, kind in CONSTANT_INPUT_ATTRS.get(nd.op, ()):
        if index >= len(nd.ins) or nd.ins[index] is None or attr in nd.attrs or nd.ins[index].data is None:
            continue
        a = np.asarray(nd.ins[index].numpy())
        if a.size == 0 or (kind == "scalar" and a.size != 1):
            continue
        if kind == "ints":
            nd.attrs[attr] = [int(x) for x in a.ravel()]
        elif kind == "int":
            nd.attrs[attr] = int(a.ravel()[0])
        elif kind == "floats":
            nd.attrs[attr] = [float(x) for x in a.ravel()]
        else:
            nd.attrs[attr] = float(a.ravel()[0])


# Inputs that the npu strategies need as constants (in the attributes above) and the host
# kernel reads when it runs: a node with such an input that is not a constant runs on the
# host, which reads it and fails when it gives another output shape than the one compiled
# (the shape inference finds or the model declares).
RUN_TIME_INPUTS = {**{op: (1,) for op in _REDUCE_OPS}, "CumSum": (1,), "CumProd": (1,), "Slice": (1, 2, 3, 4),
                   "Pad": (1, 2, 3), "Resize": (1, 2, 3), "Upsample": (1,), "Dropout": (1, 2)}

# Ops whose output shape their input values decide, and whose host kernels fail when a run
# gives another shape than the model declares (the static one they were compiled for).
RUN_TIME_SHAPES = frozenset({"NonMaxSuppression", "Compress", "Range", "NonZero", "Unique"})


def _unread_roi(nd, i) -> bool:
    """Whether input ``i`` of ``nd`` is a Resize's roi that its mode does not read (only
    tf_crop_and_resize does; before opset 11 input 1 is the scales)."""
    return (nd.op == "Resize" and i == 1 and int(nd.attrs.get("_opset", 11)) >= 11
            and nd.attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize")


def _run_time_inputs(nd) -> list[int]:
    """The inputs of RUN_TIME_INPUTS that ``nd`` has and that are not constants."""
    return [i for i in RUN_TIME_INPUTS.get(nd.op, ()) if i < len(nd.ins) and nd.ins[i] is not None
            and nd.ins[i].data is None and int(np.prod(list(nd.in_specs[i].shape), dtype=np.int64)) > 0
            and not _unread_roi(nd, i)
            and not any(attr in nd.attrs for j, attr, _ in CONSTANT_INPUT_ATTRS.get(nd.op, ()) if j == i)]


def _unknown_inputs(nd) -> list[int]:
    """The inputs of CONSTANT_INPUT_ATTRS that ``nd`` has, that are not constants and that no
    kernel reads when it runs (RUN_TIME_INPUTS): the kernels would take a default for them."""
    out = []
    for i, attr, kind in CONSTANT_INPUT_ATTRS.get(nd.op, ()):
        if kind == "scalar" or attr in nd.attrs or i in RUN_TIME_INPUTS.get(nd.op, ()) or \
                SHAPE_INPUTS.get(nd.op) == i:
            continue  # ("scalar": a faster form when known, the input is read anyway; SHAPE_INPUTS: checked)
        if _unread_roi(nd, i):
            continue
        v = nd.ins[i] if i < len(nd.ins) else None
        if v is not None and v.data is None and int(np.prod(list(nd.in_specs[i].shape), dtype=np.int64)) > 0:
            out.append(i)
    return out


def _declared_only(graph) -> dict[str, Any]:
    """value name -> (node, value) for the node outputs whose static shape only the model's
    declaration (ONNX value_info or graph output type) gives: type inference of the node
    alone, on its inputs' types and constant values, does not find it (an input that sets
    the shape is not a constant, or the values of the inputs decide it). The driver must
    not take such a shape on trust: a declaration is checked against inference, never used
    in its place, unless a kernel checks it when it runs."""
    from .. import transform
    from ..frontend import static_shape
    from ..ir.graph import Graph, Node, Value

    out = {}
    opsets = {str(k): int(v) for k, v in graph.opsets.items()}
    for n in graph.nodes:
        declared = [v for v in n.outputs if str(v.name) and static_shape(v) is not None]
        if not declared or any(type(v).__name__ == "Graph" or (isinstance(v, list) and v and type(v[0]).__name__ ==
                                                               "Graph") for v in map(_py, n.attrs.values())):
            continue  # (a subgraph reads values of the graph around it: inferred with it)
        inputs = {}
        for v in n.inputs:
            if v is not None and v.data is None:
                inputs.setdefault(str(v.name), v)
        fresh = [Value(str(v.name)) for v in n.outputs]
        alone = Graph("node", list(inputs.values()), [v for v in fresh if str(v.name)],
                      [Node(str(n.op_type), list(n.inputs), fresh, dict(n.attrs), str(n.name), str(n.domain))],
                      opsets)
        inferred = {str(v.name): static_shape(v) for v in transform.InferTypes({})(alone).nodes[0].outputs}
        for v in declared:
            if inferred.get(str(v.name)) is None:
                out[str(v.name)] = (n, v)
    return out


# more inputs whose values set an output shape (named when the shape is refused)
_MORE_SHAPE_INPUTS = {"Range": (0, 1, 2), "CenterCropPad": (1,), "BlackmanWindow": (0,), "HannWindow": (0,),
                      "HammingWindow": (0,), "MelWeightMatrix": (0, 1, 2)}


def _declared_only_reason(nd, value, detail=None) -> str:
    """Why the shape of ``value`` (an output of ``nd``) is only the model's declaration."""
    from ..ir.graph import _text_of_type

    operands = ([i for i, _, _ in CONSTANT_INPUT_ATTRS.get(nd.op, ())] + [SHAPE_INPUTS.get(nd.op, -1)] +
                list(_MORE_SHAPE_INPUTS.get(nd.op, ())))
    why = next((f"input {i} `{v.name}` is not a constant (its value is known only when the model runs)"
                for i, v in enumerate(nd.ins) if i in operands and v is not None and v.data is None), None)
    why = why or "the values of its inputs decide it, and they are known only when the model runs"
    return (f"output `{value.name}` has only the shape the model declares, {_text_of_type(value.type)}, which "
            f"inference cannot confirm: {why}{f' ({detail})' if detail else ''}; tilecore needs the shape when "
            "compiling (give the value as a constant, an initializer)")


def _input_check(nd, info):
    """The CheckInput step (compiler/input_checks.py) that makes the declared output shape of
    ``nd`` safe, or why there is none (a string, or None)."""
    from ..ir.graph import _text_of_type
    from .input_checks import input_check

    i = SHAPE_INPUTS.get(nd.op)
    if i is None or i >= len(nd.ins) or nd.ins[i] is None or nd.ins[i].data is not None:
        return None
    check = input_check(nd.op, nd.attrs, [None if v is None else info[str(v.name)][0] for v in nd.ins],
                        [info[str(v.name)][0] for v in nd.outs if str(v.name)])
    if not isinstance(check, tuple):
        return check
    v = nd.ins[i]
    attrs = {**check[1], "tc_what": f"node `{nd.name or f'{nd.op}_{nd.index}'}` ({nd.op}): input {i} `{v.name}`",
             "tc_shape": ", ".join(_text_of_type(o.type) for o in nd.outs if str(o.name))}
    step = _make_node(f"{nd.name or nd.op}/check_input{i}", "CheckInput", [v], [], attrs)
    step.where, step.in_specs = "host", [nd.in_specs[i]]
    return step


def _index_check(nd, info):
    """For a node of INDEX_INPUTS: the CheckIndices step that fails a run whose indices are out
    of range (indices computed while the model runs), why constant indices are out of range
    (a string), or None."""
    from .input_checks import index_check, index_error

    i = INDEX_INPUTS.get(nd.op)
    if i is None or i >= len(nd.ins) or nd.ins[i] is None or not nd.ins or nd.ins[0] is None:
        return None
    v, data_shape = nd.ins[i], info[str(nd.ins[0].name)][0]
    what = f"input {i} `{v.name}`"
    if v.data is not None:
        why = index_error(nd.op, nd.attrs, data_shape, v.numpy())
        return f"{what}: {why}" if why else None
    attrs = index_check(nd.op, nd.attrs, data_shape, info[str(v.name)][0])
    if isinstance(attrs, str):
        return f"{what}: {attrs}"
    attrs["tc_what"] = f"node `{nd.name or f'{nd.op}_{nd.index}'}` ({nd.op}): {what}"
    step = _make_node(f"{nd.name or nd.op}/check_indices{i}", "CheckIndices", [v], [], attrs)
    step.where, step.in_specs = "host", [nd.in_specs[i]]
    return step


# tilecore-domain ops (made by the graph passes) rewritten into ONNX ops when the npu has
# no strategy of their own: op -> f(node, fresh_name) -> [(op_type, inputs, outputs, attrs)].
_DECOMPOSE = {
    "SiLU": lambda n, fresh: [("Sigmoid", [n.inputs[0]], [fresh("sigmoid")], {}),
                              ("Mul", [n.inputs[0], "@0"], list(n.outputs), {})],
}


def _decompose(graph, HasStrategy, TensorSpec):
    """``graph`` with the tilecore-domain ops of _DECOMPOSE that lack a strategy rewritten."""
    from ..frontend import static_shape
    from ..ir.graph import Graph, Node, Value

    if not any(str(n.domain) == "tilecore" and str(n.op_type) in _DECOMPOSE for n in graph.nodes):
        return graph
    names = set()
    for n in graph.nodes:
        names.update(str(v.name) for v in n.outputs)
    nodes, changed = [], False
    for n in graph.nodes:
        op = str(n.op_type)
        if str(n.domain) != "tilecore" or op not in _DECOMPOSE:
            nodes.append(n)
            continue
        shape = static_shape(n.inputs[0]) if n.inputs and n.inputs[0] is not None else None
        if shape is not None and HasStrategy(op, {}, [TensorSpec(shape, str(n.inputs[0].type.dtype))]) == "":
            nodes.append(n)
            continue

        made = []

        def fresh(hint, n=n):
            base = f"{n.outputs[0].name}/{hint}"
            name, k = base, 1
            while name in names:
                k += 1
                name = f"{base}_{k}"
            names.add(name)
            v = Value(name, n.outputs[0].type)
            return v

        for op_type, ins, outs, attrs in _DECOMPOSE[op](n, fresh):
            ins = [made[int(x[1:])] if isinstance(x, str) else x for x in ins]
            nodes.append(Node(op_type, ins, outs, dict(attrs), str(n.name), ""))
            made.extend(outs)
        changed = True
    return Graph(str(graph.name), list(graph.inputs), list(graph.outputs), nodes, dict(graph.opsets)) if changed \
        else graph


def _macs(op, ins, outs, attrs=None):
    """Multiply-accumulates of one node (0 for ops without a matrix part)."""
    attrs = attrs or {}
    try:
        if op == "MatMul" and ("tc_b_heads" in attrs or "tc_context" in attrs):
            # the scores (B [.., N, H, K] with tc_b_heads) and the context by V (input 2)
            rows = int(np.prod(ins[0][0][:-1], dtype=np.int64))
            n = ins[1][0][-3] if "tc_b_heads" in attrs else ins[1][0][-1]
            return rows * n * ins[0][0][-1] + (rows * n * ins[2][0][-1] if "tc_context" in attrs else 0)
        if op == "Conv" and len(ins) >= 2:  # (block-diagonal weights: their zeros' products not counted)
            return int(np.prod(outs[0][0], dtype=np.int64) * np.prod(ins[1][0][1:], dtype=np.int64)
                       // int(attrs.get("tc_block_diagonal", 1)))
        if op == "ConvTranspose" and len(ins) >= 2:
            return int(np.prod(ins[0][0], dtype=np.int64) * np.prod(ins[1][0][1:], dtype=np.int64))
        if op == "MatMul":
            return int(np.prod(outs[0][0], dtype=np.int64) * ins[0][0][-1])
        if op == "Gemm" and "tc_row_norm" in attrs:  # (the norm's int8 copy of Y is no product)
            outs = outs[:1]
        if op == "Gemm":  # (sibling Gemms fused: every output's columns)
            return int(sum(np.prod(o[0], dtype=np.int64) for o in outs) * ins[0][0][-1 if len(ins[0][0]) else 0])
    except (IndexError, TypeError):
        return 0
    return 0


def _roofline(m, info, in_l2, cores, macs, prefetched=None, fetching=0):
    """The roofline bound of the node ``m`` (compiler/roofline.h): its MACs at the peak of the
    matrix engine in its ``tc_precision`` (a grouped Conv: the rows of a block its groups can
    fill, or the vector engine's when higher), its values once through the level they live in (``in_l2``: a
    layer group's intermediates; ``prefetched``: weight -> the bytes of it an earlier member
    of the group copied into L2 for ``m``), or one vector pass over its output. ``fetching``:
    the bytes of later members' weights copied from the DDR into L2 during ``m``, which its
    window moves too (so that a prefetch moves a weight's DDR bytes to another member's
    bound, and takes none out of the sum)."""
    from . import _ffi

    def nbytes(v):
        shape, dtype = info[str(v.name)]
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        # (block-diagonal weights: the original's, a k-th of them)
        return n // int(m.attrs.get("tc_block_diagonal", 1)) if len(m.ins) > 1 and v is m.ins[1] else n

    engine, group_rows = "vec", 0
    if macs > 0:
        engine = "mm"
        group = int(m.attrs.get("group", 1)) * int(m.attrs.get("tc_block_diagonal", 1))  # (the original's)
        if m.op == "Conv" and group > 1 and len(m.ins) > 1 and m.ins[1] is not None:
            group_rows = max(1, int(info[str(m.ins[1].name)][0][0]) // group)  # out channels a group
    values = [v for v in list(m.ins) + list(m.outs) if v is not None and str(v.name) in info]
    l2 = sum(nbytes(v) for v in values if str(v.name) in in_l2)
    ddr = sum(nbytes(v) for v in values if str(v.name) not in in_l2)
    for name, n in (prefetched or {}).items():  # read from L2, not the DDR
        moved = min(int(n), nbytes(m.ins[[str(v.name) if v is not None else "" for v in m.ins].index(name)]))
        l2, ddr = l2 + moved, ddr - moved
    l2, ddr = l2 + int(fetching), ddr + int(fetching)
    out = sum(nbytes(v) for v in m.outs if v is not None and str(v.name) in info)
    precision = str(m.attrs.get("tc_precision", "f32")) or "f32"
    r = _ffi.OpRoofline(engine, int(macs), precision, out, ddr, l2, cores, group_rows)
    return {"cycles": float(r["cycles"]), "bound": str(r["bound"]), "engine": str(r["engine"])}


def _view_thresholds(thresholds, nodes):
    """``thresholds`` with each value a view makes, or a view reads, given the range of the
    other end: a view's output is its input's values (FoldMatMulBias's Reshapes to 2-D and
    back). Both ways, along chains: a table calibrated on the ONNX model names the 3-D
    values, the compiler's Gemm writes the 2-D one."""
    out = dict(thresholds)
    pairs = [(str(nd.ins[0].name), str(nd.outs[0].name)) for nd in nodes
             if nd.op in VIEW_OPS and nd.ins and nd.ins[0] is not None and nd.outs and str(nd.outs[0].name)]
    changed = True
    while changed:
        changed = False
        for src, dst in pairs:
            for a, b in ((src, dst), (dst, src)):
                if a in out and b not in out:
                    out[b] = out[a]
                    changed = True
    return out


def _attr_key(attrs):
    key = []
    for k in sorted(attrs):
        v = attrs[k]
        if isinstance(v, (int, float, str, bool)):
            key.append((k, v))
        elif isinstance(v, (list, tuple)):
            key.append((k, tuple(v)))
        else:  # a tensor or a subgraph: not shared between nodes
            key.append((k, "obj", id(v)))
    return tuple(key)


class _Node:
    """One graph node as the driver sees it."""

    __slots__ = ("index", "node", "name", "op", "attrs", "ins", "outs", "in_specs", "where", "reason", "step_name",
                 "merged")

    def __init__(self, index, node, opsets=None) -> None:
        self.index = index
        self.node = node
        self.name = str(node.name)
        from . import _attrs, strategy_name

        d = str(node.domain)
        self.op = strategy_name(str(node.op_type), d)

        attrs = {str(k): _py(v) for k, v in node.attrs.items()}
        # the model's nodes the graph passes merged into this one (a folded BatchNormalization,
        # the ops of a recognised Gelu): [[name, op type], ...], for the debug info
        self.merged = [[str(n), str(op)] for n, op in attrs.pop("_merged", [])]
        self.attrs = _attrs(attrs)
        if "_opset" not in self.attrs and d in (opsets or {}):  # a Graph built by hand: the graph's opset
            self.attrs["_opset"] = int(opsets[d])
        self.ins = [None if v is None else v for v in node.inputs]
        self.outs = list(node.outputs)
        self.where, self.reason, self.in_specs, self.step_name = None, "", None, ""


def _make_node(name, op, ins, outs, attrs):
    """A node the driver adds (an npu step of its own, outside the graph)."""
    nd = _Node.__new__(_Node)
    nd.index, nd.node, nd.name, nd.op, nd.attrs, nd.merged = -1, None, name, op, dict(attrs), []
    nd.ins, nd.outs = list(ins), list(outs)
    nd.where, nd.reason, nd.in_specs, nd.step_name = "npu", "", None, ""
    return nd


def _py(v):
    from ..ffi.container import Array

    return [_py(x) for x in v] if isinstance(v, Array) else v


def _shape_dtype(value, where, decided_by_values=False):
    """(shape, dtype) of a tensor value with a static shape; else a CompileError saying how to
    give one (``decided_by_values``: the op's input values decide the shape, so only the
    model's declaration can)."""
    from ..frontend import static_shape

    from ..ir.graph import OptionalType, SequenceType

    shape = static_shape(value)
    t = getattr(value, "type", None)
    dtype = getattr(t, "dtype", None)
    if isinstance(t, (SequenceType, OptionalType)):
        kind = "a sequence" if isinstance(t, SequenceType) else "an optional"
        raise CompileError(f"{where}: value `{value.name}` is {kind} ({t}); tilecore compiles tensors only")
    if (shape is None or dtype is None) and decided_by_values:
        raise CompileError(f"{where}: value `{value.name}` has no static shape ({t}): the values of the node's "
                           "inputs decide it, and they are known only when the model runs; declare the shape in the "
                           "model (value_info or the graph output's type) to compile for it, checked when it runs")
    if shape is None or dtype is None:
        raise CompileError(f"{where}: value `{value.name}` has no static shape ({t}); give the model's symbolic "
                           "dimensions with input_shapes={name: shape}")
    return tuple(int(d) for d in shape), str(dtype)


# auto_mixed measures the cosine on up to this many calibration samples: the lowest over 16
# holds on other samples where the lowest over 4 fell just short
AUTO_MIXED_SAMPLES = 16


def _compile_auto_mixed(model, target_cosine, target, precision, input_shapes, keep_intermediates, progress, report,
                        calib, calib_samples, qtable, bias_correction=True, fuse=True, group=True, strict=False,
                        pipeline=None):
    from . import auto_mixed as _am
    from .precision import Calibration

    if not calib_samples:
        raise CompileError("auto_mixed needs calib_samples= (input name -> array (N, *shape)) to measure the cosine")
    if isinstance(model, os.PathLike):
        model = os.fspath(model)
    n = min(len(v) for v in calib_samples.values())
    feeds = [{k: np.asarray(v[i]) for k, v in calib_samples.items()} for i in range(min(AUTO_MIXED_SAMPLES, n))]
    kw = {"target": target, "input_shapes": input_shapes, "progress": progress, "bias_correction": bias_correction,
          "fuse": fuse, "group": group, "calib": calib, "calib_samples": calib_samples, "strict": strict,
          "pipeline": pipeline}

    def compile_fn(m, **k):
        exe = compile(m, **k, **kw)
        prec = k["report"]["precision"]
        if "calib_samples" in kw and k["precision"] != "f32":  # calibrate once: the thresholds and means measured, the later compilations reuse
            kw.pop("calib_samples")
            th = prec.get("thresholds") or {}
            kw["calib"] = Calibration(th if calib is None else getattr(calib, "thresholds", calib),
                                      {n: np.asarray(v) for n, v in prec.get("channel_means", {}).items()})
        return exe

    try:
        exe, info, rep = _am.search(compile_fn, model, target_cosine, precision, qtable, {}, feeds)
    except ValueError as e:
        raise CompileError(str(e)) from None
    if keep_intermediates:
        rep = {}
        exe = compile(model, precision=precision, qtable=info["qtable"], keep_intermediates=True, report=rep, **kw)
    if report is not None:
        report.update(rep)
        report["auto_mixed"] = info
    return exe


# set while _compile_verified compiles the executable it then verifies (verify_each asks
# for the verification once, not again in that compile)
_VERIFYING = contextvars.ContextVar("tilecore_compile_verifying", default=False)
# set while a compile runs: the compiles it makes itself do not go through the compile cache
_COMPILING = contextvars.ContextVar("tilecore_compiling", default=False)


def _compile_verified(model, verify, report, calib_samples, options):
    """compile(model, **options), then compiler/verify.py's checks on the executable."""
    from . import verify as _verify
    from .pipeline import PipelineOptions as _pipeline_options
    from .precision import Calibration

    if isinstance(model, os.PathLike):
        model = os.fspath(model)
    rep = {} if report is None else report
    token = _VERIFYING.set(True)
    try:
        exe = compile(model, report=rep, **options)
    finally:
        _VERIFYING.reset(token)
    if isinstance(verify, Mapping):
        feeds = {k: np.asarray(v) for k, v in verify.items()}
    elif calib_samples:
        feeds = {k: np.asarray(v[0]) for k, v in calib_samples.items()}
    else:
        feeds = _verify.sample_inputs(exe.inputs)

    def plain():
        # the same precision and thresholds, every node a step of its own
        # (with the passes the main compile ran: a pass disabled there is disabled here too)
        asked = options.get("pipeline")
        kw = {**options, "fuse": False, "group": False, "auto_mixed": None,
              "pipeline": _pipeline_options(disable=asked.disable) if asked is not None else None}
        prec = rep.get("precision", {})
        if rep.get("auto_mixed"):
            kw["qtable"] = rep["auto_mixed"]["qtable"]
        if prec.get("thresholds") or prec.get("channel_means"):
            kw["calib"] = Calibration(prec.get("thresholds") or {},
                                      {n: np.asarray(v) for n, v in prec.get("channel_means", {}).items()})
            kw["calib_samples"] = None
        return compile(model, **kw)

    graph = _load_graph(model, options["input_shapes"])
    rep["verify"] = _verify.verify(exe, plain, graph, options["precision"], str(options["target"]), feeds)
    return exe


def _parse_target(target):
    """``target``, once parsed before any work: a bad one is the target's error, not the
    first node's. (The string is kept as given: the simulator of verify= reads it too.)"""
    from ..target import Target

    if isinstance(target, Target):
        return target
    try:
        Target(target)
        return target
    except (ValueError, TypeError) as e:
        message = str(e).splitlines()[0]
        raise CompileError(message if message.startswith("target") else f"target: {message}") from None


def check_target_cosine(value: Any) -> float:
    """``auto_mixed``'s target cosine as a float: finite, in (0, 1]; CompileError otherwise."""
    try:
        cosine = float(value)
    except (TypeError, ValueError):
        raise CompileError(f"auto_mixed: a target cosine must be a number in (0, 1], got {value!r}") from None
    if not 0.0 < cosine <= 1.0:  # (NaN fails both comparisons)
        raise CompileError(f"auto_mixed: a target cosine must be in (0, 1], got {value!r}")
    return cosine


def compile(model: Any, target: str | Target = "npu -cores=4", precision: str = "f32",
            input_shapes: Mapping[str, Sequence[int]] | None = None, keep_intermediates: bool = False,
            progress: Callable[..., Any] | None = None, report: dict[str, Any] | None = None, calib: Any = None,
            calib_samples: Mapping[str, np.ndarray] | None = None,
            qtable: Mapping[str, str] | str | os.PathLike[str] | None = None,
            auto_mixed: float | None = None, bias_correction: bool = True, fuse: bool = True,
            group: bool = True, verify: bool | Mapping[str, np.ndarray] = False,
            ungroup: Sequence[str] = (), dims: Mapping[str, Sequence[int]] | None = None,
            batch: str | Mapping[str, int] | None = None, strict: bool = False,
            pipeline: PipelineOptions | None = None,
            cache_dir: str | os.PathLike[str] | None = None) -> Executable:
    """Compiles a model to an :class:`tilecore.runtime.Executable`.

    :param model: a :class:`tilecore.ir.graph.Graph`, a path to a ``.onnx`` file, its
        bytes, or an ``onnx.ModelProto``.
    :param target: the npu target (``"npu -cores=N"``); host steps run through ``c``.
    :param precision: ``"f32"``, ``"f16"``, ``"bf16"`` or ``"int8"``: what the matrix ops
        (Conv, MatMul, Gemm) compute in (docs/precision.md); other ops run in f32.
    :param calib: int8 activation thresholds: a mapping value name -> threshold (symmetric
        absmax) or an object with a ``.thresholds`` mapping of that form.
    :param calib_samples: without ``calib``, the thresholds are the min/max of the values
        over these samples (input name -> array (N, *shape), sample i is array[i]).
    :param qtable: ONNX node name -> precision, overriding ``precision`` per node.
    :param auto_mixed: a target cosine: the most sensitive matrix nodes move to bf16 (to
        f32 from f16/bf16) until the outputs' cosine against the f32 compilation on the
        first 16 of ``calib_samples`` reaches it (compiler/auto_mixed.py); the report's
        ``auto_mixed`` says which nodes moved and the cosine reached.
    :param bias_correction: with ``calib_samples`` (or a ``calib`` object carrying
        ``channel_means``), the bias of each int8, f16 or bf16 Conv and Gemm (and int8
        MatMul) absorbs the expected output shift the rounding of its weights causes, from
        the per-channel means of its data input on those samples (docs/precision.md).
    :param fuse: epilogue fusion (docs/compiler.md): a Conv computes the residual Add and
        the Relu or Clip after it. ``False`` keeps every node a step (a debugger session
        that stops at each); ``keep_intermediates`` implies it.
    :param group: layer groups (docs/compiler.md): runs of npu steps compiled as one kernel
        whose intermediates stay in L2. ``False`` (implied by ``fuse=False`` and by
        ``keep_intermediates``) keeps one step per node, for per-layer profiles.
    :param ungroup: step names (a layer group's ``nodes``) kept out of layer groups, each
        a step of its own, the other groups as they were (``tilecore compare`` bisects
        the groups with it).
    :param strict: a fallback to a plan other than the one chosen (``plan_fallbacks`` and
        ``group_splits`` below) is a CompileError naming each, instead of a record.
    :param pipeline: a :class:`tilecore.compiler.pipeline.PipelineOptions`: the graph printed
        or dumped after chosen passes, each graph pass verified against the imported model,
        passes disabled by name (docs/compiler.md, "The pipeline"). With buckets or
        ``auto_mixed`` it may only disable passes.
    :param input_shapes: input name -> shape, binding symbolic dimensions; or input name ->
        a list of shapes, one per bucket (compiler/buckets.py, docs/compiler.md "Shape buckets"):
        one executable whose runs take any of those shapes, its constants stored once.
    :param dims: symbolic dimension name -> sizes: a bucket for every combination of them.
    :param batch: with buckets, the batch dimension (its name in ``dims``, or input name ->
        axis): a smaller batch runs padded in the next larger bucket, its outputs cropped,
        once the compiler has shown that the model keeps the rows of a batch apart
        (compiler/batch_rows.py; otherwise a CompileError names the node that mixes them).
    :param verify: check the executable before returning it (compiler/verify.py,
        docs/compiler.md "Verification"): on sample inputs (``True``: the first of
        ``calib_samples``, else seeded ones; or input name -> array) it runs in the
        simulator's hazard mode, each value a step writes is compared with the same model
        compiled one node a step, and (in f32) with the reference evaluator. Raises
        :class:`VerifyError` naming the layer group, fused node or node that fails; the
        report's ``verify`` holds the figures.
    :param keep_intermediates: every value in its own buffer, and every intermediate
        value an extra output named by its (ONNX) value name.
    :param progress: ``progress(i, n, node_name)`` called before each node is lowered.
    :param report: a dict, filled with what was done: step counts, ``host_ops`` (name,
        op type, reason), ``placement`` (name, op type and ``npu``, ``host``, ``view`` or
        ``dropped`` for every node), ``fused`` (``[{"node": conv, "fused": [names]}]``),
        ``int8_edges`` (the values stored in int8 between int8 Convs),
        ``shared_quantisation`` (the f32 values several int8 matrix ops read, quantised
        once by a QuantizeLinear step), ``copied_inputs`` (those of them the QuantizeLinear
        also writes as it loaded them, for their other readers), ``scaled_weights`` (``[{"node", "step"}]``: the int8
        Convs whose channel scale a ChannelScaledWeights step puts on their weights), ``block_diagonal_groups``
        (``[{"node", "groups", "as"}]``: the int8 grouped Convs compiled with fewer, wider groups, their
        weights block-diagonal), ``memory`` (``arena_size``, ``total_size`` without reuse,
        ``lower_bound``: the most bytes alive at one step), ``seconds`` per stage and
        ``precision`` (``assigned``: node -> precision of the matrix nodes not in f32,
        ``fallbacks``: nodes kept in f32 with the reason, ``bias_correction``: node -> the
        largest shift its bias absorbed, ``channel_means``: the means it used) and ``qdq`` (``folded``: the
        quantised model's matrix nodes now in int8, ``kept``: those left in f32 with
        the reason); ``groups`` (``[{"step", "nodes", "internal", "l2_bytes", "prefetch"}]``: each layer
        group's step, its nodes, the values kept in L2, the most of them live at once, and
        the weights prefetched into L2: name -> ``{"reader", "bytes", "during", "bytes_during"}``); ``group_splits``
        (``[{"nodes", "reason"}]``: each group whose kernel did not build, split in halves, and
        the first line of the error); ``groups_regrouped`` (the same for each run whose kernel
        did not build with 85% of L2 for its values and was grouped again with 3 MiB: the
        budget's second try, not a fallback); ``plan_fallbacks`` (``[{"nodes", "what", "reason"}]``: each
        plan or rewrite the compiler chose that did not lower or build, and the correct one
        it took instead: a member's plan for its L2 tensors (its DDR plan instead), a group
        with its weights prefetched (the group without them), a fused node (the nodes as
        they were)); ``graph``: the text of the graph the steps are made from (after the
        graph passes; ``tilecore compile --dump-graph``); ``npu_funcs``: step
        name -> the strategy's PrimFunc of each npu step (what ``compiler.estimate_cost``
        prices); ``custom_kernels``: the steps a custom kernel runs (compiler/custom_kernel.py);
        ``passes``: each pass as it ran, ``[{"pass", "level", "seconds", "rss_delta_mb"}]`` (level:
        how deep it nests in another; the resident memory it added, MiB).
    :param cache_dir: a folder of compiled executables (compiler/compile_cache.py, docs/compiler.md
        "Compile cache"; default ``$TILECORE_COMPILE_CACHE``, else none): one compiled from the
        same model bytes, options and tilecore is loaded from it instead of compiled, its
        report as that compile left it (without ``npu_funcs``); a new one is stored in it.
        ``report["compile_cache"]`` says ``hit`` and ``key``, or the ``reason`` it was not used.
    :raises CompileError: (a ValueError) unsupported nodes, non-static shapes, a bad
        precision — naming the node, its op type and the reason.
    """
    options = dict(target=target, precision=precision, input_shapes=input_shapes,
                   keep_intermediates=keep_intermediates, calib=calib, calib_samples=calib_samples, qtable=qtable,
                   auto_mixed=auto_mixed, bias_correction=bias_correction, fuse=fuse, group=group, verify=verify,
                   ungroup=ungroup, dims=dims, batch=batch, strict=strict, pipeline=pipeline)
    outermost = not _COMPILING.get()
    where = _compile_cache.folder(cache_dir) if outermost else None
    if outermost:  # (the Conv plans a compile chooses depend on its own plan searches only)
        from . import _ffi as _compiler_ffi

        _compiler_ffi.ForgetPlanChoices()
    token = _COMPILING.set(True)  # (the compiles a compile makes, verify's and the buckets', are not cached)
    try:
        with _plans_disabled(pipeline):
            if where is None:
                return _compile(model, progress=progress, report=report, **options)
            return _compile_cached(where, model, options, progress, report)
    finally:
        _COMPILING.reset(token)


def _kernel_pipeline_runs() -> int:
    """How many modules the kernel pipeline has lowered in this process (C++ codegen's
    count; a module found lowered before is not counted)."""
    from ..ffi.function import get_global_func

    return int(get_global_func("codegen.KernelPipelineRuns")())


def _checked_disabled_plans() -> list[str]:
    """The plans the current PassContext's ``compiler.disabled_plans`` names, checked before
    any strategy reads them (a strategy's error would reach a fallback, not the user): a name
    that is no plan, or a plan of last resort, is a CompileError."""
    from .. import transform
    from . import pipeline as _pipeline

    names = _pipeline.plan_names(transform.PassContext.current().config.get("compiler.disabled_plans"))
    for n in names:
        why = _pipeline.plan_refusal(n)
        if why:
            raise CompileError(f"compiler.disabled_plans: {why}")
    return names


def _plans_disabled(pipeline: Any) -> Any:
    """A PassContext like the current one whose option ``compiler.disabled_plans`` adds the
    plans ``pipeline.disable`` names (the strategies read it: docs/compiler.md, "Plans"); no
    context when it names none (a name neither a pass nor a plan is the pipeline's error)."""
    import contextlib

    names = getattr(pipeline, "disabled_plans", None)
    if not names:
        return contextlib.nullcontext()
    from .. import transform
    from . import pipeline as _pipeline

    ctx = transform.PassContext.current()
    config = {str(k): v for k, v in dict(ctx.config).items()}
    have = _pipeline.plan_names(config.get("compiler.disabled_plans"))
    config["compiler.disabled_plans"] = ",".join(sorted(set(have) | set(names)))
    return transform.PassContext(opt_level=int(ctx.opt_level), config=config, disabled=[str(d) for d in ctx.disabled],
                                 instruments=list(ctx.instruments))


def _compile_cached(where: str, model: Any, options: dict[str, Any], progress: Callable[..., Any] | None,
                    report: dict[str, Any] | None) -> Executable:
    """compile() through the compile cache in ``where`` (compiler/compile_cache.py)."""
    rep = {} if report is None else report
    _compile_cache.max_bytes()  # (a bad $TILECORE_COMPILE_CACHE_BYTES is named before the compile, not after)
    try:
        k = _compile_cache.key(model, options)
    except _compile_cache.Uncacheable as e:
        exe = _compile(model, progress=progress, report=rep, **options)
        rep["compile_cache"] = {"folder": where, "hit": False, "reason": str(e)}
        return exe
    got = _compile_cache.load(where, k)
    if got is not None:
        exe, stored = got
        rep.update(stored)
        rep["compile_cache"] = {"folder": where, "hit": True, "key": k}
        return exe
    exe = _compile(model, progress=progress, report=rep, **options)
    info: dict[str, Any] = {"folder": where, "hit": False, "key": k}
    try:
        info["not_kept"] = _compile_cache.store(where, k, exe, rep)
    except OSError as e:  # the executable is correct; only the cache misses it
        info["reason"] = f"not stored: {e}"
    rep["compile_cache"] = info
    return exe


def _compile(model: Any, target: str | Target, precision: str, input_shapes: Mapping[str, Sequence[int]] | None,
             keep_intermediates: bool, progress: Callable[..., Any] | None, report: dict[str, Any] | None,
             calib: Any, calib_samples: Mapping[str, np.ndarray] | None,
             qtable: Mapping[str, str] | str | os.PathLike[str] | None, auto_mixed: float | None,
             bias_correction: bool, fuse: bool, group: bool, verify: bool | Mapping[str, np.ndarray],
             ungroup: Sequence[str], dims: Mapping[str, Sequence[int]] | None,
             batch: str | Mapping[str, int] | None, strict: bool, pipeline: PipelineOptions | None) -> Executable:
    """compile() itself, the compile cache aside."""
    from .. import build as _build, transform
    from ..runtime import ExecutableBuilder
    from . import HasStrategy, LowerOp, TensorSpec, _ffi, _spec

    if precision not in PRECISIONS:
        raise CompileError(f"precision `{precision}` is not supported (supported: {', '.join(PRECISIONS)})")
    from . import buckets as _buckets
    from . import pipeline as _pipeline

    try:
        pipe = _pipeline.Pipeline(pipeline)
    except ValueError as e:
        raise CompileError(f"pipeline: {e}") from None
    disabled_plans = _checked_disabled_plans()
    bucketed = dims or any(_buckets.is_bucket_list(v) for v in (input_shapes or {}).values())
    if (bucketed or auto_mixed is not None) and pipe.options.inspects:
        raise CompileError("pipeline: printing, dumping or verifying each pass is for one compilation: not with "
                           "buckets or auto_mixed (compile one bucket, or the qtable auto_mixed found)")
    if pipe.options.verify_each and (verify is False or verify is None) and not _VERIFYING.get():
        verify = True  # (the driver's passes: the executable verified step by step)

    if bucketed:
        if auto_mixed is not None:
            raise CompileError("auto_mixed with buckets: search the qtable on one bucket (report['auto_mixed']"
                               "['qtable']) and compile the buckets with qtable=")
        declared = _buckets.declared_shapes(model)
        shapes = _buckets.expand(declared, input_shapes, dims)
        return _buckets.compile_buckets(compile, model, declared, shapes, batch, calib_samples, report, dict(
            target=target, precision=precision, keep_intermediates=keep_intermediates, progress=progress,
            calib=calib, qtable=qtable, bias_correction=bias_correction, fuse=fuse, group=group, verify=verify,
            ungroup=ungroup, strict=strict, pipeline=pipeline))
    if batch is not None:
        raise CompileError("batch= declares the batch of buckets: give several shapes (input_shapes= lists or dims=)")
    target = _parse_target(target)
    from ..target import Target as _Target

    cores = int((target if isinstance(target, _Target) else _Target(target)).options["cores"])
    if calib_samples:
        from .calibration import check_samples

        check_samples(calib_samples)  # a NaN would make every threshold and channel mean it reaches NaN
    if auto_mixed is not None:
        check_target_cosine(auto_mixed)
    if verify is not False and verify is not None:
        return _compile_verified(model, verify, report, calib_samples, dict(
            target=target, precision=precision, input_shapes=input_shapes, keep_intermediates=keep_intermediates,
            progress=progress, calib=calib, calib_samples=calib_samples, qtable=qtable, auto_mixed=auto_mixed,
            bias_correction=bias_correction, fuse=fuse, group=group, strict=strict, pipeline=pipeline))
    if auto_mixed is not None:
        return _compile_auto_mixed(model, float(auto_mixed), target, precision, input_shapes, keep_intermediates,
                                   progress, report, calib, calib_samples, qtable, bias_correction, fuse, group,
                                   strict, pipeline)
    for node_name, p in (qtable or {}).items():
        if p not in PRECISIONS:
            raise CompileError(f"qtable: node `{node_name}` has precision `{p}` (supported: {', '.join(PRECISIONS)})")
    timings = {}
    plan_fallbacks = []  # a chosen plan or rewrite that did not lower or build, and what was taken instead
    t0 = time.perf_counter()
    pipelines_before = _kernel_pipeline_runs()
    from . import block_diagonal_groups as _block_diagonal
    from . import custom_kernel as _custom
    from . import fuse_epilogue as _fuse
    from . import gemm_norm as _gemm_norm
    from . import int8_edges as _int8_edges
    from . import layer_groups as _groups
    from . import qdq as _qdq
    from . import scaled_weights as _scaled_weights
    from . import shared_quantise as _shared
    from . import sibling_gemms as _siblings
    from . import weight_prefetch as _prefetch

    # the quantised weights (DequantizeLinear of a constant) before folding makes them f32
    dq_consts = {} if hasattr(model, "nodes") else _qdq.model_dequantized_constants(
        os.fspath(model) if isinstance(model, os.PathLike) else model)
    shape_checks = []  # (graph input, CheckInput attributes): compiled for one value of it
    if pipe.options.verify_each:  # the reference: the model before any pass, constants unfolded
        from ..ir.graph import Graph as _Graph

        if isinstance(model, _Graph):
            pipe.set_reference(transform.InferTypes({k: [int(d) for d in v] for k, v in
                                                     (input_shapes or {}).items()})(model))
        else:
            from .. import frontend

            pipe.set_reference(frontend.from_onnx(os.fspath(model) if isinstance(model, os.PathLike) else model,
                                                  input_shapes=input_shapes, fold_constants=False))
    with pipe.graph_passes():
        with pipe.step("Import", lambda: graph.text(), lambda: graph):
            graph = _import_graph(model, input_shapes, shape_checks)
        with pipe.step("ExpandUnsupported", lambda: graph.text(), lambda: graph):
            graph = _expand_unsupported(graph)
        dq_consts.update(_qdq.graph_dequantized_constants(graph))
        graph = transform.CanonicalizeGraph()(graph)
        graph = transform.FoldMatMulBias()(graph)  # the bias into the matrix engine (Gemm's C)
        if "int8" not in {precision} | set((qtable or {}).values()):
            # (YOLO's Sigmoid after Reshape, Transpose; in int8 the Conv's output is stored
            # int8 and the activation is a table of it, moved into the Conv the f32 result
            # would be: four times the bytes)
            graph = transform.HoistActivations()(graph)
        graph = _fold_to_fixed_point(graph, pipe=pipe)
        if not pipe.disabled("Decompose"):
            with pipe.step("Decompose", lambda: graph.text(), lambda: graph):
                graph = _decompose(graph, HasStrategy, TensorSpec)
    if report is not None:  # the compiled graph's text: a line per node, `@ "NAME"` its name (tdb's b graph:LINE)
        report["graph"] = graph.text()
    timings["import_and_passes"] = time.perf_counter() - t0

    # ---- partition --------------------------------------------------------------------
    t0 = time.perf_counter()
    pipe.begin("Partition")
    host = _host_api()
    graph_outputs = {str(v.name) for v in graph.outputs}
    opsets = {str(k): int(v) for k, v in graph.opsets.items()}
    nodes = [_Node(i, n, opsets) for i, n in enumerate(graph.nodes)]
    declared_only = _declared_only(graph)
    checks = {}  # id(node) -> the CheckInput and CheckIndices steps that run before it
    info = {}  # value name -> (shape, dtype)
    for v in graph.inputs:
        info[str(v.name)] = _shape_dtype(v, f"graph input `{v.name}`")
    unsupported = []
    for nd in nodes:
        where = f"node `{nd.name}` ({nd.op})"
        specs = []
        for v in nd.ins:
            if v is None:
                specs.append(None)
                continue
            sd = info.get(str(v.name)) or _shape_dtype(v, where)
            info[str(v.name)] = sd
            specs.append(sd)
        for v in nd.outs:
            if str(v.name):
                info[str(v.name)] = _shape_dtype(v, where, nd.op in RUN_TIME_SHAPES)
        try:
            nd.in_specs = [None if s is None else TensorSpec(*s) for s in specs]
        except Exception as e:  # a dtype the kernel types cannot spell (string, complex)
            unsupported.append(f"  node `{nd.name}` ({nd.op}): {str(e).splitlines()[0]}")
            continue
        _fold_constant_inputs(nd)
        _scalar_attrs(nd)
        run_time, unknown = _run_time_inputs(nd), _unknown_inputs(nd)
        if unknown:
            unsupported.append(f"  node `{nd.name}` ({nd.op}): " + "; ".join(
                f"input {i} `{nd.ins[i].name}` is not a constant (its value is known only when the model runs); "
                "tilecore needs it when compiling (give it as a constant, an initializer)" for i in unknown))
            continue
        unchecked = next((declared_only[str(v.name)][1] for v in nd.outs if str(v.name) in declared_only), None)
        if unchecked is not None and not run_time and nd.op not in RUN_TIME_SHAPES:
            check = _input_check(nd, info)
            if not isinstance(check, _Node):
                unsupported.append(f"  node `{nd.name}` ({nd.op}): {_declared_only_reason(nd, unchecked, check)}")
                continue
            checks[id(nd)] = [check]  # compiled for the declared shape, checked when it runs
            unchecked = None
        index_check = _index_check(nd, info)
        if isinstance(index_check, str):
            unsupported.append(f"  node `{nd.name}` ({nd.op}): {index_check}")
            continue
        if index_check is not None:  # indices out of range fail the run, not clamped
            checks.setdefault(id(nd), []).append(index_check)
        if (nd.op in VIEW_OPS and not keep_intermediates and nd.ins and nd.ins[0] is not None
                and str(nd.outs[0].name) not in graph_outputs and nd.ins[0].data is None):
            nd.where = "view"
            continue
        if run_time:  # the host reads them when it runs; the npu would need them now
            reason = "; ".join(f"input {i} `{nd.ins[i].name}` is not a constant: the npu strategy needs its value "
                               "when compiling" for i in run_time)
        elif unchecked is not None:  # RUN_TIME_SHAPES: the host kernel checks the shape when it runs
            reason = f"the shape of output `{unchecked.name}` is known only when the model runs"
        else:
            reason = HasStrategy(nd.op, nd.attrs, nd.in_specs)
        if not reason:
            nd.where = "npu"
            continue
        host_reason = "this build has no host kernels"
        if host is not None:
            host_reason = str(host[0](nd.op, nd.attrs, nd.in_specs))
            if not host_reason:
                nd.where, nd.reason = "host", reason
                continue
        if unchecked is not None:  # a kernel that checks the shape is not there
            host_reason += f"; {_declared_only_reason(nd, unchecked)}"
        unsupported.append(f"  node `{nd.name}` ({nd.op}): npu: {reason}; host: {host_reason}")
    if unsupported:
        raise CompileError(f"cannot compile {len(unsupported)} node(s) of graph `{graph.name}`:\n" +
                           "\n".join(unsupported))
    timings["partition"] = time.perf_counter() - t0

    def text():
        return _pipeline.nodes_text(nodes, info)

    pipe.end(text)
    model_dtypes = {k: v[1] for k, v in info.items()}  # (precision and int8 edges change info's)

    # ---- precision (docs/precision.md) ---------------------------------------------------
    t0 = time.perf_counter()
    pipe.begin("Precision")
    qdq_report = _qdq.fold(nodes, info, graph_outputs, keep_intermediates, HasStrategy, TensorSpec, dq_consts)
    from . import precision as _prec

    precision_report = {"assigned": {}, "fallbacks": []}
    wanted = {precision} | set((qtable or {}).values())
    narrow = [nd for nd in nodes if nd.where == "npu" and nd.op in _prec.MATRIX_OPS
              and (qtable or {}).get(nd.name, precision) != "f32"]
    means = getattr(calib, "channel_means", None) if bias_correction else None
    mean_axes = {}
    if bias_correction and means is None and calib_samples:
        for nd in narrow:
            axis = _prec.mean_axis(nd)
            if axis is not None:
                mean_axes[str(nd.ins[0].name)] = axis
    try:
        thresholds = _prec.thresholds_of(calib) if "int8" in wanted else None
        names = set()
        if "int8" in wanted and thresholds is None:
            for nd in narrow:
                if (qtable or {}).get(nd.name, precision) == "int8":
                    names.update(_prec.quantisable_inputs(nd) or ())
                    if not keep_intermediates:  # an int8 edge read only as a residual or by a lookup table
                        names.update(str(v.name) for v in nd.outs if str(v.name))
            if not keep_intermediates:  # an int8 edge a global pooling dequantises (int8_edges.py)
                names.update(str(nd.ins[0].name) for nd in nodes if nd.where == "npu" and nd.ins
                             and nd.ins[0] is not None and nd.op in _int8_edges.DEQUANTISING_OPS)
        if names or mean_axes:
            absmax, computed = _prec.activation_statistics(graph, calib_samples, names, mean_axes)
            if names:
                thresholds = absmax
            if mean_axes:
                means = computed
        if thresholds is not None:
            thresholds = _view_thresholds(thresholds, nodes)
        precision_report = _prec.assign(nodes, info, precision, qtable, thresholds, HasStrategy, TensorSpec, means)
    except ValueError as e:
        raise CompileError(str(e)) from None
    precision_report["channel_means"] = {k: [float(x) for x in v] for k, v in (means or {}).items()}
    timings["precision"] = time.perf_counter() - t0
    pipe.end(text)

    # ---- epilogue fusion (docs/compiler.md): off when every intermediate is kept -------
    fused = []
    if not keep_intermediates and fuse and not pipe.disabled("FuseEpilogue"):
        with pipe.step("FuseEpilogue", text):
            fused = _fuse.fuse(nodes, info, graph_outputs, HasStrategy, TensorSpec)
    int8_edges, lut_convs = [], []
    if not keep_intermediates and not pipe.disabled("Int8Edges"):
        pipe.begin("Int8Edges")
        # (a QDQ model says where its values are quantised: no quantisation is added to it)
        int8_edges = _int8_edges.assign(nodes, info, graph_outputs, HasStrategy, TensorSpec, thresholds,
                                        dequantising_readers=not (qdq_report or {}).get("folded"))
    codes = _int8_edges.stored_codes(nodes, info, model_dtypes) if int8_edges else {}
    if int8_edges and fuse:  # a table op or a Softmax that alone reads an int8 MatMul: in its epilogue
        fused += _int8_edges.fold_lookup_tables(nodes, info, graph_outputs, HasStrategy)
        lut_convs = _int8_edges.fold_conv_activations(nodes, thresholds, HasStrategy)
        fused += _int8_edges.fold_softmax(nodes, info, graph_outputs, HasStrategy, TensorSpec)
        fused += _int8_edges.fold_key_transpose(nodes, info, graph_outputs, HasStrategy, TensorSpec)
        fused += _int8_edges.fold_context(nodes, info, graph_outputs, HasStrategy, TensorSpec)
    if not keep_intermediates and not pipe.disabled("Int8Edges"):
        pipe.end(text)

    def rewrite_not_made(nd, e):  # a rewrite whose strategy took the node but did not lower it
        record = {"nodes": [nd.name or f"{nd.op}_{nd.index}"],
                  "what": f"the rewrite into {nd.op}: the nodes as they were instead",
                  "reason": (str(e).splitlines() or [type(e).__name__])[0]}
        if record not in plan_fallbacks:  # (a rewrite may be tried more than once)
            plan_fallbacks.append(record)

    def lowered(nd, record=True):  # a node the driver rewrote, lowered on the npu here (None: no kernel for it)
        if HasStrategy(nd.op, nd.attrs, nd.in_specs):
            return None
        try:
            return LowerOp(nd.op, nd.attrs, nd.in_specs, [TensorSpec(*info[str(v.name)]) for v in nd.outs], target)
        except Exception as e:  # noqa: BLE001 (no kernel for it here: the rewrite is not made)
            _raise_if_defect(e)
            if record:
                rewrite_not_made(nd, e)
            return None

    def lowers(nd):  # whether a node the driver rewrote lowers on the npu here
        return lowered(nd) is not None

    def cycles(nd, record=True):  # the cost model's cycles of a node's kernel here (None: it has none)
        from . import estimate_cost

        f = lowered(nd, record)
        if f is None:
            return None
        try:
            return int(estimate_cost(f, target)["cycles"])
        except Exception as e:  # noqa: BLE001 (its plan does not fit once placed: the rewrite is not made)
            _raise_if_defect(e)
            if record:
                rewrite_not_made(nd, e)
            return None

    # a squeeze-excite's channel scale on an int8 Conv's weights, when they are the fewer
    scaled_weights = []
    if int8_edges and fuse and not pipe.disabled("ChannelScaleToWeights"):
        with pipe.step("ChannelScaleToWeights", text):
            scaled_weights = _scaled_weights.apply(nodes, info, _make_node, HasStrategy, TensorSpec, lowers,
                                                    cores, cycles)

    # an int8 grouped Conv of few channels a group as fewer, wider groups
    block_diagonal = []
    if fuse and not pipe.disabled("BlockDiagonalGroups"):
        with pipe.step("BlockDiagonalGroups", text):
            # (a k whose Conv does not lower is a candidate priced, not a rewrite that fell back)
            block_diagonal = _block_diagonal.apply(nodes, info, TensorSpec, lambda nd: cycles(nd, record=False))

    # one quantisation for an f32 activation several int8 matrix ops read
    shared_quantised = []
    if not keep_intermediates and not pipe.disabled("ShareQuantisation"):
        with pipe.step("ShareQuantisation", text):
            shared_quantised = _shared.share(nodes, info, _make_node, HasStrategy, TensorSpec, lowers if fuse else None)
    # int8 Gemms of one A (attention's projections), stored split by the column plan: not
    # with that plan disabled (docs/compiler.md, "Plans")
    if int8_edges and fuse and not pipe.disabled("SiblingGemms") and "gemm.columns" not in disabled_plans:
        with pipe.step("SiblingGemms", text):
            fused += _siblings.fuse(nodes, info, TensorSpec, lowers)

    if fuse and not keep_intermediates and not pipe.disabled("GemmNorm"):  # an int8 Gemm's LayerNormalization
        with pipe.step("GemmNorm", text):
            fused += _gemm_norm.fuse(nodes, info, graph_outputs, TensorSpec, cycles)
    copied = []  # the f32 inputs a shared quantisation also writes, for their other readers
    if shared_quantised and fuse:
        with pipe.step("ShareQuantisation", text):
            copied = _shared.copy_inputs(nodes, info, TensorSpec, lowers)
            _shared.drop_unread_floats(nodes, graph_outputs, lowers)

    nodes = [x for nd in nodes for x in checks.get(id(nd), []) + [nd]]
    for k, (v, attrs) in enumerate(shape_checks):  # (their inputs are graph inputs: they run first)
        step = _make_node(f"{v.name}/check_input", "CheckInput", [v], [], attrs)
        step.where, step.in_specs = "host", [TensorSpec(*info[str(v.name)])]
        nodes.insert(k, step)

    # ---- lower and build ----------------------------------------------------------------
    t0 = time.perf_counter()
    pipe.begin("Lower")
    b = ExecutableBuilder(precision=precision)
    cache = {}  # kernel key -> (Module, function name, input params); an npu Module is built
    # once the layer groups are known (None until then: a grouped node's own is never built)
    steps = []  # (node, module, function, input params)
    # kernel key -> the strategy's PrimFunc, lowered when first asked for (a layer group's
    # members are lowered again for their tensors in L2: most never need their own);
    # step name -> the PrimFunc
    npu_funcs, step_funcs = {}, {}

    def lazy_lower(nd, out_specs):
        done = []

        def get():
            if not done:
                try:
                    done.append(LowerOp(nd.op, nd.attrs, nd.in_specs, out_specs, target))
                except Exception as e:
                    raise CompileError(f"node `{nd.name}` ({nd.op}) on the npu: {str(e).splitlines()[0]}") from e
            return done[0]
        return get

    step_keys = []  # the kernel key of each step
    key_of = {}  # id(node) -> its kernel key
    used_names = set()
    for i, nd in enumerate(nodes):
        if progress is not None:
            progress(i, len(nodes), nd.name)
        if nd.where in ("view", "dropped"):
            continue
        out_specs = [TensorSpec(*info[str(v.name)]) if str(v.name) else None for v in nd.outs]
        if any(s is None for s in out_specs):
            raise CompileError(f"node `{nd.name}` ({nd.op}): an omitted output is not supported")
        key = (nd.where, nd.op, _attr_key(nd.attrs),
               tuple(None if s is None else info[str(v.name)] for v, s in zip(nd.ins, nd.in_specs)),
               tuple(info[str(v.name)] for v in nd.outs))
        hit = cache.get(key)
        if hit is None:
            try:
                if nd.where == "npu":
                    mod = None
                    npu_funcs[key] = lazy_lower(nd, out_specs)
                    symbol, n_in = _ffi.KernelSignature(nd.op, len(nd.in_specs))
                    fn, in_params = str(symbol), int(n_in)
                else:
                    f = host[1](nd.op, nd.attrs, [_spec(s) for s in nd.in_specs], out_specs)
                    mod = _build(f, target="c")
                    n_params = len(f.params)
                    in_params = int(f.attrs["input_params"]) if "input_params" in f.attrs else n_params - len(nd.outs)
                    fn = str(f.attrs["global_symbol"]) if "global_symbol" in f.attrs else mod.functions[0]
            except CompileError:
                raise
            except Exception as e:
                raise CompileError(f"node `{nd.name}` ({nd.op}) on the {nd.where}: "
                                   f"{str(e).splitlines()[0]}") from e
            hit = (mod, fn, in_params)
            cache[key] = hit
        base = nd.name or f"{nd.op}_{nd.index}"
        step_name, k = base, 1
        while step_name in used_names:
            k += 1
            step_name = f"{base}#{k}"
        used_names.add(step_name)
        nd.step_name = step_name
        steps.append((nd,) + hit)
        step_keys.append(key)
        key_of[id(nd)] = key
    pipe.end(lambda: _pipeline.nodes_text([nd for nd, *_ in steps], info))
    groups_made, group_splits, groups_regrouped = [], [], []
    step_kernels = [npu_funcs.get(k) for k in step_keys]
    custom_steps = [nd.step_name for nd, *_ in steps
                    if nd.where == "npu" and _custom.registered() and _custom.takes(nd.op, nd.attrs, nd.in_specs)]
    estimates = {}  # id(a group's PrimFunc) -> (it, the cost model's estimate of it)

    def group_estimate(f):
        from . import estimate_cost

        if id(f) not in estimates:
            estimates[id(f)] = (f, estimate_cost(f, target))
        return estimates[id(f)][1]

    if group and fuse and not keep_intermediates and not pipe.disabled("LayerGroups"):
        from . import GroupKernels

        pipe.begin("LayerGroups")
        group_cache, member_cache = {}, {}
        in_place = not pipe.disabled("ConcatInPlace")

        def in_l2(k, f, row, internal, slices=1):
            # the member lowered again knowing which of its params are the group's L2
            # intermediates (and prefetched weights), so that its plan is chosen for where
            # its tensors are
            return lowered_for(k, f, tuple(p for p, t in enumerate(row) if t in internal), slices)

        def lowered_for(k, f, where, slices=1, probe=False):
            # step k lowered with its params `where` in L2; with slices, for one slice of the
            # batch (its activations' first dimension divided: layer_groups.py, "Batch slices");
            # a probe's failure is raised, not recorded (no group may take it so)
            if not where and slices == 1:
                return f()
            mkey = (step_keys[k], where, steps[k][0].attrs.get("tc_row_norm_rows"), slices)
            if mkey not in member_cache:
                nd = steps[k][0]
                in_specs, out_specs = nd.in_specs, [TensorSpec(*info[str(v.name)]) for v in nd.outs]
                if slices > 1:
                    def sliced(v, spec):
                        if v is None or getattr(v, "data", None) is not None:
                            return spec
                        shape = [int(d) for d in spec.shape]
                        return TensorSpec([shape[0] // slices, *shape[1:]], str(spec.dtype))
                    in_specs = [sliced(v, sp) for v, sp in zip(nd.ins, nd.in_specs)]
                    out_specs = [sliced(v, sp) for v, sp in zip(nd.outs, out_specs)]
                attrs = {**nd.attrs, "tc_in_l2": list(where)} if where else nd.attrs
                try:
                    member_cache[mkey] = LowerOp(nd.op, attrs, in_specs, out_specs, target)
                except Exception as e:  # noqa: BLE001 (the plan chosen for the DDR is a correct program too)
                    _raise_if_defect(e)
                    if slices > 1 or probe:  # (a slice has no other plan: the caller decides)
                        raise
                    plan_fallbacks.append({"nodes": [nd.name or nd.step_name], "what": "the member's plan for its "
                                           "tensors in L2: its plan for the DDR instead",
                                           "reason": (str(e).splitlines() or [type(e).__name__])[0]})
                    member_cache[mkey] = f()
            return member_cache[mkey]

        def with_prefetch(f, idx, funcs, lowered, args, ins, outs, internal, handoff):
            # the group again with weights prefetched into L2 when the cost model finds a
            # member the DDR bounds (weight_prefetch.py); `f` when none is
            if pipe.disabled("WeightPrefetch"):
                return f
            sizes, weights, activations = {}, {}, {}
            for k, row in zip(idx, args):
                nd, _, _, in_params = steps[k]
                for p, (t, v) in enumerate(zip(row, list(nd.ins[:in_params]) + list(nd.outs))):
                    if v is None:
                        continue
                    shape, dtype = info[str(v.name)]
                    sizes[t] = int(np.prod(shape, dtype=np.int64)) * _itemsize(dtype)
                    if p < in_params and t in ins and getattr(v, "data", None) is not None:
                        weights[t] = sizes[t]
                    elif p < in_params and t in ins:
                        activations[t] = sizes[t]
            if not any(b >= _prefetch.MIN_BYTES for b in [*weights.values(), *activations.values()]):
                return f
            members = group_estimate(f)["members"]
            if len(members) != len(idx):
                return f
            # the bytes of the intermediates live at each member, from a tensor's first member to
            # its last (one pass over the rows: a group of thousands of members has as many)
            first, last = {}, {}
            for m, row in enumerate(args):
                for t in row:
                    if t in internal:
                        first.setdefault(t, m)
                        last[t] = m
            change = [0] * (len(idx) + 1)
            for t, m in first.items():
                change[m] += sizes.get(t, 0)
                change[last[t] + 1] -= sizes.get(t, 0)
            live = list(itertools.accumulate(change[:-1]))
            free_l2 = _groups.L2_BYTES - int(f.attrs["own_l2_bytes"]) - (64 << 10)
            relowered = {}

            def member_in_l2(m, ts):
                key = (m, tuple(ts))
                if key not in relowered:
                    g = in_l2(idx[m], funcs[m], args[m], set(internal) | set(ts))
                    from . import estimate_cost

                    e = estimate_cost(g, target)
                    relowered[key] = (g, (int(e["cycles"]), int(e["ddr_cycles"])))
                return relowered[key][1]

            def grouped(rows):
                while rows:
                    # the reader: the first after the last member fetching (for a weight its
                    # first reader; for an input read before, its second)
                    chosen = {t: max(m for tt, m, _, _ in rows if tt == t) for t, *_ in rows}
                    readers = {t: next(m for m in range(last + 1, len(args)) if t in args[m])
                               for t, last in chosen.items()}
                    funcs2 = list(lowered)
                    for m in set(readers.values()):  # (its tensors in the order planned)
                        ts = tuple(t for t in chosen if readers[t] == m)
                        member_in_l2(m, ts)
                        funcs2[m] = relowered[(m, ts)][0]
                    g = GroupKernels(funcs2, args, ins, outs, "group", rows, _groups.L2_BYTES, handoff=handoff,
                                     concat_in_place=in_place)
                    kept = {int(r[0]) for r in g.attrs["prefetch"]}
                    if kept == set(chosen):
                        return g
                    rows = [r for r in rows if r[0] in kept]  # what did not fit reads the DDR as before
                return f

            def fetched_just_before(rows):  # a tensor fetched during the member before its reader
                last = {}
                for t, m, _, _ in rows:
                    last[t] = max(last.get(t, m), m)
                return any(t in args[m + 1] for t, m in last.items() if m + 1 < len(args))

            # one plan per donor share; when they differ, the one the cost model finds fastest;
            # when it fetches a tensor during the member just before its reader, one more that
            # fetches everything a member earlier (the handoff then loads it into L1 there)
            # (the larger shares, MORE_SHARES, only when the largest of SHARES planned the fastest)
            best, best_rows, best_share = f, None, None
            built = set()  # (the plans of several shares are often the same rows: built once)

            def offer(share, gap, wait):
                nonlocal best, best_rows, best_share
                rows = _prefetch.plan(members, args, weights, live, free_l2, member_in_l2, share, activations, gap,
                                      wait)
                if not rows or tuple(rows) in built:
                    return
                built.add(tuple(rows))
                g = grouped(rows)
                if group_estimate(g)["cycles"] < group_estimate(best)["cycles"]:
                    best, best_rows, best_share = g, rows, share

            def offer_each(shares):
                for wait in (0, _prefetch.DDR_LATENCY):
                    for share in shares:
                        offer(share, 0, wait)

            offer_each(_prefetch.SHARES)
            if best_share == _prefetch.SHARES[-1]:
                offer_each(_prefetch.MORE_SHARES)
            if best_rows and handoff != "none" and fetched_just_before(best_rows):
                offer(_prefetch.HANDOFF_SHARE, 1, 0)
            return best

        def planned_group(idx, funcs, args, ins, outs, internal, slices=1, sliced=()):
            # (the group without prefetches, the group as planned)
            lowered = [in_l2(k, f, row, internal, slices) for k, f, row in zip(idx, funcs, args)]
            handoff = "none" if pipe.disabled("Handoff") else "early"
            kw = {"concat_in_place": in_place, "slices": slices, "sliced": sliced}
            f = GroupKernels(lowered, args, ins, outs, "group", handoff=handoff, **kw)
            if int(f.attrs["early_handoffs"]) > 0:
                # an early handoff's loads queue between the giving member's own copies:
                # kept when the cost model finds the group faster for them
                late = GroupKernels(lowered, args, ins, outs, "group", handoff="late", **kw)
                if group_estimate(late)["cycles"] <= group_estimate(f)["cycles"]:
                    f, handoff = late, "late"
            if slices > 1:  # (a prefetch would run once per slice)
                return f, f
            return f, with_prefetch(f, idx, funcs, lowered, args, ins, outs, internal, handoff)

        def build_group(idx, funcs, args, ins, outs, slices=1, sliced=()):
            gkey = (tuple(step_keys[k] for k in idx), tuple(tuple(a) for a in args), tuple(ins), tuple(outs),
                    slices)
            if gkey not in group_cache:
                internal = set(range(max(max(r) for r in args) + 1)) - set(ins) - set(outs)
                f, g = planned_group(idx, funcs, args, ins, outs, internal, slices, sliced)
                # A member's plan is chosen alone, where its first loads' DDR latency weighs on
                # its start; in the group the member before issues them. So the choices this
                # moves (a Gemm with its norm: its rows per chunk, tc_row_norm_rows) are
                # planned in the group, member by member, and the fastest kept.
                chosen = []  # (attrs, key, what it held before): restored once the group is planned
                for k in idx:
                    attrs = steps[k][0].attrs
                    for key, values in _plan_choices(steps[k][0]):
                        chosen.append((attrs, key, attrs.get(key)))
                        best = (group_estimate(g)["cycles"], attrs.get(key), f, g)
                        for v in values:
                            attrs[key] = v
                            try:
                                f2, g2 = planned_group(idx, funcs, args, ins, outs, internal, slices, sliced)
                            except Exception as e:  # noqa: BLE001 (the plan does not take it: no choice)
                                _raise_if_defect(e)
                                continue
                            if group_estimate(g2)["cycles"] < best[0]:
                                best = (group_estimate(g2)["cycles"], v, f2, g2)
                        _, v, f, g = best
                        if v is None:
                            attrs.pop(key, None)
                        else:
                            attrs[key] = v
                # (the group is planned: the node keeps no choice made for it, which another
                # group or its own step would take over)
                for attrs, key, before in chosen:
                    if before is None:
                        attrs.pop(key, None)
                    else:
                        attrs[key] = before
                try:
                    group_cache[gkey] = (_build(g, target=target), "group", g)
                except Exception as e:  # noqa: BLE001 (the group without its prefetches is a correct program)
                    _raise_if_defect(e)
                    if g is f:
                        raise
                    plan_fallbacks.append({"nodes": [steps[k][0].name or steps[k][0].step_name for k in idx],
                                           "what": "the group with its weights prefetched into L2: the group "
                                           "without them instead",
                                           "reason": (str(e).splitlines() or [type(e).__name__])[0]})
                    group_cache[gkey] = (_build(f, target=target), "group", f)
            return group_cache[gkey]

        # a custom kernel runs as its engineer wrote it: a step of its own
        apart = list(ungroup) + [nd.step_name for nd, *_ in steps if nd.step_name in custom_steps]
        slice_costs = {}

        def step_cycles(k, where, slices):  # (layer_groups.Groups' batch slices)
            key = (k, where, slices)
            if key not in slice_costs:
                from . import estimate_cost

                try:
                    f = lowered_for(k, step_kernels[k], where, slices, probe=True)
                    slice_costs[key] = int(estimate_cost(f, target)["cycles"])
                except Exception as e:  # noqa: BLE001 (no plan for the slice: the step is not sliced)
                    _raise_if_defect(e)
                    slice_costs[key] = None
            return slice_costs[key]

        sliced = None if pipe.disabled("BatchSlices") else step_cycles
        grouper = _groups.Groups(nodes, steps, info, graph_outputs, _itemsize, apart=apart, step_cycles=sliced)
        if slice_costs:
            # (the probes searched plans for tensors where no group may put them: the groups'
            # members are planned as a compile without them would, and again for their slices)
            _ffi.ForgetPlanChoices()
            member_cache.clear()
        steps, step_kernels, groups_made = grouper.apply(step_kernels, build_group)
        group_splits, groups_regrouped = grouper.splits, grouper.regrouped
        pipe.end(lambda: _pipeline.nodes_text([nd for nd, *_ in steps], info))
    if strict and (plan_fallbacks or group_splits):
        lines = [f"{', '.join(f['nodes'])}: {f['what']} ({f['reason']})" for f in plan_fallbacks]
        lines += [f"{', '.join(sp['nodes'])}: the layer group, split in halves ({sp['reason']})"
                  for sp in group_splits]
        raise CompileError("strict: the compiler fell back from the plans it chose:\n  " + "\n  ".join(lines))
    built = {}  # kernel key -> the npu Module of the steps left outside groups

    def module_of(nd):
        key = key_of[id(nd)]
        if key not in built:
            try:
                built[key] = _build(npu_funcs[key](), target=target)
            except CompileError:  # lowering it failed: the node is named already
                raise
            except Exception as e:
                raise CompileError(f"node `{nd.name}` ({nd.op}) on the npu: {str(e).splitlines()[0]}") from e
        return built[key]

    pipe.begin("Build")
    steps = [(nd, module_of(nd) if mod is None else mod, fn, p) for nd, mod, fn, p in steps]
    for (nd, mod, fn, _), f in zip(steps, step_kernels):
        if callable(f):  # a step's own kernel (its module above lowered it already)
            f = f()
        if f is not None:
            step_funcs[nd.step_name] = f
        if f is not None and isinstance(nd, _groups.GroupNode):  # what each member costs in it
            costs = group_estimate(f)["members"]
            if len(costs) == len(nd.members):
                nd.member_costs = costs
            plans = [str(p) for p in f.attrs.get("member_plans", [])]
            if len(plans) == len(nd.members):  # (and the plan its strategy chose)
                nd.member_plans = plans
        if isinstance(nd, _groups.GroupNode):  # and which instructions compute each member
            nd.member_pc = _groups.member_code(mod, fn, len(nd.members), nd.in_place)
    timings["lower_and_build"] = time.perf_counter() - t0
    pipe.end()

    # ---- buffers, liveness, plan ----------------------------------------------------------
    t0 = time.perf_counter()
    pipe.begin("PlanMemory")
    n_steps = len(steps)
    root = {}  # value name -> the value whose bytes it uses (views alias their input)
    for nd in nodes:
        if nd.where == "view":
            src = str(nd.ins[0].name)
            root[str(nd.outs[0].name)] = root.get(src, src)
    bufs = {}  # root name -> dict(shape, dtype, first, last, const)
    order = []

    def buf(name):
        r = root.get(name, name)
        if r not in bufs:
            shape, dtype = info[r]
            bufs[r] = {"shape": shape, "dtype": dtype, "first": n_steps + 1, "last": -2, "const": None}
            order.append(r)
        return r

    def use(name, t):
        r = buf(name)
        bufs[r]["first"] = min(bufs[r]["first"], t)
        bufs[r]["last"] = max(bufs[r]["last"], t)
        return r

    for v in graph.inputs:
        use(str(v.name), -1)
    placeholder = None
    step_args = []
    for t, (nd, mod, fn, in_params) in enumerate(steps):
        args = []
        for v in nd.ins[:in_params]:
            if v is None:
                if placeholder is None:
                    placeholder = "__omitted_input"
                    info[placeholder] = ((1,), "float32")
                    bufs[placeholder] = {"shape": (1,), "dtype": "float32", "first": -1, "last": n_steps,
                                         "const": np.zeros(1, np.float32)}
                    order.append(placeholder)
                args.append(placeholder)
                continue
            name = str(v.name)
            if v.data is not None and root.get(name, name) not in bufs:
                r = buf(name)
                bufs[r]["const"] = v.numpy()
            args.append(use(name, t))
        for v in nd.outs:
            args.append(use(str(v.name), t))
        step_args.append(args)
    extra_outputs = []
    if keep_intermediates:
        inputs = {str(v.name) for v in graph.inputs}
        for nd in nodes:
            for v in nd.outs:
                n = str(v.name)
                if n and n not in graph_outputs and n not in inputs and n in bufs:
                    extra_outputs.append(n)
    for name in list(graph_outputs) + extra_outputs:
        r = root.get(name, name)
        if r not in bufs:  # an output that is a constant or an input
            v = next((v for v in graph.outputs if str(v.name) == name), None)
            if v is not None and v.data is not None:
                info.setdefault(name, (tuple(int(d) for d in v.numpy().shape), str(v.numpy().dtype)))
                buf(name)
                bufs[r]["const"] = v.numpy()
        use(name, n_steps)
    for r, d in bufs.items():
        if d["const"] is not None:
            d["first"], d["last"] = -1, n_steps
    sizes = [int(np.prod(bufs[r]["shape"], dtype=np.int64)) * _itemsize(bufs[r]["dtype"]) for r in order]
    if keep_intermediates:
        offsets, at = [], 0
        for s in sizes:
            offsets.append(at)
            at += (s + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
        plan = {"arena_size": at, "total_size": at, "lower_bound": None}
    else:
        res = [int(x) for x in _ffi.PlanMemory(sizes, [bufs[r]["first"] for r in order],
                                               [bufs[r]["last"] for r in order], ALIGNMENT)]
        offsets = res[:len(order)]
        plan = {"arena_size": res[-3], "total_size": res[-2], "lower_bound": res[-1]}
    pipe.end(lambda: "\n".join(["memory {", *(f"  %{r}: {bufs[r]['dtype']}{list(bufs[r]['shape'])} at {off} live "
                                                f"[{bufs[r]['first']}, {bufs[r]['last']}]" for r, off in zip(order, offsets)),
                                  f"  arena {plan['arena_size']} B", "}"]))
    pipe.begin("Assemble")
    index = {}
    for r, off in zip(order, offsets):
        d = bufs[r]
        if d["const"] is not None:
            index[r] = b.add_constant(r, np.ascontiguousarray(d["const"]).reshape(d["shape"]), offset=off)
        else:
            index[r] = b.add_buffer(r, d["shape"], d["dtype"], offset=off)
    for v in graph.inputs:
        b.add_input(str(v.name), index[str(v.name)])
    for name in [str(v.name) for v in graph.outputs] + extra_outputs:
        b.add_output(name, index[root.get(name, name)])
    # Free views have no step; each is recorded (JSON) on the step after it in node order,
    # so debuggers and graph views can show them: [[node, op, input, output, shape], ...].
    # (a view inside a layer group is recorded on the group's step)
    views_before = {}
    pending = []
    step_of = {m.step_name: g.step_name for g in groups_made for m in g.members}
    for nd in nodes:
        if nd.where == "view":
            out = str(nd.outs[0].name)
            pending.append([nd.name, nd.op, str(nd.ins[0].name), out, list(info[out][0])])
        elif nd.step_name and pending:
            views_before.setdefault(step_of.get(nd.step_name, nd.step_name), []).extend(pending)
            pending = []
    # the nodes fused into a step's epilogue, [[name, op type], ...] (debuggers stop before
    # the step that computes them)
    op_of = {x.name: x.op for x in nodes}
    fused_into = {e["node"]: [[n, op_of.get(n, "")] for n in e["fused"]] for e in fused}
    # and the model's nodes the graph passes merged into it (or into a node fused into it)
    merged_of = {}
    for x in nodes + [m for g in groups_made for m in g.members]:
        if getattr(x, "merged", None):
            merged_of[x.name] = x.merged
    computing = {m.name for g in groups_made for m in g.members}
    computing |= {nd.name for nd, *_ in steps if not isinstance(nd, _groups.GroupNode)}
    for name in computing:
        extra = merged_of.get(name, []) + [p for n, _ in fused_into.get(name, []) for p in merged_of.get(n, [])]
        if extra:
            fused_into[name] = fused_into.get(name, []) + extra
    for (nd, mod, fn, in_params), args in zip(steps, step_args):
        debug = {"outputs": ",".join(str(v.name) for v in nd.outs),
                 "inputs": ",".join("" if v is None else str(v.name) for v in nd.ins[:in_params])}
        if nd.step_name in views_before:
            debug["views"] = json.dumps(views_before[nd.step_name])
        if nd.where == "host":
            debug["host_reason"] = nd.reason
        step_plan = step_funcs[nd.step_name].attrs.get("plan") if nd.step_name in step_funcs else None
        if step_plan and not isinstance(nd, _groups.GroupNode):  # (docs/compiler.md, "Plans")
            debug["plan"] = str(step_plan)
        if isinstance(nd, _groups.GroupNode):
            summary = nd.summary(lambda name: index[root.get(name, name)])
            for entry, m in zip(summary.get("members", []), nd.members):
                if fused_into.get(m.name):  # the nodes fused into this member's epilogue
                    entry["fused"] = [n for n, _ in fused_into[m.name]]
            debug["group"] = json.dumps(summary)
        written = [str(v.name) for m in getattr(nd, "members", [nd]) for v in m.outs if v is not None]
        step_codes = {v: list(codes[v]) for v in written if v in codes}
        if step_codes:  # values stored in int8 that the model has in floating point
            debug["quantised"] = json.dumps(step_codes)
        step_fused = [f for m in getattr(nd, "members", [nd]) for f in fused_into.get(m.name, [])]
        if step_fused:
            debug["fused"] = json.dumps(step_fused)
        macs, roof = 0, 0.0
        in_l2 = set(getattr(nd, "internal", []))
        member_roofs, member_macs = [], []
        in_place = {id(nd.members[k]) for k in getattr(nd, "in_place", [])}
        # block-diagonal weights (BlockDiagonalGroups) -> k: their prefetched bytes count a k-th,
        # the original's
        widened = {str(m.ins[1].name): int(m.attrs["tc_block_diagonal"]) for m in getattr(nd, "members", [nd])
                   if "tc_block_diagonal" in m.attrs}
        for m in getattr(nd, "members", [nd]):
            ins = [info[str(v.name)] if v is not None else None for v in m.ins]
            m_macs = _macs(m.op, ins, [info[str(v.name)] for v in m.outs], m.attrs)
            macs += m_macs
            member_macs.append(m_macs)
            if nd.where == "npu" and id(m) in in_place:  # a Concat that moves no bytes
                member_roofs.append({"cycles": 0.0, "bound": "none", "engine": "vec"})
            elif nd.where == "npu":
                prefetched = {w: e["bytes"] // widened.get(w, 1) for w, e in getattr(nd, "prefetch", {}).items()
                              if e["reader"] == m.step_name and w in [str(v.name) for v in m.ins if v is not None]}
                fetching = sum(e.get("bytes_during", {}).get(m.step_name, 0) // widened.get(w, 1)
                               for w, e in getattr(nd, "prefetch", {}).items())
                member_roofs.append(_roofline(m, info, in_l2, cores, m_macs, prefetched, fetching))
                roof += member_roofs[-1]["cycles"]
        if nd.where == "npu":
            debug["roofline"] = json.dumps({"cycles": roof} if isinstance(nd, _groups.GroupNode) else member_roofs[0])
            if isinstance(nd, _groups.GroupNode) and "group" in debug:
                summary = json.loads(debug["group"])
                for entry, r, m_macs in zip(summary.get("members", []), member_roofs, member_macs):
                    # the op's MACs, as the step's count them (the cost model's are the matrix
                    # engine's: none for a depthwise Conv on the vector engine)
                    entry["roofline"], entry["macs"] = r, int(m_macs)
                debug["group"] = json.dumps(summary)
        b.add_step(nd.where, mod, fn, [index[a] for a in args], node=nd.step_name, op_type=nd.op, macs=macs,
                   source_node=nd.name or nd.step_name, debug=debug)
    exe = b.build(arena_size=plan["arena_size"])
    timings["plan_and_assemble"] = time.perf_counter() - t0
    pipe.end()
    if report is None:
        return exe
    report.update({
        "nodes": len(nodes),
        "steps": n_steps,
        "npu_steps": sum(1 for s in steps if s[0].where == "npu"),
        "host_steps": sum(1 for s in steps if s[0].where == "host"),
        "views": sum(1 for nd in nodes if nd.where == "view"),
        "kernels": len({id(mod) for _, mod, _, _ in steps}),
        "host_ops": [{"name": nd.step_name, "op_type": nd.op, "reason": nd.reason} for nd, *_ in steps
                     if nd.where == "host"],
        "placement": [{"name": nd.step_name or nd.name or f"{nd.op}_{nd.index}", "op_type": nd.op, "where": nd.where}
                      for nd in nodes],
        "memory": plan,
        "seconds": timings,
        # (the kernel pipeline's runs: what the plan searches cost, without the wall time's noise)
        "kernel_pipelines": _kernel_pipeline_runs() - pipelines_before,
        "precision": precision_report,
        "qdq": qdq_report,
        "fused": fused,
        "int8_edges": int8_edges,
        "activation_tables": lut_convs,
        "shared_quantisation": shared_quantised,
        "scaled_weights": scaled_weights,
        "block_diagonal_groups": block_diagonal,
        "copied_inputs": copied,
        "groups": [g.summary() for g in groups_made],
        "group_splits": group_splits,
        "groups_regrouped": groups_regrouped,
        "plan_fallbacks": plan_fallbacks,
        "custom_kernels": custom_steps,
        "passes": pipe.records,
        "graph_outputs": [str(v.name) for v in graph.outputs],
        "npu_funcs": step_funcs,
    })
    return exe
