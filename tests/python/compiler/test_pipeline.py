"""The compiler's pipeline tooling (compiler/pipeline.py, docs/compiler.md "The pipeline"):
every pass run is recorded with its time, in the documented order; the graph printed and
dumped after chosen passes shows what each did; disabling a pass by name keeps the results
(against ONNX Runtime) without that pass's work; a graph pass that breaks the model is named
by verify_each; unknown and required pass names are refused; the CLI flags reach all of it."""
import io
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tilecore import compiler, transform
from tilecore.compiler import pipeline as P
from tilecore.compiler.driver import CompileError

ort = pytest.importorskip("onnxruntime")

pytestmark = pytest.mark.npu


def conv_bn_model():
    """x [1, 3, 12, 12] -> Conv 3x3 (8) -> BatchNormalization -> Relu -> Conv 1x1 (4) -> y."""
    rng = np.random.default_rng(7)
    inits = {"w1": rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3,
             "scale": rng.uniform(0.5, 1.5, 8).astype(np.float32),
             "bias": rng.standard_normal(8).astype(np.float32) * 0.1,
             "mean": rng.standard_normal(8).astype(np.float32) * 0.1,
             "var": rng.uniform(0.5, 1.5, 8).astype(np.float32),
             "w2": rng.standard_normal((4, 8, 1, 1)).astype(np.float32) * 0.3}
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["b"], name="bn"),
             helper.make_node("Relu", ["b"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2"], ["y"], name="conv2")]
    g = helper.make_graph(nodes, "conv_bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 12, 12])],
                          [onnx.numpy_helper.from_array(a, n) for n, a in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


MODEL = conv_bn_model().SerializeToString()
X = np.random.default_rng(3).standard_normal((1, 3, 12, 12)).astype(np.float32)


def want():
    sess = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": X})[0]


def test_every_pass_is_recorded_in_the_documented_order():
    report = {}
    compiler.compile(MODEL, report=report)
    top = [r["pass"] for r in report["passes"] if r["level"] == 0]
    assert all(r["seconds"] >= 0 for r in report["passes"])
    order = list(P.PASSES)
    known = [p for p in top if p in P.PASSES]
    assert set(top) <= set(P.PASSES), top  # each one documented
    firsts = [order.index(p) for p in dict.fromkeys(known)]  # first runs, in the order they ran
    driver = [i for i in firsts if order[i] in P.DRIVER_PASSES]
    assert driver == sorted(driver)
    for name in ("Import", "FoldBatchNorm", "Partition", "FuseEpilogue", "Lower", "LayerGroups", "Assemble"):
        assert any(r["pass"] == name for r in report["passes"]), name
    nested = [r["pass"] for r in report["passes"] if r["level"] == 1]
    assert "FoldBatchNorm" in nested and "GemmToMatMul" in nested


def test_print_after_shows_what_each_pass_did():
    out = io.StringIO()
    compiler.compile(MODEL, pipeline=P.PipelineOptions(print_after=["Import", "FoldBatchNorm", "FuseEpilogue"],
                                                        stream=out))
    text = out.getvalue()
    parts = {}
    for chunk in text.split("// ---- after ")[1:]:
        name, body = chunk.split(" ----\n", 1)
        parts.setdefault(name, body)
    assert set(parts) == {"Import", "FoldBatchNorm", "FuseEpilogue"}
    assert "BatchNormalization(" in parts["Import"] and "BatchNormalization(" not in parts["FoldBatchNorm"]
    # after the fusion the Relu is the first Conv's epilogue: its line carries it, and it is gone
    conv1 = next(line for line in parts["FuseEpilogue"].splitlines() if line.endswith('@ "conv1"'))
    assert 'tc_activation="Relu"' in conv1 and "on npu" in conv1
    assert "Relu(" not in parts["FuseEpilogue"]


def test_dump_dir_holds_the_text_after_each_pass_in_order(tmp_path):
    report = {}
    compiler.compile(MODEL, report=report, pipeline=P.PipelineOptions(dump_dir=tmp_path / "passes"))
    files = sorted(os.listdir(tmp_path / "passes"))
    assert files[0].startswith("0000_") and all(f.endswith(".graph") for f in files)
    names = [f.split("_", 1)[1][:-len(".graph")] for f in files]
    assert [int(f.split("_")[0]) for f in files] == list(range(len(files)))
    for name in ("Import", "FoldBatchNorm", "Partition", "FuseEpilogue", "LayerGroups", "PlanMemory"):
        assert name in names, names
    folded = (tmp_path / "passes" / files[names.index("FoldBatchNorm")]).read_text()
    assert folded.startswith("graph conv_bn(") and "BatchNormalization" not in folded
    # the last graph pass's text is the graph the steps are made from (tdb's b graph:LINE)
    last_graph = max(i for i, n in enumerate(names) if n in P.GRAPH_PASSES)
    assert (tmp_path / "passes" / files[last_graph]).read_text().strip() == report["graph"].strip()


@pytest.mark.parametrize("disabled, check", [
    ("FoldBatchNorm", lambda r: "BatchNormalization(" in r["graph"]),
    ("FuseEpilogue", lambda r: r["fused"] == []),
    ("LayerGroups", lambda r: r["groups"] == []),
])
def test_a_disabled_pass_does_no_work_and_the_results_stay_right(disabled, check):
    base = {}
    compiler.compile(MODEL, report=base)
    assert not check(base)  # (it does work on this model when enabled)
    report = {}
    exe = compiler.compile(MODEL, report=report, pipeline=P.PipelineOptions(disable=[disabled]))
    assert check(report)
    assert disabled not in [r["pass"] for r in report["passes"]]
    np.testing.assert_allclose(exe.run({"x": X})["y"], want(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", [p for p in P.PASSES if p not in P.REQUIRED])
def test_every_pass_that_can_be_disabled_is_not_run_and_the_results_stay_right(name):
    report = {}
    exe = compiler.compile(MODEL, report=report, pipeline=P.PipelineOptions(disable=[name]))
    ran = [r["pass"] for r in report["passes"]]
    assert name not in ran, ran
    if name == "CanonicalizeGraph":  # (and the passes in it)
        assert "FoldBatchNorm" not in ran and "GemmToMatMul" not in ran
    np.testing.assert_allclose(exe.run({"x": X})["y"], want(), rtol=1e-4, atol=1e-4)


def test_a_dump_folder_of_another_compile_and_passes_with_no_text_are_refused(tmp_path):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "0000_Import.graph").write_text("graph old")
    with pytest.raises(CompileError, match="holds .graph files already"):
        compiler.compile(MODEL, pipeline=P.PipelineOptions(dump_dir=tmp_path / "old"))
    for name in P.NO_TEXT:
        with pytest.raises(CompileError, match=f"`{name}` "):
            compiler.compile(MODEL, pipeline=P.PipelineOptions(print_after=[name]))


@pytest.mark.parametrize("options, message", [
    (P.PipelineOptions(disable=["FoldBatchNrom"]), "no pass or plan `FoldBatchNrom`"),
    (P.PipelineOptions(disable=["Partition"]), "`Partition` is required"),
    (P.PipelineOptions(print_after=["Fuse"]), "no pass `Fuse`"),
])
def test_bad_pass_names_are_refused(options, message):
    with pytest.raises(CompileError, match=message):
        compiler.compile(MODEL, pipeline=options)


def broken_fold_matmul_bias():
    """A graph pass under FoldMatMulBias's name that turns every Relu into Abs (a wrong rewrite)."""
    from tilecore.ir.graph import Graph, Node

    def run(graph, ctx):
        nodes = [Node("Abs" if str(n.op_type) == "Relu" else str(n.op_type), list(n.inputs), list(n.outputs),
                      {str(k): v for k, v in n.attrs.items()}, str(n.name), str(n.domain)) for n in graph.nodes]
        return Graph(str(graph.name), list(graph.inputs), list(graph.outputs), nodes, dict(graph.opsets.items()))

    return transform.graph_pass(run, name="FoldMatMulBias")


def test_verify_each_names_the_graph_pass_that_breaks_the_model(monkeypatch):
    monkeypatch.setattr(transform, "FoldMatMulBias", broken_fold_matmul_bias)
    exe = compiler.compile(MODEL)  # without it, a wrong executable
    assert not np.allclose(exe.run({"x": X})["y"], want(), rtol=1e-3, atol=1e-3)
    with pytest.raises(CompileError, match=r"verify_each: pass FoldMatMulBias changed output `y`"):
        compiler.compile(MODEL, pipeline=P.PipelineOptions(verify_each=True))


def doubling_fold_matmul_bias():
    """A graph pass under FoldMatMulBias's name that doubles conv2's weights: the graph's text
    stays the same (a constant shows only its type)."""
    from tilecore.ir.graph import Graph, Node, Value

    def run(graph, ctx):
        nodes = []
        for n in graph.nodes:
            ins = list(n.inputs)
            if str(n.name) == "conv2":
                w = ins[1]
                ins[1] = Value(str(w.name), w.type, w.numpy() * 2)
            nodes.append(Node(str(n.op_type), ins, list(n.outputs), {str(k): v for k, v in n.attrs.items()},
                              str(n.name), str(n.domain)))
        return Graph(str(graph.name), list(graph.inputs), list(graph.outputs), nodes, dict(graph.opsets.items()))

    return transform.graph_pass(run, name="FoldMatMulBias")


def test_verify_each_sees_a_pass_that_changes_only_constant_values(monkeypatch):
    monkeypatch.setattr(transform, "FoldMatMulBias", doubling_fold_matmul_bias)
    out = io.StringIO()
    with pytest.raises(CompileError, match=r"verify_each: pass FoldMatMulBias changed output `y`"):
        compiler.compile(MODEL, pipeline=P.PipelineOptions(verify_each=True, print_after=["RecognizeActivations",
                                                                                          "FoldMatMulBias"],
                                                             stream=out))
    before, after = out.getvalue().split("// ---- after FoldMatMulBias ----")
    assert before.split("// ---- after RecognizeActivations ----\n")[1].strip() == after.strip().split("\n// ----")[0]


def test_verify_each_passes_a_right_compile_and_verifies_the_executable():
    report = {}
    compiler.compile(MODEL, report=report, pipeline=P.PipelineOptions(verify_each=True))
    assert report["verify"]["checks"] == {"hazards": "pass", "optimisations": "pass", "reference": "pass"}


def test_the_cli_flags(tmp_path, capsys):
    from tilecore.cli import main

    model = tmp_path / "m.onnx"
    model.write_bytes(MODEL)
    out = tmp_path / "m.tcx"
    rc = main(["compile", str(model), "-o", str(out), "-v", "--print-after", "FoldBatchNorm", "--disable-pass",
               "LayerGroups", "--dump-graph", str(tmp_path / "d") + "/", "--verify-each", "--quiet"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "// ---- after FoldBatchNorm ----" in cap.err
    assert "passes (wall time, resident memory added):" in cap.out and "FuseEpilogue" in cap.out
    assert "LayerGroups" not in cap.out.split("passes (wall time")[1]
    assert any(n.endswith("_FoldBatchNorm.graph") for n in os.listdir(tmp_path / "d"))
    assert "verify: no hazard" in cap.out
    rc = main(["compile", str(model), "-o", str(out), "--disable-pass", "Lower"])
    assert rc != 0 and "`Lower` is required" in capsys.readouterr().err


def test_the_docs_table_is_the_pipeline():
    docs = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        "docs", "compiler.md")
    text = open(docs, encoding="utf-8").read()
    section = text.split("## The pipeline", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:6] for line in section.splitlines() if line.startswith("| `")]
    assert [r[0].strip().strip("`") for r in rows] == list(P.PASSES)
    for name, on, _, can, what in rows:
        name = name.strip().strip("`")
        assert on.strip() == ("Graph IR" if name in P.GRAPH_PASSES else "steps"), name
        assert (can.strip() == "no") == (name in P.REQUIRED), name
        assert what.strip().startswith(P.PASSES[name]), name
