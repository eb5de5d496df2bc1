"""Compiler and linker flags for building code against tilecore.

    python -m tilecore.config --includes    # -I<dir with tilecore/ffi/*.h>
    python -m tilecore.config --libs        # -L<dir> -ltilecore -Wl,-rpath,<dir>
    python -m tilecore.config --cxxflags    # -std=c++20 -fPIC and the includes
    python -m tilecore.config --includedir / --libdir / --libpath

An installed package carries the headers in ``tilecore/include`` and the library in
``tilecore/lib``. In a source checkout the headers are the repository's ``include/``
and the library is the one the loaded extension is linked against.
"""

from __future__ import annotations

import argparse
import os
import sys

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def get_include_dir() -> str:
    """Directory holding ``tilecore/ffi/c_api.h``."""
    candidates = [
        os.path.join(_PKG_DIR, "include"),
        os.path.join(os.path.dirname(os.path.dirname(_PKG_DIR)), "include"),
    ]
    for c in candidates:
        if os.path.isfile(os.path.join(c, "tilecore", "ffi", "c_api.h")):
            return c
    raise RuntimeError("tilecore headers not found; is tilecore installed?")


def get_library_path() -> str:
    """Full path of the libtilecore shared library the extension uses."""
    from .ffi._base import _ffi_core

    ext_dir = os.path.dirname(os.path.abspath(_ffi_core.__file__))
    for c in (os.path.join(ext_dir, "lib", "libtilecore.so"), os.path.join(ext_dir, "libtilecore.so")):
        if os.path.isfile(c):
            return c
    # A build tree: ask the dynamic loader which file it mapped for us.
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            for line in maps:
                path = line.split()[-1] if line.strip() else ""
                if os.path.basename(path).startswith("libtilecore.so"):
                    return path
    except OSError:
        pass
    raise RuntimeError("libtilecore not found next to tilecore._ffi_core")


def get_library_dir() -> str:
    return os.path.dirname(get_library_path())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tilecore.config", description=__doc__.split("\n")[0])
    parser.add_argument("--includes", action="store_true", help="print -I flags")
    parser.add_argument("--libs", action="store_true", help="print linker flags")
    parser.add_argument("--cxxflags", action="store_true", help="print C++ compiler flags")
    parser.add_argument("--includedir", action="store_true", help="print the include directory")
    parser.add_argument("--libdir", action="store_true", help="print the library directory")
    parser.add_argument("--libpath", action="store_true", help="print the library's path")
    args = parser.parse_args(argv)
    out = []
    if args.cxxflags:
        out += ["-std=c++20", "-fPIC", f"-I{get_include_dir()}"]
    elif args.includes:
        out.append(f"-I{get_include_dir()}")
    if args.libs:
        d = get_library_dir()
        out += [f"-L{d}", "-ltilecore", f"-Wl,-rpath,{d}"]
    if args.includedir:
        out.append(get_include_dir())
    if args.libdir:
        out.append(get_library_dir())
    if args.libpath:
        out.append(get_library_path())
    if not out:
        parser.print_help()
        return 1
    print(" ".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
