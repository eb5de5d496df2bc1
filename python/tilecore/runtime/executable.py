"""The executable ``.tcx``: a compiled model (code, constants, DDR plan, I/O, steps).

    exe = tilecore.runtime.load_executable("model.tcx")
    outs = exe.run({"x": x})            # {output name: numpy array}
    exe.stats()                         # cycles, mac_utilisation, per-op figures
    exe.trace("trace.json")             # Chrome / Perfetto trace of the last run
    exe.save("again.tcx")

:class:`ExecutableBuilder` assembles one from modules, a memory plan and steps (what the
model compiler calls). The file format and the statistics are described in docs/executable.md.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from ..ffi.object import Object, register_object

if TYPE_CHECKING:
    import numpy.typing as npt

    from . import Module


def _api():
    from . import _ffi

    return _ffi


@register_object("runtime.Executable")
class Executable(Object):
    """A compiled model: run it with :meth:`run`, save it with :meth:`save`."""

    __slots__ = ()

    def describe(self) -> dict[str, Any]:
        """The plan and steps as a dict (buffers, constants, inputs, outputs, steps)."""
        return json.loads(_api().ExecutableDescribe(self))

    @property
    def modules(self) -> list[Module]:
        return list(_api().ExecutableModules(self))

    @property
    def inputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """{name: (shape, dtype)} of the inputs, in order."""
        return self._io("inputs")

    @property
    def outputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        return self._io("outputs")

    def _io(self, which):
        d = self.describe()
        return {io["name"]: (tuple(d["buffers"][io["buffer"]]["shape"]), d["buffers"][io["buffer"]]["dtype"])
                for io in d[which]}

    @property
    def buckets(self) -> list[dict[str, Any]]:
        """Each bucket's ``inputs`` and ``outputs`` ({name: shape}), ``arena_size`` and ``steps``
        (one entry for an executable without buckets; docs/executable.md, "Buckets")."""
        return json.loads(_api().ExecutableBucketInfo(self))["buckets"]

    @property
    def batch_axes(self) -> dict[str, int]:
        """Input and output name -> batch axis: a smaller batch runs padded in a larger bucket
        (empty: only a bucket's exact shapes run)."""
        return dict(json.loads(_api().ExecutableBucketInfo(self))["batch_axes"])

    def bucket(self, index: int) -> Executable:
        """Bucket ``index`` alone, a plain executable sharing this one's code and constants
        (what tdb and ``tilecore check`` work on)."""
        n = len(self.buckets)
        if not 0 <= int(index) < n:
            raise IndexError(f"bucket {index}: the executable has {n} (0 to {n - 1})")
        return _api().ExecutableBucket(self, int(index))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the ``.tcx`` file; :func:`load_executable` reads it back."""
        _api().ExecutableSaveToFile(self, str(path))

    def to_bytes(self) -> bytes:
        return bytes(_api().ExecutableSaveToBytes(self))

    def run(self, inputs: Mapping[str, Any], device: int = 0,
            progress: Callable[[int, int, str], Any] | None = None,
            observe: Callable[[int, list[Any]], Any] | None = None) -> dict[str, np.ndarray]:
        """Runs on ``npu:device`` (its simulator) and the CPU.

        ``inputs`` maps input names to numpy arrays (or anything with ``__dlpack__``, or
        NDArrays); returns a dict from output names to numpy arrays. A missing, unknown or
        wrongly shaped/typed input is a ValueError listing what the executable expects.
        ``progress(step, n_steps, node)``, when given, is called before each step;
        ``observe(step, args)`` after it, with the step's arguments (``describe()["steps"][step]["args"]``)
        as NDArrays on the device, valid during the call (``.numpy()`` copies one out).
        """
        from ..ffi import nd

        if not isinstance(inputs, dict):
            raise TypeError(f"inputs must be a dict from input names to arrays, not {type(inputs).__name__}")
        names, arrays = [], []
        for name, value in inputs.items():
            if isinstance(value, nd.NDArray):
                arr = value
            else:
                try:
                    if isinstance(value, np.ndarray) or not hasattr(value, "__dlpack__"):
                        arr = nd.array(np.asarray(value))  # (np.ascontiguousarray would make a 0-d input 1-d)
                    else:
                        arr = nd.from_dlpack(value)
                except (ValueError, TypeError, BufferError) as e:
                    raise ValueError(self._input_type_error(str(name), value, e)) from None
            names.append(str(name))
            arrays.append(arr)
        res = list(_api().ExecutableRun(self, names, arrays, int(device), progress, observe))
        n = len(res) // 2
        return {str(res[i]): res[n + i].numpy() for i in range(n)}

    def _input_type_error(self, name: str, value: Any, error: Exception) -> str:
        """Why input ``name`` cannot become an NDArray, naming it and what the executable expects."""
        try:
            dtype = value.dtype if isinstance(getattr(value, "dtype", None), np.dtype) else np.asarray(value).dtype
        except (ValueError, TypeError):
            dtype = None
        kinds = {"U": "text", "S": "bytes", "O": "Python objects", "c": "complex", "V": "raw records",
                 "M": "dates", "m": "time spans"}
        if dtype is None:
            what = f"a {type(value).__name__}: {str(error).splitlines()[0]}"
        elif dtype.byteorder == (">" if np.little_endian else "<"):
            big = "big" if dtype.byteorder == ">" else "little"
            what = f"dtype {dtype.str} is {big}-endian (convert it with .astype('{dtype.newbyteorder('=').str}'))"
        elif dtype.kind in kinds:
            what = f"dtype {dtype.str} ({kinds[dtype.kind]}) is not a data type TC1 has"
        else:
            what = f"dtype {dtype}: {str(error).splitlines()[0]}"
        want = self.inputs.get(name)
        expects = (f"the executable expects {name}: {want[1]}{list(want[0])}" if want else
                   f"the executable's inputs are {', '.join(self.inputs) or 'none'}")
        return f"input `{name}`: {what}; {expects}"

    def stats(self) -> dict[str, Any]:
        """Statistics of the last run (docs/executable.md); ValueError before any run."""
        text = _api().ExecutableStatsJSON(self)
        if not text:
            raise ValueError("no statistics yet: run the executable first")
        return json.loads(text)

    def trace(self, path: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
        """The Chrome/Perfetto trace of the last run: written to ``path``, or returned as a dict."""
        text = _api().ExecutableTraceJSON(self)
        if not text:
            raise ValueError("no trace yet: run the executable first")
        if path is None:
            return json.loads(text)
        from .files import write_bytes

        write_bytes(path, text)  # atomically: an interrupted write leaves the old file
        return None

    def __repr__(self) -> str:
        d = self.describe()
        return (f"<tilecore.runtime.Executable {len(d['steps'])} steps, {len(d['modules'])} modules, "
                f"arena {d['arena_size']} B, inputs {[i['name'] for i in d['inputs']]}>")


def join_buckets(executables: Sequence[Executable], batch_axes: Mapping[str, int] | None = None) -> Executable:
    """One executable whose buckets are those of ``executables`` (programs of one model for
    several input shapes: the same input and output names and dtypes), their equal constants
    kept once. ``batch_axes`` (every input and output name -> its batch axis) lets a smaller
    batch run padded in the next larger bucket; give it only for a model whose batch rows
    do not mix (the compiler shows it before it does)."""
    return _api().ExecutableBuckets(list(executables), {str(k): int(v) for k, v in (batch_axes or {}).items()})


def load_executable(path: str | os.PathLike[str], *, allow_host_code: bool = True,
                    expected_sha256: str | None = None) -> Executable:
    """Reads a ``.tcx`` file (ValueError naming the field and byte of any problem).

    A ``.tcx`` may hold host code (a shared library that loading maps and runs):
    ``allow_host_code=False`` refuses such a file, and ``expected_sha256`` (64 hexadecimal
    digits) refuses any file but that one, before anything in it is parsed; both raise
    PermissionError (docs/deploy.md, "Security")."""
    return _api().ExecutableLoadFromFile(str(path), allow_host_code, expected_sha256)


def load_executable_bytes(data: bytes | bytearray | memoryview, *, allow_host_code: bool = True,
                          expected_sha256: str | None = None) -> Executable:
    """Like :func:`load_executable`, from the file's bytes."""
    from ..ffi import nd

    return _api().ExecutableLoadFromBytes(nd.array(np.frombuffer(bytes(data), dtype=np.uint8).copy()),
                                          allow_host_code, expected_sha256)


class ExecutableBuilder:
    """Assembles an :class:`Executable` (the C++ builder validates it).

        b = ExecutableBuilder(precision="int8")
        m = b.add_module(mod)                                 # a runtime Module: npu or c
        x = b.add_buffer("x", (64,), "int8", offset=0)        # DDR plan: offsets chosen by the caller
        w = b.add_constant("w", weights, offset=64)           # a buffer holding the array's bytes
        b.add_input("x", x); b.add_output("y", y)
        b.add_step("npu", m, "kernel", [x, w, y], node="add0", op_type="Add", macs=0)
        exe = b.build()

    Offsets are 64-byte aligned; ``offset=None`` places a buffer after the last one. A
    constant's bytes are those its array holds when ``build()`` is called (the executable
    copies them then; the builder keeps a reference, not a copy).
    """

    def __init__(self, precision: str = "f32") -> None:
        self.precision = precision
        self._modules, self._buffers, self._constants, self._arrays = [], [], [], []
        self._inputs, self._outputs, self._steps = [], [], []

    def add_module(self, module: Module) -> int:
        for i, m in enumerate(self._modules):
            if m is module:
                return i
        self._modules.append(module)
        return len(self._modules) - 1

    def add_buffer(self, name: str, shape: Sequence[int], dtype: npt.DTypeLike, offset: int | None = None) -> int:
        from ..ffi.nd import BYTE_COPIED

        if str(dtype) in BYTE_COPIED:  # numpy knows these only through ml_dtypes
            dtype = str(dtype)
            itemsize = 2 if dtype == "bfloat16" else 1
        else:
            itemsize = np.dtype(dtype).itemsize
            dtype = str(np.dtype(dtype))
        size = int(np.prod(shape, dtype=np.int64)) * itemsize
        if offset is None:
            end = max((b["offset"] + b["size"] for b in self._buffers), default=0)
            offset = (end + 63) // 64 * 64
        self._buffers.append({"name": name, "offset": int(offset), "size": int(size), "dtype": dtype,
                              "shape": [int(d) for d in shape]})
        return len(self._buffers) - 1

    def add_constant(self, name: str, array: npt.ArrayLike, offset: int | None = None) -> int:
        from ..ffi import nd

        array = np.asarray(array)
        if not array.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
            array = np.ascontiguousarray(array)
        if array.dtype.name in nd.BYTE_COPIED:  # ml_dtypes' types: DLPack has none (nd.array copies bytes)
            b = self.add_buffer(name, array.shape, array.dtype.name, offset)
        else:
            b = self.add_buffer(name, array.shape, array.dtype, offset)
        self._constants.append({"buffer": b})
        # (ml_dtypes' types have no DLPack export: nd.array copies their bytes)
        self._arrays.append(nd.array(array) if array.dtype.name in nd.BYTE_COPIED else nd.from_dlpack(array))
        return b

    def add_input(self, name: str, buffer: int) -> None:
        self._inputs.append({"name": name, "buffer": int(buffer)})

    def add_output(self, name: str, buffer: int) -> None:
        self._outputs.append({"name": name, "buffer": int(buffer)})

    def add_step(self, kind: str, module: int | Module, function: str, args: Sequence[int], node: str,
                 op_type: str = "", macs: int = 0, source_node: str = "", debug: Mapping[str, Any] | None = None) -> None:
        """One call: ``kind`` "npu" or "host"; ``module`` an index from add_module (or a Module)."""
        if not isinstance(module, int):
            module = self.add_module(module)
        self._steps.append({"kind": kind, "module": module, "function": function, "args": [int(a) for a in args],
                            "node": node, "op_type": op_type, "macs": int(macs), "source_node": source_node or node,
                            "debug": {str(k): str(v) for k, v in (debug or {}).items()}})

    def arena_size(self) -> int:
        return max((b["offset"] + b["size"] for b in self._buffers), default=0)

    def build(self, arena_size: int | None = None) -> Executable:
        desc = {"precision": self.precision, "arena_size": int(arena_size if arena_size is not None else self.arena_size()),
                "buffers": self._buffers, "constants": self._constants, "inputs": self._inputs,
                "outputs": self._outputs, "steps": self._steps}
        return _api().ExecutableCreate(self._modules, json.dumps(desc), self._arrays)


__all__ = ["Executable", "ExecutableBuilder", "load_executable", "load_executable_bytes"]
