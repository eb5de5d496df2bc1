"""tilecore/zoo — a model zoo built offline: standard architectures defined in this
package, given seeded random weights, and exported to ONNX with the installed PyTorch.
Nothing is downloaded.

    names()                                   the model names
    info(name)                                what the model is: inputs, outputs, configuration
    export(name, path=None, batch=1, seed=0)  the path of the exported .onnx file
    sample_inputs(name, n, seed, batch=1)     n seeded input samples, keyed by input name

Models (one file per family): ``resnet18`` and ``resnet50`` (``resnet.py``),
``mobilenet_v2`` (``mobilenet.py``), ``bert_layer`` (``transformer.py``: one BERT
encoder layer, hidden 256, 4 heads, FFN 1024, sequence 128) and ``yolo_like``
(``yolo.py``: a YOLOv5n-shaped detector on 320x320 with its box decode, no NMS).

Exports are cached under ``$TILECORE_CACHE/zoo`` (default ``~/.cache/tilecore/zoo``),
keyed by name, batch, seed, the torch version and the zoo's format number, and written
atomically; the same arguments give the same bytes (see ``_build.py`` for how weights,
BatchNorm statistics and the exporter are chosen for that). Importing this package
does not import torch; :func:`export` does when the file is not cached yet, and says
which package is missing when one is.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import os
import tempfile
import time
import zlib
from typing import Any

import numpy as np

from ._build import ZooError, import_torch, measure_batchnorm, seeded_init, export_onnx

__all__ = ["ZooError", "names", "info", "export", "sample_inputs", "cache_dir", "check"]

# Bumped whenever a definition, the init or the export settings change, so that a
# stale cached file is never returned for new code.
ZOO_FORMAT = 2

_IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(3, 1, 1)
_IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1)

# How each kind of input is drawn; the float32 arrays come from numpy's PCG64.
DISTRIBUTIONS = {
    "imagenet": "pixels uniform in [0, 1], normalised with the ImageNet mean and std",
    "unit": "pixels uniform in [0, 1] (YOLO's input convention)",
    "normal": "standard normal, like embeddings after their LayerNorm",
}


@dataclasses.dataclass(frozen=True)
class _Spec:
    family: str             # module of this package holding the definition
    factory: str            # function of that module returning the torch.nn.Module
    description: str
    inputs: tuple           # ((name, shape without batch, distribution), ...)
    outputs: tuple          # ((name, shape without batch), ...)
    stats_shape: tuple      # shape without batch of the BatchNorm statistics pass
    config: dict = dataclasses.field(default_factory=dict)


_MODELS = {
    "resnet18": _Spec(
        "resnet", "resnet18", "ResNet-18 (torchvision's definition), 1000 classes, 224x224",
        (("input", (3, 224, 224), "imagenet"),), (("logits", (1000,)),), (3, 112, 112)),
    "resnet50": _Spec(
        "resnet", "resnet50", "ResNet-50 v1.5 (torchvision's definition), 1000 classes, 224x224",
        (("input", (3, 224, 224), "imagenet"),), (("logits", (1000,)),), (3, 112, 112)),
    "mobilenet_v2": _Spec(
        "mobilenet", "mobilenet_v2", "MobileNetV2 width 1.0 (torchvision's definition), 1000 classes, 224x224",
        (("input", (3, 224, 224), "imagenet"),), (("logits", (1000,)),), (3, 112, 112)),
    "bert_layer": _Spec(
        "transformer", "bert_layer",
        "one BERT encoder layer (post-LN): 4-head self-attention, LayerNorm, GELU FFN",
        (("hidden_states", (128, 256), "normal"),), (("output", (128, 256)),), (),
        {"hidden": 256, "heads": 4, "head_dim": 64, "ffn": 1024, "seq": 128, "gelu": "erf"}),
    "yolo_like": _Spec(
        "yolo", "yolo_like",
        "YOLOv5n-shaped detector (C3/SPPF backbone, PANet neck, 3-scale head with box decode, no NMS), 320x320",
        (("images", (3, 320, 320), "unit"),), (("detections", (6300, 85)),), (3, 128, 128),
        {"classes": 80, "anchors_per_scale": 3, "strides": [8, 16, 32]}),
}


def names() -> list[str]:
    """The names of the zoo's models, in a stable order."""
    return list(_MODELS)


def _spec(name):
    if name not in _MODELS:
        raise ZooError(f"tilecore.zoo: no model named {name!r}; the zoo has: {', '.join(_MODELS)}")
    return _MODELS[name]


def _check_int(what, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ZooError(f"tilecore.zoo: {what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def info(name: str) -> dict[str, Any]:
    """A dict describing model ``name``: ``description``, ``family`` (the defining module),
    ``inputs`` and ``outputs`` (name -> shape at batch 1; inputs also give ``dtype`` and
    the ``distribution`` :func:`sample_inputs` draws from) and ``config``."""
    s = _spec(name)
    return {
        "name": name,
        "description": s.description,
        "family": f"tilecore.zoo.{s.family}",
        "inputs": {n: {"shape": [1, *shape], "dtype": "float32", "distribution": DISTRIBUTIONS[d]}
                   for n, shape, d in s.inputs},
        "outputs": {n: [1, *shape] for n, shape in s.outputs},
        "config": dict(s.config),
    }


def _draw(rng, distribution, shape):
    if distribution == "imagenet":
        return (rng.random(shape, dtype=np.float32) - _IMAGENET_MEAN) / _IMAGENET_STD
    if distribution == "unit":
        return rng.random(shape, dtype=np.float32)
    return rng.standard_normal(shape, dtype=np.float32)


def _name_key(name):
    return zlib.crc32(name.encode())


def sample_inputs(name: str, n: int, seed: int, batch: int = 1) -> dict[str, np.ndarray]:
    """``n`` seeded input samples of model ``name``: a dict from each ONNX input name to a
    float32 array of shape ``(n, batch, *shape)``, sample ``i`` being ``array[i]`` (the
    layout of a calibration ``.npz``). Sample ``i`` depends only on (name, seed, batch, i),
    not on ``n``: the first 16 of 24 samples are the 16 samples of ``n=16``."""
    s = _spec(name)
    n = _check_int("n", n, 0)
    seed = _check_int("seed", seed, 0)
    batch = _check_int("batch", batch, 1)
    out = {}
    for k, (input_name, shape, dist) in enumerate(s.inputs):
        rng = np.random.default_rng([seed, 2, _name_key(name), k])
        out[input_name] = _draw(rng, dist, (n, batch, *shape))
    return out


def cache_dir() -> str:
    """Where exports are cached: ``$TILECORE_CACHE/zoo``, else ``~/.cache/tilecore/zoo``."""
    from ..runtime.content_cache import cache_root

    root = cache_root()
    return os.path.join(root, "zoo")


def _build_model(name, seed):
    """The torch module of ``name`` with its seeded weights and measured BatchNorm
    statistics, in eval mode."""
    s = _spec(name)
    module = getattr(importlib.import_module(f"{__name__}.{s.family}"), s.factory)()
    seeded_init(module, [seed, 0, _name_key(name)])
    if s.stats_shape:
        (_, _, dist), = s.inputs
        rng = np.random.default_rng([seed, 1, _name_key(name)])
        measure_batchnorm(module, _draw(rng, dist, (4, *s.stats_shape)))
    else:
        module.eval()
    return module


def _export_bytes(name, batch, seed):
    s = _spec(name)
    module = _build_model(name, seed)
    example = [a[0] for a in sample_inputs(name, 1, seed, batch).values()]
    return export_onnx(module, example, [i[0] for i in s.inputs], [o[0] for o in s.outputs])


def _write_atomic(path, data):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".onnx")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _torch_version():
    """The installed torch's version, read from its metadata: a cached export is served
    without importing torch (seconds)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return import_torch().__version__  # raises the ZooError naming the package


def cache_path(name: str, batch: int = 1, seed: int = 0) -> str:
    """The cache file of (name, batch, seed) for the installed torch version."""
    _spec(name)
    version = _torch_version().replace("+", "_")
    return os.path.join(cache_dir(), f"{name}-b{batch}-s{seed}-torch{version}-z{ZOO_FORMAT}.onnx")


def export(name: str, path: str | os.PathLike[str] | None = None, batch: int = 1, seed: int = 0,
           cache: bool = True) -> str:
    """Exports model ``name`` with batch size ``batch`` and weights from ``seed`` and returns
    the path of the ``.onnx`` file: ``path`` when given (the file is also cached), else the
    cache file. ``cache=False`` rebuilds and re-exports even when a cached file exists
    (and then requires ``path``)."""
    _spec(name)
    batch = _check_int("batch", batch, 1)
    seed = _check_int("seed", seed, 0)
    if not cache and path is None:
        raise ZooError("tilecore.zoo.export: cache=False needs a path to write to")
    cached = cache_path(name, batch, seed)
    if cache and os.path.exists(cached):
        data = None
    else:
        data = _export_bytes(name, batch, seed)
        if cache:
            _write_atomic(cached, data)
    if path is None:
        return cached
    if data is None:
        with open(cached, "rb") as f:
            data = f.read()
    _write_atomic(os.fspath(path), data)
    return os.fspath(path)


def check(name: str, batch: int = 1, seed: int = 0, runs: int = 10) -> dict[str, Any]:
    """Exports ``name`` (or takes it from the cache), runs it in ONNX Runtime on
    ``sample_inputs(name, 1, seed, batch)`` and returns a dict: ``path``, ``export_s``
    (0 when cached), ``nodes`` (op type -> count), ``outputs`` (name -> shape),
    ``ort_load_s``, ``ort_run_s`` (median of ``runs`` runs after one warm-up)."""
    from ._build import import_onnx, import_onnxruntime
    onnx, ort = import_onnx(), import_onnxruntime()
    t0 = time.perf_counter()
    cached = os.path.exists(cache_path(name, batch, seed))
    path = export(name, batch=batch, seed=seed)
    export_s = 0.0 if cached else time.perf_counter() - t0
    model = onnx.load(path)
    onnx.checker.check_model(model)
    nodes = {}
    for node in model.graph.node:
        nodes[node.op_type] = nodes.get(node.op_type, 0) + 1
    t0 = time.perf_counter()
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    load_s = time.perf_counter() - t0
    feeds = {k: v[0] for k, v in sample_inputs(name, 1, seed, batch).items()}
    outs = sess.run(None, feeds)
    times = []
    for _ in range(max(1, runs)):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t0)
    names_out = [o.name for o in sess.get_outputs()]
    return {
        "path": path, "export_s": export_s, "cached": cached,
        "nodes": dict(sorted(nodes.items())), "node_count": len(model.graph.node),
        "outputs": {n: list(o.shape) for n, o in zip(names_out, outs)},
        "finite": all(bool(np.isfinite(o).all()) for o in outs),
        "output_std": {n: float(np.std(o)) for n, o in zip(names_out, outs)},
        "ort_load_s": load_s, "ort_run_s": float(np.median(times)),
    }
