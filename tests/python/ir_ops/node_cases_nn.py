"""tests/python/ir_ops/node_cases_nn.py — the ONNX backend node-test cases of the
structural op families (conv, pool, tensor, indexing, linalg, attention, rnn, image,
sequence, control, detection), run through benchmarks/onnx_node_tests.py's own
functions on the op library alone (its `--direct` mode).

Expected values come from the `onnx` package's test data (an oracle nobody here
wrote). A case whose model needs an op that is not registered (the element-wise
half of the library, say, in a Loop body) is skipped; the cases listed in
KNOWN_FAILURES fail for the reason given.
"""
from __future__ import annotations

import importlib.util
import os
import re
import warnings

import numpy as np
import pytest

_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks", "onnx_node_tests.py")

#: Cases that do not pass, and why. ONNX Runtime fails every one of them too.
KNOWN_FAILURES = {
    "test_split_equal_parts_1d_opset13": "the walker does not tell Split its number of outputs",
    "test_split_equal_parts_2d_opset13": "the walker does not tell Split its number of outputs",
    "test_split_equal_parts_default_axis_opset13": "the walker does not tell Split its number of outputs",
    "test_maxunpool_export_with_output_shape": "expected values assume PyTorch's per-plane indices",
    "test_attention_4d_causal_bf16": "bfloat16 rounding order (1 ulp)",
    "test_attention_4d_padded_kv_bf16": "bfloat16 rounding order (1 ulp)",
    "test_attention_4d_causal_padded_kv_bf16": "bfloat16 rounding order (1 ulp)",
    "test_attention_4d_attn_mask_causal_bf16": "bfloat16 rounding order (1 ulp)",
    "test_attention_3d_causal_bf16": "bfloat16 rounding order (1 ulp)",
    "test_resize_downsample_scales_linear_align_corners": "length_resized taken as the output's length, as ONNX "
                                                          "Runtime and PyTorch take it; the data use scale x length",
    "test_resize_downsample_scales_cubic_align_corners": "length_resized taken as the output's length, as ONNX "
                                                         "Runtime and PyTorch take it; the data use scale x length",
}


def load_script():
    spec = importlib.util.spec_from_file_location("onnx_node_tests", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CACHE = {}


def cases_of(op_types):
    """(case id, case) of every non-expanded node-test case testing one of op_types."""
    pytest.importorskip("onnx")
    if "all" not in _CACHE:
        script = load_script()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = script._load_cases(None, None)
        cases = got[0] if isinstance(got, tuple) else got
        op_of = got[1] if isinstance(got, tuple) else script.case_op_types(cases)
        _CACHE["all"] = (script, cases, op_of)
    _, cases, op_of = _CACHE["all"]
    return [c for c in cases if op_of[c.name] in op_types and not re.search(r"_expanded(_ver\d+)?$", c.name)]


def run_case(case):
    """Runs one case; skips when its model needs an op that is not registered."""
    from tilecore.ir.ops import get_op
    script = _CACHE["all"][0]
    missing = sorted({n.op_type for n in _nodes(case.model.graph) if get_op(n.op_type, n.domain) is None})
    if missing:
        pytest.skip(f"needs ops not registered here: {', '.join(missing)}")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status, why = script.run_tilecore(case, direct=True)
    if case.name in KNOWN_FAILURES:
        if status == "pass":
            pytest.fail(f"{case.name} passes now: drop it from KNOWN_FAILURES")
        pytest.xfail(KNOWN_FAILURES[case.name])
    assert status == "pass", f"{case.name}: {status}: {why}"


def _nodes(graph):
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.g is not None and attr.g.node:
                yield from _nodes(attr.g)
            for g in attr.graphs:
                yield from _nodes(g)


def parametrize(op_types):
    """pytest parametrisation over the cases of op_types (ids are the case names)."""
    try:
        cases = cases_of(op_types)
    except pytest.skip.Exception:
        cases = []
    return pytest.mark.parametrize("case", cases, ids=[c.name for c in cases])
