"""The runtime: devices and modules.

    x = tilecore.nd.array(a, device=tilecore.npu(0))     # an array in the simulator's DDR
    x.numpy()                                            # back to the host
    mod = tilecore.build(kernel, target="npu")           # a Module
    mod["kernel"](x, y)                                  # numpy arrays or NDArrays
    mod.get_source()                                     # TC1 assembly (npu) or C (c)
    mod.save("kernel.tcm"); again = tilecore.runtime.load_module("kernel.tcm")

Device ``npu:N`` is a TC1 simulator (default ``"npu -cores=4"``);
:func:`npu_configure` changes it and :func:`npu_simulator` gives it to you as a
:class:`tilecore.sim.Simulator` (statistics of the last kernel, traces, state).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..ffi._base import _ffi_core
from ..ffi.object import Object, TypeIndex, register_object

if TYPE_CHECKING:
    from ..ffi.device import Device
    from ..ffi.function import Function
    from ..sim import Simulator


class _Api:
    def __getattr__(self, name):
        func = _ffi_core._get_global_func("runtime." + name)
        if func is None:
            raise AttributeError(f"the tilecore library does not register 'runtime.{name}'")
        setattr(self, name, func)
        return func


_ffi = _Api()


@register_object(TypeIndex.Module)
class Module(Object):
    """Compiled code with named functions (an ``npu``, ``c`` or plugin module).

    ``mod["f"]`` / ``mod.get_function("f")`` is a :class:`tilecore.Function` that takes
    numpy arrays, NDArrays (on any device) and Python scalars; arrays a kernel writes
    are written in place. ``mod(...)`` calls the only function of a one-function module.
    """

    __slots__ = ()

    @property
    def kind(self) -> str:
        """"npu", "c", or a plugin's kind."""
        return _ffi.ModuleKind(self)

    @property
    def functions(self) -> list[str]:
        """Names of the functions this module defines (not its imports)."""
        return list(_ffi.ModuleListFunctions(self))

    @property
    def imported_modules(self) -> list[Module]:
        return list(_ffi.ModuleImports(self))

    @property
    def info(self) -> dict[str, Any]:
        """Per-function facts: parameters, cores, words, line tables (npu)."""
        return _to_py(_ffi.ModuleInfo(self))

    def get_function(self, name: str, query_imports: bool = True) -> Function:
        """The function ``name`` (searched in imports too); AttributeError if absent."""
        f = _ffi.ModuleGetFunction(self, name, query_imports)
        if f is None:
            raise AttributeError(f"module ({self.kind}) has no function '{name}' (it has {self.functions})")
        return f

    def __getitem__(self, name):
        return self.get_function(name)

    def __call__(self, *args: Any) -> Any:
        names = self.functions
        if len(names) != 1:
            raise TypeError(f"call a function by name: this module has {names}")
        return self.get_function(names[0])(*args)

    def get_source(self, fmt: str = "") -> str:
        """TC1 assembly for an npu module, C for a c module."""
        return _ffi.ModuleGetSource(self, fmt)

    def import_module(self, other: Module) -> None:
        _ffi.ModuleImport(self, other)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the module (and its imports) to ``path``; :func:`load_module` reads it."""
        _ffi.ModuleSaveToFile(self, str(path))

    def __repr__(self) -> str:
        return f"<tilecore.runtime.Module {self.kind}: {', '.join(self.functions)}>"


def _to_py(x):
    from ..ffi.container import Array, Map

    if isinstance(x, Map):
        return {k: _to_py(v) for k, v in x.items()}
    if isinstance(x, Array):
        return [_to_py(v) for v in x]
    return x


def load_module(path: str | os.PathLike[str]) -> Module:
    """Loads a module file written by :meth:`Module.save` (ValueError naming the problem)."""
    return _ffi.ModuleLoadFromFile(str(path))


def npu_configure(dev_id: int = 0, target: Any = "npu -cores=4") -> None:
    """Replaces the simulator behind ``npu:dev_id`` (no arrays may be allocated on it)."""
    _ffi.NpuConfigure(int(dev_id), str(target))


def npu_simulator(dev_id: int = 0) -> Simulator:
    """The simulator behind ``npu:dev_id`` as a :class:`tilecore.sim.Simulator`."""
    from ..sim import Simulator

    return Simulator._from_handle(_ffi.NpuSimulator(int(dev_id)))


def device_attributes(device: Device) -> dict[str, Any]:
    """A dict describing a device (memory use, cores, target for npu)."""
    return _to_py(_ffi.DeviceAttributes(device))


def list_device_apis() -> list[str]:
    """Names of the registered device kinds (``device_api.<name>``)."""
    return list(_ffi.ListDeviceAPIs())


from .executable import (  # noqa: E402
    Executable,
    ExecutableBuilder,
    join_buckets,
    load_executable,
    load_executable_bytes,
)

__all__ = [
    "Executable",
    "ExecutableBuilder",
    "Module",
    "join_buckets",
    "load_executable",
    "load_executable_bytes",
    "device_attributes",
    "list_device_apis",
    "load_module",
    "npu_configure",
    "npu_simulator",
]
