"""tilecore/bench/models.py — the model list of a bench run, and what a worker needs of
each model: its ONNX file, seeded sample inputs and the reference outputs.

A model list item is one of:

* an ONNX file (``model.onnx``);
* a folder: every ``*.onnx`` below it, in sorted order;
* a corpus: ``zoo`` (tilecore.zoo), ``outside`` (tilecore.zoo.outside: torchvision, timm,
  transformers), ``onnx-node-tests`` (the ONNX backend node tests of the installed onnx
  package), each optionally narrowed with ``:SELECT`` (``zoo:resnet18+bert_layer``,
  ``outside:timm``, ``onnx-node-tests:^test_conv``: a regular expression);
* a model name of the zoo or of the outside corpus.

Samples: calibration samples are drawn with seed 0 and evaluation samples with seed 1, by
the corpus's own ``sample_inputs`` (sample ``i`` depends on the seed and ``i`` only); an ONNX
file gets standard-normal floats and zeros for integer inputs (shape from the model, a
symbolic dimension taken as 1). The reference is ONNX Runtime in f32 on the same inputs;
a node-test case is compared with its expected outputs instead.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from typing import Any, Sequence

import numpy as np

from .jobs import BenchError, ModelRef

CORPORA = ("zoo", "outside", "onnx-node-tests")
CALIB_SEED, EVAL_SEED = 0, 1


def _zoo_names() -> list[str]:
    from .. import zoo

    return zoo.names()


def _outside_names(select: str | None = None) -> list[str]:
    from ..zoo import outside

    return outside.names(select)


def _check_onnx_file(path: str, where: str) -> None:
    """BenchError unless ``path`` is a regular file that starts like an ONNX model."""
    if not os.path.isfile(path):
        raise BenchError(f"{where}: `{path}` is not a file")
    import onnx

    try:
        onnx.load(path, load_external_data=False)
    except Exception as e:  # noqa: BLE001 - any parse failure means "not ONNX"
        raise BenchError(f"{where}: `{path}` is not an ONNX model ({str(e).splitlines()[0][:200]})") from None


def resolve(items: Sequence[str]) -> list[ModelRef]:
    """The models a list of files, folders, corpora and names stands for (in order, each
    once); BenchError naming an item that is none of them."""
    out: list[ModelRef] = []
    for item in items:
        corpus, _, select = item.partition(":")
        if os.path.isdir(item):
            found = sorted(os.path.join(d, f) for d, _, fs in os.walk(item) for f in fs if f.endswith(".onnx"))
            if not found:
                raise BenchError(f"model list: folder `{item}` holds no .onnx file")
            for path in found:
                _check_onnx_file(path, "model list")
                out.append(ModelRef(os.path.relpath(path, item), "file", os.path.abspath(path)))
        elif os.path.exists(item) or item.endswith(".onnx"):
            _check_onnx_file(item, "model list")
            out.append(ModelRef(os.path.basename(item), "file", os.path.abspath(item)))
        elif corpus == "zoo":
            names = _zoo_names()
            chosen = select.split("+") if select else names
            bad = [n for n in chosen if n not in names]
            if bad:
                raise BenchError(f"model list: `{item}`: {', '.join(bad)} not in the zoo ({', '.join(names)})")
            out += [ModelRef(n, "zoo") for n in chosen]
        elif corpus == "outside":
            try:
                out += [ModelRef(n, "outside") for n in _outside_names(select or "all")]
            except (KeyError, ValueError) as e:
                raise BenchError(f"model list: `{item}`: {str(e).strip(chr(39))}") from None
        elif corpus == "onnx-node-tests":
            from ..compiler.conformance import load_cases

            try:
                cases = load_cases(select or None)
            except re.error as e:
                raise BenchError(f"model list: `{item}`: bad regular expression ({e})") from None
            if not cases:
                raise BenchError(f"model list: `{item}`: no node-test case matches")
            out += [ModelRef(c.name, "node-test") for c in cases]
        elif item in _zoo_names():
            out.append(ModelRef(item, "zoo"))
        else:
            try:
                known = item in _outside_names("all")
            except Exception:  # noqa: BLE001 - the outside corpus's packages may be missing
                known = False
            if not known:
                raise BenchError(f"model list: `{item}` is not a file, a folder, a corpus ({', '.join(CORPORA)}) "
                                 "or a model of the zoo or the outside corpus")
            out.append(ModelRef(item, "outside"))
    seen, unique = set(), []
    for m in out:
        if m not in seen:
            seen.add(m)
            unique.append(m)
    return unique


# A node-test case is written out once per onnx version, model and data sets as protobuf
# files (model.onnx last: the folder is complete when it is there), so a job's process
# reads its one case instead of collecting the whole suite (which runs every case's
# reference implementation: seconds).
def _case_folder(name: str) -> str:
    import onnx

    return os.path.join(tempfile.gettempdir(), "tilecore-bench-node-tests", f"onnx-{onnx.__version__}", name)


def _value_proto(value: Any) -> Any:
    """A data set value as a TensorProto or SequenceProto; None for a kind not written."""
    from onnx import SequenceProto, TensorProto, numpy_helper

    if isinstance(value, TensorProto):
        return value
    if isinstance(value, (np.ndarray, np.generic)) and np.asarray(value).dtype != object:
        return numpy_helper.from_array(np.asarray(value))
    if isinstance(value, list) and all(isinstance(v, np.ndarray) and v.dtype != object for v in value) and value:
        return numpy_helper.from_list(value)
    if isinstance(value, SequenceProto):
        return value
    return None


def _write_case(case: Any, folder: str) -> None:
    """Writes ``case`` to ``folder``, unless one of its values is of a kind not written
    (maps, optionals, empty sequences): then its process collects it."""
    from onnx import TensorProto

    from ..runtime.files import write_bytes

    files = {}
    for k, (inputs, outputs) in enumerate(case.data_sets):
        for kind, values in (("input", inputs), ("output", outputs)):
            for i, v in enumerate(values):
                proto = _value_proto(v)
                if proto is None:
                    return
                suffix = "tensor" if isinstance(proto, TensorProto) else "sequence"
                files[os.path.join(f"data_set_{k}", f"{kind}_{i}.{suffix}.pb")] = proto.SerializeToString()
    for rel, data in files.items():
        os.makedirs(os.path.join(folder, os.path.dirname(rel)), exist_ok=True)
        write_bytes(os.path.join(folder, rel), data)
    write_bytes(os.path.join(folder, "tolerances.json"), f'{{"rtol": {case.rtol!r}, "atol": {case.atol!r}}}')
    write_bytes(os.path.join(folder, "model.onnx"), case.model.SerializeToString())


def _read_case(name: str, folder: str) -> Any:
    import json
    import types

    import onnx
    from onnx import numpy_helper

    model = onnx.load(os.path.join(folder, "model.onnx"))
    inits = {i.name for i in model.graph.initializer}
    counts = {"input": len([i for i in model.graph.input if i.name not in inits]), "output": len(model.graph.output)}

    def value(d: str, kind: str, i: int) -> Any:
        path = os.path.join(d, f"{kind}_{i}.tensor.pb")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                return numpy_helper.to_array(onnx.TensorProto.FromString(f.read()))
        with open(os.path.join(d, f"{kind}_{i}.sequence.pb"), "rb") as f:
            return numpy_helper.to_list(onnx.SequenceProto.FromString(f.read()))

    data_sets = []
    k = 0
    while os.path.isdir(os.path.join(folder, f"data_set_{k}")):
        d = os.path.join(folder, f"data_set_{k}")
        data_sets.append(tuple([value(d, kind, i) for i in range(counts[kind])] for kind in ("input", "output")))
        k += 1
    with open(os.path.join(folder, "tolerances.json")) as f:
        tol = json.load(f)
    return types.SimpleNamespace(name=name, model=model, data_sets=data_sets, rtol=tol["rtol"], atol=tol["atol"])


@functools.lru_cache(maxsize=None)
def node_case(name: str) -> Any:
    """The node-test case ``name`` of the installed onnx package (name, model, data_sets,
    rtol, atol); BenchError when absent."""
    folder = _case_folder(name)
    if os.path.isfile(os.path.join(folder, "model.onnx")):
        return _read_case(name, folder)
    from ..compiler.conformance import load_cases

    cases = load_cases(f"^{re.escape(name)}$")
    if not cases:
        raise BenchError(f"node-test case `{name}` is not in the installed onnx package")
    return cases[0]


def model_path(ref: ModelRef) -> str:
    """The ONNX file of ``ref`` (exported and cached for the zoo and the outside corpus;
    written to a temporary folder with its data sets for a node-test case)."""
    if ref.source == "file":
        if not os.path.isfile(ref.path):
            raise BenchError(f"model `{ref.name}`: file `{ref.path}` does not exist")
        return ref.path
    if ref.source == "zoo":
        from .. import zoo

        return zoo.export(ref.name)
    if ref.source == "outside":
        from ..zoo import outside

        return outside.build(ref.name)[0]
    if ref.source == "node-test":
        folder = _case_folder(ref.name)
        path = os.path.join(folder, "model.onnx")
        if not os.path.isfile(path):
            case = node_case(ref.name)
            os.makedirs(folder, exist_ok=True)
            _write_case(case, folder)
            if not os.path.isfile(path):  # (not written: its process collects the case)
                from ..runtime.files import write_bytes

                write_bytes(os.path.join(folder, "only-model.onnx"), case.model.SerializeToString())
                return os.path.join(folder, "only-model.onnx")
        return path
    raise BenchError(f"model `{ref.name}`: unknown source `{ref.source}` (file, zoo, outside, node-test)")


def _file_inputs(path: str, n: int, seed: int) -> dict[str, np.ndarray]:
    import onnx

    model = onnx.load(path, load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    out = {}
    for k, vi in enumerate(i for i in model.graph.input if i.name not in inits):
        tt = vi.type.tensor_type
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        rng = np.random.default_rng([seed, 3, k])
        if dtype.kind == "f":
            out[vi.name] = rng.standard_normal((n, *shape)).astype(dtype)
        else:
            out[vi.name] = np.zeros((n, *shape), dtype)
    return out


def sample_inputs(ref: ModelRef, path: str, n: int, seed: int) -> dict[str, np.ndarray]:
    """``n`` samples (input name -> array (n, *shape)) of ``ref``; a node-test case's data
    set 0 for any seed (it has no other inputs)."""
    if ref.source == "zoo":
        from .. import zoo

        return zoo.sample_inputs(ref.name, n, seed)  # (n, batch, *shape): sample i is the model's input
    if ref.source == "outside":
        from ..zoo import outside

        return outside.sample_inputs(ref.name, n, seed)
    if ref.source == "node-test":
        from ..compiler.conformance import data_sets

        feed = data_sets(node_case(ref.name))[0][0]
        return {k: np.stack([np.asarray(v)] * n) for k, v in feed.items()}
    return _file_inputs(path, n, seed)


def reference(ref: ModelRef, path: str, threads: int = 1) -> tuple[list[str], Any]:
    """(output names, feed -> reference outputs): ONNX Runtime f32 on ``threads`` intra-op
    threads (0: its default), or a node-test case's expected outputs."""
    if ref.source == "node-test":
        from ..compiler.conformance import data_sets

        _, names, expected = data_sets(node_case(ref.name))[0]
        return names, lambda feed: expected
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return names, lambda feed: sess.run(names, feed)
