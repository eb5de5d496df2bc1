"""tdb on a compiled zoo model (ResNet-18): a scripted `tilecore tdb --do` session with the
model commands and breakpoint kinds, data-checked against ONNX Runtime, and a terminal
session (pseudo-terminal) where tab completion of node names is seen on screen."""
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import tilecore  # noqa: E402
from pty_terminal import Terminal  # noqa: E402


@pytest.fixture(scope="module")
def resnet18(zoo_export, tmp_path_factory):
    """(tcx, inputs npz, reference npz, the ONNX model) of ResNet-18 with one seeded input."""
    from onnx import helper

    from tilecore import zoo

    d = tmp_path_factory.mktemp("tdb-resnet18")
    path = zoo_export("resnet18")
    model = onnx.load(path)
    tilecore.compile(path, fuse=False).save(str(d / "r18.tcx"))  # every Add and Relu a step to stop at
    x = {k: v[0] for k, v in zoo.sample_inputs("resnet18", 1, 0).items()}
    np.savez(d / "in.npz", **x)
    m = onnx.load(path)
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o not in have:
                m.graph.output.append(helper.make_empty_tensor_value_info(o))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    np.savez(d / "ref.npz", **dict(zip([o.name for o in sess.get_outputs()], sess.run(None, x))))
    return d / "r18.tcx", d / "in.npz", d / "ref.npz", model


def env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))


def test_scripted_session_on_resnet18(resnet18):
    tcx, inp, ref, model = resnet18
    nodes = list(model.graph.node)
    conv = [n for n in nodes if n.op_type == "Conv"]
    adds = [n for n in nodes if n.op_type == "Add"]
    pool = next(n for n in nodes if n.op_type == "MaxPool")
    third_conv, last_add = conv[2].name, adds[-1].name
    commands = [
        f"b {third_conv}",                   # 1 location
        "b op:Add",                          # 2 op type (8 residual Adds)
        f"b %{pool.output[0]}",              # 3 value produced
        "tbreak op:Flatten",                 # 4 temporary, on the free view
        "b mm if core == 3",                 # 5 a kernel kind with a condition
        "watch * nan",                       # 6 a value condition on every value
        "ignore 2 7", "disable 5", "info b",
        "run",                               # value breakpoint 3 (after the MaxPool)
        "info loc", f"p {pool.output[0]}",
        "c",                                 # location breakpoint 1
        "info progress", "next 10", "info asm 1", "enable 5", "c",   # the conditional mm in that conv, core 3
        "delete 5", "finish", "next node",
        "until " + last_add,                 # also the 8th Add: the ignore count used up 7
        "c",                                 # the temporary Flatten breakpoint
        "info b", "disable 1-3,6", "c", "info check",
    ]
    r = subprocess.run([sys.executable, "-m", "tilecore", "tdb", str(tcx), "--inputs", str(inp), "--ref_data",
                        str(ref), "--do", "; ".join(commands)], capture_output=True, text=True, env=env(), timeout=600)
    out = r.stdout
    assert r.returncode == 0 and "Traceback" not in out + r.stderr, out[-3000:] + r.stderr
    assert "***" not in out, [line for line in out.splitlines() if "***" in line]
    assert f"Breakpoint 3, value `{pool.output[0]}` produced by node `{pool.name}` (MaxPool)" in out
    assert f"node `{pool.name}`, ONNX node" not in out  # info loc is at the node after the MaxPool
    assert f"`{pool.output[0]}`: float32[" in out and "produced by node" in out
    # the Conv computes its BatchNormalization too (folded into its weights when compiling)
    (hit,) = [ln for ln in out.splitlines() if ln.startswith(f"Breakpoint 1, node `{third_conv}` (Conv, npu")]
    assert "BatchNormalization` (BatchNormalization)" in hit and hit.endswith(") is next"), hit
    assert re.search(r"Breakpoint 5, instruction mm\n.*core 3 pc \d+: mm", out)
    after_until = out.split(f"(tdb) until {last_add}\n")[1].split("(tdb)")[0]
    assert f"Breakpoint 2, node `{last_add}` (Add, npu) is next" in after_until  # the ignore count used up
    # 49 steps: the classifier Gemm (MatMul + Add after CanonicalizeGraph, one Gemm again
    # after FoldMatMulBias) is one
    assert re.search(rf"before node \d+ of 49 `{re.escape(last_add)}` \(Add, npu\)", after_until)
    assert "Temporary breakpoint 4, node `/Flatten` (Flatten, view) is next" in out
    table = out.split("(tdb) info b")[-1].split("(tdb)")[0]
    hits = {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"^(\d+)\s+\w+\s+\w+\s+[yn]\s+(\d+)", table, re.M)}
    assert hits[2] == len(adds) and hits[3] == 1 and hits[6] == 0 and 4 not in hits, table
    assert "model finished:" in out
    # the compiled model agrees with ONNX Runtime on every value data-check compared
    check = out.split("(tdb) info check")[-1]
    assert re.search(r"data-check: (\d+) node\(s\) compared, \1 passed, 0 failed", check), check




def test_terminal_completes_node_names(resnet18):
    tcx, inp, _, model = resnet18
    t = Terminal([sys.executable, "-m", "tilecore", "tdb", str(tcx), "--inputs", str(inp)],
                 dict(env(), TERM="dumb", INPUTRC="/dev/null"))
    try:
        t.read_until("(tdb) ")
        t.send("b /layer4/layer4.1/conv2/C\t")          # a node name completed on screen
        t.read_until("b /layer4/layer4.1/conv2/Conv")
        t.send("\n")
        t.read_until("Breakpoint 1: node `/layer4/layer4.1/conv2/Conv`")
        t.send("start\n")
        t.read_until("stopped before the first instruction")
        t.send("until /layer3/layer3.0/re\t")            # completes the common prefix
        t.read_until("until /layer3/layer3.0/relu")
        t.send("\t\t")                                  # further tabs list the candidates
        screen = t.read_until("relu_1/Relu")
        assert "/layer3/layer3.0/relu/Relu" in screen
        t.send("/Relu\n")
        t.read_until("before node")
        t.read_until("`/layer3/layer3.0/relu/Relu` (Relu, npu)")
        t.send("b op:MaxP\t")
        t.read_until("b op:MaxPool")
        t.send("\n")
        t.send("c\n")
        t.read_until("Breakpoint 1, node `/layer4/layer4.1/conv2/Conv`")
        t.send("quit\n")
        deadline = time.time() + 60
        while time.time() < deadline:
            pid, status = os.waitpid(t.pid, os.WNOHANG)
            if pid:
                assert os.waitstatus_to_exitcode(status) == 0
                t.pid = None
                break
            time.sleep(0.1)
        else:
            raise AssertionError("tdb did not exit on quit")
    finally:
        t.close()
