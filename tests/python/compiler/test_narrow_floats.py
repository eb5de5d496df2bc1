"""The narrow floats (float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz,
float8_e8m0fnu): Cast and CastLike compiled by tilecore (host kernels of the c target;
TC1 has no such type) against onnx's reference evaluator, bit for bit: every byte decoded,
and encoded from every value, every midpoint between neighbours (ties to even), values just
off the midpoints, out-of-range values, infinities, NaN and signed zeros, with saturate on
and off (and float8_e8m0fnu's three round modes)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import tilecore  # noqa: E402
from tilecore.dtype import DataType  # noqa: E402

F8 = {TensorProto.FLOAT8E4M3FN: "float8_e4m3fn", TensorProto.FLOAT8E4M3FNUZ: "float8_e4m3fnuz",
      TensorProto.FLOAT8E5M2: "float8_e5m2", TensorProto.FLOAT8E5M2FNUZ: "float8_e5m2fnuz",
      TensorProto.FLOAT8E8M0: "float8_e8m0fnu"}


def cast_model(src, dst, **attrs):
    n = len(attrs)  # (a distinct graph name per attribute set)
    node = helper.make_node("Cast", ["x"], ["y"], to=dst, **attrs)
    g = helper.make_graph([node], f"cast{n}", [helper.make_tensor_value_info("x", src, [None])],
                          [helper.make_tensor_value_info("y", dst, [None])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)])


def run_both(model, x):
    ref = ReferenceEvaluator(model).run(None, {"x": x})[0]
    exe = tilecore.compile(model, input_shapes={"x": list(x.shape)})
    return exe.run({"x": x})["y"], ref


def same_bits(got, ref):
    """Equal bytes, or NaN on both sides (the formats with several NaNs)."""
    assert got.dtype == ref.dtype and got.shape == ref.shape
    g, r = got.astype(np.float32), ref.astype(np.float32)
    bad = (got.view(np.uint8) != ref.view(np.uint8)) & ~(np.isnan(g) & np.isnan(r))
    assert not bad.any(), list(zip(ref[bad].astype(np.float32)[:8], got.view(np.uint8)[bad][:8],
                                   ref.view(np.uint8)[bad][:8]))


def probe_values(name):
    """Float32 values around every value of the format."""
    vals = np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, name)).astype(np.float32)
    fin = np.unique(vals[np.isfinite(vals)])
    mids = (fin[:-1].astype(np.float64) + fin[1:]) / 2
    near = np.concatenate([mids, np.nextafter(mids, -np.inf), np.nextafter(mids, np.inf)]).astype(np.float32)
    big = float(ml_dtypes.finfo(getattr(ml_dtypes, name)).max)
    with np.errstate(over="ignore"):  # (beyond float32 is inf, also a probe)
        extra = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 3e38, -3e38, big * 1.03, big * 1.2,
                          big * 2.5, -big * 1.2], np.float32)
    return np.concatenate([fin, near, extra]).astype(np.float32)


@pytest.mark.parametrize("code", list(F8))
def test_every_byte_decodes(code):
    x = np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, F8[code]))
    for dst, dt in ((TensorProto.FLOAT, np.float32), (TensorProto.FLOAT16, np.float16)):
        got, ref = run_both(cast_model(code, dst), x)
        assert got.dtype == dt
        np.testing.assert_array_equal(got, ref)  # (NaN where NaN)


@pytest.mark.parametrize("code", [c for c in F8 if c != TensorProto.FLOAT8E8M0])
@pytest.mark.parametrize("saturate", [1, 0])
def test_float32_and_float16_encode(code, saturate):
    x = probe_values(F8[code])
    got, ref = run_both(cast_model(TensorProto.FLOAT, code, saturate=saturate), x)
    same_bits(got, ref)
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
    got, ref = run_both(cast_model(TensorProto.FLOAT16, code, saturate=saturate), h)
    same_bits(got, ref)


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [1, 0])
def test_e8m0_round_modes(round_mode, saturate):
    rng = np.random.default_rng(1)
    x = np.concatenate([probe_values("float8_e8m0fnu"), rng.uniform(0, 4, 200).astype(np.float32),
                        np.float32(2.0) ** rng.integers(-126, 127, 100).astype(np.float32) * 1.5,
                        np.array([3.4e38, np.float32(2) ** 127, 0.75, 1.5, 1.25, 1.75], np.float32)])
    x = x[x >= 0]  # (the format has no sign)
    got, ref = run_both(cast_model(TensorProto.FLOAT, TensorProto.FLOAT8E8M0, saturate=saturate,
                                   round_mode=round_mode), x)
    same_bits(got, ref)


def test_castlike_and_the_placement_say_host():
    node = helper.make_node("CastLike", ["x", "like"], ["y"], saturate=0)
    g = helper.make_graph([node], "castlike", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
                                               helper.make_tensor_value_info("like", TensorProto.FLOAT8E5M2, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT8E5M2, [6])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)])
    x = np.array([1.0, 57344.0, 61440.0, -1e6, np.inf, 3.0e-6], np.float32)
    like = np.zeros(1, ml_dtypes.float8_e5m2)
    ref = ReferenceEvaluator(model).run(None, {"x": x, "like": like})[0]
    report = {}
    got = tilecore.compile(model, report=report).run({"x": x, "like": like})["y"]
    same_bits(got, ref)
    assert [p["where"] for p in report["placement"]] == ["host"]


def test_dtype_names_round_trip():
    for name in list(F8.values()) + ["float4_e2m1fn", "float6_e3m2fn", "float8_e3m4"]:
        assert str(DataType(name)) == name
    assert str(DataType("float8_e4m3fnx4")) == "float8_e4m3fnx4"
    with pytest.raises(ValueError, match="float8_e4m3fn"):
        DataType("float8_e9")


@pytest.mark.parametrize("name", list(F8.values()))
def test_ndarray_round_trip_by_bytes(name):
    x = np.arange(256, dtype=np.uint8).reshape(16, 16).view(getattr(ml_dtypes, name))
    a = tilecore.nd.array(x)
    assert str(a.dtype) == name and a.shape == (16, 16)
    np.testing.assert_array_equal(a.numpy().view(np.uint8), x.view(np.uint8))


def test_the_npu_strategy_says_why_it_refuses_them():
    from tilecore import compiler

    S = compiler.TensorSpec
    why = compiler.HasStrategy("Cast", {"to": 1}, [S([4], "float8_e5m2")])
    assert "float8_e5m2" in why and "storage type TC1 has no form of" in why
    assert "storage types TC1 has no form of" in compiler.HasStrategy("Cast", {"to": 17}, [S([4], "float32")])
    assert compiler.HasHostKernel("Cast", {"to": 17}, [S([4], "float32")]) == ""
    assert "which no host kernel takes" in compiler.HasHostKernel("Add", {}, [S([4], "float8_e4m3fn")] * 2)
