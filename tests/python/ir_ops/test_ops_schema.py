"""tests/python/ir_ops/test_ops_schema.py — the attribute schemas of the math op families agree with
ONNX's own operator definitions (names and defaults), and every op has a docstring."""
import numpy as np
import pytest

from tilecore.ir.ops import list_ops

onnx_defs = pytest.importorskip("onnx.defs")
helper = pytest.importorskip("onnx.helper")

FAMILIES = {"activation", "cast", "elementwise", "image_decode", "logical", "loss", "matrix", "ml", "normalization",
            "quantize", "random", "reduce", "signal", "string", "training"}
#: Attributes whose default depends on the opset (resolved in the op with attrs["_opset"]).
OPSET_DEFAULTS = {("Softmax", "axis"), ("LogSoftmax", "axis"), ("Hardmax", "axis")}


def _ours():
    return [s for s in list_ops() if s.reference.__module__.rsplit(".", 1)[-1] in FAMILIES]


def test_every_op_documented():
    ops = _ours()
    assert len(ops) > 120
    assert [s.name for s in ops if not s.doc] == []


def test_attribute_names_and_defaults_match_onnx():
    problems = []
    for s in _ours():
        try:
            ref = onnx_defs.get_schema(s.name, s.domain)
        except Exception:
            continue
        for name, attr in ref.attributes.items():
            if name not in s.attrs:
                problems.append(f"{s.name}: attribute {name} missing")
                continue
            if not attr.default_value.name or (s.name, name) in OPSET_DEFAULTS:
                continue
            want = helper.get_attribute_value(attr.default_value)
            want = want.decode() if isinstance(want, bytes) else want
            got = s.attrs[name][1]
            if isinstance(want, float):
                ok = got is not None and np.isclose(np.float32(got), np.float32(want))
            else:
                ok = got == want
            if not ok:
                problems.append(f"{s.name}.{name}: default {got!r} != ONNX {want!r}")
    assert not problems, "\n".join(problems)
