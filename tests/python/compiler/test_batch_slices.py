"""Layer groups run in slices of the batch (docs/compiler.md, "Batch slices"): at a batch
whose activations overflow L2, the first steps form a group whose members are lowered for one
slice and run once per slice. Checked against numpy and ONNX Runtime, bit for bit against
the same model compiled without the slices (int8: the same arithmetic per element), with the
compiler's own verification, `tilecore check`, and the group kernel's refusals."""
import json

import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore import cli, compiler
from tilecore.compiler.pipeline import PipelineOptions

from test_driver import make_model, ort_run

RNG = np.random.default_rng(71)
TARGET = "npu -cores=4"


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def conv3x3(x, w, b):
    """numpy: a 3x3 Conv with padding 1 (NCHW), float64."""
    n, c, h, wd = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,mc->nmhw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j].astype(np.float64))
    return out + b.reshape(1, -1, 1, 1)


def relu_chain(batch, c, hw, n):
    """n 3x3 Convs with Relus over a batch: (model, output name)."""
    nodes, prev = [], "x"
    for i in range(n):
        nodes += [helper.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        prev = f"r{i}"
    inits = [(f"w{i}", randn(c, c, 3, 3, scale=0.1)) for i in range(n)]
    return make_model(nodes, [("x", [batch, c, hw, hw], np.float32)], [prev], inits), prev


def group_in_slices(batch, slices, c=16, hw=12):
    """Conv -> Relu -> Conv as one group kernel whose members are lowered for batch/slices
    images: (kernel, its estimate, x, w, bias)."""
    n = batch // slices

    def spec(shape):
        return compiler.TensorSpec(shape, "float32")

    attrs = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}
    act, w, b = spec((n, c, hw, hw)), spec((c, c, 3, 3)), spec((c,))
    funcs = [compiler.LowerOp("Conv", {**attrs, "tc_in_l2": [3]}, [act, w, b], [act], TARGET),
             compiler.LowerOp("Relu", {"tc_in_l2": [0, 1]}, [act], [act], TARGET),
             compiler.LowerOp("Conv", {**attrs, "tc_in_l2": [0]}, [act, w, b], [act], TARGET)]
    # ids: x 0, w 1, bias 2, the Conv's output 3, the Relu's 4, y 5
    g = compiler.GroupKernels(funcs, [[0, 1, 2, 3], [3, 4], [4, 1, 2, 5]], [0, 1, 2], [5], "group",
                              slices=slices, sliced=[0, 5] if slices > 1 else [])
    return g, compiler.estimate_cost(g, TARGET), randn(batch, c, hw, hw), randn(c, c, 3, 3, scale=0.2), randn(c)


@pytest.mark.parametrize("slices", [2, 4])
def test_a_group_run_in_slices_computes_every_image(slices, hazard_checked):
    g, est, x, w, b = group_in_slices(4, slices)
    assert int(g.attrs["slices"]) == slices
    y = np.zeros_like(x)
    tilecore.build(g, target=TARGET)["group"](x, w, b, y)
    want = conv3x3(np.maximum(conv3x3(x, w, b), 0), w, b)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    # the same bits as the group over the whole batch: each image's arithmetic is the same
    whole, _, _, _, _ = group_in_slices(4, 1)
    y1 = np.zeros_like(x)
    tilecore.build(whole, target=TARGET)["group"](x, w, b, y1)
    np.testing.assert_array_equal(y, y1)
    assert hazard_checked() == []
    # the cost model times each member over its runs, one per slice
    members = est["members"]
    assert [m["runs"] for m in members] == [slices] * 3
    assert sum(m["cycles"] for m in members) <= est["cycles"]


def test_group_kernels_refuses_what_slices_cannot_run():
    g, _, _, _, _ = group_in_slices(4, 1)
    s = compiler.TensorSpec((1, 8), "float32")
    f = compiler.LowerOp("Relu", {}, [s], [s], TARGET)
    with pytest.raises(ValueError, match="0 slices"):
        compiler.GroupKernels([f, f], [[0, 1], [1, 2]], [0], [2], slices=0)
    with pytest.raises(ValueError, match="sliced tensors in a group of one slice"):
        compiler.GroupKernels([f, f], [[0, 1], [1, 2]], [0], [2], sliced=[0])
    with pytest.raises(ValueError, match="sliced tensor 1 is not an input or output"):
        compiler.GroupKernels([f, f], [[0, 1], [1, 2]], [0], [2], slices=2, sliced=[1])
    with pytest.raises(ValueError, match="prefetches nothing"):
        compiler.GroupKernels([f, f], [[0, 1], [3, 2]], [0, 3], [1, 2], prefetch=[[3, 0, 0, 32]], slices=2)


def test_activations_that_overflow_l2_run_in_slices():
    """4 images of 16 x 128 x 128 f32 (4 MiB a tensor, more than L2): the Convs run as a group
    over slices of the batch, their intermediates in L2; the outputs are ONNX Runtime's, and
    the run takes no more cycles than the steps over the whole batch."""
    model, out = relu_chain(4, 16, 128, 3)
    rep, plain_rep = {}, {}
    exe = tilecore.compile(model, report=rep, verify=True)
    sliced = [g for g in rep["groups"] if g.get("slices", 1) > 1]
    assert sliced and all(4 % g["slices"] == 0 for g in sliced), rep["groups"]
    plain = tilecore.compile(model, report=plain_rep, pipeline=PipelineOptions(disable=["BatchSlices"]))
    assert all("slices" not in g for g in plain_rep["groups"])
    x = randn(4, 16, 128, 128)
    y = exe.run({"x": x})[out]
    np.testing.assert_allclose(y, ort_run(model, {"x": x})[out], rtol=1e-4, atol=1e-4)
    cycles = exe.stats()["cycles"]
    plain.run({"x": x})
    assert cycles <= plain.stats()["cycles"]


@pytest.fixture(scope="module")
def int8_sliced(tmp_path_factory):
    model, out = relu_chain(4, 32, 128, 3)
    calib = {"x": randn(2, 4, 32, 128, 128)}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=calib, report=rep)
    plain = tilecore.compile(model, precision="int8", calib_samples=calib,
                             pipeline=PipelineOptions(disable=["BatchSlices"]))
    d = tmp_path_factory.mktemp("slices")
    exe.save(str(d / "m.tcx"))
    return model, out, exe, plain, rep, d


def test_int8_slices_keep_the_bits(int8_sliced):
    model, out, exe, plain, rep, _ = int8_sliced
    assert any(g.get("slices", 1) > 1 for g in rep["groups"]), rep["groups"]
    x = randn(4, 32, 128, 128)
    y = exe.run({"x": x})[out]
    np.testing.assert_array_equal(y, plain.run({"x": x})[out])
    ref = ort_run(model, {"x": x})[out]
    assert np.dot(y.ravel(), ref.ravel()) / np.linalg.norm(y) / np.linalg.norm(ref) > 0.999


def test_the_debuggers_take_a_sliced_group_as_one_step(int8_sliced, tmp_path, capsys):
    """A member of a sliced group holds one slice in L2: the step's debug entry says `slices`
    and gives its members no code ranges or places, so `tilecore check` compares the group's
    outputs in the DDR, whole, against ONNX Runtime's, and passes."""
    model, out, _, _, _, d = int8_sliced
    from tilecore.runtime.executable import load_executable

    steps = load_executable(str(d / "m.tcx")).describe()["steps"]
    groups = []
    for st in steps:
        dbg = st["debug"] if isinstance(st["debug"], dict) else json.loads(st["debug"])
        g = dbg.get("group")
        if g:
            groups.append(g if isinstance(g, dict) else json.loads(g))
    sliced = [g for g in groups if g.get("slices", 1) > 1]
    assert sliced and all("pc" not in m and "out" not in m for g in sliced for m in g["members"])
    x = randn(4, 32, 128, 128)
    np.savez(tmp_path / "in.npz", x=x)
    np.savez(tmp_path / "ref.npz", **{out: ort_run(model, {"x": x})[out]})  # (f32: int8's error allowed)
    rc = cli.main(["check", str(d / "m.tcx"), "--inputs", str(tmp_path / "in.npz"), "--ref_data",
                   str(tmp_path / "ref.npz"), "--report", str(tmp_path / "r.json"), "--set", "euclid=0.9"])
    assert rc == 0, capsys.readouterr()
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["failed"] == 0 and rep["passed"] >= 1


def test_an_activation_broadcast_along_the_batch_is_not_sliced():
    """y (4, 256, 256) is added to every image of the Convs' output (4, 4, 256, 256, 4 MiB:
    more than L2): its first dimension is the channels', not the batch's, though both are 4;
    a step reading it stays out of the slices, and the outputs are ONNX Runtime's."""
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
             helper.make_node("Conv", ["r0", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c1", "y"], ["s"], name="add"),
             helper.make_node("Conv", ["s", "w2"], ["out"], name="conv2", pads=[1, 1, 1, 1])]
    inits = [(f"w{i}", randn(4, 4, 3, 3, scale=0.2)) for i in range(3)]
    model = make_model(nodes, [("x", [4, 4, 256, 256], np.float32), ("y", [4, 256, 256], np.float32)], ["out"],
                       inits)
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert all("add" not in g["nodes"] for g in rep["groups"] if g.get("slices", 1) > 1), rep["groups"]
    feed = {"x": randn(4, 4, 256, 256), "y": randn(4, 256, 256)}
    np.testing.assert_allclose(exe.run(feed)["out"], ort_run(model, feed)["out"], rtol=1e-4, atol=1e-4)


def test_layout_ops_move_each_view_by_a_slice():
    """DepthToSpace reads the batch from the DDR through views of its own shape (a box of
    the tensor, not the slice's): each run still moves them by one slice's bytes. 4 images
    of 64 x 64 x 64 f32 (4 MiB): DepthToSpace, a Conv and a nearest Resize in slices,
    against ONNX Runtime."""
    nodes = [helper.make_node("DepthToSpace", ["x"], ["d"], name="d2s", blocksize=2, mode="DCR"),
             helper.make_node("Conv", ["d", "w0"], ["c0"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
             helper.make_node("Resize", ["r0", "", "scales"], ["out"], name="resize", mode="nearest")]
    inits = [("w0", randn(16, 16, 3, 3, scale=0.2)), ("scales", np.array([1, 1, 0.5, 0.5], np.float32))]
    model = make_model(nodes, [("x", [4, 64, 64, 64], np.float32)], ["out"], inits, opset=13)
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert [(g["nodes"], g.get("slices")) for g in rep["groups"]] == [(["d2s", "conv0", "resize"], 4)]
    x = randn(4, 64, 64, 64)
    np.testing.assert_allclose(exe.run({"x": x})["out"], ort_run(model, {"x": x})["out"], rtol=1e-4, atol=1e-4)
