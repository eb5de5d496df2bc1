"""The .tcx executable: a hand-built npu -> host -> npu pipeline against numpy, its statistics
against the simulator's own figures and hand-computed MACs, the trace's structure, save/load,
the CLI, and bad inputs."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tilecore
from tilecore import runtime

sys.path.insert(0, os.path.dirname(__file__))
import exe_pipeline as P  # noqa: E402

pytestmark = pytest.mark.skipif(tilecore.get_global_func("codegen.build_npu", allow_missing=True) is None,
                                reason="built without TILECORE_ENABLE_NPU")

RNG = np.random.default_rng(11)


def x_input():
    return RNG.integers(-128, 128, (P.M, P.K)).astype("int8")


@pytest.fixture(scope="module")
def exe():
    return P.build()


def test_pipeline_matches_numpy(exe):
    w, bias = P.weights()
    for _ in range(2):  # a second run reuses nothing stale
        x = x_input()
        out = exe.run({"x": x})
        assert list(out) == ["out"]
        np.testing.assert_array_equal(out["out"], P.reference(x, w, bias))


def test_plan_reuses_y_for_out(exe):
    d = exe.describe()
    offs = {b["name"]: b["offset"] for b in d["buffers"]}
    assert offs["out"] == offs["y"]
    assert exe.inputs == {"x": ((64, 64), "int8")}
    assert exe.outputs == {"out": ((64, 64), "int32")}
    assert d["steps"][0]["source_node"] == "/layer/MatMul" and d["steps"][0]["debug"] == {"layout": "row-major"}


def test_stats_against_the_simulator(exe):
    x = x_input()
    exe.run({"x": x})
    st = exe.stats()
    ops = st["ops"]
    assert [(o["name"], o["op_type"], o["where"]) for o in ops] == [
        ("/layer/MatMul", "MatMulInteger", "npu"), ("/layer/Relu", "Relu", "host"), ("/layer/Add", "Add", "npu")]
    assert ops[0]["macs"] == 64 * 64 * 64 and ops[0]["sim_macs"] == 64 * 64 * 64
    # cycles: each npu step costs what the simulator reports for the same kernel run alone
    mods = P.modules()
    w, bias = P.weights()
    y = np.zeros((64, 64), "int32")
    mods["gemm"]["gemm_i8"](x, w, y)
    sim_stats = runtime.npu_simulator(0).stats()
    assert ops[0]["cycles"] == sim_stats["cycles"]
    z = np.maximum(y, 0)
    mods["add"]["add_i32"](z.reshape(-1), bias.reshape(-1), np.zeros(64 * 64, "int32"))
    assert ops[2]["cycles"] == runtime.npu_simulator(0).stats()["cycles"]
    assert ops[1]["cycles"] == 0 and ops[1]["wall_seconds"] > 0
    assert st["cycles"] == ops[0]["cycles"] + ops[2]["cycles"]
    assert st["macs"] == 64 ** 3
    peak = 2048 * 4  # int8 on 4 cores
    assert st["peak_macs_per_cycle"] == peak
    assert st["mac_utilisation"] == pytest.approx(64 ** 3 / (peak * st["cycles"]))
    assert ops[0]["mac_utilisation"] == pytest.approx(64 ** 3 / (peak * ops[0]["cycles"]))
    assert 0 <= st["mac_utilisation"] <= 1
    # bytes per level: the GEMM reads x (4 KiB) and w (4 KiB) per core-row block; writes y (16 KiB)
    assert ops[0]["bytes"]["ddr_written"] == 64 * 64 * 4
    assert ops[2]["bound_by"] == "sc"  # scalar element-wise code
    assert len(ops[0]["engine_busy"]) == 4 and ops[0]["engine_busy"][0]["mm"] > 0
    # the busiest engine on one core, the DDR when its DMA commands took its bandwidth longer,
    # latency when neither took half of the step's cycles
    most, bound = max((c[e], e) for c in ops[0]["engine_busy"] for e in c)
    if ops[0]["ddr_cycles"] > most:
        most, bound = ops[0]["ddr_cycles"], "ddr"
    assert ops[0]["bound_by"] == (bound if 2 * most >= ops[0]["cycles"] else "latency")


def test_trace_structure(exe, tmp_path):
    exe.run({"x": x_input()})
    p = tmp_path / "t.json"
    exe.trace(str(p))
    tr = json.loads(p.read_text())
    ev = tr["traceEvents"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
    for c in range(4):
        for t, name in enumerate(["sc", "din", "dout", "mm", "vec"]):
            assert threads[(c, t)] == name
    slices = [e for e in ev if e["ph"] == "X"]
    names = {e["name"] for e in slices}
    assert names == {"gemm0", "relu0", "add0"}
    st = exe.stats()
    gemm = [e for e in slices if e["name"] == "gemm0"]
    assert {e["pid"] for e in gemm} == {0, 1, 2, 3}
    assert all(e["dur"] == pytest.approx(st["ops"][0]["cycles"] / 1000.0) for e in gemm)
    add = [e for e in slices if e["name"] == "add0"]
    relu = [e for e in slices if e["name"] == "relu0"]
    assert relu[0]["pid"] == 1000 and add[0]["ts"] >= relu[0]["ts"] + relu[0]["dur"] - 1e-6
    assert add[0]["ts"] >= gemm[0]["ts"] + gemm[0]["dur"] - 1e-6


def test_save_load_round_trip(exe, tmp_path):
    p = tmp_path / "m.tcx"
    exe.save(str(p))
    again = runtime.load_executable(str(p))
    assert again.describe() == exe.describe()
    assert again.to_bytes() == exe.to_bytes()
    x = x_input()
    np.testing.assert_array_equal(again.run({"x": x})["out"], exe.run({"x": x})["out"])
    assert [m.kind for m in again.modules] == ["npu", "c", "npu"]


def test_progress_callback(exe):
    seen = []
    exe.run({"x": x_input()}, progress=lambda i, n, node: seen.append((i, n, node)))
    assert seen == [(0, 3, "gemm0"), (1, 3, "relu0"), (2, 3, "add0")]


# ---- bad inputs at run time -------------------------------------------------------------------
@pytest.mark.parametrize("inputs, message", [
    ({}, "missing input `x`; the executable expects x: int8[64, 64]"),
    ({"x": np.zeros((64, 64), "int8"), "y": np.zeros(1)}, "unknown input `y`; the executable expects x: int8[64, 64]"),
    ({"x": np.zeros((64, 63), "int8")}, "input `x` is int8[64, 63]; the executable expects x: int8[64, 64]"),
    ({"x": np.zeros((64, 64), "float32")}, "input `x` is float32[64, 64]; the executable expects x: int8[64, 64]"),
])
def test_bad_inputs(exe, inputs, message):
    with pytest.raises(ValueError, match=__import__("re").escape(message)):
        exe.run(inputs)


def test_stats_before_run():
    with pytest.raises(ValueError, match="run the executable first"):
        P.build().stats()


# ---- bad plans at build time ------------------------------------------------------------------
def test_overlapping_live_buffers_rejected():
    # z (live at steps 1..2) placed on y (live 0..1): both live at step 1
    w, bias = P.weights()
    b = runtime.ExecutableBuilder(precision="int8")
    mods = P.modules()
    x = b.add_buffer("x", (64, 64), "int8")
    y = b.add_buffer("y", (64, 64), "int32")
    z = b.add_buffer("z", (64, 64), "int32", offset=b._buffers[y]["offset"] + 64)
    b.add_input("x", x)
    b.add_output("z", z)
    wb = b.add_constant("w", w)
    b.add_step("npu", mods["gemm"], "gemm_i8", [x, wb, y], node="gemm0")
    b.add_step("host", mods["relu"], "relu_i32", [y, z], node="relu0")
    with pytest.raises(ValueError, match=r"buffer 1 `y` \[\d+, \d+\) and buffer 2 `z` .* overlap while both are live \(steps 1..1\)"):
        b.build()


@pytest.mark.parametrize("mutate, message", [
    (lambda b: b._steps[0].update(kind="host"), "a host step calls a `npu` module"),
    (lambda b: b._steps[0].update(function="nope"), "has no function `nope`"),
    (lambda b: b._steps[0].update(args=[0, 1]), "2 arguments for gemm_i8"),
    (lambda b: b._steps[0].update(args=[0, 1, 99]), "buffer index 99 out of range"),
    (lambda b: b._steps[0].update(args=[0, 1, 1]), "gets buffer 1 `w` of dtype int8"),  # C is int32
    (lambda b: b._buffers[0].update(offset=8), "offset 8 is not 64-byte aligned"),
    (lambda b: b._buffers[0].update(size=5), "size 5 but int8[64, 64] needs 4096"),
    (lambda b: b._buffers[0].update(dtype="int3x"), "unknown dtype"),
    (lambda b: b._outputs.clear(), "no outputs"),
    (lambda b: b._inputs.append(dict(b._inputs[0])), "input `x` appears twice"),
])
def test_bad_plans_rejected(mutate, message):
    w, bias = P.weights()
    b = runtime.ExecutableBuilder(precision="int8")
    mods = P.modules()
    x = b.add_buffer("x", (64, 64), "int8")
    wb = b.add_constant("w", w)
    y = b.add_buffer("y", (64, 64), "int32")
    b.add_input("x", x)
    b.add_output("y", y)
    b.add_step("npu", mods["gemm"], "gemm_i8", [x, wb, y], node="gemm0")
    b.build()  # the unmutated plan is fine
    mutate(b)
    if "8 is not" in message:
        with pytest.raises(ValueError, match=message):
            b.build(arena_size=1 << 20)
        return
    with pytest.raises(ValueError, match=__import__("re").escape(message)):
        b.build()


def test_arena_too_small_rejected():
    w, _ = P.weights()
    b = runtime.ExecutableBuilder(precision="int8")
    x = b.add_buffer("x", (64, 64), "int8")
    b.add_input("x", x)
    b.add_output("x", x)
    with pytest.raises(ValueError, match=r"bytes \[0, 4096\) exceed the arena of 100"):
        b.build(arena_size=100)


# ---- the CLI ----------------------------------------------------------------------------------
def test_cli_run_and_profile(exe, tmp_path):
    p, inp, outp, stp, trp = (str(tmp_path / n) for n in ("m.tcx", "in.npz", "out.npz", "s.json", "t.json"))
    exe.save(p)
    x = x_input()
    np.savez(inp, x=x)
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "tilecore", "run", p, "--inputs", inp, "-o", outp, "--stats", stp,
                        "--trace", trp], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    w, bias = P.weights()
    np.testing.assert_array_equal(np.load(outp)["out"], P.reference(x, w, bias))
    st = json.load(open(stp))
    assert 0 <= st["mac_utilisation"] <= 1 and st["cycles"] > 0
    assert [set(["name", "op_type", "where", "cycles", "macs"]) <= set(o) for o in st["ops"]] == [True] * 3
    assert json.load(open(trp))["traceEvents"]
    r = subprocess.run([sys.executable, "-m", "tilecore", "profile", p, "--inputs", inp], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stderr
    rows = r.stdout.splitlines()
    assert rows[0].split()[:3] == ["op", "type", "where"]
    assert [row.split()[0] for row in rows[1:4]] == ["/layer/Add", "/layer/MatMul", "/layer/Relu"]  # by cycles
    bound = st["ops"][0]["bound_by"]
    cls = {"din": "dma", "dout": "dma", "ddr": "dma", "mm": "compute", "vec": "compute", "sc": "front end",
           "latency": "latency"}[bound]
    assert rows[2].endswith(f"{bound} ({cls})"), rows[2]
    # the model report: DDR traffic against weights + input + output moved once
    out = P.reference(x, w, bias)
    lower = (w.nbytes + bias.nbytes + x.nbytes + out.nbytes) / 2 ** 20
    assert rows[-1].startswith("DDR traffic:") and f"lower bound {lower:.2f} MiB" in rows[-1], rows[-1]
    assert rows[-3].startswith("MAC utilisation:") and rows[-2].startswith("npu cycles by bound:")
    np.savez(inp, x=np.zeros((2, 2), "float32"))
    r = subprocess.run([sys.executable, "-m", "tilecore", "run", p, "--inputs", inp], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 1
    assert "input `x` is float32[2, 2]; the executable expects x: int8[64, 64]" in r.stderr


def test_cli_run_traces_the_tile_commands_with_commands(exe, tmp_path):
    p, inp, trp, plain = (str(tmp_path / n) for n in ("m.tcx", "in.npz", "t.json", "plain.json"))
    exe.save(p)
    np.savez(inp, x=x_input())
    run = [sys.executable, "-m", "tilecore", "run", p, "--inputs", inp, "--quiet"]
    r = subprocess.run(run + ["--trace", trp, "--commands"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(run + ["--trace", plain], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    commands = [e for e in json.load(open(trp))["traceEvents"] if e["ph"] == "X" and "pc" in e["args"]]
    mm = [e for e in commands if e["name"] in ("mm", "mma")]
    assert mm and all(e["tid"] == 3 for e in mm)  # (the matrix engine's track)
    assert not [e for e in json.load(open(plain))["traceEvents"] if "pc" in e.get("args", {})]
    r = subprocess.run(run + ["--commands"], capture_output=True, text=True)
    assert r.returncode == 1 and "--commands adds the tile commands to the trace: give --trace too" in r.stderr


def test_inputs_as_dlpack_and_ndarrays(exe):
    class Producer:  # only the DLPack protocol
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    w, bias = P.weights()
    x = x_input()
    ref = P.reference(x, w, bias)
    np.testing.assert_array_equal(exe.run({"x": Producer(x)})["out"], ref)
    np.testing.assert_array_equal(exe.run({"x": tilecore.nd.array(x, device=tilecore.npu(0))})["out"], ref)


def test_profile_names_the_ops_the_front_end_bounds():
    # a BitwiseAnd on int32 has no vector command (docs/compiler.md: front end), a Relu
    # has: the profile's warning names the first, by the simulator's own bound, not the second
    from onnx import TensorProto, helper

    from tilecore.cli.runtime import format_profile, front_end_bound

    g = helper.make_graph(
        [helper.make_node("BitwiseAnd", ["a", "b"], ["c"], name="bits"),
         helper.make_node("Cast", ["c"], ["f"], name="to_float", to=TensorProto.FLOAT),
         helper.make_node("Relu", ["f"], ["y"], name="relu")], "g",
        [helper.make_tensor_value_info(n, TensorProto.INT32, [64, 512]) for n in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 512])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    exe = tilecore.compile(model.SerializeToString(), group=False)
    a, b = RNG.integers(-1000, 1000, (2, 64, 512)).astype(np.int32)
    np.testing.assert_array_equal(exe.run({"a": a, "b": b})["y"], np.maximum(a & b, 0).astype(np.float32))
    st = exe.stats()
    slow = front_end_bound(st)
    assert [n for n, *_ in slow] == ["bits"], st["ops"]
    text = format_profile(st)
    assert "warning: 1 op(s) bound by the scalar front end" in text and "bits (BitwiseAnd, " in text
    relu_only = [o for o in st["ops"] if o["name"] == "relu"]
    assert front_end_bound(dict(st, ops=relu_only)) == []


def one_op_model(op, shape, weight=None):
    """An ONNX model of one `op` over an f32 input x of `shape` (and a constant `weight`)."""
    from onnx import TensorProto, helper, numpy_helper

    ins = ["x"] + (["w"] if weight is not None else [])
    out = [shape[0], weight.shape[1]] if weight is not None else shape
    g = helper.make_graph([helper.make_node(op, ins, ["y"], name="op")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
                          [numpy_helper.from_array(weight, "w")] if weight is not None else [])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString()


def test_a_step_is_bound_by_the_ddr_or_by_latency():
    """A matrix-vector product over 4 MiB of f32 weights streams them at the DDR's 64 bytes a
    cycle (65,536 cycles; its DMA engines wait for the DDR more than they work): bound by
    "ddr". A Relu of 64 elements is a load's and a store's DDR latency (200 cycles each) with
    every engine busy under half of its cycles: bound by "latency", not by its busiest engine."""
    w = RNG.standard_normal((1024, 1024)).astype(np.float32)
    x = RNG.standard_normal((1, 1024)).astype(np.float32)
    exe = tilecore.compile(one_op_model("MatMul", [1, 1024], w), group=False)
    np.testing.assert_allclose(exe.run({"x": x})["y"], x @ w, rtol=1e-4, atol=1e-3)
    op = exe.stats()["ops"][0]
    assert op["bound_by"] == "ddr" and op["cycles"] >= op["ddr_cycles"] >= w.nbytes // 64
    assert max(c[e] for c in op["engine_busy"] for e in c) < w.nbytes // 64
    exe = tilecore.compile(one_op_model("Relu", [1, 64]), group=False)
    np.testing.assert_array_equal(exe.run({"x": x[:, :64]})["y"], np.maximum(x[:, :64], 0))
    op = exe.stats()["ops"][0]
    assert op["cycles"] >= 2 * 200 and op["bound_by"] == "latency"
    assert all(2 * c[e] < op["cycles"] for c in op["engine_busy"] for e in c)


def test_load_options_refuse_host_code_and_other_files(exe, tmp_path):
    """A `.tcx` with a host step holds a shared library that loading dlopens: the load options
    refuse it, or any file but the one named by its SHA-256 (hashlib's), before loading it."""
    import hashlib

    path = tmp_path / "pipeline.tcx"
    exe.save(str(path))
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    x = x_input()
    want = exe.run({"x": x})["out"]
    for again in (runtime.load_executable(path, expected_sha256=sha),
                  runtime.load_executable(path, expected_sha256=sha.upper()),
                  runtime.load_executable_bytes(data, expected_sha256=sha)):
        assert np.array_equal(again.run({"x": x})["out"], want)
    other = hashlib.sha256(data + b"\0").hexdigest()
    with pytest.raises(PermissionError, match=f"SHA-256 is {sha}, and the load options expect {other}"):
        runtime.load_executable(path, expected_sha256=other)
    with pytest.raises(ValueError, match="expected_sha256 `12ab` is not 64 hexadecimal digits"):
        runtime.load_executable(path, expected_sha256="12ab")
    for load in (lambda: runtime.load_executable(path, allow_host_code=False),
                 lambda: runtime.load_executable_bytes(data, allow_host_code=False)):
        with pytest.raises(PermissionError, match=r"module \d+ is of kind `c`, which holds host code"):
            load()
