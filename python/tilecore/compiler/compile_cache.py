"""The compile cache (docs/compiler.md, "Compile cache"): an executable kept on disk under
a key of everything it was compiled from, so that compiling the same model with the same
options again loads it instead of compiling it.

The key is the sha256 of the model's bytes (and of the external data files it names), of
every option of ``compile()`` that can change the executable (the calibration samples and
thresholds by their bytes), of the pass context the compile runs under, and of this
tilecore's fingerprint (tilecore/ffi/fingerprint.py: a changed compiler never meets a stale
entry). An entry is the ``.tcx`` and the compile's report, stored as
runtime/content_cache.py stores (atomically; a damaged entry is removed and compiled again,
never used).

It is opt-in: ``compile(..., cache_dir=DIR)``, ``$TILECORE_COMPILE_CACHE=DIR`` or
``tilecore compile --cache-dir DIR``. A compile it cannot key is compiled as always and
``report["compile_cache"]["reason"]`` says why (docs/compiler.md lists the cases). The
folder keeps at most ``max_bytes`` (``$TILECORE_COMPILE_CACHE_BYTES``, default 4 GiB): the
entries used least recently go first.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Any, Mapping

import numpy as np

from ..ffi import fingerprint
from ..ffi.fingerprint import hash_file
from ..runtime.content_cache import Cache, sha256_hex
from ..runtime.files import file_sha256_and_contains

ENV_FOLDER = "TILECORE_COMPILE_CACHE"
ENV_BYTES = "TILECORE_COMPILE_CACHE_BYTES"
DEFAULT_MAX_BYTES = 4 << 30
# a .tcx file's header: magic, version, flags, its payload's size and checksum (docs/executable.md)
TCX_HEADER_BYTES = 32
# the report's entries that do not keep (objects of the compiler's, not data)
_NOT_KEPT = ("npu_funcs",)


class Uncacheable(Exception):
    """What makes a compile impossible to key (the message says what)."""


def folder(cache_dir: str | os.PathLike[str] | None) -> str | None:
    """The cache folder a compile uses: ``cache_dir``, else ``$TILECORE_COMPILE_CACHE``, else none."""
    if cache_dir is not None:
        return os.fspath(cache_dir)
    return os.environ.get(ENV_FOLDER) or None


def max_bytes() -> int:
    """``$TILECORE_COMPILE_CACHE_BYTES`` (a count of bytes), default 4 GiB."""
    raw = os.environ.get(ENV_BYTES, "")
    if not raw:
        return DEFAULT_MAX_BYTES
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"${ENV_BYTES}: expected a number of bytes, got {raw!r}") from None
    if n <= 0:
        raise ValueError(f"${ENV_BYTES}: expected a positive number of bytes, got {n}")
    return n


def _canonical(value: Any, where: str) -> Any:
    """``value`` as plain JSON data, arrays and bytes by their digest: equal options give
    equal text, and any value the key cannot cover raises Uncacheable naming ``where``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"bytes": sha256_hex(bytes(value))}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise Uncacheable(f"{where} is an array of Python objects, which the key cannot cover")
        a = np.ascontiguousarray(value)
        return {"array": [a.dtype.str, list(a.shape), sha256_hex(a.view(np.uint8).reshape(-1) if a.size else b"")]}
    if isinstance(value, Mapping):
        return {"map": sorted([str(k), _canonical(v, f"{where}[{k!r}]")] for k, v in value.items())}
    if isinstance(value, (list, tuple)):
        return [_canonical(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, os.PathLike):
        return _file_sha256(os.fspath(value), where)
    raise Uncacheable(f"{where} is a {type(value).__name__}, which the key cannot cover")


def _file_sha256(path: str, where: str) -> dict[str, str]:
    h = hashlib.sha256()
    try:
        hash_file(h, path)
    except OSError as e:
        raise Uncacheable(f"{where}: {path} cannot be read ({e.strerror})") from None
    return {"file": h.hexdigest()}


def _external_files(data: bytes, base: str) -> list[str]:
    """The external data files an ONNX model's tensors name (paths under ``base``)."""
    if b"location" not in data:  # (every external tensor carries the key "location")
        return []
    return _external_files_named(data, base)


def _external_files_named(data: bytes, base: str) -> list[str]:
    import onnx
    from onnx import external_data_helper

    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:  # noqa: BLE001 (not a model: the compile names the problem, uncached)
        raise Uncacheable("the model's bytes do not parse as an ONNX model") from None
    files = set()
    for t in external_data_helper._get_all_tensors(model):  # noqa: SLF001 (onnx's own walk)
        if external_data_helper.uses_external_data(t):
            info = {e.key: e.value for e in t.external_data}
            files.add(os.path.join(base, info.get("location", "")))
    return sorted(files)


def _model_part(model: Any) -> Any:
    if hasattr(model, "nodes"):
        raise Uncacheable("the model is a Graph object (no bytes to key): give its .onnx file or bytes")
    if hasattr(model, "SerializeToString"):
        from onnx import external_data_helper

        if any(external_data_helper.uses_external_data(t) for t in external_data_helper._get_all_tensors(model)):  # noqa: SLF001
            raise Uncacheable("the ModelProto names external data files (give its .onnx path)")
        return {"onnx": sha256_hex(model.SerializeToString())}
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        if _external_files(data, "."):
            raise Uncacheable("the model's bytes name external data files (give its .onnx path)")
        return {"onnx": sha256_hex(data)}
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        # (read in pieces, hashed and searched in one read: the whole file is held only when
        # it may name external data, to find its files)
        try:
            digest, named = file_sha256_and_contains(path, b"location")  # (every external tensor has that key)
            ext = []
            if named:
                with open(path, "rb") as f:
                    data = f.read()
                ext = _external_files_named(data, os.path.dirname(os.path.abspath(path)))
        except OSError as e:
            raise Uncacheable(f"the model file {path} cannot be read ({e.strerror})") from None
        return {"onnx": digest, "external": [[os.path.basename(p), _file_sha256(p, "external data")["file"]]
                                             for p in ext]}
    raise Uncacheable(f"the model is a {type(model).__name__}")


def _model_ops(model: Any) -> set[str]:
    """The strategy names (``Op`` or ``domain::Op``) of every node of the model, its
    subgraphs' and its functions'."""
    import onnx

    from . import strategy_name

    if hasattr(model, "SerializeToString"):
        proto = model
    else:
        proto = onnx.ModelProto()
        if isinstance(model, (str, os.PathLike)):
            with open(os.fspath(model), "rb") as f:
                proto.ParseFromString(f.read())
        else:
            proto.ParseFromString(bytes(model))
    names: set[str] = set()

    def walk(nodes: Any) -> None:
        for nd in nodes:
            names.add(strategy_name(nd.op_type, nd.domain))
            for a in nd.attribute:
                for g in [a.g] if a.HasField("g") else list(a.graphs):
                    walk(g.node)

    walk(proto.graph.node)
    for fn in proto.functions:
        walk(fn.node)
    return names


def key(model: Any, options: Mapping[str, Any]) -> str:
    """The cache key of compiling ``model`` with ``options`` (compile()'s keyword arguments
    that change the executable); raises Uncacheable naming what cannot be keyed."""
    from . import custom_kernel

    parts = {"tilecore": fingerprint.package_fingerprint(), "model": _model_part(model)}
    kernels = custom_kernel.registered()
    built_in = sorted(k for k in kernels if "::" not in k)  # (passes make built-in ops: Gemm, ...)
    if built_in:
        raise Uncacheable(f"a custom kernel is registered for the built-in op {', '.join(built_in)} (a Python "
                          "function the key cannot cover)")
    ran = sorted(kernels & _model_ops(model)) if kernels else []
    if ran:
        raise Uncacheable(f"a custom kernel is registered for {', '.join(ran)}, an op of the model (a Python "
                          "function the key cannot cover)")
    from .. import transform

    ctx = transform.PassContext.current()  # (the passes run under it: its options are the compile's)
    if len(ctx.instruments):
        raise Uncacheable("the pass context has instruments (what they observe is the point)")
    parts["pass_context"] = _canonical({"opt_level": int(ctx.opt_level),
                                        "disabled": sorted(str(d) for d in ctx.disabled),
                                        "config": {str(k): v for k, v in dict(ctx.config).items()}}, "PassContext")
    for name, value in sorted(options.items()):
        if name == "calib" and value is not None and not isinstance(value, Mapping):
            value = {"thresholds": getattr(value, "thresholds", None),
                     "channel_means": getattr(value, "channel_means", None)}
        elif name == "pipeline" and value is not None:
            if value.inspects:
                raise Uncacheable("the pipeline prints, dumps or verifies passes (their output is the point)")
            value = {"disable": sorted(str(p) for p in value.disable)}
        elif name == "target":
            value = str(value)
        parts[name] = _canonical(value, name)
    return sha256_hex(json.dumps(parts, sort_keys=True).encode())


def _keepable(value: Any, where: str, dropped: list[str]) -> tuple[Any, bool]:
    """``value`` without what does not keep as JSON (the compiler's objects: ``npu_funcs``),
    each path left out added to ``dropped``; (value, False) when nothing of it keeps."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if k in _NOT_KEPT:
                dropped.append(f"{where}{k}")
                continue
            kept, ok = _keepable(v, f"{where}{k}.", dropped)
            if ok:
                out[k] = kept
        return out, True
    if isinstance(value, (list, tuple)):
        out = []
        for i, v in enumerate(value):
            kept, ok = _keepable(v, f"{where}{i}.", dropped)
            if not ok:
                return None, False
            out.append(kept)
        return out, True
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        dropped.append(where.rstrip("."))
        return None, False
    return value, True


def load(where: str, k: str) -> tuple[Any, dict[str, Any]] | None:
    """(the executable, its compile's report) of entry ``k``, or None (absent or damaged:
    removed); the entry is marked as used now."""
    from ..runtime.executable import load_executable

    cache = Cache(where)
    # The executable is checked as it loads: its header (its payload's size and checksum) must
    # be the one the entry recorded, and the loader checks the payload against it; one read of
    # the file instead of a digest's read before the load's.
    got = cache.get(k, check_artifact=False)
    if got is None or got[1] is None:
        return None
    row, artifact = got
    head = row.get("tcx_head")
    if not isinstance(head, str):  # (an entry stored without it: its artifact's digest)
        got = cache.get(k)
        if got is None:
            return None
    else:
        try:
            with open(artifact, "rb") as f:
                same = f.read(TCX_HEADER_BYTES).hex() == head
        except OSError:
            same = False
        if not same:
            cache.discard(k, "its executable is not the one the entry recorded")
            return None
    try:
        exe = load_executable(artifact)
    except (ValueError, OSError):
        cache.discard(k, "its executable does not load")
        return None
    now = time.time()
    for p in (artifact, os.path.join(os.path.dirname(artifact), k + ".json")):
        try:
            os.utime(p, (now, now))
        except OSError:
            pass
    return exe, dict(row.get("report", {}))


def store(where: str, k: str, exe: Any, report: Mapping[str, Any]) -> list[str]:
    """Stores the executable and the report's data under ``k``, then trims the folder to
    :func:`max_bytes`; returns the report entries not kept (objects, not data)."""
    dropped: list[str] = []
    kept, _ = _keepable(report, "", dropped)
    data = exe.to_bytes()
    Cache(where).put(k, {"report": kept, "tcx_head": data[:TCX_HEADER_BYTES].hex()}, data, ".tcx")
    trim(where, max_bytes())
    return dropped


def trim(where: str, limit: int) -> list[str]:
    """Removes the entries used least recently until the folder holds at most ``limit``
    bytes; returns the keys removed. An artifact without its entry (a write cut short) goes
    first."""
    entries: dict[str, list[Any]] = {}  # key -> [last use, bytes, paths]
    total = 0
    try:
        subs = [os.path.join(where, d) for d in os.listdir(where) if len(d) == 2]
    except OSError:
        return []
    for sub in subs:
        try:
            names = os.listdir(sub)
        except OSError:
            continue
        for name in names:
            if name.startswith("."):  # (another process's write in progress)
                continue
            path = os.path.join(sub, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            k = name.split(".", 1)[0]
            e = entries.setdefault(k, [float("-inf"), 0, [], False])
            e[1] += st.st_size
            e[2].append(path)
            if name.endswith(".json"):
                e[0], e[3] = st.st_mtime, True
            total += st.st_size
    removed = []
    # orphans (no .json) first, then by last use
    for k, (_, size, paths, _) in sorted(entries.items(), key=lambda kv: (kv[1][3], kv[1][0])):
        if total <= limit:
            break
        for p in sorted(paths, key=lambda p: not p.endswith(".json")):  # the commit mark first
            try:
                os.unlink(p)
            except OSError:
                pass
        total -= size
        removed.append(k)
    return removed
