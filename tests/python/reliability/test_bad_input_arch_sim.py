"""Bad input at the assembler and the simulator: data that does not fit its directive,
circular constants, unbounded data, programs for absent cores, partial loads, budgets,
narrowed indices and target strings."""
import os

import pytest

from reliability_helpers import expect_error, run_isolated


@pytest.mark.parametrize("src,words", [
    (".data ddr, 0\n.byte 300\n.text\nhalt", ["300 does not fit .byte"]),
    (".data ddr, 0\n.byte -129\n.text\nhalt", ["-129 does not fit .byte"]),
    (".data ddr, 0\n.half 70000\n.text\nhalt", ["70000 does not fit .half"]),
    (".data ddr, 0\n.word 0x1FFFFFFFF\n.text\nhalt", ["does not fit .word"]),
    (".equ A, A + 1\nli x1, A\nhalt", ["symbol 'A'", "in terms of itself"]),
    (".equ A, B\n.equ B, A\nli x1, A\nhalt", ["in terms of itself"]),
])
def test_assembler_refuses(src, words):
    # S8
    expect_error(f"tilecore.arch.assemble({src!r})", "AsmError", *words)


def test_assembler_keeps_data_that_fits_and_forward_constants():
    out = run_isolated("""
        p = tilecore.arch.assemble('.equ A, B + 1\\n.equ B, 41\\n.data ddr, 0\\n.byte 255, -128\\n.half 65535\\n'
                                   '.word -1\\n.text\\nli x1, A\\nhalt')
        s = tilecore.sim.Simulator('npu -cores=1'); s.load(p); s.run()
        RESULT = (s.read('ddr', 0, (8,)).tolist(), s.xreg(0, 1))
    """)
    assert out.expect_ok() == repr(([255, 128, 255, 255, 255, 255, 255, 255], 42))


def test_assembler_caps_the_total_data_size():
    # H5: 40 x 128 MiB of .zero is refused without allocating it.
    expect_error("tilecore.arch.assemble('.data ddr, 0\\n' + '.zero 0x8000000\\n' * 40 + '.text\\nhalt')",
                 "AsmError", "more than", "program image", timeout=120, mem_bytes=4 << 30)


def test_program_for_an_absent_core_is_refused():
    # S12
    expect_error("""
        s = tilecore.sim.Simulator('npu -cores=2')
        s.load(tilecore.arch.assemble('.core 5\\nli x1, 1\\nhalt'))
    """, "SimError", "core 5", "2 cores")


def test_refused_load_writes_nothing():
    # S17: every segment is checked before any is written.
    out = run_isolated("""
        s = tilecore.sim.Simulator('npu -cores=1 -ddr=64KiB')
        try:
            s.load(tilecore.arch.assemble('.data ddr, 0\\n.byte 1,2,3\\n.data ddr, 0x20000\\n.byte 9\\n.text\\nhalt'))
        except tilecore.sim.SimError as e:
            assert 'does not fit' in str(e), e
        RESULT = s.read('ddr', 0, (3,)).tolist()
    """)
    assert out.expect_ok() == "[0, 0, 0]"


@pytest.mark.parametrize("call,exc,word", [
    ("s.run(max_instructions=-5)", "ValueError", "positive"),
    ("s.run(max_instructions=0)", "ValueError", "positive"),
    ("s.run(max_instructions=2.5)", "TypeError", "int"),
    ("s.xreg(2**32, 0)", "ValueError", "out of range"),
    ("s.write('l1', 0, np.arange(4, dtype='uint8'), core=2**32)", "Error", "core"),
    ("s.write('ddr', 1.9, np.arange(4, dtype='uint8'))", "TypeError", "address"),
])
def test_simulator_arguments(call, exc, word):
    # S14, S7, S18
    expect_error(f"""
        s = tilecore.sim.Simulator('npu -cores=2')
        s.load(tilecore.arch.assemble('li x1, 1\\nhalt'))
        {call}
    """, exc, word)


@pytest.mark.parametrize("target,words", [
    ("npu -ddr=17179869185GiB", ["-ddr", "too large"]),
    ("npu -cores=2 -l1=5GiB", ["-l1", "4GiB"]),
])
def test_target_sizes_are_not_wrapped(target, words):
    # S7, M5
    expect_error(f"tilecore.sim.Simulator({target!r})", "SimError", *words)


def test_any_whitespace_separates_target_options():
    # M11
    out = run_isolated("RESULT = tilecore.sim.Simulator('npu\\t-cores=2').config['cores']")
    assert out.expect_ok() == "2"


def test_full_disk_trace_raises():
    # S3
    expect_error("""
        s = tilecore.sim.Simulator('npu -cores=1', trace=True)
        s.load(tilecore.arch.assemble('halt')); s.run(); s.trace('/dev/full')
    """, "Error", "/dev/full")


def test_messages_keep_text_after_a_nul():
    # M7
    expect_error("tilecore.arch.assemble('li x1, 5\\x00garbage\\nhalt')", "AsmError", "\\0garbage")


@pytest.mark.parametrize("word,exc,words", [("2**70", "OverflowError", ["64-bit"]), ("2.5", "TypeError", ["int"])])
def test_disassemble_word_is_not_masked(word, exc, words):
    # S18: a word wider than 64 bits is refused, not masked to its low bits.
    expect_error(f"tilecore.arch.disassemble_word({word})", exc, *words)


@pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""), reason="needs a memory limit (ASan reserves terabytes)")
def test_memory_the_host_cannot_give_is_named():
    # M5: 16 cores x 4 GiB of L1 (each within its cap) under a 2 GiB address-space limit.
    expect_error("tilecore.sim.Simulator('npu -cores=16 -l1=4GiB')", "SimError", "cannot allocate", "16 x 4096 MiB of L1",
                 mem_bytes=2 << 30)
