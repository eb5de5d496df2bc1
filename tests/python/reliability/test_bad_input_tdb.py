"""Bad input to the debugger and the tools that read an executable's debug entries (tdb,
tilecore check, disasm, viz, profile): crafted `.tcx` files, commands with huge or inverted
ranges, values that do not fit, odd plugin paths and sizes. Each gives a named error (one line
on stderr and status 1 at the command line, `*** cmd: ...` in a session), never a traceback,
a wrong display or a silent pass."""
import io
import json
import math
import shutil

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
    ("conv", "group", json.dumps({"nodes": ["conv"], "members": [
        {"node": "conv", "op": "Conv", "est_cycles": 7, "macs": 1, "bound_by": "din", "plan": [1, 2]}]}),
     "member 0 with `plan` [1, 2] (a string)"),
    ("conv", "group", json.dumps({"nodes": ["conv", "relu"], "members": [
        {"node": "conv", "op": "Conv", "est_cycles": 7, "macs": 1, "bound_by": "din"}]}), "lists 2 nodes but 1 members"),
    ("relu", "quantised", '[0.5, 3]', "its debug entry `quantised` is not an object"),
    ("relu", "quantised", '{"r": [0, 3]}', "gives `r` [0, 3], not [scale (a finite number > 0)"),
    ("relu", "quantised", '{"r": [0.5, 300]}', "zero point (an integer in [-128, 127])"),
    ("relu", "quantised", '{"r": [0.5]}', "gives `r` [0.5], not [scale"),
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


# ---- commands: bounded ranges and counts, named errors (F15, F18) -------------------------------
def _session(files, **kw):
    out = io.StringIO()
    tdb = Debugger(str(files / "m.tcx"), inputs=str(files / "in.npz"), stdout=out, **kw)
    return tdb, out


def _said(tdb, out, commands):
    mark = len(out.getvalue())
    tdb.run_commands(commands)
    return out.getvalue()[mark:]


def test_breakpoint_ranges_are_intersected_not_expanded(files):
    """F15: `enable 1-150000000` took 6 GB and 15 s; a range now names the breakpoints in it."""
    import resource
    import time

    tdb, out = _session(files)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    text = _said(tdb, out, "b relu; b fc; enable 1-150000000; disable 2-99999999999; delete 1-99999999999999999999")
    assert time.perf_counter() - start < 2 and resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 100 << 10
    assert "Enabled breakpoint(s) 1, 2" in text and "Disabled breakpoint(s) 2" in text
    assert "Deleted breakpoint(s) 1, 2" in text and not tdb.plugin("breakpoints").bps
    text = _said(tdb, out, "b relu; disable 5-1; delete 4-9; enable 7")
    assert "*** disable: range 5-1: 5 is above 1" in text
    assert "*** delete: no breakpoint numbered 4 to 9 (the breakpoints are 3)" in text
    assert "*** enable: no breakpoint number 7 (the breakpoints are 3)" in text


@pytest.mark.parametrize("command,words", [
    ("x/99999999999f32 c", "*** x: x/99999999999f32 c: 99999999999 elements of float32 (399999999996 bytes); "
                           "x shows at most 67108864 bytes at once"),
    ("x ddr:0x10000+99999999999", "*** x: "),
    ("p/x c", "*** print: unknown format /x"),
    ("p 1 +", "*** print: '1 +' is not a Python expression (invalid syntax)"),
    ("p cc", "*** print: `cc` is not a graph value, a register or a Python name (did you mean c?)"),
    ("watch r outside 5 1", "*** watch: outside 5 1: LO 5 is above HI 1"),
    ("watch r outside nan 1", "*** watch: outside nan 1: a bound is NaN"),
    ("set c[0] = 1e39", "*** set: c[0] = 1e+39: larger than float32 holds (its largest finite value is 3.40282e+38)"),
    ("set/i32 ddr:0x10000 = -1.5", "*** set: ddr:0x10000 = -1.5: int32 holds integers only"),
    ("set/i8 ddr:0x10000 = 300", "*** set: ddr:0x10000 = 300: outside int8's range [-128, 127]"),
    ("set/u8 ddr:0x10000 = -1", "*** set: ddr:0x10000 = -1: outside uint8's range [0, 255]"),
    ("set x3 = 2**40", "*** set: x3 = 2**40: a register holds one 32-bit word"),
    ("set c[0] = 'a'", "*** set: c[0] = 'a': not a number"),
])
def test_command_errors_say_what_and_where(files, command, words):
    """F18/F20: every command error is `*** cmd: <what and where>`: no MemoryError, no raw
    SyntaxError, no value stored as inf or truncated with only a numpy warning."""
    import warnings

    tdb, out = _session(files)
    _said(tdb, out, "b relu; run")
    before = tdb.sim.read("ddr", tdb.model.value_address(tdb.model.values["c"]), (4,), "float32").copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = _said(tdb, out, command)
    assert words in text, text
    assert "internal error" not in text and "Error:" not in text.replace("NameError", ""), text
    after = tdb.sim.read("ddr", tdb.model.value_address(tdb.model.values["c"]), (4,), "float32")
    assert np.array_equal(before, after, equal_nan=True)  # nothing written


def test_values_that_fit_are_written(files):
    tdb, out = _session(files)
    text = _said(tdb, out, "b relu; run; set c[1] = -1.5; set/i32 ddr:0x10004 = 7; set/i8 ddr:0x10000 = -128; "
                            "set c[2] = float('inf'); x/4f32 c")
    assert "***" not in text, text
    c = tdb.sim.read("ddr", tdb.model.value_address(tdb.model.values["c"]), (3,), "float32")
    assert c[1] == -1.5 and np.isinf(c[2])


# ---- check: dtypes, a reference of nothing, thresholds (F5, F20) -------------------------------
def test_a_float_output_against_an_integer_reference_is_a_dtype_mismatch(files, capsys):
    """F5: y = 0.9... checked against int32 zeros passed by truncating both to int64."""
    from tilecore.tdb.datacheck import compare, describe

    row = compare(np.full(4, 0.9, np.float32), np.zeros(4, np.int32))
    assert row["status"] == "dtype" and describe(row) == "dtype float32 against the reference's int32"
    assert compare(np.arange(4, dtype=np.int32), np.arange(4, dtype=np.int64))["status"] == "equal"
    assert compare(np.ones(4, np.float16), np.ones(4, np.float32))["status"] == "equal"
    ref = files / "ref_int.npz"
    y = tilecore.runtime.load_executable(str(files / "m.tcx")).run(dict(np.load(files / "in.npz")))["y"]
    np.savez(ref, y=np.zeros(y.shape, np.int32))
    assert cli.main(["check", str(files / "m.tcx"), "--inputs", str(files / "in.npz"), "--ref_data", str(ref)]) == 1
    text = capsys.readouterr().out
    assert "0 passed, 1 failed" in text and "output `y`: dtype float32 against the reference's int32" in text
    tdb, out = _session(files, ref_data=str(ref))
    assert "output `y`: dtype float32 against the reference's int32" in _said(tdb, out, "run; check y")


def test_check_against_a_reference_of_none_of_the_values_fails(files, capsys):
    """F20: a reference holding none of the model's values passed vacuously (0 compared, 0 failed)."""
    ref = files / "ref_unrelated.npz"
    np.savez(ref, zzz=np.ones(3))
    assert cli.main(["check", str(files / "m.tcx"), "--inputs", str(files / "in.npz"), "--ref_data", str(ref)]) == 1
    err = capsys.readouterr().err
    assert "tilecore check: error: the reference holds none of the model's values: it has zzz; the nodes produce " \
           "c, r, f, mm, y" in err


@pytest.mark.parametrize("words,message", [
    (["cosine=abc", "foo=1"], "cosine: expected a number, got 'abc'"),
    (["foo=1"], "expected NAME=X with NAME one of rtol, atol, cosine, euclid, got 'foo=1'"),
    (["rtol=-1"], "rtol: expected a finite number >= 0, got '-1'"),
    (["atol=nan"], "atol: expected a finite number >= 0, got 'nan'"),
])
def test_check_set_errors_reach_the_user(files, capsys, words, message):
    """F20: `check --set cosine=abc foo=1` was ignored (the error went to the debugger's captured output)."""
    inp = str(files / "in.npz")
    ref = files / "ref_y.npz"
    np.savez(ref, y=np.zeros((1, 10), np.float32))
    assert cli.main(["check", str(files / "m.tcx"), "--inputs", inp, "--ref_data", str(ref), "--set", *words]) == 1
    assert f"tilecore check: error: {message}" in capsys.readouterr().err


# ---- options: plugins, DDR size, viz --check (F18, F20) ----------------------------------------
@pytest.mark.parametrize("path,message", [
    ("/tmp", "plugin file /tmp is a folder"), ("/bin/ls", "plugin file /bin/ls is not a Python file (.py)"),
    ("/dev/zero", "plugin file /dev/zero is not a Python file (.py)"),
    ("missing.py", "plugin file missing.py does not exist"), ("syntax.py", "plugin file syntax.py, line 1: '(' was never closed"),
])
def test_plugin_paths_that_are_no_python_file_are_named(files, capsys, monkeypatch, path, message):
    monkeypatch.chdir(files)
    (files / "syntax.py").write_text("x = (\n")
    assert cli.main(["tdb", str(files / "m.tcx"), "--plugins", path, "--do", "run"]) == 1
    err = capsys.readouterr().err
    assert f"tilecore tdb: error: {message}" in err and "NoneType" not in err, err


@pytest.mark.parametrize("size,message", [
    ("1TiB", "--ddr_size 1TiB: larger than the simulator's limit of 4GiB"),
    ("5GiB", "--ddr_size 5GiB: larger than the simulator's limit of 4GiB"),
    ("0", "--ddr_size 0: must be at least 1 byte"),
    ("2TB", "--ddr_size 2TB: '2TB' is not a size"),
])
def test_ddr_size_errors_name_the_flag(files, capsys, size, message):
    inp = str(files / "in.npz")
    assert cli.main(["tdb", str(files / "m.tcx"), "--inputs", inp, "--ddr_size", size, "--do", "run"]) == 1
    assert f"tilecore tdb: error: {message}" in capsys.readouterr().err
    assert cli.main(["check", str(files / "m.tcx"), "--inputs", inp, "--ref_data", inp, "--ddr_size", size]) == 1
    assert f"tilecore check: error: {message}" in capsys.readouterr().err


@pytest.mark.parametrize("content,message", [
    ("{\n", "not valid JSON: Expecting property name"),
    ('{"a": 1}', "not a tilecore check report (an object whose `nodes` lists the nodes checked)"),
    ("[1, 2]", "not a tilecore check report"),
    ('{"nodes": [{"onnx_name": 3}]}', "not a tilecore check report: node entry 0 is {\"onnx_name\": 3}"),
])
def test_viz_check_file_is_named_and_its_form_checked(files, capsys, content, message):
    """F18/F20: `viz --check bad.json` gave the JSON error without the file; any JSON was accepted."""
    check = files / "bad_check.json"
    check.write_text(content)
    assert cli.main(["viz", str(files / "m.tcx"), "-o", str(files / "g.dot"), "--check", str(check)]) == 1
    assert f"tilecore viz: error: {check}: {message}" in capsys.readouterr().err


# ---- viz: names DOT cannot take as they are (F19) ----------------------------------------------
ODD_NAMES = {"nul": "relu\x00x", "escape": "relu\x1b[31m", "quote": 'relu "1"', "backslash": "relu\\",
             "long": "N" * 20000}


def _odd_graph(name):
    from tilecore.tdb import graphview

    g = graphview.GraphSpec(name)
    g.inputs, g.outputs = [name + "_in"], [name + "_out"]
    g.nodes = [{"id": "n0", "name": name, "op_type": "Relu", "where": "npu"}]
    g.edges = [(f"in:{name}_in", "n0", name + "_in"), ("n0", f"out:{name}_out", name + "_out")]
    return g


@pytest.mark.parametrize("label", list(ODD_NAMES))
def test_dot_labels_show_control_characters_and_stay_short(label):
    """F19: NUL (legal in a protobuf string) and a 20,000-character name made dot fail. The label
    shows control characters as \\xNN and at most LABEL_CHARS characters; the tooltip has the
    whole name, in pieces dot's lexer takes (under 16 KiB each)."""
    import re

    from tilecore.tdb import graphview

    name = ODD_NAMES[label]
    dot = graphview.to_dot(_odd_graph(name))
    assert not re.search(r"[\x00-\x1f\x7f]", dot.replace("\n", "")), "a control character reached DOT"
    assert max(len(s) for s in re.findall(r'"(?:[^"\\]|\\.)*"', dot)) < 16384
    node = next(line for line in dot.splitlines() if line.startswith('  "n0"'))
    label_text = re.search(r"label=(.*?), fillcolor", node).group(1)
    shown = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', label_text)).split("\\n")[0]
    visible = re.sub(r"[\x00-\x1f]", lambda m: f"\\x{ord(m.group()):02x}", name)
    expect = visible if len(visible) <= graphview.LABEL_CHARS else visible[:graphview.LABEL_CHARS - 1] + "\u2026"
    assert shown.replace("\\\\", "\\").replace('\\"', '"') == expect
    tooltip = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', node.split("tooltip=")[1]))
    assert tooltip.replace("\\\\", "\\").replace('\\"', '"').startswith(visible)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
@pytest.mark.parametrize("label", ["nul", "long"])
def test_viz_draws_a_model_with_odd_node_names(tmp_path, capsys, label):
    import onnx
    from onnx import TensorProto as TP
    from onnx import helper

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name=ODD_NAMES[label])], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, [4, 8])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [4, 8])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "m.onnx"))
    assert cli.main(["viz", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "g.svg")]) == 0, capsys.readouterr().err
    svg = (tmp_path / "g.svg").read_text()
    assert "<svg" in svg and ("N" * 20000 in svg if label == "long" else "relu\\x00x" in svg)


def test_a_scripted_session_whose_command_failed_exits_1(tmp_path):
    # `tdb --do` in a CI script: a refused command (here a watch with LO above HI) must not
    # look like success.
    import subprocess
    import sys

    import numpy as np
    from onnx import TensorProto, helper

    import tilecore

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["h"], name="relu"),
                           helper.make_node("Neg", ["h"], ["y"], name="neg")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    tilecore.compile(m, fuse=False).save(tmp_path / "m.tcx")
    np.savez(tmp_path / "in.npz", x=np.ones((4, 8), np.float32))
    cmd = [sys.executable, "-m", "tilecore", "tdb", str(tmp_path / "m.tcx"), "--inputs", str(tmp_path / "in.npz"), "--do"]
    ok = subprocess.run(cmd + ["run"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "model finished" in ok.stdout, ok.stdout + ok.stderr
    bad = subprocess.run(cmd + ["watch h outside 5 1; run"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "*** watch: outside 5 1: LO 5 is above HI 1" in bad.stdout, bad.stdout
    assert "model finished" in bad.stdout  # the other commands still ran
