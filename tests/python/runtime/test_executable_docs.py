"""docs/executable.md: its example runs, and its statistics table names the keys stats() gives."""
import os
import re
import sys

import pytest

import tilecore

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from doc_examples import page_text, run_page  # noqa: E402

pytestmark = pytest.mark.skipif(tilecore.get_global_func("codegen.build_npu", allow_missing=True) is None,
                                reason="built without TILECORE_ENABLE_NPU")


def test_doc_examples_run(tmp_path):
    r = run_page("executable.md", tmp_path, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "('add0', 'npu'," in r.stdout and "('mul0', 'host', 0)" in r.stdout


def test_documented_stats_keys_exist():
    sys.path.insert(0, os.path.dirname(__file__))
    import exe_pipeline as P
    import numpy as np

    exe = P.build()
    exe.run({"x": np.zeros((64, 64), "int8")})
    st = exe.stats()
    text = page_text("executable.md")
    table = text[text.index("| key | meaning |"):text.index("Per step:")]
    keys = set()
    bucketed = set()  # rows of keys an executable with buckets has (test_executable_buckets.py runs one)
    for row in table.splitlines()[2:]:
        if row.startswith("|"):
            found = set(re.findall(r"`([a-z_]+)`", row.split("|")[1]))
            (bucketed if "an executable with buckets only" in row else keys).update(found)
    assert keys and keys <= set(st), keys - set(st)
    assert bucketed == {"bucket"} and "bucket" not in st
    group_text = "A layer group's step (op type `Group`) whose"
    per_step = text[text.index("Per step:"):text.index(group_text)]
    step_keys = set(re.findall(r"`([a-z_]+)`", per_step)) - {"npu", "host", "sc", "din", "dout", "mm", "vec"}
    assert step_keys <= set(st["ops"][0]), step_keys - set(st["ops"][0])


def test_documented_member_keys_exist():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "compiler"))
    import numpy as np
    from test_member_handoff import dense_norm_dense

    exe = tilecore.compile(dense_norm_dense(rows=32, d=64, f=64))
    exe.run({"x": np.zeros((32, 64), "float32")})
    (op,) = exe.stats()["ops"]
    text = page_text("executable.md")
    members = text[text.index("A layer group's step (op type `Group`) whose"):text.index("## Trace")]
    keys = set(re.findall(r"`([a-z_]+)`", members)) - {"group", "pc", "members", "cycles"}
    assert keys <= set(op) | set(op["members"][0]), keys - set(op) - set(op["members"][0])
    assert {"members", "cycles"} <= set(op) and "cycles" in op["members"][0]
