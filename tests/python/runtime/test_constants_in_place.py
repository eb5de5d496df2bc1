"""Constants in place (docs/executable.md): a run of an executable that finds its constants
where its own last run on the device left them, with nothing run or written on the device
since, does not write them again; any other run writes them. Every run's outputs are checked
against ONNX Runtime and against each other bit for bit, whatever ran in between."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import tilecore
from tilecore import compiler, runtime

ort = pytest.importorskip("onnxruntime")

pytestmark = pytest.mark.npu


def conv_model(seed, channels):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((channels, 3, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal(channels).astype(np.float32)
    g = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                           helper.make_node("Relu", ["c"], ["y"])], f"conv{seed}",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 10, 10])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, 10, 10])],
                          [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


MODELS = [conv_model(1, 16), conv_model(2, 16)]  # same shapes, other weights: the same arena layout
X = np.random.default_rng(5).standard_normal((1, 3, 10, 10)).astype(np.float32)


def ort_y(model):
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": X})[0]


@pytest.fixture(scope="module")
def exes():
    return [compiler.compile(m) for m in MODELS]


def run(exe):
    y = exe.run({"x": X})["y"]
    return y, exe.stats()["constants_in_place"]


def test_a_second_run_finds_its_constants_and_computes_the_same(exes):
    a = exes[0]
    y1, _ = run(a)
    y2, in_place = run(a)
    assert in_place
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_allclose(y2, ort_y(MODELS[0]), rtol=1e-4, atol=1e-4)


def test_another_executable_in_between_means_writing_them_again(exes):
    a, b = exes
    run(a)
    yb, b_in_place = run(b)
    ya, a_in_place = run(a)
    assert not b_in_place and not a_in_place
    np.testing.assert_allclose(yb, ort_y(MODELS[1]), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ya, ort_y(MODELS[0]), rtol=1e-4, atol=1e-4)


def test_a_write_to_the_device_in_between_means_writing_them_again(exes):
    a = exes[0]
    want, _ = run(a)
    # the same place the arena was: whatever is allocated first there now
    junk = tilecore.nd.array(np.full(1 << 16, 255, np.uint8), device=tilecore.npu(0))
    del junk
    y, in_place = run(a)
    assert not in_place
    np.testing.assert_array_equal(y, want)
    y, in_place = run(a)
    assert in_place
    np.testing.assert_array_equal(y, want)


def test_reconfiguring_the_device_forgets_them(exes):
    a = exes[0]
    want, _ = run(a)
    runtime.npu_configure(0, "npu -cores=4")
    try:
        y, in_place = run(a)
        assert not in_place
        np.testing.assert_array_equal(y, want)
    finally:
        runtime.npu_configure(0, "npu -cores=4")


def weight_of_first_step(exe):
    """The argument index of the first step's weight (a constant's buffer)."""
    d = exe.describe()
    consts = {c["buffer"] if isinstance(c, dict) else c for c in d["constants"]}
    step = d["steps"][0]
    return next(i for i, b in enumerate(step["args"]) if b in consts)


@pytest.mark.parametrize("from_another_thread", [False, True])
def test_a_write_into_a_constant_during_a_run_means_writing_them_again(exes, from_another_thread):
    import threading

    a = exes[0]
    want, _ = run(a)
    k = weight_of_first_step(a)
    sim = runtime.npu_simulator(0)

    def spoil(step, args):
        if step != 0:
            return
        w = args[k]
        zeros = np.zeros(w.numpy().nbytes, np.uint8)

        def write():
            sim.write("ddr", int(w.data_ptr) + int(w.byte_offset), zeros)

        if from_another_thread:
            t = threading.Thread(target=write)
            t.start()
            t.join()
        else:
            write()

    a.run({"x": X}, observe=spoil)  # (its own output is already computed)
    y, in_place = run(a)
    assert not in_place
    np.testing.assert_array_equal(y, want)
