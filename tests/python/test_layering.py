"""tests/python/test_layering.py — the one architectural rule: a layer never reaches up.

Every C++ file of a layer (include/tilecore/<layer>/, src/<layer>/) may include
headers of its own layer and of the layers before it in LAYERS, never after.
"""
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
