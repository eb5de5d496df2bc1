"""Runs the python code blocks of docs/ffi.md, in order, as one program.

Blocks fenced as ```python are run; ```python skip blocks (those needing files the
test cannot make) are not.
"""
import pytest

from doc_examples import code_blocks, run_page


def test_doc_has_examples():
    assert len(list(code_blocks("ffi.md"))) >= 10


def test_doc_examples_run(tmp_path):
    pytest.importorskip("torch")
    proc = run_page("ffi.md", tmp_path)
    assert proc.returncode == 0, f"docs/ffi.md example failed:\n{proc.stderr}"
