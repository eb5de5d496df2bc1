"""tilecore: a toolchain for the TC1 virtual NPU.

This package is the Python front end. Everything it does in C++ goes through one
bridge, the FFI: global functions registered by name, objects with reflected
fields, arrays shared with numpy and PyTorch through DLPack.

    >>> import tilecore
    >>> tilecore.get_global_func("testing.echo")(42)
    42
"""

from __future__ import annotations

import pkgutil as _pkgutil
import sys as _sys
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from .runtime import Executable

# A plain CMake build puts the compiled extension in <build>/python/tilecore while the
# Python sources stay in python/tilecore; with both folders on sys.path the package
# spans them. (An installed package has both in one folder; this is then a no-op.)
__path__ = _pkgutil.extend_path(__path__, __name__)

from .ffi._base import _ffi_core  # noqa: E402  (loads the extension, with a clear error)
from . import ffi  # noqa: E402

# The FFI modules live in tilecore.ffi (the layer they belong to) and keep the names users
# import them by: tilecore.nd, tilecore.error, ``from tilecore.nd import NDArray``. An
# entry in sys.modules makes the old name the same module object (one registry, one
# monkeypatch target), not a copy of its names; docs/contributing.md says why.
for _name in ffi.MODULES:
    _sys.modules[f"{__name__}.{_name}"] = getattr(ffi, _name)
    globals().setdefault(_name, getattr(ffi, _name))
del _name

from .ffi import error  # noqa: E402
from .ffi.error import TilecoreError, register_error  # noqa: E402
from .ffi.object import Object, ObjectRValueRef, register_object  # noqa: E402
from .ffi.function import (  # noqa: E402
    Function,
    get_global_func,
    list_global_func_names,
    register_func,
    remove_global_func,
)
from .ffi.container import Array, Map, Shape  # noqa: E402
from .ffi.convert import convert  # noqa: E402
from .ffi.device import Device, cpu, device, npu  # noqa: E402
from .ffi.dtype import DataType, dtype  # noqa: E402
from .ffi.serialization import load_json, save_json  # noqa: E402
from .ffi.structural import (  # noqa: E402
    assert_structural_equal,
    get_first_structural_mismatch,
    structural_equal,
    structural_hash,
)
from .ffi.library import load_library  # noqa: E402
from .ffi import nd  # noqa: E402
from .ffi.nd import NDArray  # noqa: E402
from .ffi import testing  # noqa: E402
from . import arch, sim, runtime  # noqa: E402  (registers AsmError, SimError, Module)
from .target import Target  # noqa: E402
from .build import build  # noqa: E402


def compile(model: Any, target: str | Target = "npu -cores=4",  # noqa: A001
            precision: str = "f32", input_shapes: Mapping[str, Sequence[int]] | None = None,
            keep_intermediates: bool = False, **kwargs: Any) -> Executable:
    """A model (ONNX path, bytes, ModelProto, or Graph) compiled to a runtime Executable:
    see :func:`tilecore.compiler.compile` and docs/compiler.md, "The driver"."""
    from .compiler.driver import compile as _compile

    return _compile(model, target=target, precision=precision, input_shapes=input_shapes,
                    keep_intermediates=keep_intermediates, **kwargs)

__version__ = "0.1.0"

__all__ = [
    "Array",
    "DataType",
    "Device",
    "Function",
    "Map",
    "NDArray",
    "Object",
    "ObjectRValueRef",
    "Shape",
    "Target",
    "TilecoreError",
    "arch",
    "build",
    "assert_structural_equal",
    "convert",
    "cpu",
    "device",
    "dtype",
    "error",
    "get_first_structural_mismatch",
    "get_global_func",
    "list_global_func_names",
    "load_json",
    "load_library",
    "nd",
    "npu",
    "register_error",
    "register_func",
    "register_object",
    "remove_global_func",
    "runtime",
    "save_json",
    "sim",
    "structural_equal",
    "structural_hash",
    "testing",
]
