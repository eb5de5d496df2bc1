"""tests/python/zoo/test_zoo.py — the model zoo: exports are deterministic and valid ONNX,
ONNX Runtime runs them, each graph has the operators its architecture implies, the
definitions match torchvision's, and inputs are seeded.

Fast by default (ResNet-18, the BERT layer and the YOLO-like detector); ResNet-50 and
MobileNetV2 are exported too when TILECORE_ZOO_ALL=1.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

zoo = pytest.importorskip("tilecore.zoo")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchvision_defs  # noqa: E402

ALL = os.environ.get("TILECORE_ZOO_ALL") == "1"
big = pytest.mark.skipif(not ALL, reason="large model: set TILECORE_ZOO_ALL=1")

# Operator counts read off each architecture (not off an export):
# ResNet-18: stem conv + 8 basic blocks x 2 convs + 3 downsample convs = 20 Conv, each with
#   its BatchNorm; ReLU after the stem and twice per block = 17; one residual Add per block.
# ResNet-50: stem + 16 bottlenecks x 3 + 4 downsample = 53 Conv/BatchNorm; 1 + 16 x 3 = 49 ReLU.
# MobileNetV2: stem + first block (depthwise, project) + 16 blocks x 3 + last 1x1 = 52
#   Conv/BatchNorm; ReLU6 (Clip) on all but the 17 projections = 35; residual Adds where
#   stride 1 and channels equal: 0+1+2+3+2+2+0 = 10.
# BERT layer: 6 Linear (MatMul + Add) + 2 attention MatMuls = 8 MatMul; Adds: 6 biases,
#   2 residuals, GELU's 1 + erf; Div: 1/sqrt(d) and GELU's x/sqrt(2); heads split by 3
#   Reshape+Transpose (k's two transposes merge into one) and merged by 1 Transpose+Reshape.
# YOLO-like: 57 Conv blocks (stem 1, downsamples 4, C3s 5+7+9+5, SPPF 2, neck 4 + 4 C3s x 5)
#   + 3 head convs = 60 Conv; SiLU = Sigmoid + Mul per block, plus 1 Sigmoid per scale;
#   Concat: 8 C3 + SPPF + 4 neck + 3 decode + 1 final = 17; 7 bottleneck shortcuts + 3 grid Adds.
EXPECTED = {
    "resnet18": {"Conv": 20, "BatchNormalization": 20, "Relu": 17, "Add": 8, "MaxPool": 1,
                 "GlobalAveragePool": 1, "Flatten": 1, "Gemm": 1},
    "resnet50": {"Conv": 53, "BatchNormalization": 53, "Relu": 49, "Add": 16, "MaxPool": 1,
                 "GlobalAveragePool": 1, "Flatten": 1, "Gemm": 1},
    "mobilenet_v2": {"Conv": 52, "BatchNormalization": 52, "Clip": 35, "Add": 10,
                     "GlobalAveragePool": 1, "Flatten": 1, "Gemm": 1},
    "bert_layer": {"MatMul": 8, "Add": 9, "Div": 2, "Mul": 2, "Erf": 1, "Softmax": 1,
                   "LayerNormalization": 2, "Reshape": 4, "Transpose": 4},
    "yolo_like": {"Conv": 60, "BatchNormalization": 57, "Sigmoid": 60, "Mul": 57 + 12, "Add": 10,
                  "Concat": 17, "MaxPool": 3, "Resize": 2, "Split": 3, "Pow": 3, "Transpose": 3,
                  "Reshape": 6},
}
# Constant nodes (Clip bounds, shapes) are the exporter's business, not the architecture's.
IGNORED = {"Constant"}

FAST = ["resnet18", "bert_layer", "yolo_like"]
MODELS = FAST + [pytest.param(n, marks=big) for n in ("resnet50", "mobilenet_v2")]


def test_names_and_info():
    assert set(zoo.names()) >= {"resnet18", "resnet50", "mobilenet_v2", "bert_layer", "yolo_like"}
    i = zoo.info("bert_layer")
    assert i["inputs"]["hidden_states"]["shape"] == [1, 128, 256]
    assert i["config"]["heads"] == 4
    with pytest.raises(zoo.ZooError, match="no model named 'resnet19'.*resnet18"):
        zoo.info("resnet19")


@pytest.mark.parametrize("name", MODELS)
def test_export_is_valid_onnx_with_the_architectures_ops(zoo_export, name):
    path = zoo_export(name)
    assert os.path.dirname(path) == zoo.cache_dir()
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    counts = {}
    for node in model.graph.node:
        if node.op_type not in IGNORED:
            counts[node.op_type] = counts.get(node.op_type, 0) + 1
    assert counts == EXPECTED[name]
    # BatchNorm is exported as inference BatchNorm with non-trivial statistics.
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "BatchNormalization":
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            assert attrs.get("training_mode", 0) == 0
            mean, var = inits[node.input[3]], inits[node.input[4]]
            assert np.abs(mean).max() > 1e-3 and np.abs(var - 1).max() > 1e-2, node.name
    # Node names are the module paths, as in any torch export.
    assert all(n.name for n in model.graph.node)


@pytest.mark.parametrize("name", MODELS)
def test_onnx_runtime_runs_it_with_sane_activations(zoo_export, name):
    sess = ort.InferenceSession(zoo_export(name), providers=["CPUExecutionProvider"])
    samples = zoo.sample_inputs(name, 2, seed=3)
    info = zoo.info(name)
    outs = [sess.run(None, {k: v[i] for k, v in samples.items()})[0] for i in range(2)]
    (out_name, shape), = info["outputs"].items()
    assert [o.name for o in sess.get_outputs()] == [out_name]
    for o in outs:
        assert list(o.shape) == shape
        assert np.isfinite(o).all()
        # No blow-up and no collapse through the depth of the network.
        assert 1e-2 < float(np.std(o)) < 1e3
    assert not np.allclose(outs[0], outs[1])  # the output depends on the input


@pytest.mark.parametrize("name", ["bert_layer", "resnet18"])
def test_export_is_deterministic(zoo_cache, tmp_path, name):
    a = zoo.export(name, tmp_path / "a.onnx", seed=5, cache=False)
    b = zoo.export(name, tmp_path / "b.onnx", seed=5, cache=False)
    with open(a, "rb") as fa, open(b, "rb") as fb:
        da, db = fa.read(), fb.read()
    assert da == db
    if name == "bert_layer":  # the seed changes the weights (one model is enough)
        c = zoo.export(name, tmp_path / "c.onnx", seed=6, cache=False)
        with open(c, "rb") as fc:
            assert fc.read() != da


def test_export_caches_and_copies(zoo_export, tmp_path):
    path = zoo_export("bert_layer")
    assert zoo.export("bert_layer") == path  # served from the cache
    assert "bert_layer-b1-s0-torch" in os.path.basename(path)
    out = zoo.export("bert_layer", path=tmp_path / "sub" / "layer.onnx")
    with open(out, "rb") as f, open(path, "rb") as g:
        assert f.read() == g.read()


def test_batch_is_part_of_the_export(zoo_cache):
    path = zoo.export("bert_layer", batch=2)
    assert "-b2-" in path
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = zoo.sample_inputs("bert_layer", 1, seed=0, batch=2)["hidden_states"][0]
    assert x.shape == (2, 128, 256)
    assert sess.run(None, {"hidden_states": x})[0].shape == (2, 128, 256)


def test_sample_inputs_are_seeded():
    a = zoo.sample_inputs("resnet18", 4, seed=1)
    b = zoo.sample_inputs("resnet18", 4, seed=1)
    c = zoo.sample_inputs("resnet18", 4, seed=2)
    assert list(a) == ["input"] and a["input"].shape == (4, 1, 3, 224, 224)
    assert a["input"].dtype == np.float32
    np.testing.assert_array_equal(a["input"], b["input"])
    assert not np.array_equal(a["input"], c["input"])
    # Sample i does not depend on how many are drawn (calibration on the first 16 of 24).
    np.testing.assert_array_equal(zoo.sample_inputs("resnet18", 24, seed=1)["input"][:4], a["input"])
    # Samples within a draw differ, and ImageNet normalisation puts pixels in range.
    assert not np.array_equal(a["input"][0], a["input"][1])
    assert -2.2 < a["input"].min() and a["input"].max() < 2.7
    y = zoo.sample_inputs("yolo_like", 1, seed=0)["images"]
    assert y.shape == (1, 1, 3, 320, 320) and 0 <= y.min() and y.max() < 1


def test_bad_arguments_are_named_errors(tmp_path):
    with pytest.raises(zoo.ZooError, match="no model named 'nope'"):
        zoo.export("nope")
    with pytest.raises(zoo.ZooError, match="batch must be an integer >= 1, got 0"):
        zoo.export("resnet18", batch=0)
    with pytest.raises(zoo.ZooError, match="n must be an integer >= 0, got -1"):
        zoo.sample_inputs("resnet18", -1, seed=0)
    with pytest.raises(zoo.ZooError, match="cache=False needs a path"):
        zoo.export("resnet18", cache=False)


@pytest.mark.parametrize("name,file,factory", [
    ("resnet18", "resnet", "resnet18"),
    pytest.param("resnet50", "resnet", "resnet50", marks=big),
    pytest.param("mobilenet_v2", "mobilenetv2", "mobilenet_v2", marks=big),
])
def test_definitions_are_torchvisions(name, file, factory):
    """The zoo's module has torchvision's state dict (names and shapes) and computes the
    same function once given the same weights."""
    tv = torchvision_defs.load(file)
    if tv is None:
        pytest.skip("torchvision is not installed")
    ours = zoo._build_model(name, seed=0)
    theirs = getattr(tv, factory)().eval()
    sd = ours.state_dict()
    assert {k: tuple(v.shape) for k, v in sd.items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    theirs.load_state_dict(sd)
    x = torch.from_numpy(zoo.sample_inputs(name, 1, seed=0)["input"][0])
    with torch.no_grad():
        np.testing.assert_array_equal(ours(x).numpy(), theirs(x).numpy())


def test_cli_list_and_check(zoo_cache, zoo_export):
    zoo_export("bert_layer")
    env = dict(os.environ, TILECORE_CACHE=str(zoo_cache))
    out = subprocess.run([sys.executable, "-m", "tilecore.zoo", "list"], capture_output=True,
                         text=True, env=env, check=True).stdout
    for name in ("resnet18", "resnet50", "mobilenet_v2", "bert_layer", "yolo_like"):
        assert name in out
    r = subprocess.run([sys.executable, "-m", "tilecore.zoo", "check", "bert_layer", "--runs", "2"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "from the cache" in r.stdout and "output output: 1x128x256" in r.stdout
    assert "LayerNormalization 2" in r.stdout
    npz = zoo_cache / "calib.npz"
    r = subprocess.run([sys.executable, "-m", "tilecore.zoo", "inputs", "bert_layer", "-o", str(npz),
                        "-n", "3", "--seed", "4"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    with np.load(npz) as f:
        np.testing.assert_array_equal(f["hidden_states"], zoo.sample_inputs("bert_layer", 3, 4)["hidden_states"])
    r = subprocess.run([sys.executable, "-m", "tilecore.zoo", "export", "resnet19"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1 and "error: tilecore.zoo: no model named 'resnet19'" in r.stderr


def test_docs_page_examples_run(tmp_path):
    from doc_examples import run_page
    proc = run_page("zoo.md", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "resnet50" in proc.stdout and "'heads': 4" in proc.stdout
