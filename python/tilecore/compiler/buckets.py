"""Shape buckets: one executable for several input shapes, its constants stored once
(docs/compiler.md, "Shape buckets"; the file: docs/executable.md, "Buckets").

A bucket is one binding of every input's shape. ``tilecore.compile`` takes them as
``input_shapes={"x": [(1, 3, 224, 224), (4, 3, 224, 224)]}`` (bucket ``i`` takes shape ``i``
of every input given as a list) or as values of the model's symbolic dimensions,
``dims={"batch": [1, 2, 4, 8], "seq": [32, 64, 128]}`` (every combination). Each bucket is
compiled as its own program; the runtime keeps one copy of the constants they share and
picks the bucket whose shapes a run's inputs have. ``batch=`` declares the batch (a
dimension name, or input name -> axis): a smaller batch then runs in the next larger
bucket, padded and cropped, once :mod:`batch_rows` has shown that rows do not mix.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Mapping, Sequence

from .driver import CompileError


def is_bucket_list(shape: Any) -> bool:
    """True for a list of shapes (``[(1, 3), (2, 3)]``), False for one shape (``(1, 3)``)."""
    return isinstance(shape, (list, tuple)) and len(shape) > 0 and all(
        isinstance(s, (list, tuple)) for s in shape)


def declared_shapes(model: Any) -> dict[str, list]:
    """Each graph input's declared shape: ints, and names for symbolic dimensions."""
    if hasattr(model, "nodes"):
        graph = model
    else:
        import os

        from .. import frontend
        graph = frontend.from_onnx(os.fspath(model) if isinstance(model, os.PathLike) else model)
    out = {}
    for v in graph.inputs:
        shape = getattr(v.type, "shape", None)
        out[str(v.name)] = [d if isinstance(d, str) else (None if d is None else int(d))
                            for d in (shape or [])]
    return out


def expand(declared: Mapping[str, list], input_shapes: Mapping[str, Any] | None,
           dims: Mapping[str, Sequence[int]] | None) -> list[dict[str, tuple[int, ...]]]:
    """The buckets, each input name -> shape, in the order given (dims vary fastest last)."""
    input_shapes = dict(input_shapes or {})
    dims = {str(k): [int(x) for x in v] for k, v in (dims or {}).items()}
    for name in input_shapes:
        if name not in declared:
            raise CompileError(f"input_shapes: `{name}` is no input of the model (inputs: {', '.join(declared)})")
    lists = {k: [tuple(int(d) for d in s) for s in v] for k, v in input_shapes.items() if is_bucket_list(v)}
    lengths = {len(v) for v in lists.values()}
    if len(lengths) > 1:
        raise CompileError("input_shapes: every input given a list of shapes needs as many as the others "
                           f"({', '.join(f'{k}: {len(v)}' for k, v in lists.items())})")
    used = {d for shape in declared.values() for d in shape if isinstance(d, str)}
    for name, values in dims.items():
        if name not in used:
            raise CompileError(f"dims: `{name}` is no symbolic dimension of the model's inputs "
                               f"({', '.join(sorted(used)) or 'it has none'})")
        if not values or any(x < 1 for x in values) or len(set(values)) != len(values):
            raise CompileError(f"dims: `{name}` needs distinct positive sizes, got {values}")
    n_lists = lengths.pop() if lengths else 1
    buckets = []
    for i in range(n_lists):
        for combo in itertools.product(*dims.values()):
            bound = dict(zip(dims, combo))
            bucket = {}
            for name, shape in declared.items():
                if name in lists:
                    bucket[name] = lists[name][i]
                elif name in input_shapes:
                    bucket[name] = tuple(int(d) for d in input_shapes[name])
                elif all(isinstance(d, int) or d in bound for d in shape):
                    bucket[name] = tuple(bound[d] if isinstance(d, str) else d for d in shape)
                else:
                    unbound = [str(d) for d in shape if not isinstance(d, int) and d not in bound]
                    raise CompileError(f"input `{name}` has dimensions {', '.join(unbound)} that no bucket binds "
                                       "(give them with dims= or input_shapes=)")
            buckets.append(bucket)
    seen = set()
    for b in buckets:
        key = tuple(sorted(b.items()))
        if key in seen:
            raise CompileError(f"two buckets have the same shapes {b}")
        seen.add(key)
    return buckets


def input_batch_axes(declared: Mapping[str, list], buckets: list[dict], batch: Any) -> dict[str, int]:
    """input name -> batch axis, from ``batch``: a symbolic dimension's name (where it is in
    each input) or a mapping input name -> axis."""
    if isinstance(batch, str):
        axes = {}
        for name, shape in declared.items():
            where = [i for i, d in enumerate(shape) if d == batch]
            if len(where) != 1:
                raise CompileError(f"batch=`{batch}`: input `{name}` has it {len(where)} times (every input "
                                   "needs it exactly once)")
            axes[name] = where[0]
    else:
        axes = {str(k): int(v) for k, v in dict(batch).items()}
        for name in declared:
            if name not in axes:
                raise CompileError(f"batch: input `{name}` has no batch axis (every input needs one)")
    for name, a in axes.items():
        if name not in declared:
            raise CompileError(f"batch: `{name}` is no input of the model")
        rank = len(buckets[0][name])
        if not -rank <= a < rank:
            raise CompileError(f"batch: input `{name}` has rank {rank}, no axis {a}")
        axes[name] = a % rank
    for b in buckets:
        sizes = {b[name][a] for name, a in axes.items()}
        if len(sizes) != 1:
            raise CompileError(f"batch: the bucket {b} has batch sizes {sorted(sizes)} on its inputs' batch axes")
    return axes


def output_batch_axes(model: Any, bucket: Mapping[str, tuple], inputs: Mapping[str, int]) -> dict[str, int]:
    """Each output's batch axis, shown on the graph of ``bucket`` (batch_rows)."""
    from .batch_rows import BatchRowsError, batch_axes
    from .driver import _fold_to_fixed_point, _load_graph

    graph = _fold_to_fixed_point(_load_graph(model, {k: list(v) for k, v in bucket.items()}))
    try:
        return batch_axes(graph, inputs)
    except BatchRowsError as e:
        raise CompileError(f"batch: {e}") from None


def compile_buckets(compile_one: Callable[..., Any], model: Any, declared: Mapping[str, list], buckets: list[dict],
                    batch: Any, calib_samples: Mapping[str, Any] | None, report: dict | None, kw: dict) -> Any:
    """Compiles each bucket with ``compile_one(model, input_shapes=..., **kw)`` and joins them
    (``declared``: the model's declared_shapes, read once by the caller).
    int8 calibrates once, on the bucket whose shapes the samples have; the others reuse its
    thresholds and channel means, so every bucket quantises alike."""
    import numpy as np

    from .. import runtime
    from .precision import Calibration

    axes: dict[str, int] = {}
    if batch is not None:
        # Every bucket a smaller batch may be padded into is shown to keep rows apart (its
        # graph, folded for its shapes, may differ from another bucket's).
        inputs = input_batch_axes(declared, buckets, batch)
        name, axis = next(iter(inputs.items()))
        outputs = None
        for b in buckets:
            if b[name][axis] < 2:
                continue
            found = output_batch_axes(model, b, inputs)
            if outputs is not None and found != outputs:
                raise CompileError(f"batch: the outputs' batch axes differ between buckets ({outputs} and {found} "
                                   f"for {b})")
            outputs = found
        if outputs is None:
            raise CompileError("batch: no bucket has a batch of 2 or more (nothing would be padded)")
        axes = {**inputs, **outputs}
    order = list(range(len(buckets)))
    if calib_samples:
        sample_shapes = {k: tuple(np.shape(v))[1:] for k, v in calib_samples.items()}
        first = [i for i, b in enumerate(buckets) if all(b.get(k) == s for k, s in sample_shapes.items())]
        if not first:
            raise CompileError(f"calib_samples have the shapes {sample_shapes} (after the sample axis); "
                               "one bucket must have them")
        order = [first[0]] + [i for i in order if i != first[0]]
    parts: dict[int, Any] = {}
    reports = {}
    calib = kw.pop("calib", None)
    for i in order:
        rep: dict = {}
        parts[i] = compile_one(model, input_shapes=buckets[i], report=rep, calib=calib,
                               calib_samples=calib_samples, **kw)
        reports[i] = rep
        prec = rep.get("precision") or {}
        if calib_samples and (prec.get("thresholds") or prec.get("channel_means")):
            th = prec.get("thresholds") or {}
            calib = Calibration(th if calib is None else getattr(calib, "thresholds", calib),
                                {n: np.asarray(v) for n, v in prec.get("channel_means", {}).items()})
        calib_samples = None
    exe = runtime.join_buckets([parts[i] for i in range(len(buckets))], axes)
    if report is not None:
        report.update(reports[0])
        report["buckets"] = [{"inputs": {k: list(v) for k, v in b.items()}, "report": reports[i]}
                             for i, b in enumerate(buckets)]
        report["batch_axes"] = axes
    return exe
