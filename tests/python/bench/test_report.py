"""tests/python/bench/test_report.py — the command line, its reports, reruns of the
failures and the diff against a baseline; bad input is one named error line."""
import json

import pytest
from bench_models import FAULTY_OPS, write_tiny

from tilecore.bench import report
from tilecore.cli import main


def _bench(capsys, *argv):
    rc = main(["bench", "--no-progress", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.npu  # tiny.onnx compiles and runs (a build without the npu refuses it)
def test_cli_json_md_rerun_and_baseline(models_dir, tmp_path, capsys):
    tiny, crash = str(models_dir / "tiny.onnx"), str(models_dir / "crash.onnx")
    r1, md1 = str(tmp_path / "r1.json"), str(tmp_path / "r1.md")
    cache = str(tmp_path / "cache")
    rc, out, _ = _bench(capsys, tiny, crash, "--precision", "f32", "--preload", FAULTY_OPS, "--cache-dir", cache,
                        "--json", r1, "--md", md1, "--jobs", "2")
    assert rc == 1 and "1 pass" in out and "1 crash" in out
    rows = report.load(r1)
    assert {(r["model"], r["stage"], r["status"]) for r in rows} >= {("crash.onnx", "import", "crash"),
                                                                    ("tiny.onnx", "compare", "pass")}
    for r in rows:
        assert {"model", "precision", "stage", "status"} <= set(r)
    run_row = next(r for r in rows if r["stage"] == "run")
    assert run_row["cycles"] > 0 and 0 < run_row["mac_utilisation"] <= 1
    assert "| crash.onnx | f32 |  | import | crash |" in open(md1).read()

    # --rerun-failed runs the failed job only
    r2 = str(tmp_path / "r2.json")
    rc, out, _ = _bench(capsys, "--rerun-failed", r1, "--cache-dir", cache, "--json", r2)
    assert [r["model"] for r in report.load(r2)] == ["crash.onnx"] and "1 job(s)" in out

    # a baseline where crash.onnx passed and tiny.onnx was faster: both are regressions, listed first
    base = [dict(r) for r in rows]
    for r in base:
        if r["model"] == "crash.onnx":
            r["stage"], r["status"] = "compare", "pass"
        if r["stage"] == "run":
            r["cycles"] = run_row["cycles"] // 2
    b = tmp_path / "base.json"
    b.write_text(json.dumps(base))
    md3 = str(tmp_path / "r3.md")
    rc, out, _ = _bench(capsys, tiny, crash, "--preload", FAULTY_OPS, "--cache-dir", cache, "--baseline", str(b),
                        "--md", md3)
    assert rc == 1 and "2 regressions against" in out
    text = open(md3).read()
    assert text.index("### Regressions") < text.index("## Jobs")
    assert "crash.onnx f32: compare pass -> import crash" in text
    assert f"tiny.onnx f32: cycles {run_row['cycles'] // 2} -> {run_row['cycles']}" in text


def test_bad_input_is_a_named_error(models_dir, tmp_path, capsys):
    tiny = str(models_dir / "tiny.onnx")
    cases = []
    bad = tmp_path / "bad.json"
    bad.write_text('[{"model": "m", "precision": "f32", "stage": "run"}]')
    cases.append((["--rerun-failed", str(bad)], f"report {bad}: row 0: field `status` missing"))
    half = tmp_path / "half.json"
    half.write_text('[{"model": "m", "precis')
    cases.append((["--baseline", str(half), tiny], f"{half}: not valid JSON"))
    cases.append(([str(tmp_path / "missing.onnx")], "missing.onnx` is not a file"))
    text = tmp_path / "notonnx.onnx"
    text.write_text("hello")
    cases.append(([str(text)], "notonnx.onnx` is not an ONNX model"))
    cases.append((["--corpus", "modelzoo"], "`modelzoo` is not a file, a folder, a corpus"))
    cases.append(([tiny, "--options", "cores=3"], "unknown option `cores`"))
    cases.append(([tiny, "--precision", "int4"], "--precision: int4"))
    for argv, message in cases:
        rc, _, err = _bench(capsys, *argv)
        assert rc == 1 and message in err and "Traceback" not in err, (argv, err)


def test_folder_and_zoo_names(tmp_path):
    from tilecore.bench import resolve

    write_tiny(str(tmp_path / "b.onnx"))
    (tmp_path / "sub").mkdir()
    write_tiny(str(tmp_path / "sub" / "a.onnx"))
    assert [m.name for m in resolve([str(tmp_path)])] == ["b.onnx", "sub/a.onnx"]
    refs = resolve(["zoo:resnet18+bert_layer", "resnet18"])
    assert [(m.name, m.source) for m in refs] == [("resnet18", "zoo"), ("bert_layer", "zoo")]
