"""Bad input at the command line: the source overwritten, non-UTF-8 and non-regular
inputs, unwritable outputs and bad budgets give one line on stderr and status 1 (or 2
for argparse's usage errors), never a traceback."""
import os
import subprocess
import sys

import pytest


def _cli(*args, cwd=None, timeout=60):
    return subprocess.run([sys.executable, "-m", "tilecore", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


def _assert_clean_failure(p, *words, rc=1):
    assert p.returncode == rc, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    for w in words:
        assert w in p.stderr, p.stderr


def test_asm_refuses_to_overwrite_its_source(tmp_path):
    # S13
    src = tmp_path / "prog.s"
    src.write_text("halt\n")
    _assert_clean_failure(_cli("asm", str(src), "-o", str(src)), "overwrite")
    assert src.read_text() == "halt\n"


def test_asm_of_non_utf8_source(tmp_path):
    # M3
    src = tmp_path / "latin1.s"
    src.write_bytes("li x1, 1 # caf\xe9\nhalt\n".encode("latin-1"))
    _assert_clean_failure(_cli("asm", str(src)), "tilecore: error:", "UTF-8")


@pytest.mark.parametrize("cmd", ["asm", "disasm", "sim"])
def test_non_regular_input_is_refused(cmd):
    # M3, H5
    _assert_clean_failure(_cli(cmd, "/dev/zero", timeout=30), "not a regular file")


@pytest.mark.parametrize("trace", ["/proc/nope.json", "DIR"])
def test_unwritable_trace(tmp_path, trace):
    # M3
    src = tmp_path / "ok.s"
    src.write_text("halt\n")
    trace = str(tmp_path) if trace == "DIR" else trace
    _assert_clean_failure(_cli("sim", str(src), "--trace", trace), "tilecore: error:")


@pytest.mark.parametrize("budget", ["-1", "0", "99999999999999999999"])
def test_bad_instruction_budget(tmp_path, budget):
    # S14, M3: argparse's usage error (status 2), naming the option.
    src = tmp_path / "ok.s"
    src.write_text("halt\n")
    _assert_clean_failure(_cli("sim", str(src), "--max-instructions", budget), "--max-instructions", rc=2)


def test_asm_error_has_no_backtrace(tmp_path):
    src = tmp_path / "bad.s"
    src.write_text("li x1, 99999999999\nhalt\n")
    _assert_clean_failure(_cli("asm", str(src)), "tilecore: error:", "bad.s")
    assert not os.path.exists(tmp_path / "bad.bin")
