"""Element-wise strategies (broadcasting binary ops, unary activations, Cast, Where,
copies) on 4 simulated TC1 cores against the op library's numpy reference."""
import numpy as np
import pytest

from tilecore import compiler
from strategy_util import check_op, rand, run_lowered, run_op

SHAPES = [
    ((5,), (5,)),
    ((3, 7, 11), (3, 7, 11)),        # odd sizes
    ((4, 17), (17,)),                # row broadcast
    ((4, 1, 6), (1, 5, 1)),          # both broadcast
    ((40000,), ()),                  # scalar, remainder tile over several tiles
]


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
@pytest.mark.parametrize("a,b", SHAPES)
def test_binary(op, a, b):
    x, y = rand(a, 1), rand(b, 2)
    if op == "Div":
        y = np.where(np.abs(y) < 0.25, 0.5, y).astype(np.float32)
    check_op(op, {}, [x, y], rtol=1e-5, atol=1e-6)


def test_binary_int32():
    check_op("Add", {}, [rand((9, 13), 1, -50, 50, np.int32), rand((13,), 2, -50, 50, np.int32)])
    check_op("Mul", {}, [rand((9, 13), 1, -50, 50, np.int32), rand((9, 13), 2, -50, 50, np.int32)])


def test_pow():
    a = rand((6, 7), 1, 0.1, 3.0)
    check_op("Pow", {}, [a, rand((7,), 2, -2, 2)], rtol=1e-4)
    neg = np.array([-2.0, -3.0, -1.5, 0.0, 2.0], np.float32)
    check_op("Pow", {}, [neg, np.array([2.0, 3.0, 2.0, 2.0, 0.5], np.float32)], rtol=1e-4)


def test_pow_of_a_constant_two_is_exact():
    """The driver folds a one-element exponent into `tc_exponent`; 2 is x * x, the
    correctly rounded square (exp(2 log|x|) is not), NaN, infinities and -0 included."""
    a = np.concatenate([rand((997,), 3, -1e3, 1e3),
                        np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-30, 3e19], np.float32)])
    y = run_lowered("Pow", {"tc_exponent": 2.0}, [a, np.array([2.0], np.float32)], [np.zeros_like(a)])[0]
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(y, a * a)
    # another exponent keeps the general formula
    b = rand((6, 7), 1, 0.1, 3.0)
    y3 = run_lowered("Pow", {"tc_exponent": 3.0}, [b, np.array([3.0], np.float32)], [np.zeros_like(b)])[0]
    np.testing.assert_allclose(y3, b ** 3, rtol=1e-4)


def test_driver_folds_a_scalar_exponent():
    from onnx import helper
    from test_driver import make_model, ort_run

    import tilecore

    two = np.array(2.0, np.float32)
    model = make_model([helper.make_node("Pow", ["x", "two"], ["y"], name="pow"),
                        helper.make_node("Pow", ["x", "e"], ["z"], name="pow_e")],
                       [("x", [4, 64], np.float32)], ["y", "z"],
                       [("two", two), ("e", np.full((64,), 2.0, np.float32))])
    rep = {}
    exe = tilecore.compile(model, report=rep, group=False)
    x = rand((4, 64), 5, -50, 50)
    out, ref = exe.run({"x": x}), ort_run(model, {"x": x})
    np.testing.assert_array_equal(out["y"], ref["y"])   # x * x, as ONNX Runtime's pow
    np.testing.assert_allclose(out["z"], ref["z"], rtol=1e-5)   # a 64-element exponent: not folded
    st = {o["name"]: o for o in exe.stats()["ops"]}
    assert st["pow"]["cycles"] * 4 < st["pow_e"]["cycles"]


def test_bigger_than_l1():
    # 3 x 1.2 MiB of f32: more than one core's L1 per input
    check_op("Add", {}, [rand((300000,), 1), rand((300000,), 2)])


UNARY = [
    ("Relu", {}, (-3, 3)), ("LeakyRelu", {"alpha": 0.1}, (-3, 3)), ("Sigmoid", {}, (-8, 8)),
    ("Tanh", {}, (-4, 4)), ("Exp", {}, (-5, 5)), ("Log", {}, (0.01, 10)), ("Sqrt", {}, (0, 10)),
    ("Reciprocal", {}, (0.5, 4)), ("Neg", {}, (-3, 3)), ("Abs", {}, (-3, 3)), ("Erf", {}, (-3, 3)),
    ("Gelu", {}, (-4, 4)), ("Gelu", {"approximate": "tanh"}, (-4, 4)),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, (-4, 4)), ("HardSwish", {}, (-5, 5)),
    ("Elu", {"alpha": 0.7}, (-3, 3)), ("Selu", {}, (-3, 3)), ("Softplus", {}, (-10, 10)),
    ("Softsign", {}, (-3, 3)), ("ThresholdedRelu", {"alpha": 0.5}, (-2, 2)), ("Sign", {}, (-2, 2)),
]


@pytest.mark.parametrize("op,attrs,rng", UNARY, ids=[f"{u[0]}{i}" for i, u in enumerate(UNARY)])
@pytest.mark.parametrize("shape", [(7,), (3, 5, 33)])
def test_unary(op, attrs, rng, shape):
    err = check_op(op, attrs, [rand(shape, 3, *rng)], rtol=2e-5, atol=2e-6)
    assert err < 1e-4


def test_unary_remainder_tile():
    check_op("Sigmoid", {}, [rand((20001,), 4, -6, 6)], rtol=2e-5, atol=2e-6)


def test_clip_and_prelu():
    x = rand((4, 10), 1)
    check_op("Clip", {}, [x, np.array(-0.5, np.float32), np.array(1.0, np.float32)])
    check_op("Clip", {}, [x, None, np.array(1.0, np.float32)])
    check_op("PRelu", {}, [x, rand((10,), 2, 0, 1)])


def test_clip_runs_on_the_vector_engine():
    # ReLU6 (MobileNet's activation) as two vector commands per tile, not a scalar loop:
    # about as fast as Relu, with bounds as inputs or as attributes

    x = rand((8, 64, 32), 5, -10, 10)
    _, _, relu = run_op("Relu", {}, [x])
    for attrs, ins in (({}, [x, np.array(0, np.float32), np.array(6, np.float32)]), ({"min": 0.0, "max": 6.0}, [x])):
        outs, refs, st = run_op("Clip", attrs, ins)
        np.testing.assert_array_equal(outs[0], np.clip(x, 0, 6))
        assert st["cycles"] < 2 * relu["cycles"], (st["cycles"], relu["cycles"])


@pytest.mark.parametrize("a,b,busy", [
    ((1, 65, 128), (1, 65, 128), 4),   # a small transformer's residual Add: a tile a core
    ((1, 4, 65, 32), (), 4),           # attention's scaling by a constant
    ((1100,), (), 2),                  # two tiles of at least 1024: two cores, the others wait for their scalar
    ((1, 65, 128), (128,), 4),         # a bias row over the tokens (the broadcast nest's boxes)
    ((2, 64, 100), (64, 1), 2),        # per channel: a box per image (its chunks are whole images)
])
def test_small_tensors_take_every_core(a, b, busy):
    """Fewer elements than a tile of 16384 still split over the cores (tiles of at least
    1024), in the flat walk and the broadcast nest: the vector commands of an 8,320-element
    Add ran on one core while three idled."""
    outs, refs, st = run_op("Add", {}, [rand(a, 1), rand(b, 2)])
    np.testing.assert_array_equal(outs[0], refs[0])
    per_core = [c["vec"]["commands"] for c in st["cores"]]
    assert sum(n > 0 for n in per_core) == busy, per_core
    if b == ():  # every core loads the scalar (on its DMA-out engine), one without a tile too
        assert all(c["dout"]["commands"] > 0 for c in st["cores"])


BROADCASTS = [
    ((1, 24, 9, 11), (1, 24, 1, 1)),    # per channel (squeeze-excite's scale)
    ((2, 24, 9, 11), (24, 1, 1)),       # per channel, batch 2, lower rank
    ((2, 3, 5, 7), (1, 3, 1, 7)),       # two broadcast dims apart
    ((2, 3, 5, 7), (2, 1, 5, 1)),
    ((3, 1, 5), (1, 4, 1)),             # both broadcast
    ((1, 40, 700), (1, 40, 1)),         # rows longer than half a tile: chunks and a remainder
    ((3, 20000), (3, 1)),               # a row longer than a tile
    ((2, 3, 4, 5, 6), (1, 3, 1, 5, 1)),  # five merged dims: the flat walk
]


@pytest.mark.parametrize("a,b", BROADCASTS)
@pytest.mark.parametrize("op", ["Mul", "Sub", "Where"])
def test_broadcast_patterns(op, a, b):
    if op == "Where":
        check_op(op, {}, [rand(b, 3) > 0, rand(a, 1), rand(b, 2)])
    else:
        check_op(op, {}, [rand(a, 1), rand(b, 2)], rtol=1e-6, atol=1e-6)
        check_op(op, {}, [rand(b, 2), rand(a, 1)], rtol=1e-6, atol=1e-6)  # the broadcast one first


def test_broadcast_inputs_beyond_l1_load_a_box_per_tile():
    # Swin's attention mask [nW, 1, N, N] over [nW, heads, N, N] (here 600 KiB): each tile
    # loads its part, where the flat walk needed it whole in L1 (and the op went to the host)
    check_op("Add", {}, [rand((64, 3, 49, 49), 1), rand((64, 1, 49, 49), 2)], rtol=1e-6, atol=1e-6)
    check_op("Mul", {}, [rand((3, 1, 70000), 3), rand((1, 2, 1), 4)], rtol=1e-6, atol=1e-6)


def test_per_channel_broadcast_runs_on_the_vector_engine():
    # squeeze-excite's [1, C, 1, 1] x [1, C, H, W]: one vector command per tile with a
    # stride-0 view, about as fast as the same Mul without broadcasting

    x = rand((1, 64, 28, 28), 1)
    outs, _, st = run_op("Mul", {}, [x, rand((1, 64, 1, 1), 2)])
    _, _, same = run_op("Mul", {}, [x, rand((1, 64, 28, 28), 3)])
    assert st["cycles"] < 1.5 * same["cycles"], (st["cycles"], same["cycles"])
    y = rand((6, 3000), 4)  # per row, rows of 3000
    _, _, st = run_op("Add", {}, [y, rand((6, 1), 5)])
    _, _, same = run_op("Add", {}, [y, rand((6, 3000), 6)])
    assert st["cycles"] < 1.5 * same["cycles"], (st["cycles"], same["cycles"])


@pytest.mark.parametrize("attrs", [{}, {"approximate": "tanh"}])
def test_gelu_runs_as_vector_passes(attrs):
    # BERT's activation: one vector command per pass, not a scalar polynomial per element

    x = rand((64, 300), 6, -6, 6)  # a remainder tile too (19200 elements)
    _, _, relu = run_op("Relu", {}, [x])
    outs, refs, st = run_op("Gelu", attrs, [x])
    np.testing.assert_allclose(outs[0], refs[0], rtol=1e-5, atol=2e-6)
    assert st["cycles"] < 6 * relu["cycles"], (st["cycles"], relu["cycles"])


@pytest.mark.parametrize("op,attrs,overlap", [("Gelu", {}, 0.8), ("HardSwish", {}, 1.0), ("Add", {}, 1.0)])
def test_a_core_of_several_tiles_overlaps_their_loads_and_stores(op, attrs, overlap):
    # 16 tiles of 16384 elements, 4 a core: the next tile's loads issued before this one's
    # commands, its store left running (two slots). Each element meets the same commands as
    # one tile at a time: the bits of the tensor's quarters run apart (a tile a core, not
    # pipelined). Gelu, 23 vector passes a tile, then overlaps its DMA with them; a one-pass op
    # is bound by the DDR either way, and no slower.
    x = rand((16, 16384), 9, -6, 6)
    inputs = [x] if op != "Add" else [x, rand((16, 16384), 10)]
    outs, refs, st = run_op(op, attrs, inputs)
    np.testing.assert_allclose(outs[0], refs[0], rtol=1e-5, atol=2e-6)
    parts = [run_op(op, attrs, [i[r:r + 4] for i in inputs]) for r in range(0, 16, 4)]
    np.testing.assert_array_equal(outs[0], np.concatenate([p[0][0] for p in parts]))
    apart = sum(p[2]["cycles"] for p in parts)
    assert st["cycles"] <= overlap * apart, (st["cycles"], apart)


@pytest.mark.parametrize("op,attrs", [("Swish", {"alpha": 1.5}), ("HardSwish", {}),
                                      ("HardSigmoid", {"alpha": 0.25, "beta": 0.4})])
def test_sigmoid_like_activations_run_as_vector_passes(op, attrs):
    # EfficientNet's SiLU, MobileNetV3's HardSwish and HardSigmoid: one vector command per
    # step of the formula, not a front-end loop (nor, for SiLU, a Sigmoid and a Mul apart)

    x = rand((64, 300), 7, -8, 8)  # a remainder tile too
    _, _, relu = run_op("Relu", {}, [x])
    outs, refs, st = run_op(op, attrs, [x])
    np.testing.assert_allclose(outs[0], refs[0], rtol=1e-6, atol=1e-6)
    assert st["cycles"] < 5 * relu["cycles"], (st["cycles"], relu["cycles"])
    if op.startswith("Hard"):  # no table function: numpy's f32 steps, in the same order, bit for bit
        one6 = np.float32(1 / 6) if op == "HardSwish" else np.float32(attrs["alpha"])
        t = np.minimum(np.maximum(x * one6 + np.float32(0.5 if op == "HardSwish" else attrs["beta"]), 0), 1)
        np.testing.assert_array_equal(outs[0], x * t if op == "HardSwish" else t)


def test_silu_is_one_step_of_vector_passes():
    # x * Sigmoid(x), as exporters write SiLU: one node (RecognizeActivations), one step of
    # two vector commands per tile, against ONNX Runtime
    from onnx import helper
    from test_driver import make_model, ort_run

    import tilecore

    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sigmoid"),
             helper.make_node("Mul", ["x", "s"], ["y"], name="silu")]
    model = make_model(nodes, [("x", [1, 48, 40, 40], np.float32)], ["y"], [])
    exe = tilecore.compile(model)
    x = rand((1, 48, 40, 40), 8, -8, 8)
    np.testing.assert_allclose(exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"], rtol=1e-6, atol=1e-6)
    ops = exe.stats()["ops"]
    assert len(ops) == 1, ops
    _, _, relu = run_op("Relu", {}, [x])
    assert ops[0]["cycles"] < 4 * relu["cycles"], (ops, relu["cycles"])


def test_where_cast_compare():
    c = rand((4, 6), 1) > 0
    check_op("Where", {}, [c, rand((4, 6), 2), rand((6,), 3)])
    check_op("Cast", {"to": 6}, [rand((5, 7), 1, -100, 100)])               # f32 -> i32
    check_op("Cast", {"to": 1}, [rand((5, 7), 1, -100, 100, np.int32)])     # i32 -> f32
    check_op("Less", {}, [rand((3, 5), 1), rand((5,), 2)])


def test_variadic():
    xs = [rand((3, 4), 1), rand((4,), 2), rand((3, 1), 3)]
    for op in ("Sum", "Mean", "Max", "Min"):
        check_op(op, {}, xs)


def test_copies():
    x = rand((2, 3, 5), 1)
    check_op("Reshape", {}, [x, np.array([6, 5], np.int64)], out_shapes=[(6, 5)])
    check_op("Flatten", {"axis": 1}, [x])
    check_op("Expand", {}, [rand((3, 1), 2), np.array([2, 3, 4], np.int64)])


def test_reasons():
    f64 = compiler.TensorSpec((4,), "float64")
    assert "64-bit" in compiler.HasStrategy("Add", {}, [f64, f64])
    big = compiler.TensorSpec((4096, 4096), "float32")
    small = compiler.TensorSpec((1, 4096, 4096), "float32")
    assert compiler.HasStrategy("Add", {}, [big, small]) == ""
    # broadcast inputs beyond what L1 keeps whole: the nest loads each tile's box of them;
    # past 4 merged dimensions (the flat walk) they must fit
    row = compiler.TensorSpec((3, 1, 4096 * 32), "float32")
    assert compiler.HasStrategy("Add", {}, [row, compiler.TensorSpec((1, 2, 1), "float32")]) == ""
    six = compiler.TensorSpec((1, 4, 1, 6, 1, 4096 * 4), "float32")
    assert "exceed" in compiler.HasStrategy("Add", {}, [six, compiler.TensorSpec((2, 1, 3, 1, 5, 1), "float32")])
    assert "broadcast" in compiler.HasStrategy("Add", {}, [compiler.TensorSpec((3,), "float32"),
                                                           compiler.TensorSpec((4,), "float32")])


MATH = [
    ("Sin", {}, (-10, 10)), ("Cos", {}, (-10, 10)), ("Tan", {}, (-1.4, 1.4)), ("Asin", {}, (-1, 1)),
    ("Acos", {}, (-1, 1)), ("Atan", {}, (-20, 20)), ("Sinh", {}, (-5, 5)), ("Cosh", {}, (-5, 5)),
    ("Asinh", {}, (-30, 30)), ("Acosh", {}, (1, 30)), ("Atanh", {}, (-0.99, 0.99)),
    ("Floor", {}, (-5, 5)), ("Ceil", {}, (-5, 5)), ("Celu", {"alpha": 0.6}, (-3, 3)), ("Mish", {}, (-6, 6)),
    ("Swish", {"alpha": 0.7}, (-6, 6)), ("Shrink", {"lambd": 0.8, "bias": 0.3}, (-2, 2)),
]


@pytest.mark.parametrize("op,attrs,rng", MATH, ids=[m[0] for m in MATH])
def test_math_without_an_instruction(op, attrs, rng):
    # polynomials, series and conversions: a few ulp against numpy's float64-rounded result
    x = rand((3, 5, 33), 7, *rng)
    err = check_op(op, attrs, [x], rtol=1e-5, atol=1e-6)
    assert err < 1e-4


def test_math_edges():
    x = np.array([0.0, -0.0, 1e-4, -1e-4, 0.5, 2.5, -2.5, 3.5, 1e8, -1e8, np.inf, -np.inf, np.nan,
                  2**23 + 1, -(2**23) - 1, 1e-30], np.float32)
    for op in ("Floor", "Ceil", "Round", "IsNaN", "IsInf"):
        check_op(op, {}, [x])
    check_op("IsInf", {"detect_negative": 0}, [x])
    small = np.array([1e-6, -1e-5, 1e-3, 0.12, -0.13, 0.0], np.float32)
    for op in ("Sin", "Tan", "Atan", "Asin", "Sinh", "Asinh", "Atanh"):
        check_op(op, {}, [small], rtol=1e-5, atol=1e-12)     # relative accuracy near 0
    check_op("Asin", {}, [np.array([1, -1], np.float32)], rtol=1e-6)
    check_op("Acos", {}, [np.array([1, -1, 0.999999], np.float32)], rtol=1e-5, atol=1e-7)


def test_logic_and_bits():
    a, b = rand((4, 6), 1, 0, 1, np.int32) > 0, rand((6,), 2, 0, 1, np.int32) > 0
    for op in ("And", "Or", "Xor"):
        check_op(op, {}, [a, b])
    check_op("Not", {}, [a])
    for dt in (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32):
        info = np.iinfo(dt)
        x = rand((5, 7), 3, info.min, info.max, dt)
        y = rand((7,), 4, info.min, info.max, dt)
        for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
            check_op(op, {}, [x, y])
        check_op("BitwiseNot", {}, [x])
        bits = np.dtype(dt).itemsize * 8
        amount = rand((5, 7), 5, 0, bits - 1, dt)
        for d in ("LEFT", "RIGHT"):
            check_op("BitShift", {"direction": d}, [x, amount])
        # a shift by the width or more: 0 (a signed right shift: the sign), as numpy
        wide = np.full((5, 7), bits, dt)
        for d in ("LEFT", "RIGHT"):
            outs, _, _ = run_op("BitShift", {"direction": d}, [x, wide])
            want = np.where(x < 0, -1, 0).astype(dt) if d == "RIGHT" else np.zeros_like(x)
            np.testing.assert_array_equal(outs[0], want)


def test_mod():
    for fmod in (0, 1):
        a, b = rand((4, 9), 1, -10, 10), rand((9,), 2, 0.5, 3)
        b[::2] *= -1
        check_op("Mod", {"fmod": fmod}, [a, b], rtol=1e-5, atol=1e-5)
        for dt in (np.int8, np.int16, np.int32, np.uint8, np.uint32):
            lo = 0 if np.dtype(dt).kind == "u" else -100
            x, y = rand((4, 9), 3, lo, 100, dt), rand((9,), 4, lo, 100, dt)
            y[y == 0] = 7
            if fmod or np.dtype(dt).kind == "u":
                check_op("Mod", {"fmod": fmod}, [x, y])
            else:
                check_op("Mod", {"fmod": 0}, [x, y])


def test_castlike_and_eyelike():
    x = rand((3, 7), 1, -100, 100)
    for dt in (np.int32, np.uint8, np.bool_, np.float32):
        # (float to unsigned: values in range; numpy wraps negative ones, TC1 saturates)
        check_op("CastLike", {}, [np.abs(x) if dt == np.uint8 else x, np.zeros((1,), dt)])
    assert "64-bit" in compiler.HasStrategy("CastLike", {}, [compiler.TensorSpec((2,), "float32"),
                                                             compiler.TensorSpec((1,), "int64")])
    for k in (0, 2, -1, 9):
        check_op("EyeLike", {"k": k}, [rand((4, 6), 2, 0, 5, np.int32)])
    check_op("EyeLike", {"k": 1, "dtype": 1}, [rand((5, 3), 2, 0, 5, np.int32)])
    assert "64-bit" in compiler.HasStrategy("EyeLike", {"dtype": 7}, [compiler.TensorSpec((2, 2), "int32")])


def test_mod_infinite_divisor():
    # a finite x mod +-inf: x, or (floored, signs that differ) the divisor, as numpy
    a = np.array([-3, 3, -1, 1, 0, 2.5], np.float32)
    b = np.array([np.inf, np.inf, -np.inf, -np.inf, np.inf, -np.inf], np.float32)
    outs, _, _ = run_op("Mod", {"fmod": 0}, [a, b])
    np.testing.assert_array_equal(outs[0], np.mod(a, b))
    outs, _, _ = run_op("Mod", {"fmod": 1}, [a, b])
    np.testing.assert_array_equal(outs[0], np.fmod(a, b))


# ---- the int8 lookup-table form (int8 edges): table[q] = quantise(f(dequantise(q))) ----------

def _lut_reference(op_type, attrs, q, xs, xz, ys, yz):
    """The table form's output, from the op library's float64 reference (independent of the C++
    table builder): every int8 value dequantised, through f, quantised nearest-even."""
    from tilecore.ir import ops

    schema = ops.get_op(op_type)
    x = (q.astype(np.float64) - xz) * xs
    y = np.asarray(schema.reference(schema.fill_attrs(dict(attrs)), x), np.float64)
    return np.clip(np.rint(y / ys) + yz, -128, 127).astype(np.int8)


@pytest.mark.parametrize("op_type,attrs", [
    ("Gelu", {}), ("Gelu", {"approximate": "tanh"}), ("Sigmoid", {}), ("Tanh", {}),
    ("LeakyRelu", {"alpha": 0.1}), ("HardSwish", {}), ("Elu", {"alpha": 0.5})])
def test_int8_lookup_table_form_matches_the_float_reference(op_type, attrs):
    # 3 x 40000 elements: several tiles per core, the last one shorter
    rng = np.random.default_rng(3)
    q = rng.integers(-128, 128, (3, 40000)).astype(np.int8)
    q.ravel()[:256] = np.arange(-128, 128)  # every table entry is read
    xs, xz, ys, yz = 0.031, 3, 0.017, -5
    a = dict(attrs, tc_x_scale=xs, tc_x_zero_point=xz, tc_y_scale=ys, tc_y_zero_point=yz)
    out = run_lowered(op_type, a, [q], [np.zeros(q.shape, np.int8)])[0]
    want = _lut_reference(op_type, attrs, q, xs, xz, ys, yz)
    # a value within 1e-9 of a rounding midpoint may round either way (f32 attributes)
    np.testing.assert_allclose(out.astype(np.int32), want.astype(np.int32), atol=1)
    assert np.mean(out == want) > 0.999


def test_int8_lookup_table_form_needs_both_scales():
    spec = [compiler.TensorSpec((4, 64), np.int8)]
    assert "tc_x_scale" in compiler.HasStrategy("Gelu", {"tc_y_scale": 0.1}, spec)
    assert compiler.HasStrategy("Gelu", {"tc_x_scale": 0.1, "tc_y_scale": 0.1}, spec) == ""
    # an op without a table form keeps its dtypes
    assert compiler.HasStrategy("Exp", {"tc_x_scale": 0.1, "tc_y_scale": 0.1}, spec) != ""


@pytest.mark.parametrize("op,make", [
    ("IsNaN", lambda x, y: [x]),
    ("Less", lambda x, y: [x, y]),
    ("Where", lambda x, y: [np.isnan(x), np.zeros((1,), np.float32), x]),  # attention's NaN mask
    ("And", lambda x, y: [x > 0, y > 0]),
])
def test_ops_on_bool_run_in_simd_on_every_core(op, make):
    """No vector-engine command computes on bool: such an op runs on the front ends, in
    8-lane SIMD (bool tiles widened to i32 by the vector engine) and split over the cores,
    a few instructions per 8 elements, not a scalar loop on one core."""
    from strategy_util import run_op

    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 32, 32)).astype(np.float32)
    x[0, 0, 0, :5], x[0, 1, 2, 3] = np.nan, np.inf
    y = rng.standard_normal((1, 4, 32, 32)).astype(np.float32)
    outs, refs, st = run_op(op, {}, make(x, y))
    if outs[0].dtype.kind == "f":
        np.testing.assert_array_equal(outs[0], refs[0])
    else:
        np.testing.assert_array_equal(outs[0], refs[0].astype(outs[0].dtype))
    per_core = [c["sc"]["commands"] for c in st["cores"]]
    assert all(n > 0 for n in per_core), per_core  # every core takes a share
    # SIMD: 2 to 3 instructions an element with the loop's own; the scalar loop took 11
    assert max(per_core) < 4 * (x.size // 4), per_core


def test_replace_nan_loads_each_value_once_and_matches_numpy():
    # tilecore::ReplaceNaN on the front ends' SIMD: NaN (either sign) to the value, the
    # infinities and signed zeros kept; the loop loads x once an iteration (it is used three
    # times: the compare twice and the select)
    import tilecore

    x = np.random.default_rng(4).standard_normal((3, 4, 37)).astype(np.float32)
    x.flat[::7] = np.nan
    x.flat[3::11] = -np.nan
    x.flat[5::13] = np.inf
    x.flat[6::17] = -0.0
    (out,) = run_lowered("ReplaceNaN", {"value": -2.5}, [x], [np.zeros_like(x)])
    want = np.where(np.isnan(x), np.float32(-2.5), x)
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32))
    spec = compiler.TensorSpec(x.shape, x.dtype)
    f = compiler.LowerOp("ReplaceNaN", {"value": -2.5}, [spec], [spec], "npu -cores=4")
    src = tilecore.build(f, target="npu -cores=4").get_source()
    loop = src[src.index("vcmpeq") - 400:src.index("vsel") + 200]
    body = loop[loop.rindex(":\n", 0, loop.index("vcmpeq")):loop.index("blt", loop.index("vsel"))]
    assert body.count("vld") == 1, body
