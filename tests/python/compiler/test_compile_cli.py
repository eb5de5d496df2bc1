"""``tilecore compile`` and ``tilecore compare`` through the CLI entry (main(argv))."""
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tilecore import cli, runtime
from tilecore.cli.compile import node_span, parse_input_shape

pytest.importorskip("onnxruntime")


def chain_model(shape=("N", 16)):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
             helper.make_node("Relu", ["h"], ["r"], name="act"),
             helper.make_node("Sigmoid", ["r"], ["y"], name="gate")]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.flatten())])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), w


@pytest.mark.npu
def test_compile_then_run(tmp_path, capsys):
    model, w = chain_model()
    onnx.save(model, tmp_path / "m.onnx")
    rc = cli.main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.tcx"), "--input-shape", "x:4,16",
                   "--target", "npu -cores=2", "--quiet", "--no-group"])
    out = capsys.readouterr().out
    assert rc == 0 and "3 steps (3 npu, 0 host" in out
    # by default the three npu steps are one layer group
    rc = cli.main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "g.tcx"), "--input-shape", "x:4,16",
                   "--target", "npu -cores=2", "--quiet"])
    assert rc == 0 and "1 steps (1 npu, 0 host" in capsys.readouterr().out
    exe = runtime.load_executable(tmp_path / "m.tcx")
    assert exe.inputs == {"x": ((4, 16), "float32")}
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    assert cli.main(["run", str(tmp_path / "m.tcx"), "--inputs", str(tmp_path / "in.npz"), "-o",
                     str(tmp_path / "out.npz"), "--quiet"]) == 0
    y = np.load(tmp_path / "out.npz")["y"]
    np.testing.assert_allclose(y, 1 / (1 + np.exp(-np.maximum(x @ w, 0))), rtol=1e-5, atol=1e-6)


def test_compile_errors_are_one_line(tmp_path, capsys):
    model, _ = chain_model()
    onnx.save(model, tmp_path / "m.onnx")
    rc = cli.main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.tcx"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 1 and "no static shape" in err and "`x`" in err
    rc = cli.main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.tcx"), "--input-shape", "x:4;16"])
    assert rc == 1 and "--input-shape `x:4;16`" in capsys.readouterr().err
    assert parse_input_shape("a:b:1,2") == ("a:b", (1, 2))


@pytest.mark.npu
def test_compare_reports_every_tensor(tmp_path, capsys):
    model, w = chain_model((4, 16))
    onnx.save(model, tmp_path / "m.onnx")
    x = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    rc = cli.main(["compare", str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "in.npz"), "--report",
                   str(tmp_path / "r.json"), "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0 and "all 3 tensors agree" in out
    rep = json.loads((tmp_path / "r.json").read_text())
    assert [t["name"] for t in rep["tensors"]] == ["h", "r", "y"]
    assert [t["node"] for t in rep["tensors"]] == ["fc", "act", "gate"]
    for t in rep["tensors"]:
        assert t["cosine"] > 0.99999 and t["max_abs_error"] < 1e-4 and t["sqnr_db"] > 80
    assert rep["first_divergent"] is None


@pytest.mark.npu
def test_compare_names_the_first_divergent_node(tmp_path, capsys):
    # A threshold no float computation meets on a sign-changing tensor: cosine 1.0 is
    # still >= 1.0, so use a threshold above 1 to force divergence at the first tensor.
    model, _ = chain_model((4, 16))
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", x=np.ones((4, 16), np.float32))
    rc = cli.main(["compare", str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "in.npz"), "--threshold", "1.5",
                   "--quiet"])
    out = capsys.readouterr().out
    assert rc == 1 and "first divergent: `h` of node `fc` (MatMul)" in out


def test_fallback_lines_name_a_long_node_list_by_its_ends():
    assert node_span(["a", "b", "c"]) == "a, b, c"
    members = [f"/blocks.{i}/Conv" for i in range(100)]
    assert node_span(members) == "/blocks.0/Conv ... /blocks.99/Conv (100 nodes)"


def test_metrics_by_hand():
    from tilecore.compiler.compare import metrics

    m = metrics(np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    assert m["cosine"] == 0.0 and m["max_abs_error"] == 1.0 and m["sqnr_db"] == pytest.approx(10 * np.log10(1 / 2))
    m = metrics(np.array([1.1, 2.0]), np.array([1.0, 2.0]))
    assert m["sqnr_db"] == pytest.approx(10 * np.log10(5 / 0.01)) and m["max_abs_error"] == pytest.approx(0.1)
    assert metrics(np.zeros(3), np.zeros(3))["cosine"] == 1.0
    assert metrics(np.ones(3), np.ones(3))["sqnr_db"] == float("inf")


@pytest.mark.npu
def test_demo_compiles_runs_and_compares_resnet18(capsys):
    from test_driver import _resnet18_runs

    why = _resnet18_runs()
    if why:
        pytest.skip(why)
    assert cli.main(["demo", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "vs ONNX Runtime: cosine" in out and "whole model:" in out and "MAC utilisation" in out
    rows = out.split("bound by  layer group\n")[1].splitlines()[:3]
    assert rows[0].split()[1] == "Conv" and all(r.split()[1] != "Group" for r in rows)  # members, not the group
    assert any("+" in r.split()[-1] for r in rows)  # a member names its layer group's step
    assert cli.main(["demo", "--model", "alexnet"]) == 1


def test_compile_of_a_missing_or_broken_file_is_one_line(tmp_path, capsys):
    assert cli.main(["compile", str(tmp_path / "none.onnx"), "-o", str(tmp_path / "m.tcx"), "--quiet"]) == 1
    assert "none.onnx" in capsys.readouterr().err
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07garbage")
    assert cli.main(["compile", str(tmp_path / "bad.onnx"), "-o", str(tmp_path / "m.tcx"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "bad.onnx" in err and "Traceback" not in err and not (tmp_path / "m.tcx").exists()


@pytest.mark.npu
def test_compile_precisions_calib_qtable_auto_mixed(tmp_path, capsys):
    model, w = chain_model((4, 16))
    onnx.save(model, tmp_path / "m.onnx")
    x = np.random.default_rng(5).standard_normal((6, 4, 16)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    (tmp_path / "q.txt").write_text("fc bf16\n")
    base = ["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.tcx"), "--quiet"]
    assert cli.main(base + ["--precision", "int8", "--calib", str(tmp_path / "calib.npz")]) == 0
    assert "1 matrix node(s) in int8" in capsys.readouterr().out
    exe = runtime.load_executable(tmp_path / "m.tcx")
    y = exe.run({"x": x[0]})["y"]
    ref = 1 / (1 + np.exp(-np.maximum(x[0] @ w, 0)))
    assert np.abs(y - ref).max() < 0.05 and not np.allclose(y, ref, rtol=1e-6, atol=1e-7)  # int8, not f32
    assert cli.main(base + ["--qtable", str(tmp_path / "q.txt")]) == 0
    assert "1 matrix node(s) in bf16" in capsys.readouterr().out
    rc = cli.main(base + ["--precision", "int8", "--calib", str(tmp_path / "calib.npz"), "--auto-mixed", "0.9999999"])
    out = capsys.readouterr().out
    assert rc == 0 and "auto-mixed: cosine" in out and "moved to bf16" in out and "    fc" in out
    assert cli.main(base + ["--precision", "int8"]) == 1
    assert "calib" in capsys.readouterr().err


@pytest.mark.npu
def test_compile_verify_passes_or_names_the_group_and_writes_nothing(tmp_path, capsys, monkeypatch):
    model, w = chain_model()
    onnx.save(model, tmp_path / "m.onnx")
    x = np.random.default_rng(5).standard_normal((4, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    argv = ["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.tcx"), "--input-shape", "x:4,16",
            "--quiet", "--verify", str(tmp_path / "in.npz")]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "verify: no hazard; 1 steps (1 layer groups or fused nodes) agree" in out and "y 1.000000 (pass)" in out
    # the group's last member reads the first member's output instead of its input: a
    # wrong value the executable's data-flow validation cannot see (the place is written)
    from tilecore.compiler import layer_groups

    apply = layer_groups.Groups.apply

    def swapped(self, funcs, build_group):
        def build(idx, fs, args, ins, outs, *slices):
            last = [args[0][-1]] + list(args[-1][1:])
            return build_group(idx, fs, [list(a) for a in args[:-1]] + [last], ins, outs, *slices)
        return apply(self, funcs, build)

    monkeypatch.setattr(layer_groups.Groups, "apply", swapped)
    (tmp_path / "m.tcx").unlink()
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "verify: layer group `fc+2` (3 nodes: fc, act, gate) writes `y` at cosine" in err
    assert not (tmp_path / "m.tcx").exists()
