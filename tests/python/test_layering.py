"""tests/python/test_layering.py — the one architectural rule: a layer never reaches up.

Every C++ file of a layer (include/tilecore/<layer>/, src/<layer>/) may include
headers of its own layer and of the layers before it in LAYERS, never after.
"""
import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAYERS = ["ffi", "arch", "sim", "runtime", "ir", "transform", "target", "codegen", "compiler", "debug"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"(?:src/|tilecore/)([a-z_]+)/', re.M)


def layer_files(layer):
    for base in (ROOT / "include" / "tilecore" / layer, ROOT / "src" / layer):
        if base.is_dir():
            yield from (p for p in base.rglob("*") if p.suffix in {".h", ".cc"})


def test_no_layer_includes_a_later_layer():
    violations = []
    for rank, layer in enumerate(LAYERS):
        allowed = set(LAYERS[: rank + 1])
        for path in layer_files(layer):
            for used in INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
                if used in LAYERS and used not in allowed:
                    violations.append(f"{path.relative_to(ROOT)} ({layer}) includes {used}")
    assert not violations, "layers reaching up:\n" + "\n".join(violations)


def test_rule_checker_sees_a_violation(tmp_path):
    # The pattern must recognise both include spellings, or the test above proves nothing.
    text = '#include "tilecore/compiler/x.h"\n#include "src/debug/y.h"\n'
    assert INCLUDE.findall(text) == ["compiler", "debug"]


PRIVATE = re.compile(r'^\s*#\s*include\s+"src/([a-z_]+)/', re.M)


def test_private_headers_stay_in_their_layer():
    # src/<layer>/*.h are that layer's own helpers; what another layer needs from it goes
    # into a public header under include/tilecore/<layer>/.
    violations = []
    for layer in LAYERS:
        for path in layer_files(layer):
            for used in PRIVATE.findall(path.read_text(encoding="utf-8", errors="replace")):
                if used != layer:
                    violations.append(f"{path.relative_to(ROOT)} ({layer}) includes a private header of {used}")
    assert not violations, "\n".join(violations)


# ---- the Python package ------------------------------------------------------------------
# python/tilecore mirrors the layers: tilecore/<layer>/ is the front end of that layer. The
# packages without a C++ layer of their own belong to the layer they front; the package
# root (tilecore/__init__.py, __main__, config, extras: the optional dependencies, which
# imports no layer) and the command line (tilecore/cli/) sit on top and may import every layer.
PYTHON = ROOT / "python" / "tilecore"
PYTHON_LAYER = {
    "ffi": "ffi",
    "arch": "arch",
    "sim": "sim",
    "runtime": "runtime",
    "ir": "ir",
    "transform": "transform",
    "target": "target",
    "build": "codegen",  # tilecore.build: codegen.build_<kind> behind the target
    "script": "compiler",  # the kernel DSL builds, runs and checks kernels
    "frontend": "compiler",
    "compiler": "compiler",
    "zoo": "compiler",  # models for the compiler's tests and demos
    "bench": "compiler",  # jobs of the compiler over models (tilecore bench)
    "tdb": "debug",
}
TOP = {"__init__", "__main__", "config", "extras", "cli", "_ffi_core"}


def python_modules():
    """(dotted name, path) of every module of the package."""
    for path in sorted(PYTHON.rglob("*.py")):
        parts = list(path.relative_to(PYTHON.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def python_layer(dotted):
    """The layer of module tilecore.<...>, or None for the package root, the CLI and a name
    the root re-exports (``import tilecore; tilecore.get_global_func``: the root only
    gathers names, each checked where it is defined)."""
    parts = dotted.split(".")
    if len(parts) == 1 or parts[1] in TOP:
        return None
    return PYTHON_LAYER.get(parts[1])


def imported_modules(dotted, path):
    """Every tilecore module `path` imports, at its top or inside a function, resolved to
    its dotted name (``from .. import nd`` in tilecore.ir.expr is tilecore.nd)."""
    is_package = path.name == "__init__.py"
    package = dotted.split(".") if is_package else dotted.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.split(".")[0] == "tilecore")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "tilecore":
                continue
            if node.module is None or module == "tilecore":
                # `from .. import nd, runtime`: each name may be a module of its own.
                yield from (f"{module}.{a.name}" for a in node.names)
            else:
                yield module


def resolve_alias(dotted):
    """tilecore.nd and the other pre-ffi/ names are the ffi modules (tilecore/__init__.py)."""
    parts = dotted.split(".")
    if len(parts) > 1 and (PYTHON / "ffi" / f"{parts[1]}.py").is_file():
        return ".".join(["tilecore", "ffi", *parts[1:]])
    return dotted


def python_layer_violations():
    violations = []
    for dotted, path in python_modules():
        layer = python_layer(dotted)
        if layer is None:
            continue
        allowed = set(LAYERS[: LAYERS.index(layer) + 1])
        for used in imported_modules(dotted, path):
            used = resolve_alias(used)
            used_layer = python_layer(used)
            if used_layer is not None and used_layer not in allowed:
                violations.append(f"{path.relative_to(ROOT)} ({layer}) imports {used}")
    return violations


def test_no_python_layer_imports_a_later_layer():
    violations = python_layer_violations()
    assert not violations, "Python layers reaching up:\n" + "\n".join(violations)


def test_every_python_package_has_a_layer():
    # A new package under python/tilecore must say which layer it is the front end of.
    for path in PYTHON.iterdir():
        name = path.stem
        if (path.is_dir() and (path / "__init__.py").is_file()) or path.suffix == ".py":
            assert name in PYTHON_LAYER or name in TOP, f"python/tilecore/{path.name} belongs to no layer"


def test_ffi_modules_are_a_package_of_their_own():
    # The FFI modules live in tilecore/ffi/, not at the package root (only aliases there).
    stray = [p.name for p in PYTHON.glob("*.py") if (PYTHON / "ffi" / p.name).is_file() and p.name != "__init__.py"]
    assert not stray, f"FFI modules outside tilecore/ffi/: {stray}"


def test_python_rule_checker_sees_a_violation(tmp_path):
    # The checker must resolve relative, aliased and function-level imports, or the tests
    # above prove nothing.
    module = tmp_path / "__init__.py"
    module.write_text("from ..ir import expr\ndef f():\n    from .. import nd, runtime\nimport tilecore.sim\n")
    found = [resolve_alias(m) for m in imported_modules("tilecore.ffi", module)]
    assert sorted(found) == ["tilecore.ffi.nd", "tilecore.ir", "tilecore.runtime", "tilecore.sim"]
    assert python_layer("tilecore.ir.expr") == "ir" and python_layer("tilecore.cli.compile") is None
