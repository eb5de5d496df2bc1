"""tests/python/frontend/test_onnx_node_conformance.py — every ONNX backend node test
(the `onnx` package's suite) imported with `tilecore.frontend.from_onnx`, shape-inferred
and evaluated with `tilecore.frontend.evaluate`, against the cases' expected outputs.

Only cases ONNX Runtime passes count; at least 95% of them must pass, and in every
passing case the inferred output shapes equal the expected ones (the script fails a
case whose shapes differ). The per-case report lists every failure with its reason."""
import importlib.util
import json
import os

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks", "onnx_node_tests.py")


def _script():
    spec = importlib.util.spec_from_file_location("onnx_node_tests", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_node_tests_through_the_importer(tmp_path, capsys):
    rc = _script().main(["--report", str(tmp_path), "--min-pass", "0.95"])
    out = capsys.readouterr().out
    with open(tmp_path / "cases.json") as f:
        rows = json.load(f)
    counted = [r for r in rows if r["ort_pass"]]
    passed = [r for r in counted if r["status"] == "pass"]
    failures = "\n".join(f"{r['case']}: {r['status']}: {r['reason']}" for r in counted if r["status"] != "pass")
    assert len(counted) > 1400, out
    assert rc == 0 and len(passed) >= 0.95 * len(counted), failures
    # Op types with at least one passing case: the suite covers well over a hundred.
    assert len({r["op_type"] for r in passed}) >= 170, out
