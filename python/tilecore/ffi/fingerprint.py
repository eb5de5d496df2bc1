"""What this tilecore is, as a sha256: its version, every Python source of the package, and
every shared library of tilecore's the process has mapped (the extension, libtilecore, and
the libraries ``tilecore.load_library`` loaded, which may register strategies and ops).
The caches key their entries by it (runtime/content_cache.py, compiler/compile_cache.py; it lives in the ffi layer, which
knows the libraries, so every layer may ask),
so a rebuilt or edited tilecore never meets a result an older one stored."""

from __future__ import annotations

import functools
import hashlib
import os
from typing import Any


def hash_file(h: Any, path: str) -> None:
    """Feeds the bytes of ``path`` to the hash object ``h``."""
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)


@functools.lru_cache(maxsize=None)
def _sources_digest() -> str:
    """The version and the package's Python sources (the modules a process runs are the ones
    it imported: once per process)."""
    import tilecore

    h = hashlib.sha256(tilecore.__version__.encode())
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # (the package, above ffi/)
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                h.update(os.path.relpath(os.path.join(folder, f), root).encode())
                hash_file(h, os.path.join(folder, f))
    return h.hexdigest()


_file_digests: dict[tuple[str, int, int], str] = {}


def _file_digest(path: str) -> str:
    st = os.stat(path)
    k = (path, st.st_size, st.st_mtime_ns)
    if k not in _file_digests:
        h = hashlib.sha256()
        hash_file(h, path)
        _file_digests[k] = h.hexdigest()
    return _file_digests[k]


def _libraries() -> list[str]:
    """The shared libraries of tilecore's this process has mapped: the extension, and from
    /proc/self/maps every libtilecore* (a development build's lives beside the extension's
    folder, not in it); else the package's lib folder. Then those load_library loaded."""
    from . import library
    from ._base import _ffi_core

    ext = os.path.abspath(_ffi_core.__file__)
    libs = {ext}
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split(None, 5)[-1].strip() if line.count(" ") >= 5 else ""
                if os.path.basename(path).startswith("libtilecore"):
                    libs.add(path)
    except OSError:
        lib_dir = os.path.join(os.path.dirname(ext), "lib")
        if os.path.isdir(lib_dir):
            libs.update(os.path.join(lib_dir, f) for f in os.listdir(lib_dir) if f.endswith(".so"))
    libs.update(library.loaded())
    return sorted(p for p in libs if os.path.isfile(p))


def package_fingerprint() -> str:
    """sha256 of this tilecore (see the module doc); the libraries' digests are kept by path,
    size and modification time, so asking again costs a stat per library."""
    h = hashlib.sha256(_sources_digest().encode())
    for lib in _libraries():
        h.update(os.path.basename(lib).encode())
        h.update(_file_digest(lib).encode())
    return h.hexdigest()
