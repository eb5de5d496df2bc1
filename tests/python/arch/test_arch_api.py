"""tilecore.arch: assemble, disassemble, program images, and their errors."""
import os

import pytest

import tilecore
from tilecore import arch

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")

PROGRAM = """
.equ N, 4
.core all
.data l1, 0xF0000
desc: .dmadesc dtype=i8 shape=[N, 64]
.text
start:  csrr x1, coreid
        li   x2, 0x100
        muli x3, x1, 4
        add  x2, x2, x3
        sw   x1, [ddr: x2 + 0]
        blt  x1, x0, start
        dma.in l1:x0, ddr:x0, [x0 + desc]
        wait sc, din, 1
        halt
"""


def gemm_source():
    with open(os.path.join(ROOT, "benchmarks", "sim_gemm_i8.s")) as f:
        body = f.read()
    params = dict(M=256, N=256, K=256, TM=64, TN=64, NC=4, A_DDR=0, B_DDR=0x100000, C_DDR=0x200000)
    return "".join(f".equ {k}, {v}\n" for k, v in params.items()) + body


def test_assemble_returns_a_program():
    p = arch.assemble(PROGRAM)
    assert isinstance(p, arch.Program) and isinstance(p, tilecore.Object)
    assert p.sections[0]["words"] == 9
    assert p.sections[0]["cores"] == list(range(16))
    assert p.data_segments == [{"space": "l1", "address": 0xF0000, "size": 72, "core_mask": 0xFFFF}]
    assert len(p.words(0)) == 9 and all(0 <= w < 1 << 64 for w in p.words(0))
    assert p.lines(0)[0] == 7  # `start: csrr x1, coreid`


@pytest.mark.parametrize("source", [PROGRAM, "halt\n", None])
def test_disassemble_round_trip_is_stable(source):
    source = source or gemm_source()
    p = arch.assemble(source)
    text = arch.disassemble(p)
    q = arch.assemble(text)
    assert q == p
    assert arch.disassemble(q) == text
    assert p.disassemble() == text


def test_image_round_trip():
    p = arch.assemble(gemm_source())
    blob = p.to_bytes()
    assert isinstance(blob, bytes) and blob[:4] == b"TC1P"
    assert arch.Program.from_bytes(blob) == p
    assert arch.Program.from_bytes(bytearray(blob)) == p
    assert arch.Program.from_bytes(memoryview(blob)) == p
    assert hash(arch.Program.from_bytes(blob)) == hash(p)
    assert arch.disassemble(blob) == arch.disassemble(p)


def test_programs_compare_by_content():
    assert arch.assemble("li x1, 1\nhalt\n") == arch.assemble("li x1, 1\n  halt # again\n")
    assert arch.assemble("li x1, 1\nhalt\n") != arch.assemble("li x1, 2\nhalt\n")
    assert arch.assemble("halt\n") != "halt"


@pytest.mark.parametrize(
    "cut", [0, 3, 4, 8, 12, 15, 20, -1, -8]
)
def test_truncated_image_raises_naming_the_offset(cut):
    blob = arch.assemble(PROGRAM).to_bytes()
    with pytest.raises(arch.ProgramFormatError) as info:
        arch.Program.from_bytes(blob[:cut])
    assert isinstance(info.value, ValueError) and isinstance(info.value, tilecore.TilecoreError)
    assert "byte" in str(info.value) and info.value.offset >= 0


def test_garbage_images_never_crash():
    import random

    rng = random.Random(1)
    blob = arch.assemble(PROGRAM).to_bytes()
    for _ in range(300):
        b = bytearray(blob)
        for _ in range(rng.randint(1, 6)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        try:
            arch.Program.from_bytes(bytes(b))
        except arch.ProgramFormatError:
            pass
    with pytest.raises(arch.ProgramFormatError):
        arch.Program.from_bytes(b"TC1P" + b"\xff" * 12)


def test_from_bytes_rejects_other_types():
    with pytest.raises(TypeError):
        arch.Program.from_bytes("TC1P")


@pytest.mark.parametrize(
    "source, line, words",
    [
        ("nop\nfoo x1, x2\n", 2, "unknown instruction 'foo'"),
        ("halt\n\n  vand.f32 v1, v2, v3\n", 3, "does not accept dtype f32"),
        ("li x40, 1\n", 1, "x40"),
        ("beq x1, x2, nowhere\n", 1, "nowhere"),
        ("nop\ntquant.i8.i32 x1, x2, [x4]\n", 2, "tquant: source dtype must be f32"),
        ("trequant.i8.f32 x1, x2, [x4]\n", 1, "trequant: source dtype must be i32"),
        ("tquant.f32.f32 x1, x2, [x4]\n", 1, "'tquant' does not accept dtype f32"),
    ],
)
def test_asm_error_names_the_line(source, line, words):
    with pytest.raises(arch.AsmError) as info:
        arch.assemble(source)
    e = info.value
    assert isinstance(e, ValueError) and isinstance(e, tilecore.TilecoreError)
    assert e.line == line
    assert str(e).startswith(f"line {line}:")
    assert words in str(e)


def test_assemble_rejects_non_text():
    with pytest.raises(TypeError):
        arch.assemble(b"halt\n")


def test_assemble_file_names_the_file(tmp_path):
    path = tmp_path / "bad.s"
    path.write_text("halt\nbogus\n")
    with pytest.raises(arch.AsmError) as info:
        arch.assemble_file(str(path))
    assert str(path) in str(info.value) and info.value.line == 2


def test_disassemble_word():
    p = arch.assemble("add x1, x2, x3\nhalt\n")
    assert arch.disassemble_word(p.words(0)[0]) == "add x1, x2, x3"
    assert arch.disassemble_word(0xFF).startswith(".inst 0x")
    assert arch.disassemble_word((1 << 64) - 1).startswith(".inst 0x")
