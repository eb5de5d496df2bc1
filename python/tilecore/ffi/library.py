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
    path = os.path.abspath(os.fspath(path))
    _ffi_api.LoadLibrary(path)
    _loaded.append(path)


_loaded: list[str] = []  # the libraries loaded, in order (ffi/fingerprint.py hashes them)


def loaded() -> list[str]:
    """The paths of the libraries :func:`load_library` loaded in this process."""
    return list(_loaded)


__all__ = ["load_library", "loaded"]
