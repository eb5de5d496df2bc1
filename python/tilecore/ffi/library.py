"""Loading extension libraries that register functions and object kinds."""

from __future__ import annotations

import os

from . import _ffi_api


def load_library(path: str | os.PathLike[str]) -> None:
    """Loads a shared library built against tilecore (see ``python -m tilecore.config``).

    The library's ``TILECORE_REGISTER_GLOBAL`` functions and object kinds are in the
    registry when this returns. It is opened with RTLD_NOW | RTLD_GLOBAL, so its
    symbols are visible to libraries loaded after it.

    :raises tilecore.error.OSError / ValueError: the file cannot be opened (the message
        names the path and the loader's reason) or one of its registrations clashes.
    """
    _ffi_api.LoadLibrary(os.path.abspath(os.fspath(path)))


__all__ = ["load_library"]
