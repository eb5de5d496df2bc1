"""Bad input to the debugger and the tools that read an executable's debug entries (tdb,
tilecore check, disasm, viz, profile): crafted `.tcx` files, commands with huge or inverted
ranges, values that do not fit, odd plugin paths and sizes. Each gives a named error (one line
on stderr and status 1 at the command line, `*** cmd: ...` in a session), never a traceback,
a wrong display or a silent pass."""
import io
import json
import math

import numpy as np
import pytest

pytest.importorskip("onnx")

import tcx_edit  # noqa: E402
import tilecore  # noqa: E402
from tilecore import cli  # noqa: E402
from tilecore.tdb import Debugger  # noqa: E402
from tilecore.tdb.model import ModelTarget  # noqa: E402
from tilecore.tdb.target import TargetError  # noqa: E402


def _model():
    """x[1,3,8,8] -> Conv -> Relu -> Reshape (a free view) -> MatMul -> Softmax, a step per node."""
    from onnx import TensorProto as TP
    from onnx import helper

    rng = np.random.default_rng(1)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    m = (rng.standard_normal((256, 10)) * 0.1).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("Reshape", ["r", "shp"], ["f"], name="flat"),
         helper.make_node("MatMul", ["f", "m"], ["mm"], name="fc"),
         helper.make_node("Softmax", ["mm"], ["y"], name="sm", axis=-1)], "multi",
        [helper.make_tensor_value_info("x", TP.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TP.FLOAT, [1, 10])],
        [helper.make_tensor("w", TP.FLOAT, w.shape, w.ravel()), helper.make_tensor("b", TP.FLOAT, b.shape, b),
         helper.make_tensor("m", TP.FLOAT, m.shape, m.ravel()), helper.make_tensor("shp", TP.INT64, [2], [1, 256])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("tdb_bad")
    tilecore.compile(_model(), fuse=False).save(str(d / "m.tcx"))
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.savez(d / "in.npz", x=x)
    return d


def _craft(files, name, change):
    path = files / name
    tcx_edit.edit(files / "m.tcx", path, change)
    return str(path)


def _set_debug(step, key, value):
    def change(exe):
        st = next(s for s in exe["steps"] if s["node"] == step)
        st["debug"] = [[k, v] for k, v in st["debug"] if k != key] + [[key, value]]
    return change


# ---- the debug entries (F10, F17) ---------------------------------------------------------------
_GROUP = json.dumps({"nodes": ["conv"], "members": [
    {"node": "conv", "op": "Conv", "est_cycles": "7", "macs": "1", "bound_by": 3}]})
BAD_ENTRIES = [
    ("relu", "outputs", "a,b,c,d,e,f", "its debug entry `outputs` names 6 values but the step has 2 arguments"),
    ("relu", "outputs", "x", "its debug entry `outputs` names a model input, `x`"),
    ("relu", "outputs", "w", "its debug entry `outputs` names a constant, `w`"),
    ("relu", "inputs", "c,c", "`inputs` and `outputs` name 2 + 1 values but the step has 2 arguments"),
    ("fc", "views", '[["flat", "Reshape", "r", "f", [1, 100000]]]',
     "gives view `flat` the shape [1, 100000] (100000 elements), but its source `r` has 256 elements"),
    ("fc", "views", '[["flat", "Reshape", "r", "f", [1000000, 1000000]]]', "1000000000000 elements"),
    ("fc", "views", '[["flat", "Reshape", "r", "f", [-4, -64]]]', "with sizes >= 0"),
    ("fc", "views", '[["flat", "Reshape", "r", "x", [1, 256]]]', "names a model input, `x`, as the output of view"),
    ("conv", "group", _GROUP, "member 0 with `est_cycles` '7', `macs` '1', `bound_by` 3"),
    ("conv", "group", json.dumps({"nodes": ["conv"], "members": [1]}), "member 0 with `node` missing"),
    ("conv", "group", json.dumps({"nodes": ["conv", "relu"], "members": [
        {"node": "conv", "op": "Conv", "est_cycles": 7, "macs": 1, "bound_by": "din"}]}), "lists 2 nodes but 1 members"),
]


@pytest.mark.parametrize("step,key,value,words", BAD_ENTRIES)
def test_a_bad_debug_entry_is_named_once_for_every_reader(files, step, key, value, words):
    """F10/F17: one check of the debug entries, at the one place the tools read them."""
    path = _craft(files, f"bad_{key}.tcx", _set_debug(step, key, value))
    with pytest.raises(TargetError) as e:
        ModelTarget(path)
    assert str(e.value).startswith(f"{path}: step `{step}`: ") and words in str(e.value), str(e.value)


@pytest.mark.parametrize("command", ["disasm", "viz", "tdb", "check", "profile"])
def test_the_cli_names_the_file_step_and_entry(files, command, capsys):
    """F17: `tilecore: error: <file>: step `relu`: its debug entry `outputs` names 6 values but the
    step has 2 arguments`, no traceback, from each command that reads the entries."""
    bad = _craft(files, f"outputs6_{command}.tcx", _set_debug("relu", "outputs", "a,b,c,d,e,f"))
    group = _craft(files, f"group_{command}.tcx", _set_debug("conv", "group", _GROUP))
    inp = str(files / "in.npz")
    argv = {"disasm": ["disasm", bad], "viz": ["viz", bad, "-o", str(files / "g.dot")],
            "tdb": ["tdb", bad, "--do", "run"], "check": ["check", bad, "--inputs", inp, "--ref_data", inp],
            "profile": ["profile", group, "--inputs", inp, "--quiet"]}[command]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err.strip()
    if command == "profile":
        assert err.endswith(f"{group}: step `conv`: its debug entry `group` has member 0 with `est_cycles` '7', "
                            "`macs` '1', `bound_by` 3 (node, op and bound_by are strings; est_cycles and macs "
                            "integers >= 0)"), err
    else:
        assert err.endswith(f"{bad}: step `relu`: its debug entry `outputs` names 6 values but the step has "
                            "2 arguments"), err
    assert err.count(bad if command != "profile" else group) == 1, err  # named once


def test_views_within_the_buffer_still_show(files):
    """A valid `views` entry keeps working: `p f` is the Reshape of `r`, [1, 256]."""
    out = io.StringIO()
    tdb = Debugger(str(files / "m.tcx"), inputs=str(files / "in.npz"), stdout=out)
    tdb.run_commands("run; p f")
    assert "`f`: float32[1, 256]" in out.getvalue(), out.getvalue()
    assert math.prod(tdb.model.values["f"].shape) == math.prod(tdb.model.values["r"].shape)


# ---- tdb's launch of a step is Executable.run's (F7) -------------------------------------------
def _relu_into_weights(exe):
    """The Relu step's output pointed at the 108-element weight buffer (the kernel needs 256)."""
    names = [b["name"] for b in exe["buffers"]]
    relu = next(s for s in exe["steps"] if s["op_type"] == "Relu")
    relu["args"] = [relu["args"][0], names.index("w")]


def test_tdb_check_and_run_refuse_alike_a_step_run_refuses(files, capsys):
    """F7: docs/tdb.md, "A run through tdb computes exactly what Executable.run computes": the
    crafted file `tilecore run` refuses is refused by tdb and check too, not run to the end
    with the weights overwritten."""
    bad = _craft(files, "relu_w.tcx", _relu_into_weights)
    inp = str(files / "in.npz")
    outputs = {}
    for command, argv in (("run", ["run", bad, "--inputs", inp, "--quiet"]),
                          ("check", ["check", bad, "--inputs", inp, "--ref_data", inp]),
                          ("tdb", ["tdb", bad, "--inputs", inp, "--do", "run; continue"])):
        rc = cli.main(argv)
        captured = capsys.readouterr()
        outputs[command] = captured.out + captured.err
        if command != "tdb":
            assert rc == 1, (command, outputs[command])
        assert "model finished" not in outputs[command] and "passed" not in outputs[command]
        for word in ("`relu`", "256", "108"):
            assert word in outputs[command], (command, outputs[command])


def _blind_copy_executable():
    """An executable whose one step copies 256 floats with a kernel that declares no buffer
    sizes (so nothing refuses it before it runs) into a 64-element output."""
    from tilecore import ir
    from tilecore.ffi._base import _ffi_core
    from tilecore.runtime.executable import ExecutableBuilder

    ib = ir.IRBuilder("copy")
    a = ib.buffer_param("A", (256,), "float32")
    b = ib.buffer_param("B", (256,), "float32")
    with ib.for_range(0, 256, name="i") as i:
        b[i] = a[i]
    info = tilecore.build(ib.get(), "npu").info["functions"][0]
    params = [{k: v for k, v in dict(p.items()).items() if k != "elements"} for p in info["params"]]
    blind = _ffi_core._get_global_func("runtime.NpuModuleCreate")(
        [{"name": "copy", "program": info["program"], "params": params, "cores": info["cores"]}])
    eb = ExecutableBuilder()
    x, y = eb.add_buffer("x", (256,), "float32"), eb.add_buffer("y", (64,), "float32")
    eb.add_buffer("z", (64,), "float32")  # the neighbour the copy would run into
    eb.add_input("x", x)
    eb.add_output("y", y)
    eb.add_step("npu", blind, "copy", [x, y], node="copy", op_type="Identity", debug={"inputs": "x", "outputs": "y"})
    return eb.build()


def test_tdb_limits_a_step_to_its_arrays_as_run_does():
    """F7: tdb loads an npu step as Executable.run calls it, DDR limited to the step's arrays:
    a kernel that writes past its output faults in both, with the same message."""
    exe = _blind_copy_executable()
    feeds = {"x": np.arange(256, dtype=np.float32)}
    with pytest.raises(tilecore.sim.SimError) as e:
        exe.run(feeds)
    run_says = str(e.value)
    assert "outside the arrays of the call: element 64 of `B`, which has 64 elements" in run_says
    out = io.StringIO()
    tdb = Debugger(exe, inputs=feeds, stdout=out)
    tdb.onecmd("run")
    assert f"*** run: the program faulted: {run_says}" in out.getvalue(), out.getvalue()
    assert not tdb.finished
