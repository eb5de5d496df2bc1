"""tdb on a kernel module built from the DSL: every command and breakpoint kind,
driven as a library (injected stdin/stdout) and through `tilecore tdb --do`.

Expectations come from the kernel's own source (marker comments give the lines),
the module's listing, and numpy (the kernel computes 3 * (x + y) + 1)."""
import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tilecore.tdb import Debugger

sys.path.insert(0, os.path.dirname(__file__))
import tdb_kernels as K  # noqa: E402


@pytest.fixture(scope="module")
def module_path(tmp_path_factory):
    d = tmp_path_factory.mktemp("tdb")
    path = d / "axpy.tcm"
    K.build_module(path)
    np.savez(d / "in.npz", **K.inputs())
    return path


def session(module_path, inputs=None, **kw):
    out = io.StringIO()
    dbg = Debugger(str(module_path), inputs=K.inputs() if inputs is None else inputs, stdin=io.StringIO(), stdout=out, **kw)
    return dbg, out


def run(dbg, out, commands):
    start = out.tell()
    dbg.run_commands(commands)
    return out.getvalue()[start:]


def test_run_to_the_end_computes_the_kernel(module_path):
    dbg, out = session(module_path)
    text = run(dbg, out, "run")
    assert "program finished" in text
    ins = K.inputs()
    got = dbg.sim.read("ddr", dbg.symbols["out"].address, (2 * K.N,), "int32")
    assert np.array_equal(got, K.expected(ins["x"], ins["y"]))


def test_mnemonic_breakpoints_stop_before_that_instruction(module_path):
    dbg, out = session(module_path)
    text = run(dbg, out, "start; b tadd; b dma.out core 1; c")
    assert "Breakpoint 1, instruction tadd" in text
    assert dbg.sim.instruction_at(dbg.core, dbg.sim.pc(dbg.core)).startswith("tadd")
    run(dbg, out, "c; c")  # the other core's tadd, then core 1's dma.out
    assert dbg.core == 1 and dbg.sim.instruction_at(1, dbg.sim.pc(1)).startswith("dma.out")
    text = run(dbg, out, "info b")
    rows = {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"^(\d+)\s+breakpoint\s+keep\s+y\s+(\d+)", text, re.M)}
    assert rows == {1: 2, 2: 1}


def test_pc_command_id_and_line_breakpoints(module_path):
    dbg, out = session(module_path)
    run(dbg, out, "start; b *3 core 1; c")
    assert (dbg.core, dbg.sim.pc(1)) == (1, 3)
    # The second command (id 1) core 1 issues to DMA-in is its second dma.in instruction.
    run(dbg, out, "delete; b din#1 core 1; c")
    text1 = dbg.sim.instruction_at(1, dbg.sim.pc(1))
    assert dbg.core == 1 and text1.startswith("dma.in")
    earlier = [pc for pc in range(dbg.sim.pc(1)) if dbg.sim.instruction_at(1, pc).startswith("dma.in")]
    assert len(earlier) == 1
    # Kernel source line: stop where the line's code starts, on each core.
    line = K.line_of("tmuls")
    text = run(dbg, out, f"delete; b tdb_kernels.py:{line}; run")
    assert f"tdb_kernels.py:{line}" in text
    assert dbg.target.location(dbg.core, dbg.sim.pc(dbg.core)).endswith(f"tdb_kernels.py:{line}")
    assert not (dbg.target.location(dbg.core, dbg.sim.pc(dbg.core) - 1) or "").endswith(f":{line}")
    # A line of the assembly listing: the instruction there is the one on that line.
    listing = dbg.target.listing()
    asm_line = next(k for k, t in enumerate(listing, 1) if t.strip().startswith("tadd"))
    run(dbg, out, f"delete; b asm:{asm_line}; run")
    assert dbg.target.listing_line(dbg.core, dbg.sim.pc(dbg.core)) == asm_line
    assert dbg.sim.instruction_at(dbg.core, dbg.sim.pc(dbg.core)).split()[0] == listing[asm_line - 1].split()[0]


def test_conditions_ignore_counts_temporary_and_lists(module_path):
    dbg, out = session(module_path)
    body = K.line_of("body")
    # x8 counts the loop's iterations (see the listing); the condition is evaluated for the core that hit.
    text = run(dbg, out, f"start; b {body} if core == 1 and x8 >= 3; c")
    assert dbg.core == 1 and dbg.sim.xreg(1, 8) == 3
    assert dbg.target.location(1, dbg.sim.pc(1)).endswith(f":{body}")
    text = run(dbg, out, "delete; b vst; ignore 2 5; c")
    assert "Will ignore next 5 crossings of breakpoint 2" in text
    text = run(dbg, out, "info b")
    assert re.search(r"^2\s+breakpoint\s+keep\s+y\s+6\s+instruction vst", text, re.M)
    text = run(dbg, out, "delete; tbreak vld; c; info b")
    assert "Temporary breakpoint 3, instruction vld" in text and "No breakpoints" in text
    text = run(dbg, out, "b vadd; b vld; b vst; disable 5,6; info b")
    assert re.search(r"^5\s+breakpoint\s+keep\s+n\s+\d+\s+instruction vld", text, re.M)
    run(dbg, out, "c")
    assert dbg.sim.instruction_at(dbg.core, dbg.sim.pc(dbg.core)).startswith("vadd")
    text = run(dbg, out, "enable 5,6; delete 4-6; info b")
    assert "Enabled breakpoint(s) 5, 6" in text and "Deleted breakpoint(s) 4, 5, 6" in text and "No breakpoints" in text


def test_reverse_next_returns_to_the_same_pc_and_memory(module_path):
    dbg, out = session(module_path)
    run(dbg, out, f"start; b {K.line_of('dma_x')}; c; delete")  # DMAs are in flight in the next 100

    def state():
        regs = [[dbg.sim.xreg(c, r) for r in range(32)] for c in range(2)]
        mem = [dbg.sim.read("ddr", 0, 0x20000), dbg.sim.read("l2", 0, 0x10000)]
        mem += [dbg.sim.read("l1", 0, dbg.sim.config["l1_bytes"], core=c) for c in range(2)]
        return [dbg.sim.pc(c) for c in range(2)], regs, mem, dbg.sim.cycle(), dbg.position()

    before = state()
    run(dbg, out, "next 100")
    after = state()
    assert after[4] == before[4] + 100 and after[0] != before[0]
    assert any(not np.array_equal(a, b) for a, b in zip(after[2], before[2]))
    run(dbg, out, "reverse-next 100")
    back = state()
    assert back[0] == before[0] and back[1] == before[1] and back[3:] == before[3:]
    for a, b in zip(back[2], before[2]):
        assert np.array_equal(a, b)
    # Forward again reproduces the same state exactly (the simulator is deterministic).
    run(dbg, out, "next 100")
    again = state()
    assert again[0] == after[0] and again[3:] == after[3:]
    for a, b in zip(again[2], after[2]):
        assert np.array_equal(a, b)


def test_watchpoint_names_the_writer_and_reverse_continue(module_path):
    dbg, out = session(module_path)
    ins = K.inputs()
    text = run(dbg, out, "start; watch out[3]; c")
    m = re.search(r"Watchpoint 1: .*core (\d) pc (\d+) `(\S+)", text)
    assert m, text
    core, pc, op = int(m.group(1)), int(m.group(2)), m.group(3)
    assert op == "dma.out" and dbg.sim.instruction_at(core, pc).startswith("dma.out")
    assert dbg.sim.read("ddr", dbg.symbols["out"].address + 12, (1,), "int32")[0] == 3 * (ins["x"][3] + ins["y"][3])
    text = run(dbg, out, "c")
    assert "`vst.i32" in text and "wrote" in text
    assert dbg.sim.read("ddr", dbg.symbols["out"].address + 12, (1,), "int32")[0] == K.expected(ins["x"], ins["y"])[3]
    text = run(dbg, out, "info writes out[3]")
    assert re.search(r"last written by core 0 pc \d+ `vst\.i32", text)
    text = run(dbg, out, "reverse-continue")
    assert "Watchpoint 1" in text and "`dma.out" in text
    assert dbg.sim.read("ddr", dbg.symbols["out"].address + 12, (1,), "int32")[0] == 3 * (ins["x"][3] + ins["y"][3])
    text = run(dbg, out, "info writes out[3]")
    assert "`dma.out" in text and "dout engine" in text
    # Address breakpoints are watchpoints on a range with an access kind.
    addr = dbg.symbols["x"].address
    text = run(dbg, out, f"delete; run; b ddr:{addr:#x}+4 r; run")
    assert "Watchpoint" in text and "`dma.in" in text and " read ddr[" in text


def test_next_per_engine_finish_and_until(module_path):
    dbg, out = session(module_path)
    run(dbg, out, "start; next dma")
    assert dbg.sim.instruction_at(dbg.core, dbg.sim.pc(dbg.core)).startswith("dma.in")
    run(dbg, out, "next vec")
    assert dbg.sim.instruction_at(dbg.core, dbg.sim.pc(dbg.core)).startswith("tadd")
    run(dbg, out, "next dma 2")
    assert dbg.sim.instruction_at(dbg.core, dbg.sim.pc(dbg.core)).startswith("dma")
    loop = K.line_of("loop")
    run(dbg, out, f"until {loop}")
    here = dbg.target.location(dbg.core, dbg.sim.pc(dbg.core))
    assert int(here.rsplit(":", 1)[1]) >= loop
    run(dbg, out, "finish")
    assert dbg.target.location(dbg.core, dbg.sim.pc(dbg.core)) != here
    text = run(dbg, out, "next 3; info progress")
    assert re.search(r"^\d+ instructions executed", text, re.M)


def test_inspection_x_set_display_py(module_path):
    dbg, out = session(module_path)
    ins = K.inputs()
    text = run(dbg, out, "start; x x; x/2x4i32 y; x/4u8 ddr:0x10000; x/2i32 ddr 0x10000")
    assert str(ins["x"][:4])[1:-1].split()[0] in text
    assert "int32[2, 4]" in text and "uint8[4]" in text
    assert dbg.namespace["_"].tolist() == ins["x"][:2].tolist()
    text = run(dbg, out, "set x5 = 7 core 1; info reg core 1")
    assert "x5  0x00000007" in text
    text = run(dbg, out, "set x[0] = 1000; set/i32 ddr:0x10004 = 5, 6; x/3 x")
    assert "[1000    5    6]" in text
    text = run(dbg, out, "display x[0] + 1; display x/2i32 out; next")
    assert "1: x[0] + 1 = 1001" in text and "2: x/2i32 out" in text
    text = run(dbg, out, "info display; undisplay 1; info display")
    assert text.count("1: x[0] + 1") == 1
    text = run(dbg, out, "py print(int(x[1]) * 2); py k = 21; py print(k * 2)")
    assert "10\n" in text and "42\n" in text
    text = run(dbg, out, "info reg v; info reg p; info symbols; info history; info engines; info src 2; info loc")
    assert "v31" in text and "p7" in text and "out: int32[256]" in text and "recording on" in text
    # The host writes are logged: going back to the start undoes them.
    run(dbg, out, "reverse-next 1")
    assert dbg.sim.read("ddr", dbg.symbols["x"].address, (1,), "int32")[0] == ins["x"][0]


def test_plugins(module_path, tmp_path):
    plugin = tmp_path / "count.py"
    plugin.write_text(
        "import tilecore.tdb\n"
        "class Count(tilecore.tdb.Plugin):\n"
        "    name = 'count'\n"
        "    wants_steps = True\n"
        "    def on_start(self):\n"
        "        self.steps = 0; self.stops = 0\n"
        "    def after_step(self):\n"
        "        self.steps += 1\n"
        "    def on_stop(self, report):\n"
        "        self.stops += 1\n"
        "    def do_steps(self, arg):\n"
        "        'steps\\n        How many instructions ran under the plugin.'\n"
        "        self.tdb.message(f'steps={self.steps} stops={self.stops}')\n"
    )
    dbg, out = session(module_path, plugins=[str(plugin)])
    text = run(dbg, out, "start; next 7; b tadd; c; steps; help steps")
    pos = dbg.position()
    assert f"steps={pos} stops=2" in text and "How many instructions" in text


def test_bad_commands_are_errors_not_crashes(module_path):
    dbg, out = session(module_path)
    bad = {
        "next": "next: the program is not started",
        "frobnicate": "frobnicate: unknown command",
        "b nosuchop": "break: 'nosuchop' is not an instruction mnemonic",
        "b tdb_kernels.py:1": "break: no instruction at tdb_kernels.py:1",
        "b *5 core 9": "break: core 9 does not exist",
        "b din#x": "break: 'din#x' is not",
        "b ddr:0x10+4 q": "break: access kind must be r, w or rw",
        "b tadd if (": "break: bad condition",
        "delete 42": "delete: no breakpoint number 42",
        "enable a,b": "enable: breakpoint number must be an integer",
        "ignore 1": "ignore: usage",
        "x/3q x": "x: bad format",
        "x nowhere": "x: 'nowhere' is not a location",
        "x ddr:0xffffffff+64": "x: host access",
        "set x0 = 1": "set: x0: registers x1..x31",
        "set x5": "set: usage",
        "set x5 = undefined_name": "set: `undefined_name` is not a buffer, a register or a Python name",
        "info nothing": "info: unknown subcommand 'nothing'",
        "next -3": "next: count must be >= 1",
        "next many": "next: count must be an integer",
        "reverse-next 0": "reverse-next: count must be >= 1",
        "core 7": "core: core 7 does not exist",
        "watch": "watch: usage",
        "display 1 +": "display: bad expression",
        "py 1 +": "py: syntax error",
        "record maybe": "record: expected on or off",
        "help nothing": "help: no command 'nothing'",
    }
    text = run(dbg, out, "next")
    assert "*** next: the program is not started" in text
    run(dbg, out, "start")
    for command, words in bad.items():
        if command == "next":
            continue
        text = run(dbg, out, command)
        assert f"*** {words}" in text, (command, text)
        assert "Traceback" not in text
    text = run(dbg, out, "py 1/0")
    assert "*** py: ZeroDivisionError" in text
    text = run(dbg, out, "run; continue")
    assert "program finished" in text and "*** continue: the program has finished" in text


def test_bad_targets_and_inputs(module_path, tmp_path):
    from tilecore.tdb import TargetError

    with pytest.raises(TargetError, match="no such file"):
        Debugger(str(tmp_path / "missing.tcm"))
    bad = tmp_path / "bad.tcm"
    bad.write_bytes(b"nonsense")
    with pytest.raises(TargetError, match="bad.tcm"):
        Debugger(str(bad))
    with pytest.raises(TargetError, match=r"m\.tcx: no such file"):
        Debugger(str(tmp_path / "m.tcx"))
    (tmp_path / "bad.tcx").write_bytes(b"TCEXEC\0\0garbage")
    with pytest.raises(TargetError, match=r"bad\.tcx: .*executable"):
        Debugger(str(tmp_path / "bad.tcx"))
    with pytest.raises(TargetError, match="--ref_data needs a model"):
        Debugger(str(module_path), inputs=K.inputs(), ref_data={"x": np.zeros(1)})
    ins = K.inputs()
    del ins["y"]
    dbg, out = session(module_path, inputs=ins)
    assert "*** start: kernel `axpy_tiles` needs an array for buffer `y`" in run(dbg, out, "start")
    ins = K.inputs()
    ins["y"] = ins["y"].astype(np.int8)
    dbg, out = session(module_path, inputs=ins)
    assert "*** run: input `y` has dtype int8, the kernel wants int32" in run(dbg, out, "run")


def test_cli_scripted_session(module_path):
    d = module_path.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    line = K.line_of("tadd")
    cmds = (f"b tdb_kernels.py:{line}; run; delete; info loc; next 100; reverse-next 100; info loc; c; x/4 out; "
            "info writes out[0]; quit")
    r = subprocess.run([sys.executable, "-m", "tilecore", "tdb", str(module_path), "--inputs", str(d / "in.npz"),
                        "-v", "--do", cmds], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.count(f"tdb_kernels.py:{line}: S.tile_add") == 2  # info loc before and after the round trip
    assert "program finished" in out and "last written by core 0 pc" in out
    ins = K.inputs()
    first = K.expected(ins["x"], ins["y"])[:4]
    assert " ".join(str(v) for v in first) in re.sub(r"\s+", " ", out)
    r = subprocess.run([sys.executable, "-m", "tilecore", "tdb", str(d / "nope.tcm")], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 1 and "no such file" in r.stderr and "Traceback" not in r.stderr
    bad_plugin = d / "broken_plugin.py"
    bad_plugin.write_text("x = 1\n")
    for extra, words in [(["--ddr_size", "lots"], "ddr"), (["--inputs", str(bad_plugin)], "tilecore tdb: error"),
                         (["--plugins", str(bad_plugin)], "defines no subclass of tilecore.tdb.Plugin")]:
        r = subprocess.run([sys.executable, "-m", "tilecore", "tdb", str(module_path), *extra, "--do", "quit"],
                           capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 1 and words in r.stderr and "Traceback" not in r.stderr, (extra, r.stderr)


def test_cli_scripted_session_every_command(module_path):
    d = module_path.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    # As the terminal test begins: breakpoint 1 on dma.out, number 2 used and gone.
    typed = [("b dma.out", "Breakpoint 1: instruction dma.out"), ("b tmuls", "Breakpoint 2"),
             ("delete 2", "Deleted breakpoint(s) 2")] + K.every_command(K.first_instruction_line(module_path))
    r = subprocess.run([sys.executable, "-m", "tilecore", "tdb", str(module_path), "--inputs", str(d / "in.npz"),
                        "--do", "; ".join(c for c, _ in typed)], capture_output=True, text=True, env=env, timeout=300)
    # every command runs; the script exits 1 because some (frobnicate, ...) fail on purpose
    assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr, r.stderr
    segments = r.stdout.split("(tdb) ")[1:]
    assert len(segments) == len(typed)
    for (command, words), seg in zip(typed, segments):
        assert seg.startswith(command + "\n"), (command, seg)
        if words is not None and words != "(tdb) ":
            assert words in seg, (command, seg)
        if words is not None and not words.startswith("***"):
            assert "***" not in seg, (command, seg)
    assert "program finished" in segments[-2]


def test_assembly_target_and_a_faulting_program(tmp_path):
    src = tmp_path / "bad.s"
    src.write_text(".core 0\n.text\n        li x1, 5\n        li x2, 0x7fffffff\nloop:   addi x1, x1, -1\n"
                   "        bne x1, x0, loop\n        sw x1, [ddr: x2 + 0]\n        halt\n")
    out = io.StringIO()
    dbg = Debugger(str(src), stdin=io.StringIO(), stdout=out)
    text = run(dbg, out, "run")
    assert "*** run: the program faulted: core 0, pc 4, line 7" in text and "out-of-bounds store" in text
    text = run(dbg, out, "next; continue")
    assert text.count("*** ") == 2 and "the program faulted at core 0 pc 4 (go back with reverse-next" in text
    text = run(dbg, out, "reverse-next 2; info loc")
    assert "bad.s:5" in text and dbg.sim.xreg(0, 1) == 1
    text = run(dbg, out, "b 6; run; c; info b")
    assert dbg.sim.xreg(0, 1) == 3 and re.search(r"^1\s+breakpoint\s+keep\s+y\s+2\s+bad.s:6", text, re.M)


def test_run_again_starts_from_cleared_memory(tmp_path):
    # The program increments a DDR word no buffer covers: a second run must see 0 again.
    src = tmp_path / "inc.s"
    src.write_text(".core 0\n.text\n        li x2, 0x5000\n        lw x1, [ddr: x2 + 0]\n        addi x1, x1, 1\n"
                   "        sw x1, [ddr: x2 + 0]\n        halt\n")
    out = io.StringIO()
    dbg = Debugger(str(src), stdin=io.StringIO(), stdout=out)
    for _ in range(3):
        run(dbg, out, "run")
        assert dbg.sim.read("ddr", 0x5000, (1,), "int32")[0] == 1
