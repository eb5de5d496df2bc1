"""tdb on a compiled model (.tcx): node-by-node execution against the executor and ONNX
Runtime, stepping by instruction and by node, the model breakpoint kinds, value
inspection and watch conditions, data-check and tilecore check, disasm and viz."""
import io
import json
import os
import re
import shutil
import sys

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import tilecore  # noqa: E402
from tilecore import cli  # noqa: E402
from tilecore.tdb import Debugger  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import tdb_models as M  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return M.build(tmp_path_factory.mktemp("model"))


def session(built, ref_data=None):
    tcx, inp, _, _ = built
    out = io.StringIO()
    return Debugger(str(tcx), inputs=str(inp), stdout=out, ref_data=ref_data), out


def test_run_node_by_node_matches_executor_and_onnxruntime(built):
    tcx, inp, ref, _ = built
    tdb, out = session(built)
    assert [n.onnx_name for n in tdb.model.nodes] == M.NODES
    assert [n.where for n in tdb.model.nodes] == M.WHERE
    tdb.onecmd("run")
    assert tdb.finished and "model finished: 7 nodes (4 npu, 2 host, 1 views)" in out.getvalue()
    y = tdb.model.read_value(tdb.sim, "y")
    exe = tilecore.runtime.load_executable(str(tcx))
    np.testing.assert_array_equal(y, exe.run(dict(np.load(inp)))["y"])  # the same computation, bit for bit
    np.testing.assert_allclose(y, ref["y"], rtol=1e-5, atol=1e-5)
    # the constants sit where the plan says, as the ONNX initializers hold them
    from onnx import numpy_helper

    for init in M.graph().graph.initializer:
        np.testing.assert_array_equal(tdb.model.read_value(tdb.sim, init.name), numpy_helper.to_array(init))
    # run again from the start (simulator reused, arena re-laid): the same result
    tdb.onecmd("run")
    np.testing.assert_array_equal(tdb.model.read_value(tdb.sim, "y"), y)


def test_stepping_by_instruction_and_by_node(built):
    tdb, out = session(built)
    tdb.run_commands("start")
    assert "before node 1 of 7 `conv` (Conv, npu)" in out.getvalue()
    tdb.onecmd("next 3")
    assert tdb.model.current == 0 and tdb.position() == 3
    tdb.onecmd("finish")                                 # to the end of conv: stopped before relu
    assert tdb.model.current == 1 and tdb.position() == 0
    tdb.onecmd("next node 2")                            # relu and add run: before the view
    assert tdb.model.nodes[tdb.model.current].onnx_name == "flat"
    mark = len(out.getvalue())
    tdb.onecmd("next")                                   # a view is one step
    assert tdb.model.nodes[tdb.model.current].onnx_name == "fc"
    tdb.onecmd("until bias64")
    assert tdb.model.nodes[tdb.model.current].onnx_name == "bias64"
    assert "(Add, host): one host call" in out.getvalue()[mark:]
    tdb.onecmd("info progress")
    assert "node 7 of 7 (6 done)" in out.getvalue()
    tdb.onecmd("next")                                   # the host node as one step: the model ends
    assert tdb.finished
    tdb.onecmd("start")
    mark = len(out.getvalue())
    tdb.onecmd("until nosuchnode")
    assert "*** until: no node named `nosuchnode`" in out.getvalue()[mark:]


def test_info_commands_describe_the_node(built):
    tdb, out = session(built)
    tdb.run_commands("start; until add; info loc; info ir 1; info asm 2")
    text = out.getvalue()
    assert "node 3 of 7: `add`, ONNX node `add`, op type Add, on the npu" in text
    assert "inputs: r: float32[1, 8, 6, 6], c: float32[1, 8, 6, 6]" in text
    assert re.search(r"=>\s+3\s+npu\s+Add\s+add: r, c -> a", text)
    assert re.search(r"=>\s+0\s+\S+", text)               # info asm marks pc 0 of the add kernel
    tdb.run_commands("until cast; info asm")
    assert "*** info: " in out.getvalue() and "no TC1 instructions here" in out.getvalue()


def test_model_breakpoint_kinds_conditions_and_counts(built):
    tdb, out = session(built)
    tdb.run_commands("b relu; b op:Add; b %z; tbreak Flatten; b add if node.index == 99; info b")
    tdb.onecmd("run")
    assert tdb.model.current == 1 and "Breakpoint 1, node `relu`" in out.getvalue()
    tdb.onecmd("continue")
    assert tdb.model.current == 2 and "Breakpoint 2, node `add` (Add, npu) is next" in out.getvalue()
    tdb.onecmd("continue")                               # the temporary breakpoint on the view
    assert tdb.model.current == 3 and "Temporary breakpoint 4, node `flat`" in out.getvalue()
    tdb.onecmd("continue")                               # z is produced by fc: stopped before cast
    assert tdb.model.current == 5 and "Breakpoint 3, value `z` produced by node `fc`" in out.getvalue()
    tdb.onecmd("continue")                               # bias64 is an Add too (on the host)
    assert tdb.model.current == 6 and "Breakpoint 2, node `bias64` (Add, host)" in out.getvalue()
    mark = len(out.getvalue())
    tdb.onecmd("info b")
    table = out.getvalue()[mark:]
    hits = {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"^(\d+)\s+\w+\s+\w+\s+[yn]\s+(\d+)", table, re.M)}
    # Adds in the graph: 2; the condition of 5 is never true; 4 deleted itself
    assert hits == {1: 1, 2: 2, 3: 1, 5: 0}, table
    # ignore counts, disable / enable / delete with lists
    tdb.run_commands("ignore 2 1; disable 1,3; run")
    assert tdb.model.current == 6                        # relu disabled, the first Add ignored
    tdb.run_commands("enable 1-3; delete 2,5; run")
    assert tdb.model.current == 1
    tdb.run_commands("delete; continue")
    assert tdb.finished
    mark = len(out.getvalue())
    tdb.onecmd("b op:Softmax")
    assert "*** break: no node of op type Softmax" in out.getvalue()[mark:]


def test_a_breakpoint_on_the_first_node_fires_on_run(built):
    """run stops before node 0 when a breakpoint names it (by name or op type); continue
    goes on from there without stopping at it again."""
    tdb, out = session(built)
    tdb.run_commands("b op:Conv; run")
    assert tdb.model.current == 0 and "Breakpoint 1, node `conv` (Conv, npu) is next" in out.getvalue()
    tdb.onecmd("continue")
    assert tdb.finished
    tdb.run_commands("delete; b conv; start; continue")
    assert tdb.model.current == 0 and not tdb.finished


def test_kernel_breakpoints_inside_npu_nodes(built):
    tdb, out = session(built)
    tdb.run_commands("b mm; run")
    core = tdb.stopped_core()
    assert tdb.model.current == 0 and tdb.sim.instruction_at(core, tdb.sim.pc(core)).startswith("mm")
    tdb.run_commands("delete; b dma.out; continue")
    core = tdb.stopped_core()
    assert tdb.sim.instruction_at(core, tdb.sim.pc(core)).startswith("dma.out")
    # a watchpoint on the bytes of value `r`: the relu kernel writes them
    r = tdb.model.values["r"]
    tdb.run_commands(f"delete; watch ddr:{tdb.model.value_address(r):#x}+4; run")
    assert tdb.last_stop["reason"] == "watchpoint" and tdb.model.nodes[tdb.model.current].onnx_name == "relu"
    # host nodes run outside the simulator; a watchpoint on their bytes still fires after the call
    y = tdb.model.values["y"]
    tdb.run_commands(f"delete; watch ddr:{tdb.model.value_address(y) + 8:#x}+8; run")
    for _ in range(50):  # y's bytes are reused: npu kernels write them first
        if tdb.finished or "host node" in out.getvalue():
            break
        tdb.onecmd("continue")
    lo = tdb.model.value_address(y) + 8
    assert f"host node `bias64` (Add) wrote ddr[{lo:#x}, {lo + 8:#x}) (value `y`)" in out.getvalue()
    assert tdb.finished  # bias64 was the last node


def test_pc_breakpoints_belong_to_the_current_nodes_kernel(built):
    tdb, out = session(built)
    tdb.run_commands("start; until relu; b *10; run")
    assert tdb.model.nodes[tdb.model.current].onnx_name == "relu" and tdb.sim.pc(tdb.stopped_core()) == 10
    assert "Breakpoint 1, pc 10 in kernel `relu`" in out.getvalue()
    tdb.run_commands("delete; until cast; b *3")
    assert "*** break: pc 3: a pc, source or assembly line needs a current npu node" in out.getvalue()


def test_print_values_and_value_watch_conditions(built):
    _, _, ref, _ = built
    tdb, out = session(built)
    tdb.run_commands("start; until add; p r; p a; x/4f32 c")
    text = out.getvalue()
    assert "`r`: float32[1, 8, 6, 6] at ddr:" in text and "produced by node 2 `relu` (Relu)" in text
    assert "`a`: float32[1, 8, 6, 6]" in text and "NOT produced yet" in text
    np.testing.assert_allclose(tdb.namespace["_"], ref["c"].reshape(-1)[:4], rtol=1e-5, atol=1e-5)
    tdb.onecmd("p/full r")
    np.testing.assert_allclose(tdb.namespace["_"], np.maximum(ref["c"], 0), rtol=1e-5, atol=1e-5)
    # outside a range: the first value with an element beyond 3 in magnitude, as numpy finds it
    first = next(v for v in ("c", "r", "a", "f", "z", "z64", "y") if np.abs(ref[v]).max() > 3)
    count = int((np.abs(ref[first]) > 3).sum())
    tdb.run_commands("watch * outside -3 3; run")
    assert f"value `{first}` produced" in out.getvalue() and f"has {count} element(s) outside [-3, 3]" in out.getvalue()
    # a NaN written into c before relu runs reaches a (= relu(c) + c)
    tdb.run_commands("delete; watch a nan; start; until relu; set c[5] = float('nan'); continue")
    assert "Watchpoint 2, value `a` produced by node `add` (Add) has 1 NaN, the first at [0, 0, 0, 5]" in out.getvalue()
    mark = len(out.getvalue())
    tdb.onecmd("watch a sometimes")
    assert "*** watch: usage: watch VALUE|* nan | inf | outside LO HI" in out.getvalue()[mark:]


def test_data_check_stops_at_the_altered_node(built, tmp_path):
    _, _, ref, _ = built
    tdb, out = session(built, ref_data=ref)
    tdb.onecmd("run")
    assert tdb.finished and "Data-check" not in out.getvalue()   # the compiled model agrees
    bad = dict(ref)
    bad["r"] = ref["r"] * 1.5 + 0.25                              # one node's output altered
    np.savez(tmp_path / "bad.npz", **bad)
    tdb, out = session(built, ref_data=str(tmp_path / "bad.npz"))
    tdb.onecmd("run")
    text = out.getvalue()
    assert "Data-check: node 2 `relu` (Relu, npu) diverges from the reference; this node is wrong: its inputs match" \
        in text
    assert re.search(r"input `c`: (equal|close|similar)", text) and re.search(r"output `r`: different", text)
    assert tdb.model.current == 2 and not tdb.finished           # stopped right after relu
    tdb.onecmd("continue")
    assert tdb.finished
    tdb.run_commands("check set cosine=0.5 euclid=0.3 atol=10; run")
    assert tdb.finished and not tdb.plugin("data-check").report()["failed"]


def test_tilecore_check_writes_the_same_finding(built, tmp_path, capsys):
    tcx, inp, ref, _ = built
    bad = dict(ref)
    bad["r"] = ref["r"] * 1.5 + 0.25
    np.savez(tmp_path / "bad.npz", **bad)
    rc = cli.main(["check", str(tcx), "--inputs", str(inp), "--ref_data", str(tmp_path / "bad.npz"), "--report",
                   str(tmp_path / "r.json")])
    assert rc == 1
    rep = json.loads((tmp_path / "r.json").read_text())
    first = rep["first_divergence"]
    assert first["onnx_name"] == "relu" and first["inputs_match"] is True and "inputs match" in first["verdict"]
    assert rep["wrong_nodes"] == ["relu"] and rep["failed"] == 1
    assert rep["checked"] == 7 and rep["passed"] == 6
    assert "first divergence: node 2 `relu`" in capsys.readouterr().out
    assert cli.main(["check", str(tcx), "--inputs", str(inp), "--ref_data", str(tmp_path / "nothere.npz")]) == 1
    assert "tilecore check: error:" in capsys.readouterr().err


def test_disasm_annotates_the_nodes(built, capsys):
    tcx = built[0]
    assert cli.main(["disasm", str(tcx)]) == 0
    text = capsys.readouterr().out
    heads = re.findall(r"^# ==== node (\d+) of 7: `(\w+)` \((\w+)\) on the (\w+)", text, re.M)
    assert [(h[1], h[3]) for h in heads] == list(zip(M.NODES, M.WHERE))
    assert "in0 = x, in1 = w, in2 = b, out0 = c" in text and "mm" in text


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_viz_colours_nodes_and_failures(built, tmp_path, capsys):
    tcx, inp, ref, onnx_path = built
    bad = dict(ref)
    bad["r"] = ref["r"] * 1.5 + 0.25
    np.savez(tmp_path / "bad.npz", **bad)
    cli.main(["check", str(tcx), "--inputs", str(inp), "--ref_data", str(tmp_path / "bad.npz"), "--report",
              str(tmp_path / "r.json")])
    assert cli.main(["viz", str(tcx), "-o", str(tmp_path / "g.svg"), "--check", str(tmp_path / "r.json")]) == 0
    svg = (tmp_path / "g.svg").read_text()
    assert svg.count("<g id=\"node") >= 7 + 2 and "#ef3b2c" in svg   # the failed node filled red
    assert cli.main(["viz", str(onnx_path), "-o", str(tmp_path / "g.html")]) == 0
    page = (tmp_path / "g.html").read_text()
    assert "<svg" in page and "4 npu, 2 host, 1 view" in page
    assert cli.main(["viz", str(tcx), "-o", str(tmp_path / "g.txt")]) == 1


def test_bad_model_inputs_are_one_line_errors(built):
    tcx = built[0]
    out = io.StringIO()
    tdb = Debugger(str(tcx), inputs={}, stdout=out)
    tdb.onecmd("start")
    assert "*** start: missing input(s) x; the executable expects x: float32[1, 3, 6, 6]" in out.getvalue()
    tdb = Debugger(str(tcx), inputs={"x": np.zeros((1, 3, 6, 6), np.float64)}, stdout=out)
    tdb.onecmd("run")
    assert "*** run: input `x` is float64[1, 3, 6, 6]; the executable expects x: float32[1, 3, 6, 6]" in out.getvalue()
    tdb = Debugger(str(tcx), inputs={"x": np.zeros((1, 3, 6, 6), np.float32), "q": np.zeros(1)}, stdout=out)
    tdb.onecmd("run")
    assert "*** run: unknown input(s) q" in out.getvalue()
    tdb = Debugger(str(tcx), inputs=M.inputs(), stdout=out)
    for line in ("p nosuchvalue", "b %nosuch", "b loc:nosuch", "next node 0", "check x", "viz"):
        mark = len(out.getvalue())
        tdb.onecmd("start")
        tdb.onecmd(line)
        assert "***" in out.getvalue()[mark:] and "Traceback" not in out.getvalue(), line


def test_reverse_execution_within_an_npu_node(built):
    tdb, out = session(built)
    tdb.run_commands("start; rn")
    assert "reverse execution needs recording" in out.getvalue()       # off by default for models
    tdb.run_commands("record on; next 40")
    pcs = [tdb.sim.pc(c) for c in range(tdb.sim.cores)]
    c = tdb.model.values["c"]
    before = tdb.sim.read("ddr", tdb.model.value_address(c), c.nbytes, "uint8")
    tdb.run_commands("next 200; reverse-next 200")  # (within the Conv's kernel: some 370 instructions)
    assert [tdb.sim.pc(c) for c in range(tdb.sim.cores)] == pcs and tdb.position() == 40
    np.testing.assert_array_equal(tdb.sim.read("ddr", tdb.model.value_address(c), c.nbytes, "uint8"), before)
    tdb.run_commands("until cast; rn")
    assert "reverse execution goes back within an npu node's kernel only" in out.getvalue()
