"""The FFI layer: the one bridge between Python and the C++ library.

Global functions registered by name (:mod:`.function`), objects with reflected fields
(:mod:`.object`) and their containers (:mod:`.container`), conversion of Python values
(:mod:`.convert`), data types and devices, errors that cross the boundary in both
directions (:mod:`.error`), arrays shared with numpy and PyTorch through DLPack
(:mod:`.nd`), JSON serialization and structural equality, loading plugin libraries.

Like ``include/tilecore/ffi`` and ``src/ffi`` it is the first layer: nothing here
imports from the layers after it (tests/python/test_layering.py checks that). The
modules are also reachable under their older top-level names (``tilecore.nd``,
``tilecore.error``, ...): :data:`MODULES` lists them and tilecore/__init__.py
registers the aliases.
"""

from __future__ import annotations

from ._base import _ffi_core
from . import error
from . import object
from . import function
from . import container
from . import convert
from . import device
from . import dtype
from . import serialization
from . import structural
from . import library
from . import nd
from . import testing

# The modules users import as tilecore.<name>; the same module objects, not copies.
MODULES = (
    "container",
    "convert",
    "device",
    "dtype",
    "error",
    "function",
    "library",
    "nd",
    "object",
    "serialization",
    "structural",
    "testing",
)

__all__ = ["MODULES", *MODULES]
