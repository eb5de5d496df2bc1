"""An int8 grouped Conv of few channels a group compiled as one of fewer, wider groups
(docs/compiler.md, "Groups as block-diagonal weights"): the weights against a placement
written out by hand and a direct convolution, and whole grouped Convs against ONNX
Runtime and against the same model compiled without the rewrite."""
import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore.compiler import block_diagonal_groups as bd
from tilecore.compiler.pipeline import PipelineOptions

import test_fuse_epilogue as seeded
from test_driver import make_model, ort_run
from test_fuse_epilogue import _seeded, randn  # noqa: F401 (_seeded: each test's generator seeded by its name)
from test_precision import conv_ref


def test_block_diagonal_places_each_row_at_its_group():
    """4 output channels in 4 groups of one input channel each (rows 1..4), taken two groups
    at a time: row m keeps its value at its group's place among the two, zeros elsewhere."""
    w = np.arange(1, 5, dtype=np.int8).reshape(4, 1, 1, 1)
    got = bd.block_diagonal(w, 4, 2)
    want = np.array([[1, 0], [0, 2], [3, 0], [0, 4]], np.int8).reshape(4, 2, 1, 1)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="6 output channels, 4 groups"):
        bd.block_diagonal(np.zeros((6, 1, 1, 1), np.int8), 4, 2)


@pytest.mark.parametrize("groups,cg,mg,k", [(6, 8, 8, 2), (6, 3, 2, 3), (4, 4, 8, 4)])
def test_block_diagonal_weights_make_the_same_convolution(groups, cg, mg, k):
    """Integer operands: the Conv of groups / k groups over the block-diagonal weights equals
    the grouped Conv exactly."""
    x = seeded.RNG.integers(-128, 128, (1, groups * cg, 6, 6)).astype(np.int64)
    w = seeded.RNG.integers(-127, 128, (groups * mg, cg, 3, 3)).astype(np.int8)
    want = conv_ref(x, w.astype(np.int64), pad=1, group=groups)
    got = conv_ref(x, bd.block_diagonal(w, groups, k).astype(np.int64), pad=1, group=groups // k)
    np.testing.assert_array_equal(got, want)


def test_widenings_divide_the_groups_within_the_channels():
    assert bd.widenings(46, 8) == [2]  # RegNetY-200MF's last stage: 46 groups of 8
    assert bd.widenings(32, 4) == [2, 4, 8]  # ResNeXt-50's first stage
    assert bd.widenings(55, 8) == []  # 5 groups would be 40 channels
    assert bd.widenings(13, 8) == []


def grouped_conv(channels, groups, size, stride=1):
    """x -> a grouped 3x3 Conv (padding 1, a bias) -> Relu -> y."""
    w = randn(channels, channels // groups, 3, 3, scale=0.3)
    b = randn(channels, scale=0.1)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", group=groups, pads=[1, 1, 1, 1],
                              strides=[stride, stride], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    return make_model(nodes, [("x", [1, channels, size, size], np.float32)], ["y"], [("w", w), ("b", b)])


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_small_groups_compile_as_wider_ones():
    """RegNetY-200MF's 3x3 over 46 groups of 8 channels at 7 x 7, an item a group bound by
    the front end: compiled as 23 groups of 16. Verify passes (every step against the model
    compiled a node a step), the output is the bits of the compile without the rewrite and
    agrees with ONNX Runtime, in fewer cycles; its MACs and roofline are the grouped Conv's."""
    model = grouped_conv(368, 46, 7)
    samples = {"x": np.stack([randn(1, 368, 7, 7) for _ in range(4)])}
    x = randn(1, 368, 7, 7)
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, verify={"x": x}, report=rep)
    assert rep["block_diagonal_groups"] == [{"node": "conv", "groups": 46, "as": 23}]
    assert rep["verify"]["checks"]["optimisations"] == "pass"
    plain = tilecore.compile(model, precision="int8", calib_samples=samples,
                             pipeline=PipelineOptions(disable=["BlockDiagonalGroups"]))
    got, other = exe.run({"x": x})["y"], plain.run({"x": x})["y"]
    np.testing.assert_array_equal(got, other)
    assert cosine(got, ort_run(model, {"x": x})["y"]) > 0.99
    assert exe.stats()["cycles"] < plain.stats()["cycles"]
    # the MACs and the roofline are the grouped Conv's, not the zeros' products too
    assert exe.stats()["macs"] == plain.stats()["macs"] == 368 * 7 * 7 * 8 * 3 * 3
    assert exe.stats()["roofline_cycles"] == plain.stats()["roofline_cycles"]


def test_unnamed_convs_take_weights_of_their_own():
    """Two unnamed grouped Convs of one shape, each rewritten: each reads its own widened
    weights (the same bits as the compile without the rewrite), and no plan fell back."""
    w1, w2 = randn(368, 8, 3, 3, scale=0.3), randn(368, 8, 3, 3, scale=0.3)
    conv = dict(group=46, pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], **conv),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], **conv),
             helper.make_node("Relu", ["c2"], ["y"])]
    model = make_model(nodes, [("x", [1, 368, 7, 7], np.float32)], ["y"], [("w1", w1), ("w2", w2)])
    samples = {"x": np.stack([randn(1, 368, 7, 7) for _ in range(4)])}
    x = randn(1, 368, 7, 7)
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    assert [d["as"] for d in rep["block_diagonal_groups"]] == [23, 23]
    assert rep["plan_fallbacks"] == []
    plain = tilecore.compile(model, precision="int8", calib_samples=samples,
                             pipeline=PipelineOptions(disable=["BlockDiagonalGroups"]))
    np.testing.assert_array_equal(exe.run({"x": x})["y"], plain.run({"x": x})["y"])


def test_groups_the_matrix_engine_bounds_stay():
    """ResNeXt-50's third stage (32 groups of 16 channels at 14 x 14): twice the products an
    item cost more than the fewer items save, so the Conv keeps its groups; nor does f32,
    whose sums the wider groups would order otherwise."""
    model = grouped_conv(512, 32, 14)
    samples = {"x": np.stack([randn(1, 512, 14, 14) for _ in range(2)])}
    rep = {}
    tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    assert rep["block_diagonal_groups"] == []
    rep = {}
    tilecore.compile(grouped_conv(368, 46, 7), report=rep)
    assert rep["block_diagonal_groups"] == []


def test_the_conv_checks_its_block_diagonal_groups():
    spec = tilecore.compiler.TensorSpec
    ins = [spec((1, 32, 7, 7), "float32"), spec((32, 16, 3, 3), "float32")]
    assert tilecore.compiler.HasStrategy("Conv", {"group": 2, "tc_block_diagonal": 2}, ins) == ""
    for k in (0, 3):
        assert "tc_block_diagonal {} must be at least 1 and divide".format(k) in tilecore.compiler.HasStrategy(
            "Conv", {"group": 2, "tc_block_diagonal": k}, ins)
