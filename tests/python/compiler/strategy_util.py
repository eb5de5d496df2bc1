"""Shared by the op-strategy tests: lower one op, build it for 4 npu cores, run it on
the simulator and compare with the op library's numpy reference."""
import numpy as np

import tilecore
from tilecore import compiler
from tilecore.ir import ops

TARGET = "npu -cores=4"


def run_op(op_type, attrs, inputs, out_shapes=None, out_dtypes=None):
    """Outputs of ``op_type`` on the simulator and of the reference, and the simulator stats."""
    schema = ops.get_op(op_type)
    # (the compiler's tc_* attributes choose a plan: the reference knows none of them)
    full = schema.fill_attrs({k: v for k, v in attrs.items() if not k.startswith("tc_")})
    ref = schema.reference(full, *inputs)
    refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    refs = [np.asarray(r) for r in refs]
    shapes = out_shapes or [r.shape for r in refs]
    dtypes = out_dtypes or [r.dtype for r in refs]
    outs = [np.zeros(s, d) for s, d in zip(shapes, dtypes)]
    specs_in = [None if x is None else compiler.TensorSpec(x.shape, x.dtype) for x in inputs]
    assert compiler.HasStrategy(op_type, attrs, specs_in) == ""
    f = compiler.LowerOp(op_type, attrs, specs_in, [compiler.TensorSpec(o.shape, o.dtype) for o in outs], TARGET)
    mod = tilecore.build(f, target=TARGET)
    nparams = int(f.attrs["input_params"])
    args = [x if x is not None else np.zeros((1,), np.float32) for x in inputs[:nparams]] + outs
    mod[f.attrs["global_symbol"]](*args)
    stats = tilecore.runtime.npu_simulator(0).stats()
    return outs, refs, stats


def run_lowered(op_type, attrs, inputs, outs):
    """Runs ``op_type`` on the simulator into the arrays ``outs`` (no reference: for ops whose
    reference takes inputs the strategy reads from attributes, or inputs it rejects)."""
    specs_in = [compiler.TensorSpec(x.shape, x.dtype) for x in inputs]
    assert compiler.HasStrategy(op_type, attrs, specs_in) == ""
    f = compiler.LowerOp(op_type, attrs, specs_in, [compiler.TensorSpec(o.shape, o.dtype) for o in outs], TARGET)
    mod = tilecore.build(f, target=TARGET)
    mod[f.attrs["global_symbol"]](*inputs[:int(f.attrs["input_params"])], *outs)
    return outs


def check_op(op_type, attrs, inputs, rtol=1e-4, atol=1e-5, **kw):
    """Runs and compares; returns the largest absolute error."""
    outs, refs, _ = run_op(op_type, attrs, inputs, **kw)
    err = 0.0
    for o, r in zip(outs, refs):
        assert o.shape == r.shape
        if o.dtype.kind == "f":
            np.testing.assert_allclose(o, r, rtol=rtol, atol=atol, err_msg=op_type)
            d = np.abs(o.astype(np.float64) - r.astype(np.float64))
            err = max(err, float(np.nanmax(d)) if d.size else 0.0)
        else:
            np.testing.assert_array_equal(o, r.astype(o.dtype), err_msg=op_type)
    return err


def rand(shape, seed=0, lo=-2.0, hi=2.0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(lo, hi, shape).astype(dtype)
    return rng.integers(int(lo), int(hi) + 1, shape).astype(dtype)


# Clip's bounds in the tests of an int8 Conv's fused activation
CLIP_BOUNDS = (-0.5, 0.75)


def fused_activation_attrs(act):
    """The attributes fusing ``act`` ("Relu", "Clip" with CLIP_BOUNDS, or "" for none) into
    an int8 Conv's epilogue."""
    if act == "Relu":
        return {"tc_activation": "Relu"}
    if act == "Clip":
        return {"tc_activation": "Clip", "tc_clip_min": CLIP_BOUNDS[0], "tc_clip_max": CLIP_BOUNDS[1]}
    return {}


def fused_activation_ref(y, act):
    """``act`` (as fused_activation_attrs fuses it) on the f32 result ``y``, as numpy computes it."""
    f = np.float32
    if act == "Relu":
        return np.maximum(y, f(0))
    if act == "Clip":
        return np.minimum(np.maximum(y, f(CLIP_BOUNDS[0])), f(CLIP_BOUNDS[1]))
    return y
