"""docs/runtime.md: its examples run as one program (the c build, npu arrays and
reconfiguration, the workspace pool, modules, targets, the c target's postproc hook)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from doc_examples import run_page  # noqa: E402


@pytest.mark.npu
def test_doc_examples_run(tmp_path):
    r = run_page("runtime.md", tmp_path, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "bad value for option -cores=99: expected an integer in 1..16" in r.stdout
