"""tests/python/ir_ops/ir_ops_cases.py — runs ONNX backend node-test cases through the op
library alone (benchmarks/onnx_node_tests.py's `run_tilecore(direct=True)`), comparing with
each case's expected outputs. Cases whose model needs an op not registered here are skipped."""
import functools
import importlib.util
import os
import warnings

import numpy as np
import pytest

_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks", "onnx_node_tests.py")

#: Cases whose expected outputs cannot be reproduced: random draws, or expected values
#: rounded in float32 beyond the case's own atol (ONNX Runtime fails these too).
NOT_REPRODUCIBLE = {"test_training_dropout", "test_training_dropout_default", "test_training_dropout_mask",
                    "test_training_dropout_default_mask", "test_dft_inverse", "test_dft_inverse_opset19"}


@functools.lru_cache(maxsize=None)
def script():
    pytest.importorskip("onnx")
    spec = importlib.util.spec_from_file_location("onnx_node_tests", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=None)
def _all_cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return script()._load_cases()


def check_ops(ops):
    """Runs every node-test case of `ops` (with its _expanded cases); returns (passed, failures)."""
    import tilecore.ir.ops  # noqa: F401
    from tilecore.ir.ops import get_op
    cases, op_type_of = _all_cases()
    failures, passed = [], 0
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in cases:
            if op_type_of[case.name] not in ops or case.name in NOT_REPRODUCIBLE:
                continue
            if any(get_op(n.op_type, n.domain) is None for n in case.model.graph.node):
                continue  # needs an op of another family that is not registered
            status, why = script().run_tilecore(case, direct=True)
            if status == "pass":
                passed += 1
            else:
                failures.append(f"{case.name}: {status}: {why}")
    return passed, failures
