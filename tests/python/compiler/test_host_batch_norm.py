"""BatchNormalization on the host (src/compiler/host_batch_norm.cc): training mode (opset 14
and 15) normalises with the batch's own mean and biased variance and returns the momentum-
weighted running mean and variance when asked; inference mode still runs (on the npu in
float32, on the host in the other float dtypes).

Compared with ONNX Runtime and ONNX's reference (onnx.reference.ReferenceEvaluator), never
with tilecore's own output. Both compute float16 in float16 or float32 steps, tilecore in
float64 rounding each output once, so float16 is compared within a few float16 steps."""
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import tilecore
from tilecore import compiler

ort = pytest.importorskip("onnxruntime")

ONNX_DTYPE = {"float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16, "float32": TensorProto.FLOAT,
              "float64": TensorProto.DOUBLE}
TOL = {np.float16: 4e-3, np.float32: 2e-6, np.float64: 1e-12}


def model(shape, dtype, outputs, opset=15, param_dtypes=None, **attrs):
    """One BatchNormalization node whose five inputs are graph inputs (nothing folds)."""
    pd = param_dtypes or (dtype, dtype)
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], outputs, **attrs)

    def info(name, t, shape):
        return helper.make_tensor_value_info(name, ONNX_DTYPE[np.dtype(t).name], shape)
    ins = [info("x", dtype, list(shape))]
    ins += [info(k, t, [shape[1]]) for k, t in zip("sbmv", (pd[0], pd[0], pd[1], pd[1]))]
    out_dtype = {"y": dtype, "rm": pd[1], "rv": pd[1]}
    outs = [info(k, out_dtype[k], None) for k in outputs]
    g = helper.make_graph([node], "bn", ins, outs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def feeds(shape, dtype, param_dtypes=None, seed=0):
    pd = param_dtypes or (dtype, dtype)
    rng = np.random.default_rng(seed)
    c = shape[1]
    return {"x": (rng.standard_normal(shape) * 2 + 0.5).astype(dtype),
            "s": rng.uniform(0.5, 1.5, c).astype(pd[0]), "b": rng.standard_normal(c).astype(pd[0]),
            "m": rng.standard_normal(c).astype(pd[1]), "v": rng.uniform(0.5, 2.0, c).astype(pd[1])}


def run(m, f, where):
    rep = {}
    exe = tilecore.compile(m.SerializeToString(), report=rep)
    assert [p["where"] for p in rep["placement"]] == [where], rep["placement"]
    return exe.run(f)


def check(m, f, got, oracles=("onnxruntime", "reference")):
    names = [o.name for o in m.graph.output]
    for oracle in oracles:
        if oracle == "onnxruntime":
            sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
            want = sess.run(None, f)
        else:
            want = ReferenceEvaluator(m).run(None, f)
        assert sorted(got) == sorted(names)
        for name, w in zip(names, want):
            g = got[name]
            assert g.shape == w.shape and g.dtype == w.dtype, (oracle, name, g.shape, w.shape, g.dtype, w.dtype)
            tol = TOL[w.dtype.type]
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol,
                                       err_msg=f"{oracle}: {name}")


CASES = [  # shape, momentum, epsilon
    ((4, 3), 0.9, 1e-5),
    ((2, 3, 5), 0.5, 1e-2),
    ((2, 4, 3, 5), 0.99, 1e-5),
    ((1, 2, 3, 2, 4), 0.0, 0.5),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda t: t.__name__)
@pytest.mark.parametrize("shape,momentum,epsilon", CASES, ids=lambda v: str(v))
def test_training_mode_with_running_outputs(shape, momentum, epsilon, dtype):
    m = model(shape, dtype, ["y", "rm", "rv"], training_mode=1, momentum=momentum, epsilon=epsilon)
    f = feeds(shape, dtype)
    check(m, f, run(m, f, "host"))


@pytest.mark.parametrize("outputs", [["y"], ["y", "rm"]], ids="-".join)
@pytest.mark.parametrize("opset", [14, 15])
def test_training_mode_with_fewer_outputs(outputs, opset):
    # ONNX's shape inference (and so ONNX Runtime) wants all three outputs in training mode,
    # the running ones omitted by name (""); tilecore takes a node with fewer outputs as
    # asking for those, like the reference
    shape = (3, 2, 4)
    m = model(shape, np.float32, outputs, opset=opset, training_mode=1, momentum=0.7, epsilon=1e-3)
    f = feeds(shape, np.float32, seed=1)
    check(m, f, run(m, f, "host"), oracles=("reference",))


@pytest.mark.parametrize("n_out", [1, 2])
def test_the_kernel_without_running_outputs(n_out):
    # the host kernel alone, as the driver would call it for trailing outputs omitted
    shape = (2, 3, 2, 2)
    m = model(shape, np.float32, ["y", "rm", "rv"], training_mode=1, momentum=0.6, epsilon=1e-4)
    f = feeds(shape, np.float32, seed=4)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, f)
    attrs = {"training_mode": 1, "momentum": 0.6, "epsilon": float(np.float32(1e-4)), "_opset": 15}
    ins = [compiler.TensorSpec(shape, "float32")] + [compiler.TensorSpec((3,), "float32")] * 4
    outs = [compiler.TensorSpec(shape, "float32"), compiler.TensorSpec((3,), "float32")][:n_out]
    fn = compiler.LowerHostOp("BatchNormalization", attrs, ins, outs)
    mod = tilecore.build(fn, target="c")
    got = [np.zeros(shape, np.float32), np.zeros(3, np.float32)][:n_out]
    mod[str(fn.attrs["global_symbol"])](*[f[k] for k in "xsbmv"], *got)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)


def test_training_mode_uses_the_biased_variance_and_the_default_attributes():
    # one value per channel per batch: the biased variance of (x0, x1) is ((x0 - x1) / 2)^2
    m = model((2, 1), np.float64, ["y", "rm", "rv"], training_mode=1)
    f = {"x": np.array([[1.0], [3.0]]), "s": np.array([1.0]), "b": np.array([0.0]),
         "m": np.array([10.0]), "v": np.array([5.0])}
    got = run(m, f, "host")
    eps, mom = float(np.float32(1e-5)), float(np.float32(0.9))
    np.testing.assert_allclose(got["y"][:, 0], [-1 / np.sqrt(1 + eps), 1 / np.sqrt(1 + eps)], rtol=1e-14)
    np.testing.assert_allclose(got["rm"], [10 * mom + 2 * (1 - mom)], rtol=1e-14)
    np.testing.assert_allclose(got["rv"], [5 * mom + 1 * (1 - mom)], rtol=1e-14)
    check(m, f, got)


@pytest.mark.parametrize("x_dtype,pd", [(np.float16, (np.float32, np.float64)), ("bfloat16", (np.float32, np.float32))],
                         ids=["float16-float32-float64", "bfloat16-float32-float32"])
def test_training_mode_with_dtypes_of_their_own(x_dtype, pd):
    # opset 15: X, scale/B and mean/var each have their own float dtype; ONNX Runtime has no
    # kernel for that (nor for bfloat16) and the reference returns the running values in X's
    # dtype (the spec: mean's), so the oracle is the reference on the same values widened to
    # float64
    if x_dtype == "bfloat16":
        x_dtype = pytest.importorskip("ml_dtypes").bfloat16
    shape = (2, 3, 4)
    m = model(shape, x_dtype, ["y", "rm", "rv"], param_dtypes=pd, training_mode=1, momentum=0.8)
    f = feeds(shape, np.float32, pd, seed=2)
    f["x"] = f["x"].astype(x_dtype)
    got = run(m, f, "host")
    assert [got[k].dtype for k in ("y", "rm", "rv")] == [x_dtype, pd[1], pd[1]]
    wide = model(shape, np.float64, ["y", "rm", "rv"], training_mode=1, momentum=0.8)
    want = ReferenceEvaluator(wide).run(None, {k: v.astype(np.float64) for k, v in f.items()})
    y_tol = 1e-3 if x_dtype == np.float16 else 8e-3  # half a step of float16 or bfloat16
    np.testing.assert_allclose(got["y"].astype(np.float64), want[0], rtol=y_tol, atol=y_tol)
    r_tol = 1e-12 if pd[1] == np.float64 else 1e-7
    np.testing.assert_allclose(got["rm"], want[1], rtol=r_tol)
    np.testing.assert_allclose(got["rv"], want[2], rtol=r_tol)


@pytest.mark.parametrize("dtype,where", [(np.float32, "npu"), (np.float64, "host"), (np.float16, "host")],
                         ids=lambda v: getattr(v, "__name__", v))
def test_inference_mode_still_runs(dtype, where):
    shape = (2, 3, 4, 2)
    m = model(shape, dtype, ["y"], epsilon=1e-3)
    f = feeds(shape, dtype, seed=3)
    check(m, f, run(m, f, where))


def test_the_npu_strategy_refuses_training_mode_and_the_host_takes_it():
    specs = [compiler.TensorSpec([2, 3, 4], "float32")] + [compiler.TensorSpec([3], "float32")] * 4
    assert "training mode has no npu strategy" in compiler.HasStrategy("BatchNormalization", {"training_mode": 1}, specs)
    assert compiler.HasStrategy("BatchNormalization", {"training_mode": 0}, specs) == ""
    assert compiler.HasHostKernel("BatchNormalization", {"training_mode": 1}, specs) == ""
    bad = specs[:1] + [compiler.TensorSpec([4], "float32")] + specs[2:]
    assert "must hold one value per channel" in compiler.HasHostKernel("BatchNormalization", {"training_mode": 1}, bad)
