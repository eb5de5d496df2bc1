"""TC1's numbers from one source (arch/params.h): ``tilecore.arch.params()`` against the
parameter table of docs/tc1.md, and no retyped copy of them in the compiler (its Python, and
the C++ of src/compiler and src/transform, and their public headers)."""
import os
import re

from tilecore import arch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def table_row(part):
    text = open(os.path.join(ROOT, "docs", "tc1.md"), encoding="utf-8").read()
    row = next(line for line in text.splitlines() if line.startswith(f"| {part}"))
    return row.split("|")[2]


def number(pattern, text):
    m = re.search(pattern, text)
    assert m, (pattern, text)
    return int(m.group(1))


def test_params_are_the_documented_ones():
    p = arch.params()
    cluster, ddr, l2, l1 = (table_row(x) for x in ("cluster", "global memory", "shared SRAM", "local SRAM"))
    assert p["default_cores"] == number(r"(\d+) cores", cluster)
    assert p["max_cores"] == number(r"-cores=1\.\.(\d+)", cluster)
    assert p["clock_hz"] == number(r"at (\d+) GHz", cluster) * 10**9
    assert p["max_ddr_bytes"] == number(r"up to (\d+) GiB", ddr) << 30
    assert p["default_ddr_bytes"] == number(r"default (\d+) MiB", ddr) << 20
    assert p["ddr_bytes_per_cycle"] == number(r"(\d+) B/cycle", ddr)
    assert p["ddr_latency"] == number(r"(\d+) cycles latency", ddr)
    assert p["l2_bytes"] == number(r"(\d+) MiB", l2) << 20
    assert p["l2_bytes_per_cycle"] == number(r"(\d+) B/cycle", l2)
    assert p["l2_latency"] == number(r"(\d+) cycles latency", l2)
    assert p["l1_bytes"] == number(r"(\d+) MiB per core", l1) << 20
    assert p["l1_banks"] == number(r"(\d+) banks", l1)
    assert p["l1_bank_bytes"] == number(r"banks of (\d+) KiB", l1) << 10 == p["l1_bytes"] // p["l1_banks"]
    assert p["l1_bank_bytes_per_cycle"] == number(r"(\d+) B per bank per cycle", l1)
    assert p["l1_latency"] == number(r"(\d+) cycles latency", l1)
    mm = table_row("matrix engine")
    for dtype, pattern in (("i8", r"i8 (\d+) MAC/cycle"), ("f16", r"f16/bf16 (\d+)"), ("f32", r"f32 (\d+);")):
        block = p[f"mm_block_{dtype}_m"] * p[f"mm_block_{dtype}_n"] * p[f"mm_block_{dtype}_k"]
        assert block == number(pattern, mm), dtype
    assert p["dma_bytes_per_cycle"] == number(r"(\d+) B/cycle each", table_row("DMA"))
    assert p["vec_bytes_per_cycle"] == number(r"(\d+) B/cycle", table_row("vector engine"))
    assert p["x_regs"] == number(r"(\d+) x 32-bit registers", table_row("front end"))
    simd = table_row("SIMD")
    assert p["v_regs"] == number(r"(\d+) x \d+-bit registers", simd)
    assert p["simd_bytes"] * 8 == number(r"x (\d+)-bit registers", simd)
    assert p["p_regs"] == number(r"(\d+) predicate registers", simd)
    p["l2_bytes"] = 0  # a copy: the caller cannot change the source
    assert arch.params()["l2_bytes"] != 0


# Literals of TC1's sizes and bandwidths that Python compiler code would retype: the L2 and L1
# sizes (in any spelling) and the DDR's bytes per cycle assigned to a name.
RETYPED = re.compile(r"\b(?:4|1)\s*<<\s*20\b|\b4194304\b|\b1048576\b|\b\w*BYTES_PER_CYCLE\w*\s*=\s*\d")


def test_no_tc1_number_is_retyped_in_the_compiler():
    folder = os.path.join(ROOT, "python", "tilecore", "compiler")
    found = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            for k, line in enumerate(open(os.path.join(folder, name), encoding="utf-8"), 1):
                if RETYPED.search(line.split("#")[0]):
                    found.append(f"{name}:{k}: {line.strip()}")
    assert found == [], "TC1's numbers come from tilecore.arch.params():\n" + "\n".join(found)
    assert RETYPED.search("L2_BYTES = 4 << 20") and RETYPED.search("DDR_BYTES_PER_CYCLE = 64")  # it can fail


# The same in the C++ compiler and passes: the L1 and L2 sizes and fractions of them (any
# MiB literal), and the L1 bank's 64 KiB, which arch::tc1::kL1Bytes, kL2Bytes and
# kL1BankBytes give.
RETYPED_CPP = re.compile(r"<<\s*20\b|\b(?:1048576|4194304|65536|2097152|3145728)\b|\b64\}?\s*<<\s*10\b")


def test_no_tc1_size_is_retyped_in_the_cpp_compiler():
    found = []
    # (the sources and the public headers: a default argument or member there is a copy too)
    for sub in ("src/compiler", "src/transform", "include/tilecore/compiler", "include/tilecore/transform"):
        for folder, _, names in sorted(os.walk(os.path.join(ROOT, sub))):  # (and its subfolders: conv/)
            for name in sorted(n for n in names if n.endswith((".cc", ".h"))):
                path = os.path.join(folder, name)
                for k, line in enumerate(open(path, encoding="utf-8"), 1):
                    if RETYPED_CPP.search(line.split("//")[0]):
                        found.append(f"{os.path.relpath(path, ROOT)}:{k}: {line.strip()}")
    assert found == [], "TC1's sizes come from arch/params.h (arch::tc1):\n" + "\n".join(found)
    for bad in ("int64_t{1} << 20", "int64_t l2_bytes = int64_t(4) << 20", "(bytes + 65535) / 65536 * 65536", "int64_t{64} << 10", "kBank = 64 << 10"):
        assert RETYPED_CPP.search(bad), bad  # it can fail
