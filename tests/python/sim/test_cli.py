"""The tilecore command line: asm, disasm, sim, demo."""
import json
import os
import subprocess
import sys

import pytest

from tilecore import arch, cli

PROGRAM = ".core all\ncsrr x1, coreid\nli x2, 0x100\nmuli x3, x1, 4\nadd x2, x2, x3\nsw x1, [ddr: x2 + 0]\nhalt\n"


@pytest.fixture
def prog(tmp_path):
    path = tmp_path / "prog.s"
    path.write_text(PROGRAM)
    return path


def test_asm_then_disasm(prog, tmp_path, capsys):
    out = tmp_path / "prog.bin"
    assert cli.main(["asm", str(prog), "-o", str(out)]) == 0
    assert arch.Program.from_bytes(out.read_bytes()) == arch.assemble(PROGRAM)
    assert "6 instructions" in capsys.readouterr().out
    assert cli.main(["disasm", str(out)]) == 0
    text = capsys.readouterr().out
    assert arch.assemble(text) == arch.assemble(PROGRAM)
    # Default output name: the source with .bin.
    assert cli.main(["asm", str(prog)]) == 0
    assert (tmp_path / "prog.bin").exists()


def test_asm_error_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.s"
    bad.write_text("halt\nfrobnicate x1\n")
    assert cli.main(["asm", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.s: line 2:" in err and "frobnicate" in err


def test_disasm_of_a_bad_image(tmp_path, capsys):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"TC1P\x01\x00")
    assert cli.main(["disasm", str(bad)]) == 1
    assert "byte" in capsys.readouterr().err


def test_sim_stats_trace_and_json(prog, tmp_path, capsys):
    trace = tmp_path / "t.json"
    assert cli.main(["sim", str(prog), "--cores", "2", "--stats", "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "cycles" in out and "MAC utilisation" in out and "din" in out
    json.loads(trace.read_text())
    assert cli.main(["sim", str(prog), "--mode", "functional", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["cycles"] == 0 and len(st["cores"]) == 4


def test_sim_runs_an_image(prog, tmp_path, capsys):
    image = tmp_path / "p.bin"
    image.write_bytes(arch.assemble(PROGRAM).to_bytes())
    assert cli.main(["sim", str(image)]) == 0
    assert "finished in" in capsys.readouterr().out


def test_sim_fault_is_reported(tmp_path, capsys):
    bad = tmp_path / "fault.s"
    bad.write_text("nop\nli x1, 3\nlw x2, [l1: x1 + 0]\nhalt\n")
    assert cli.main(["sim", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "core 0, pc 2, line 3" in err and "lw x2" in err


def test_demo_runs_and_checks(capsys):
    assert cli.main(["demo", "--gemm"]) == 0
    out = capsys.readouterr().out
    assert "matches numpy" in out and "MAC utilisation" in out and "cycles" in out


def test_no_command_prints_help(capsys):
    assert cli.main([]) == 2
    assert "asm" in capsys.readouterr().out


def test_python_dash_m(prog):
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "tilecore", "sim", str(prog)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "finished in" in r.stdout
