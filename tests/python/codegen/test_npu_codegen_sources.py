"""The npu code generator names instructions through the ISA table (isa.def), never as text.

Every string literal in src/codegen/npu/ is split into words; none may be a TC1 mnemonic,
so a renamed or removed instruction is a compile error in the code generator, not a
run-time "does not assemble". TC1 limits come from arch parameters (params.h), so the
literals 4096 / 32 / 8 / 65536 do not appear as numbers either.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[3]
NPU = ROOT / "src" / "codegen" / "npu"


def _mnemonics():
    arch = ROOT / "include" / "tilecore" / "arch"
    text = (arch / "isa.def").read_text() + (arch / "tile_ops.def").read_text()
    names = set(re.findall(r'^TC1_(?:INST|TILE_OP)\(\s*\w+\s*,\s*"([^"]+)"', text, re.M))
    assert len(names) > 100  # the table parsed
    return names


def _literals(src):
    src = re.sub(r"//[^\n]*", "", src)  # comments may explain instructions
    return re.findall(r'"((?:[^"\\\n]|\\.)*)"', src)


def test_no_mnemonic_in_string_literals():
    mn = _mnemonics()
    files = sorted(NPU.glob("*.cc")) + sorted(NPU.glob("*.h"))
    assert files, "src/codegen/npu/ is missing"
    bad = []
    for f in files:
        for lit in _literals(f.read_text()):
            for word in re.split(r"[^A-Za-z0-9_.]+", lit):
                if word in mn:
                    bad.append(f"{f.name}: {lit!r}")
    assert not bad, "TC1 mnemonics spelled as text:\n" + "\n".join(bad)


def test_no_tc1_limit_literals():
    bad = []
    for f in sorted(NPU.glob("*.cc")):
        src = re.sub(r"//[^\n]*", "", f.read_text())
        for n in ("4096", "65536", "kNumXRegs = 32"):
            if n in src:
                bad.append(f"{f.name}: {n}")
    assert not bad, bad


def test_checker_sees_a_mnemonic():
    # The check above could pass vacuously if literal parsing broke.
    assert any(w in _mnemonics() for w in re.split(r"[^A-Za-z0-9_.]+", _literals('E("addi x1, x1, 1");')[0]))
